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

/// Thrown when a packet decodes to more than limits.max_decoded_bytes.
struct decoded_too_large : std::bad_alloc {
  const char* what() const noexcept override {
    return "the packet decodes to more memory than limits.max_decoded_bytes";
  }
};

/// An upstream for one request's arena that bounds what decoding its packet takes: 16 MiB of
/// AMF3 nulls decode to 368 MiB of values, so the bytes a request sent do not bound what it
/// keeps. Armed while the packet decodes; what handlers build afterwards is bounded by the
/// reply's limit instead. Used by one request at a time: not thread-safe.
class decode_cap : public std::pmr::memory_resource {
 public:
  decode_cap(std::pmr::memory_resource* upstream, std::size_t max)
      : upstream_(upstream), max_(max) {}
  void disarm() { armed_ = false; }

 private:
  void* do_allocate(std::size_t bytes, std::size_t alignment) override {
    if (armed_ && (bytes > max_ || used_ > max_ - bytes)) throw decoded_too_large();
    void* p = upstream_->allocate(bytes, alignment);
    used_ += bytes;
    return p;
  }
  void do_deallocate(void* p, std::size_t bytes, std::size_t alignment) override {
    upstream_->deallocate(p, bytes, alignment);
    used_ -= bytes;
  }
  bool do_is_equal(const std::pmr::memory_resource& o) const noexcept override {
    return this == &o;
  }

  std::pmr::memory_resource* upstream_;
  std::size_t max_, used_ = 0;
  bool armed_ = true;
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
