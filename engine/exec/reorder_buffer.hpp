#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

namespace livedrp {

// The reorder stage: items complete in any order (several streams, several threads) and leave in
// admission order 0, 1, 2, ... An item whose predecessors have not all come back is held. Every
// admission number must come back exactly once; a duplicate or an already released number is a
// logic error in the caller and throws, rather than being silently lost or released twice.
template <typename Item>
class ReorderBuffer {
 public:
  explicit ReorderBuffer(std::uint64_t first_admission = 0) : next_(first_admission) {}

  void insert(std::uint64_t admission, Item item) {
    if (admission < next_)
      throw std::logic_error("reorder: admission " + std::to_string(admission) +
                             " was already released (next is " + std::to_string(next_) + ")");
    if (!held_.emplace(admission, std::move(item)).second)
      throw std::logic_error("reorder: admission " + std::to_string(admission) + " inserted twice");
  }

  // The next item in admission order, if it has come back.
  std::optional<Item> pop_ready() {
    auto it = held_.begin();
    if (it == held_.end() || it->first != next_) return std::nullopt;
    Item item = std::move(it->second);
    held_.erase(it);
    ++next_;
    return item;
  }

  std::size_t depth() const { return held_.size(); }  // items held back
  std::uint64_t next_admission() const { return next_; }

 private:
  std::map<std::uint64_t, Item> held_;
  std::uint64_t next_;
};

}  // namespace livedrp
