// Internal: the open-addressing map behind the encoder's reference tables.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <new>
#include <type_traits>
#include <vector>

namespace amf::detail {

/// Open-addressing map from a key to a table index; keys are never removed. The first
/// `Inline` slots are inside the map (uninitialized until first used): the few entries of a
/// small value's tables allocate nothing.
template <class Key, class Hash, class Eq = std::equal_to<Key>, std::size_t Inline = 32>
class index_map {
 public:
  static constexpr std::uint32_t npos = 0xFFFFFFFF;

  index_map() = default;
  index_map(const index_map&) = delete;  // `slots_` may point into the map itself
  index_map& operator=(const index_map&) = delete;

  /// The index of `k` if present; else inserts `k` with `index` and returns npos.
  std::uint32_t find_or_insert(const Key& k, std::uint32_t index) {
    if ((size_ + 1) * 2 > capacity_) grow();
    std::size_t i = Hash{}(k)&mask_;
    for (; slots_[i].index != npos; i = (i + 1) & mask_) {
      if (Eq{}(slots_[i].key, k)) return slots_[i].index;
    }
    slots_[i] = {k, index};
    ++size_;
    return npos;
  }
  /// The index of `k`, or npos.
  std::uint32_t find(const Key& k) const {
    if (capacity_ == 0) return npos;
    for (std::size_t i = Hash{}(k)&mask_; slots_[i].index != npos; i = (i + 1) & mask_) {
      if (Eq{}(slots_[i].key, k)) return slots_[i].index;
    }
    return npos;
  }
  /// Gives `k`, which is present, the index `index`.
  void assign(const Key& k, std::uint32_t index) {
    std::size_t i = Hash{}(k)&mask_;
    while (!Eq{}(slots_[i].key, k)) i = (i + 1) & mask_;
    slots_[i].index = index;
  }
  void clear() {
    heap_.clear();
    slots_ = nullptr;
    capacity_ = size_ = mask_ = 0;
  }

 private:
  struct slot {
    Key key;
    std::uint32_t index;
  };
  static_assert(std::is_trivially_copyable_v<slot> && (Inline & (Inline - 1)) == 0);
  void place(const Key& k, std::uint32_t index) {
    std::size_t i = Hash{}(k)&mask_;
    while (slots_[i].index != npos) i = (i + 1) & mask_;
    slots_[i] = {k, index};
  }
  // Out of line: the lookups that call it stay small enough to be inlined where they are used.
  [[gnu::noinline]] void grow() {
    const slot* old = slots_;
    const std::size_t old_capacity = capacity_;
    std::vector<slot> old_heap;  // what `old` points into, unless inline_
    if (old_capacity > Inline) old_heap = std::move(heap_);
    capacity_ = old_capacity == 0 ? Inline : old_capacity * 2;
    const slot empty{Key{}, npos};
    if (capacity_ == Inline) {
      auto* p = reinterpret_cast<slot*>(inline_);
      std::uninitialized_fill_n(p, Inline, empty);
      slots_ = std::launder(p);
    } else {
      heap_.assign(capacity_, empty);
      slots_ = heap_.data();
    }
    mask_ = capacity_ - 1;
    for (std::size_t i = 0; i < old_capacity; ++i) {
      if (old[i].index != npos) place(old[i].key, old[i].index);
    }
  }
  slot* slots_ = nullptr;  ///< capacity_ slots: inline_, or heap_'s
  std::size_t capacity_ = 0;
  std::size_t size_ = 0;
  std::size_t mask_ = 0;
  alignas(slot) std::byte inline_[Inline * sizeof(slot)];
  std::vector<slot> heap_;
};

struct pointer_hash {
  std::size_t operator()(const void* p) const noexcept {
    return static_cast<std::size_t>(
        (reinterpret_cast<std::uintptr_t>(p) >> 3) * 0x9E3779B97F4A7C15ull >> 16);
  }
};

}  // namespace amf::detail
