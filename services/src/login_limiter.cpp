#include "amfgate/services/login_limiter.hpp"

#include <algorithm>

namespace amfgate::services {

namespace {

std::string pair_key(std::string_view address, std::string_view user) {
  return "p:" + std::to_string(address.size()) + ":" + std::string(address) + std::string(user);
}

}  // namespace

login_limiter::clock::duration login_limiter::wait(const std::string& key,
                                                   clock::time_point now) const {
  auto it = records_.find(key);
  if (it == records_.end() || it->second.blocked_until <= now) return clock::duration::zero();
  return it->second.blocked_until - now;
}

login_limiter::clock::duration login_limiter::retry_after(std::string_view address,
                                                          std::string_view user,
                                                          clock::time_point now) {
  std::lock_guard lock(mutex_);
  return std::max({wait("a:" + std::string(address), now), wait(pair_key(address, user), now),
                   wait("u:" + std::string(user), now)});
}

void login_limiter::count(const std::string& key, std::size_t max, clock::time_point now) {
  if (records_.size() >= max_entries_ && !records_.contains(key)) {
    std::erase_if(records_, [&](const auto& kv) {
      return kv.second.blocked_until <= now && kv.second.window_start + s_.window <= now;
    });
    if (records_.size() >= max_entries_) records_.erase(records_.begin());
  }
  record& r = records_[key];
  if (r.window_start + s_.window <= now && r.blocked_until <= now) r = record{now, 0, {}};
  if (++r.failures >= max) {
    const auto doublings = std::min<std::size_t>(r.failures - max, 6);
    r.blocked_until = now + s_.backoff * (std::size_t{1} << doublings);
  }
}

void login_limiter::failed(std::string_view address, std::string_view user, clock::time_point now) {
  std::lock_guard lock(mutex_);
  count("a:" + std::string(address), s_.max_failures, now);
  count(pair_key(address, user), s_.max_failures, now);
  count("u:" + std::string(user), s_.max_failures * s_.user_factor, now);
}

void login_limiter::succeeded(std::string_view address, std::string_view user) {
  std::lock_guard lock(mutex_);
  records_.erase(pair_key(address, user));
}

}  // namespace amfgate::services
