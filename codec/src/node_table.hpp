// Internal: the encoder's table of the nodes it has written.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "index_map.hpp"

namespace amf::detail {

/// Node -> the reference index it was first written at.
///
/// Most nodes are written once, and a large value has tens of thousands: a hash entry per node
/// cost a cache miss per node (a third of the time encoding 10,000 objects). So whether a node
/// was seen is a bit per 8 bytes of address (every node is larger), in a bitmap per 4 KiB page
/// (neighbouring nodes share a page, found through a small table of pages), and the indices wait in
/// a log written in order; the log is hashed only when a node comes a second time and is not yet
/// hashed. The first few nodes are kept in a small array, searched in turn: no allocation for the
/// small values most calls write.
class node_table {
 public:
  static constexpr std::uint32_t npos = 0xFFFFFFFF;

  /// The index of `n` if present; else enters `n` with `index` and returns npos.
  std::uint32_t find_or_insert(const void* n, std::uint32_t index);
  void clear();

 private:
  struct entry {
    const void* node;
    std::uint32_t index;
  };
  static constexpr std::size_t page_bits = 12;
  struct page {
    std::uintptr_t number;
    std::uint64_t seen[(std::size_t{1} << page_bits) / 8 / 64];  ///< a bit per 8 bytes
  };
  struct page_hash {
    std::size_t operator()(std::uintptr_t number) const noexcept {
      return static_cast<std::size_t>(number * 0x9E3779B97F4A7C15ull >> 20);
    }
  };

  /// Marks `n` seen; returns whether it was.
  bool mark(const void* n);
  void spill();

  std::array<entry, 32> few_;  ///< the first `few_count_` entered; once full, spilled
  std::size_t few_count_ = 0;
  std::vector<page> pages_;
  index_map<std::uintptr_t, page_hash> page_numbers_;  ///< page number -> position in pages_
  std::size_t last_page_ = 0;
  std::vector<entry> log_;  ///< entered, not yet hashed
  index_map<const void*, pointer_hash> hashed_;
};

}  // namespace amf::detail
