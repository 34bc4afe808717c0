// Internal: strings for HTTP bodies, kept per thread from one request to the next.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace amfgate::server {

/// A request's body and its answer's are strings, of a few hundred bytes for most calls.
/// Taken from here as a body begins and given back when it has been decoded or written, a
/// busy connection reuses the same few strings instead of allocating two per request; an idle
/// connection holds none. A message that wakes a thousand parked polls at once has a thousand
/// answers in flight: what is kept is bounded by bytes, not by count. Per thread, without a
/// lock: a string given back on a worker thread stays with that thread. Each thread keeps
/// strings of at most `largest` bytes, `kept_bytes` in all; others are freed as usual.
class body_pool {
 public:
  static constexpr std::size_t largest = 64 * 1024;
  static constexpr std::size_t kept_bytes = 1024 * 1024;

  /// An empty string, with the room of one given back before if there is one.
  static std::string take() {
    auto& p = pool();
    if (p.free.empty()) return {};
    std::string s = std::move(p.free.back());
    p.free.pop_back();
    p.held -= s.capacity();
    return s;
  }

  static void give(std::string s) {
    auto& p = pool();
    const std::size_t room = s.capacity();
    if (room <= std::string().capacity() || room > largest || p.held + room > kept_bytes) return;
    s.clear();
    p.free.push_back(std::move(s));
    p.held += room;
  }

 private:
  struct strings {
    std::vector<std::string> free;
    std::size_t held = 0;  ///< the capacity of those in `free`
  };
  static strings& pool() {
    thread_local strings p;
    return p;
  }
};

}  // namespace amfgate::server
