// The text of a generation as it may be sent: valid UTF-8 (a character split across tokens waits
// for its last byte; bytes that can never form one become U+FFFD) and never a part of a stop
// string (text that could begin one waits until it cannot). When a stop string appears, the text
// before it is the last that is sent.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace nvfp4::server {

class TextStream {
 public:
  explicit TextStream(std::vector<std::string> stops);
  // Appends a token's bytes; returns the text that can be sent now.
  std::string push(std::string_view bytes);
  // The rest (at the end of generation), incomplete characters as U+FFFD. Empty after a stop.
  std::string finish();
  bool stopped() const { return stopped_; }
  // The stop string that ended the text (empty when none did).
  const std::string& matched() const { return matched_; }

 private:
  std::vector<std::string> stops_;
  std::string raw_;
  size_t sent_ = 0;
  bool stopped_ = false;
  std::string matched_;
};

// Length of the longest prefix of s that does not end inside a UTF-8 sequence that more bytes
// could still complete.
size_t utf8_complete_prefix(std::string_view s);
// s with every byte that is not part of a valid UTF-8 sequence replaced by U+FFFD.
std::string utf8_sanitize(std::string_view s);

}  // namespace nvfp4::server
