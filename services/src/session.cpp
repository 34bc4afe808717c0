#include "amfgate/services/session.hpp"

#include <random>

namespace amfgate::services {

fault session_store_fault(const std::string& why) {
  return fault("Server.Session.Unavailable",
               "the session store is unreachable (" + why +
                   "); logins and calls that need one fail until it is back");
}

std::string random_id() {
  static thread_local std::random_device device;
  static constexpr char hex[] = "0123456789abcdef";
  std::string id;
  for (int i = 0; i < 4; ++i) {
    std::uint32_t r = device();
    for (int k = 0; k < 8; ++k) {
      id += hex[r & 15];
      r >>= 4;
    }
  }
  return id;
}

boost::asio::awaitable<std::optional<session>> session_store::async_find(std::string id) {
  co_return find(id);
}
boost::asio::awaitable<session> session_store::async_create() {
  co_return create();
}
boost::asio::awaitable<void> session_store::async_save(session s) {
  save(s);
  co_return;
}
boost::asio::awaitable<void> session_store::async_remove(std::string id) {
  remove(id);
  co_return;
}
boost::asio::awaitable<std::size_t> session_store::async_size() {
  co_return size();
}

std::optional<session> memory_session_store::find(const std::string& id) {
  std::lock_guard lock(mutex_);
  auto it = sessions_.find(id);
  if (it == sessions_.end()) return std::nullopt;
  const auto now = clock::now();
  if (now - it->second.last_used > idle_) {
    lru_.erase(it->second.lru);
    sessions_.erase(it);
    return std::nullopt;
  }
  it->second.last_used = now;
  lru_.splice(lru_.begin(), lru_, it->second.lru);
  return it->second.data;
}

session memory_session_store::create() {
  session s;
  s.id = random_id();
  std::lock_guard lock(mutex_);
  put(s);
  return s;
}

void memory_session_store::save(const session& s) {
  std::lock_guard lock(mutex_);
  put(s);
}

void memory_session_store::remove(const std::string& id) {
  std::lock_guard lock(mutex_);
  if (auto it = sessions_.find(id); it != sessions_.end()) {
    lru_.erase(it->second.lru);
    sessions_.erase(it);
  }
}

std::size_t memory_session_store::size() {
  std::lock_guard lock(mutex_);
  return sessions_.size();
}

void memory_session_store::put(const session& s) {
  const auto now = clock::now();
  if (auto it = sessions_.find(s.id); it != sessions_.end()) {
    it->second.data = s;
    it->second.last_used = now;
    lru_.splice(lru_.begin(), lru_, it->second.lru);
    return;
  }
  // Expired sessions go first, then the least recently used over the bound.
  while (!lru_.empty() &&
         (sessions_.size() >= max_ || now - sessions_.at(lru_.back()).last_used > idle_)) {
    sessions_.erase(lru_.back());
    lru_.pop_back();
  }
  lru_.push_front(s.id);
  sessions_.emplace(s.id, entry{s, now, lru_.begin()});
}

}  // namespace amfgate::services
