// Internal: strings for HTTP bodies, kept per thread from one request to the next.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace amfgate::server {

/// A request's body and its answer's are strings, of a few hundred bytes for most calls.
/// Taken from here as a body begins and given back when it has been decoded or written, a
/// busy connection reuses the same few strings instead of allocating two per request; an idle
/// connection holds none. Per thread, without a lock: a string given back on a worker thread
/// stays with that thread. Each thread keeps at most `kept` strings of at most `largest`
/// bytes; others are freed as usual.
class body_pool {
 public:
  static constexpr std::size_t kept = 16;
  static constexpr std::size_t largest = 64 * 1024;

  /// An empty string, with the room of one given back before if there is one.
  static std::string take() {
    auto& free = strings();
    if (free.empty()) return {};
    std::string s = std::move(free.back());
    free.pop_back();
    return s;
  }

  static void give(std::string s) {
    auto& free = strings();
    if (s.capacity() <= std::string().capacity() || s.capacity() > largest || free.size() >= kept) {
      return;
    }
    s.clear();
    free.push_back(std::move(s));
  }

 private:
  static std::vector<std::string>& strings() {
    thread_local std::vector<std::string> free = [] {
      std::vector<std::string> v;
      v.reserve(kept);
      return v;
    }();
    return free;
  }
};

}  // namespace amfgate::server
