// A map from addresses to values, open-addressed in one array: the conversions look up every
// node and member name they meet, and std::unordered_map's allocation per entry was a tenth
// of a decode (perf, W1). The array lives in the conversion's arena, whose blocks the codec's
// pool keeps between calls: from the heap, its fresh pages were a fifth of an encode's time
// in page faults (perf, W1).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory_resource>
#include <utility>
#include <vector>

namespace amfgate::python {

template <class V>
class pointer_map {
 public:
  explicit pointer_map(std::pmr::memory_resource* arena) : slots_(arena) {}

  /// The value for `key`, default-constructed on first use.
  V& operator[](const void* key) {
    if ((used_ + 1) * 4 > slots_.size() * 3) grow();
    std::size_t i = slot(key, slots_.size());
    if (slots_[i].first == nullptr) {
      slots_[i].first = key;
      ++used_;
    }
    return slots_[i].second;
  }
  /// The value for `key`, or null.
  V* find(const void* key) {
    if (slots_.empty()) return nullptr;
    std::size_t i = slot(key, slots_.size());
    return slots_[i].first == key ? &slots_[i].second : nullptr;
  }

 private:
  std::size_t slot(const void* key, std::size_t size) const {
    auto h = reinterpret_cast<std::uintptr_t>(key);
    h = (h ^ (h >> 29)) * 0xbf58476d1ce4e5b9ULL;  // splitmix64's mixer
    std::size_t i = static_cast<std::size_t>(h ^ (h >> 32)) & (size - 1);
    while (slots_[i].first != nullptr && slots_[i].first != key) i = (i + 1) & (size - 1);
    return i;
  }
  void grow() {
    std::pmr::vector<std::pair<const void*, V>> old(slots_.empty() ? 64 : slots_.size() * 2,
                                                    slots_.get_allocator());
    old.swap(slots_);
    for (auto& [key, value] : old)
      if (key != nullptr) {
        auto& s = slots_[slot(key, slots_.size())];
        s.first = key;
        s.second = std::move(value);
      }
  }

  std::pmr::vector<std::pair<const void*, V>> slots_;
  std::size_t used_ = 0;
};

}  // namespace amfgate::python
