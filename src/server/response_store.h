// The conversations of past /v1/responses answers, for previous_response_id: a response's
// messages (the conversation it continued, its input and its output as an assistant turn; not its
// instructions, which OpenAI does not carry over), in memory, at most `max_count` of them holding
// at most `max_bytes` of text (the oldest go first), each for at most `ttl` after it was stored.
// Thread-safe.
#pragma once
#include <chrono>
#include <cstddef>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "nvfp4/chat.h"

namespace nvfp4::server {

class ResponseStore {
 public:
  using Clock = std::chrono::steady_clock;
  ResponseStore(size_t max_count, std::chrono::seconds ttl, size_t max_bytes = size_t{256} << 20)
      : max_(max_count), max_bytes_(max_bytes), ttl_(ttl) {}
  void put(const std::string& id, std::vector<ChatMessage> messages, Clock::time_point now = Clock::now());
  // The messages, or none when the id is unknown, evicted or expired.
  std::optional<std::vector<ChatMessage>> get(const std::string& id, Clock::time_point now = Clock::now());
  size_t size() const;
  size_t bytes() const;  // the text held

 private:
  void expire(Clock::time_point now);  // under mu_
  struct Entry {
    std::vector<ChatMessage> messages;
    Clock::time_point stored;
    size_t bytes = 0;
  };
  size_t max_, max_bytes_, bytes_ = 0;
  std::chrono::seconds ttl_;
  mutable std::mutex mu_;
  std::map<std::string, Entry> map_;
  std::deque<std::string> order_;  // ids, oldest first
};

}  // namespace nvfp4::server
