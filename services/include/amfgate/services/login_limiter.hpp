// Failed logins limited per client address and per user name, so that nobody can guess
// passwords at the speed of the hash: after `max_failures` failures within `window`, further
// attempts from that address, or for that user name, are refused for `backoff`, doubled for
// each further failure (at most 64 times). A refused attempt costs no hash.
#pragma once

#include <chrono>
#include <cstddef>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

namespace amfgate::services {

struct login_limit_settings {
  std::size_t max_failures = 5;  ///< within `window`, before attempts are refused
  std::chrono::milliseconds window{60'000};
  std::chrono::milliseconds backoff{30'000};
};

class login_limiter {
 public:
  using clock = std::chrono::steady_clock;

  /// At most `max_entries` addresses and names are remembered (the oldest are dropped).
  explicit login_limiter(login_limit_settings s, std::size_t max_entries = 100'000)
      : s_(s), max_entries_(max_entries) {}

  /// How long before `address` may try again for `user`; zero when it may now.
  clock::duration retry_after(std::string_view address, std::string_view user,
                              clock::time_point now = clock::now());
  void failed(std::string_view address, std::string_view user,
              clock::time_point now = clock::now());
  /// A login succeeded: the user name's failures are forgotten (the address's are not).
  void succeeded(std::string_view user);

 private:
  struct record {
    clock::time_point window_start;
    std::size_t failures = 0;
    clock::time_point blocked_until;
  };
  void count(const std::string& key, clock::time_point now);
  clock::duration wait(const std::string& key, clock::time_point now) const;

  login_limit_settings s_;
  std::size_t max_entries_;
  std::mutex mutex_;
  std::unordered_map<std::string, record> records_;  // "a:" address, "u:" user name
};

}  // namespace amfgate::services
