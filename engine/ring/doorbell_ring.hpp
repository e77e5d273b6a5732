#pragma once
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "core/event.hpp"

namespace livedrp {

// A ring of event buffers with one doorbell word per slot, the way a detector's DMA engine feeds a
// GPU DAQ: the producer writes an event into a free slot and then sets the slot's doorbell
// (release); the consumer sees the doorbell (acquire), processes the event, and clears the doorbell
// to re-arm the slot (release). A slot whose doorbell is still set is not free: a producer that
// finds its next slot busy has a full ring and must drop the event (and count it).
//
// One producer thread and one consumer thread. Slots are used in order, so events leave the ring
// in the order they entered.
class DoorbellRing {
 public:
  using Allocate = std::function<void*(std::size_t)>;
  using Free = std::function<void(void*)>;

  // Slot buffers come from `allocate` (pinned host memory when a CUDA backend consumes them).
  DoorbellRing(std::size_t slot_count, std::size_t slot_bytes, Allocate allocate, Free free);
  ~DoorbellRing();
  DoorbellRing(const DoorbellRing&) = delete;
  DoorbellRing& operator=(const DoorbellRing&) = delete;

  std::size_t slot_count() const { return slots_.size(); }
  std::size_t slot_bytes() const { return slot_bytes_; }

  // Producer: the next slot to fill, or -1 when it still holds an event (ring full).
  int producer_claim() const;
  void* slot_data(int slot) { return slots_[std::size_t(slot)].data; }
  const void* slot_data(int slot) const { return slots_[std::size_t(slot)].data; }
  EventHeader& slot_header(int slot) { return slots_[std::size_t(slot)].header; }
  // Producer: puts `buffer` (slot_bytes, from the same allocator) in a claimed slot instead of
  // copying into it, and returns the buffer it held (the caller owns it now). A source that read
  // the event into its own pinned buffer (replay) hands it over without a host copy.
  void* exchange_slot_data(int slot, void* buffer) {
    Slot& s = slots_[std::size_t(slot)];
    s.data = buffer;
    return std::exchange(s.owned, buffer);
  }
  // Producer: lets a claimed slot show `buffer` (slot_bytes, owned and kept alive by the caller
  // until the slot has been re-armed) instead of copying it in: an event generated ahead stays
  // where it is, as a DMA engine writes an event once and only rings the doorbell. The slot's
  // own buffer is kept and freed with the ring. Consumers only read slot data.
  void lend_slot_data(int slot, const void* buffer) {
    slots_[std::size_t(slot)].data = const_cast<void*>(buffer);
  }
  // Producer: copies `buffer` (slot_bytes) into the claimed slot's own memory, for a source that
  // reuses its buffer as soon as the call returns (a network stream's assembly buffer).
  void copy_into_slot(int slot, const void* buffer);
  // Producer: publishes the claimed slot (header and data written) and moves on.
  void ring_doorbell(int slot);

  // Consumer: the next slot in order if its doorbell is set by an event not yet taken, else -1
  // (also when every slot is taken and none re-armed yet: the next slot's doorbell is then still
  // that of the oldest event taken, which must not be taken again). Does not re-arm it.
  int consumer_peek() const;
  // Consumer: waits (spin, then yield, then short sleeps) until the next slot is ready, `timeout`
  // passes, or `keep_waiting` returns false. Returns the slot or -1.
  int consumer_wait(std::chrono::microseconds timeout, const std::function<bool()>& keep_waiting);
  // Consumer: takes the peeked slot (the next call looks at the slot after it).
  void consumer_advance();
  // Consumer: clears the doorbell of a slot whose event is done, so the producer may reuse it.
  // Slots must be re-armed in the order they were taken.
  void rearm(int slot);

  // Slots whose doorbell is set (filled, not yet re-armed).
  std::size_t occupancy() const { return occupied_.load(std::memory_order_relaxed); }

 private:
  struct Slot {
    std::atomic<std::uint32_t> doorbell{0};  // 0: armed (free), 1: holds an event
    EventHeader header;
    void* data = nullptr;   // what the slot shows: its own buffer or one lent to it
    void* owned = nullptr;  // the ring's buffer for this slot, freed with the ring
  };
  std::vector<Slot> slots_;
  std::size_t slot_bytes_;
  Free free_;
  std::size_t write_position_ = 0;  // producer only
  std::size_t read_position_ = 0;   // consumer only
  std::size_t rearmed_ = 0;         // consumer only: slots re-armed so far (in the order taken)
  std::atomic<std::size_t> occupied_{0};
};

}  // namespace livedrp
