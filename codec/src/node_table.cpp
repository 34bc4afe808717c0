#include "node_table.hpp"

namespace amf::detail {

std::uint32_t node_table::find_or_insert(const void* n, std::uint32_t index) {
  if (few_count_ < few_.size()) {
    for (std::size_t i = 0; i < few_count_; ++i) {
      if (few_[i].node == n) return few_[i].index;
    }
    few_[few_count_++] = {n, index};
    if (few_count_ == few_.size()) spill();
    return npos;
  }
  if (!mark(n)) {
    log_.push_back({n, index});
    return npos;
  }
  if (const auto i = hashed_.find(n); i != npos) return i;
  for (const auto& e : log_) hashed_.find_or_insert(e.node, e.index);
  log_.clear();
  return hashed_.find(n);
}

// The small array is full: its nodes go to the pages and the log, where every later node goes.
void node_table::spill() {
  for (const auto& e : few_) {
    mark(e.node);
    log_.push_back(e);
  }
}

bool node_table::mark(const void* n) {
  const auto a = reinterpret_cast<std::uintptr_t>(n);
  const std::uintptr_t number = a >> page_bits;
  if (last_page_ >= pages_.size() || pages_[last_page_].number != number) {
    auto at = page_numbers_.find_or_insert(number, static_cast<std::uint32_t>(pages_.size()));
    if (at == npos) {
      at = static_cast<std::uint32_t>(pages_.size());
      pages_.push_back({number, {}});
    }
    last_page_ = at;
  }
  const std::size_t bit = (a & ((std::uintptr_t{1} << page_bits) - 1)) >> 3;
  std::uint64_t& word = pages_[last_page_].seen[bit / 64];
  const std::uint64_t mask = std::uint64_t{1} << (bit % 64);
  const bool seen = (word & mask) != 0;
  word |= mask;
  return seen;
}

void node_table::clear() {
  few_count_ = 0;
  pages_.clear();
  page_numbers_.clear();
  last_page_ = 0;
  log_.clear();
  hashed_.clear();
}

}  // namespace amf::detail
