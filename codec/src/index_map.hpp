// Internal: the open-addressing map behind the encoder's reference tables.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

namespace amf::detail {

/// Open-addressing map from a key to a table index; keys are never removed.
template <class Key, class Hash, class Eq = std::equal_to<Key>>
class index_map {
 public:
  static constexpr std::uint32_t npos = 0xFFFFFFFF;

  /// The index of `k` if present; else inserts `k` with `index` and returns npos.
  std::uint32_t find_or_insert(const Key& k, std::uint32_t index) {
    if ((size_ + 1) * 2 > slots_.size()) grow();
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
    if (slots_.empty()) return npos;
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
    slots_.clear();
    size_ = 0;
    mask_ = 0;
  }

 private:
  struct slot {
    Key key{};
    std::uint32_t index = npos;
  };
  void place(const Key& k, std::uint32_t index) {
    std::size_t i = Hash{}(k)&mask_;
    while (slots_[i].index != npos) i = (i + 1) & mask_;
    slots_[i] = {k, index};
  }
  void grow() {
    std::vector<slot> old = std::move(slots_);
    slots_.assign(old.empty() ? 64 : old.size() * 2, slot{});
    mask_ = slots_.size() - 1;
    for (const auto& s : old) {
      if (s.index != npos) place(s.key, s.index);
    }
  }
  std::vector<slot> slots_;
  std::size_t size_ = 0;
  std::size_t mask_ = 0;
};

struct pointer_hash {
  std::size_t operator()(const void* p) const noexcept {
    return static_cast<std::size_t>(
        (reinterpret_cast<std::uintptr_t>(p) >> 3) * 0x9E3779B97F4A7C15ull >> 16);
  }
};

}  // namespace amf::detail
