// Failed logins limited, so that nobody can guess passwords at the speed of the hash: after
// `max_failures` failures within `window` from one client address, or for one user name from
// one address, further attempts from there are refused for `backoff`, doubled for each
// further failure (at most 64 times). A refused attempt costs no hash.
//
// A user name alone is throttled only at `user_factor` times that many failures (from
// addresses together): one address cannot lock a user out by failing with their name, since
// it is throttled by its own count long before, while guesses spread over many addresses
// still meet a bound per user.
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
  std::size_t user_factor = 20;  ///< failures for one name, all addresses: this many times
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
  /// A login succeeded: the user name's failures from that address are forgotten (the
  /// address's own are not).
  void succeeded(std::string_view address, std::string_view user);

 private:
  struct record {
    clock::time_point window_start;
    std::size_t failures = 0;
    clock::time_point blocked_until;
  };
  void count(const std::string& key, std::size_t max, clock::time_point now);
  clock::duration wait(const std::string& key, clock::time_point now) const;

  login_limit_settings s_;
  std::size_t max_entries_;
  std::mutex mutex_;
  // "a:" address, "p:" address and user name, "u:" user name
  std::unordered_map<std::string, record> records_;
};

}  // namespace amfgate::services
