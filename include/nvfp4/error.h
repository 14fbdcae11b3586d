// Errors that fail closed. Every refusal names where (file, tensor), which rule, what was expected
// and what was found, so that a user can act on it without reading our code.
#pragma once
#include <stdexcept>
#include <string>

namespace nvfp4 {

class Error : public std::runtime_error {
 public:
  Error(std::string file, std::string tensor, std::string rule, std::string expected,
        std::string found)
      : std::runtime_error(compose(file, tensor, rule, expected, found)),
        file_(std::move(file)),
        tensor_(std::move(tensor)),
        rule_(std::move(rule)),
        expected_(std::move(expected)),
        found_(std::move(found)) {}

  const std::string& file() const { return file_; }
  const std::string& tensor() const { return tensor_; }
  const std::string& rule() const { return rule_; }
  const std::string& expected() const { return expected_; }
  const std::string& found() const { return found_; }

 private:
  static std::string compose(const std::string& file, const std::string& tensor,
                             const std::string& rule, const std::string& expected,
                             const std::string& found) {
    std::string m;
    if (!file.empty()) m += file + ": ";
    // A metadata key or a field quoted in the rule ("metadata 'k' has the wrong type") is not
    // named a second time as a tensor.
    if (!tensor.empty() && rule.find("'" + tensor + "'") == std::string::npos) m += "tensor '" + tensor + "': ";
    m += rule;
    if (!expected.empty()) m += " (expected " + expected;
    if (!found.empty()) m += expected.empty() ? " (found " + found : ", found " + found;
    if (!expected.empty() || !found.empty()) m += ")";
    return m;
  }
  std::string file_, tensor_, rule_, expected_, found_;
};

}  // namespace nvfp4
