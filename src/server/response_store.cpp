#include "server/response_store.h"

namespace nvfp4::server {

void ResponseStore::expire(Clock::time_point now) {
  while (!order_.empty()) {
    const auto it = map_.find(order_.front());
    if (it != map_.end() && map_.size() <= max_ && now - it->second.stored < ttl_) break;
    if (it != map_.end()) map_.erase(it);
    order_.pop_front();
  }
}

void ResponseStore::put(const std::string& id, std::vector<ChatMessage> messages, Clock::time_point now) {
  if (max_ == 0) return;
  std::lock_guard lk(mu_);
  if (map_.erase(id)) {
    for (auto it = order_.begin(); it != order_.end(); ++it)
      if (*it == id) {
        order_.erase(it);
        break;
      }
  }
  map_[id] = Entry{std::move(messages), now};
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

size_t ResponseStore::size() const {
  std::lock_guard lk(mu_);
  return map_.size();
}

}  // namespace nvfp4::server
