#include "server/response_store.h"

namespace nvfp4::server {
namespace {
size_t text_bytes(const std::vector<ChatMessage>& ms) {
  size_t n = 0;
  for (const auto& m : ms) {
    n += 64 + m.role.size() + m.content.size() + m.reasoning_content.value_or("").size();
    for (const auto& c : m.tool_calls) n += 32 + c.id.size() + c.name.size() + c.arguments.size();
    n += m.tool_call_id.value_or("").size() + m.name.value_or("").size();
  }
  return n;
}
}  // namespace

void ResponseStore::expire(Clock::time_point now) {
  while (!order_.empty()) {
    const auto it = map_.find(order_.front());
    if (it != map_.end() && map_.size() <= max_ && bytes_ <= max_bytes_ && now - it->second.stored < ttl_) break;
    if (it != map_.end()) {
      bytes_ -= it->second.bytes;
      map_.erase(it);
    }
    order_.pop_front();
  }
}

void ResponseStore::put(const std::string& id, std::vector<ChatMessage> messages, Clock::time_point now) {
  const size_t n = text_bytes(messages);
  std::lock_guard lk(mu_);
  if (const auto old = map_.find(id); old != map_.end()) {
    bytes_ -= old->second.bytes;
    map_.erase(old);
    for (auto it = order_.begin(); it != order_.end(); ++it)
      if (*it == id) {
        order_.erase(it);
        break;
      }
  }
  if (max_ == 0 || n > max_bytes_) return;  // (a conversation larger than the bound is not kept)
  map_[id] = Entry{std::move(messages), now, n};
  bytes_ += n;
  order_.push_back(id);
  expire(now);
}

std::optional<std::vector<ChatMessage>> ResponseStore::get(const std::string& id, Clock::time_point now) {
  std::lock_guard lk(mu_);
  expire(now);
  const auto it = map_.find(id);
  if (it == map_.end()) return std::nullopt;
  return it->second.messages;
}

size_t ResponseStore::bytes() const {
  std::lock_guard lk(mu_);
  return bytes_;
}

size_t ResponseStore::size() const {
  std::lock_guard lk(mu_);
  return map_.size();
}

}  // namespace nvfp4::server
