#include "server/text_stream.h"

#include <algorithm>

namespace nvfp4::server {
namespace {

// Length of the UTF-8 sequence a lead byte starts (0: not a lead byte).
int seq_len(unsigned char c) {
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) return 2;
  if (c >= 0xE0 && c <= 0xEF) return 3;
  if (c >= 0xF0 && c <= 0xF4) return 4;
  return 0;
}

// Whether s[i..i+n) is a valid sequence prefix of length n for the lead s[i] (RFC 3629: no
// overlong forms, no surrogates, nothing above U+10FFFF).
bool valid_prefix(std::string_view s, size_t i, size_t n) {
  const auto c0 = static_cast<unsigned char>(s[i]);
  for (size_t k = 1; k < n; ++k) {
    const auto c = static_cast<unsigned char>(s[i + k]);
    unsigned char lo = 0x80, hi = 0xBF;
    if (k == 1) {
      if (c0 == 0xE0) lo = 0xA0;
      if (c0 == 0xED) hi = 0x9F;
      if (c0 == 0xF0) lo = 0x90;
      if (c0 == 0xF4) hi = 0x8F;
    }
    if (c < lo || c > hi) return false;
  }
  return true;
}

}  // namespace

size_t utf8_complete_prefix(std::string_view s) {
  // Only the last 3 bytes can belong to an unfinished sequence.
  const size_t from = s.size() > 3 ? s.size() - 3 : 0;
  for (size_t i = s.size(); i-- > from;) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80 && c < 0xC0) continue;  // continuation byte: look further back
    const int n = seq_len(c);
    if (n > 1 && i + static_cast<size_t>(n) > s.size() && valid_prefix(s, i, s.size() - i)) return i;
    return s.size();
  }
  return s.size();
}

std::string utf8_sanitize(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    const int n = seq_len(static_cast<unsigned char>(s[i]));
    if (n > 0 && i + static_cast<size_t>(n) <= s.size() && valid_prefix(s, i, static_cast<size_t>(n))) {
      out.append(s.substr(i, static_cast<size_t>(n)));
      i += static_cast<size_t>(n);
    } else {
      out += "\xEF\xBF\xBD";
      ++i;
    }
  }
  return out;
}

TextStream::TextStream(std::vector<std::string> stops) {
  for (auto& s : stops)
    if (!s.empty()) stops_.push_back(std::move(s));
}

std::string TextStream::push(std::string_view bytes) {
  if (stopped_) return "";
  raw_.append(bytes);
  // A stop string can only begin at or after sent_: what could begin one was held back.
  size_t hit = std::string::npos;
  const std::string* which = nullptr;
  for (const auto& st : stops_) {
    const size_t at = raw_.find(st, sent_);
    if (at < hit) hit = at, which = &st;
  }
  if (hit != std::string::npos) {
    stopped_ = true;
    matched_ = *which;
    std::string out = utf8_sanitize(std::string_view(raw_).substr(sent_, hit - sent_));
    sent_ = raw_.size();
    return out;
  }
  size_t safe = sent_ + utf8_complete_prefix(std::string_view(raw_).substr(sent_));
  for (const auto& st : stops_) {
    // The longest suffix of raw_ (after sent_) that is a proper prefix of st.
    const size_t avail = raw_.size() - sent_;
    for (size_t k = std::min(avail, st.size() - 1); k > 0; --k) {
      if (raw_.compare(raw_.size() - k, k, st, 0, k) == 0) {
        safe = std::min(safe, raw_.size() - k);
        break;
      }
    }
  }
  std::string out = utf8_sanitize(std::string_view(raw_).substr(sent_, safe - sent_));
  sent_ = safe;
  return out;
}

std::string TextStream::finish() {
  if (stopped_) return "";
  std::string out = utf8_sanitize(std::string_view(raw_).substr(sent_));
  sent_ = raw_.size();
  stopped_ = true;
  return out;
}

}  // namespace nvfp4::server
