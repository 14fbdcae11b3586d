#include "io/quant_match.h"

#include <algorithm>
#include <map>

#include "nvfp4/error.h"

namespace nvfp4 {

PyRegex::PyRegex(const std::string& pattern, const std::string& file) : pattern_(pattern) {
  try {
    re_ = std::make_shared<const std::regex>(pattern, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    throw Error(file, "", "regular expression in the quantization config that this project cannot read",
                "a Python regex within ECMAScript's syntax (no named groups, no look-behind)", pattern);
  }
}

bool PyRegex::match(const std::string& s) const {
  return std::regex_search(s, *re_, std::regex_constants::match_continuous);
}

std::vector<CtTarget> ct_targets(const std::vector<std::pair<std::string, int>>& in, const std::string& file) {
  std::map<std::string, int> last;  // target -> payload of the last group naming it (OrderedDict overwrite)
  for (const auto& [t, p] : in) last[t] = p;
  std::vector<CtTarget> out;
  for (const auto& [t, p] : last) {
    CtTarget c;
    c.text = t;
    c.payload = p;
    if (t.rfind("re:", 0) == 0) c.re = std::make_shared<const PyRegex>(t.substr(3), file);
    out.push_back(std::move(c));
  }
  // sorted(targets, key=lambda x: ("re:" in x, x)): Python compares str by code point, as
  // std::string compares bytes for UTF-8.
  std::stable_sort(out.begin(), out.end(), [](const CtTarget& a, const CtTarget& b) {
    const bool ra = a.text.find("re:") != std::string::npos, rb = b.text.find("re:") != std::string::npos;
    if (ra != rb) return !ra;
    return a.text < b.text;
  });
  return out;
}

namespace {
bool name_match(const CtTarget& t, const std::string& module) {
  // _match_name: "re:" prefix -> re.match; otherwise equality. A target holding "re:" later in
  // the string sorts with the regexes but matches by equality, as in compressed-tensors.
  if (t.re) return t.re->match(module);
  return t.text == module;
}
}  // namespace

const CtTarget* ct_first_match(const std::vector<CtTarget>& sorted, const std::string& module) {
  for (const auto& t : sorted) if (name_match(t, module)) return &t;
  for (const auto& t : sorted) if (t.text == "Linear") return &t;  // _match_class: every layer we ask about is a Linear
  return nullptr;
}

bool ct_ignored(const std::vector<CtTarget>& ignore, const std::string& module) {
  for (const auto& t : ignore) if (name_match(t, module) || t.text == "Linear") return true;
  return false;
}

int modelopt_layer_entry(const std::vector<std::string>& names, const std::string& module) {
  int best = -1;
  size_t best_len = 0;
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string& n = names[i];
    const bool hit = n == module || (module.size() > n.size() && module.compare(0, n.size(), n) == 0 && module[n.size()] == '.');
    if (hit && (best < 0 || n.size() > best_len)) {
      best = static_cast<int>(i);
      best_len = n.size();
    }
  }
  return best;
}

}  // namespace nvfp4
