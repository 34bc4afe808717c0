// The memory that requests in flight may hold together (limits.max_inflight_bytes): their
// bodies, the arenas their values are decoded into, and their replies. One client's large
// requests then cost other clients a 503 at worst, never the daemon's memory.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory_resource>
#include <new>

namespace amfgate::server {

/// Thrown when a request would take the budget past its bound.
struct over_budget : std::bad_alloc {
  const char* what() const noexcept override { return "the memory budget of requests is spent"; }
};

class memory_budget {
 public:
  explicit memory_budget(std::size_t max_bytes) : max_(max_bytes) {}

  /// Takes `n` bytes if they fit under the bound.
  bool try_take(std::size_t n) {
    auto used = used_.load(std::memory_order_relaxed);
    do {
      if (n > max_ || used > max_ - n) return false;
    } while (!used_.compare_exchange_weak(used, used + n, std::memory_order_relaxed));
    return true;
  }
  /// Takes `n` bytes that are held already (a reply that exists), even past the bound.
  void take(std::size_t n) { used_.fetch_add(n, std::memory_order_relaxed); }
  void give(std::size_t n) { used_.fetch_sub(n, std::memory_order_relaxed); }
  std::size_t used() const { return used_.load(std::memory_order_relaxed); }
  std::size_t max() const { return max_; }

 private:
  std::atomic<std::size_t> used_{0};
  const std::size_t max_;
};

/// An upstream for request arenas that charges what it hands out to a budget, and throws
/// `over_budget` instead of passing it.
class budget_resource : public std::pmr::memory_resource {
 public:
  budget_resource(memory_budget& budget, std::pmr::memory_resource* upstream)
      : budget_(budget), upstream_(upstream) {}

 private:
  void* do_allocate(std::size_t bytes, std::size_t alignment) override {
    if (!budget_.try_take(bytes)) throw over_budget();
    try {
      return upstream_->allocate(bytes, alignment);
    } catch (...) {
      budget_.give(bytes);
      throw;
    }
  }
  void do_deallocate(void* p, std::size_t bytes, std::size_t alignment) override {
    upstream_->deallocate(p, bytes, alignment);
    budget_.give(bytes);
  }
  bool do_is_equal(const std::pmr::memory_resource& o) const noexcept override {
    return this == &o;
  }

  memory_budget& budget_;
  std::pmr::memory_resource* upstream_;
};

}  // namespace amfgate::server
