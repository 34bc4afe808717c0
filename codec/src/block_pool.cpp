#include <bit>
#include <mutex>
#include <new>
#include <vector>

#include "amf/value.hpp"

namespace amf {

// Free lists per power-of-two size class; larger or over-aligned blocks bypass the pool.
struct block_pool::state {
  static constexpr int classes = 40;
  std::mutex mutex;
  std::vector<void*> free[classes];
  std::size_t cached = 0;
  std::size_t max_cached;
};

namespace {
constexpr std::size_t min_block = 4096;
constexpr std::size_t max_thread_cached = std::size_t{1} << 20;
int size_class(std::size_t bytes) {
  return std::bit_width(std::bit_ceil(bytes) - 1);
}
}  // namespace

block_pool::block_pool(std::size_t max_cached_bytes) : state_(new state) {
  state_->max_cached = max_cached_bytes;
}

block_pool::~block_pool() {
  for (auto& list : state_->free) {
    for (void* p : list) ::operator delete(p);
  }
  delete state_;
}

block_pool& block_pool::shared() {
  static block_pool* pool = new block_pool();  // never destroyed: documents may outlive main
  return *pool;
}

namespace {
// A few blocks per thread in front of the shared lists: a request's arena usually takes and
// returns one block of one size on one thread, without touching the mutex.
struct thread_cache {
  static constexpr int slots = 4;
  const void* owner[slots] = {};
  void* block[slots] = {};
  std::size_t size[slots] = {};
  ~thread_cache() {
    for (void* b : block) ::operator delete(b);
  }
};
thread_local thread_cache cache;
}  // namespace

void* block_pool::do_allocate(std::size_t bytes, std::size_t alignment) {
  if (alignment > alignof(std::max_align_t)) {
    return ::operator new(bytes, std::align_val_t(alignment));
  }
  bytes = std::bit_ceil(std::max(bytes, min_block));
  for (int i = 0; i < thread_cache::slots; ++i) {
    if (cache.block[i] && cache.owner[i] == this && cache.size[i] == bytes) {
      void* p = cache.block[i];
      cache.block[i] = nullptr;
      return p;
    }
  }
  const int c = size_class(bytes);
  if (c < state::classes) {
    std::lock_guard lock(state_->mutex);
    if (!state_->free[c].empty()) {
      void* p = state_->free[c].back();
      state_->free[c].pop_back();
      state_->cached -= bytes;
      return p;
    }
  }
  return ::operator new(bytes);
}

void block_pool::do_deallocate(void* p, std::size_t bytes, std::size_t alignment) {
  if (alignment > alignof(std::max_align_t)) {
    ::operator delete(p, std::align_val_t(alignment));
    return;
  }
  bytes = std::bit_ceil(std::max(bytes, min_block));
  if (bytes <= max_thread_cached) {
    for (int i = 0; i < thread_cache::slots; ++i) {
      if (!cache.block[i]) {
        cache.owner[i] = this;
        cache.block[i] = p;
        cache.size[i] = bytes;
        return;
      }
    }
  }
  const int c = size_class(bytes);
  if (c < state::classes) {
    std::lock_guard lock(state_->mutex);
    if (state_->cached + bytes <= state_->max_cached) {
      state_->free[c].push_back(p);
      state_->cached += bytes;
      return;
    }
  }
  ::operator delete(p);
}

}  // namespace amf
