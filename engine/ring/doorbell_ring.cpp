#include "ring/doorbell_ring.hpp"

#include <cstring>
#include <stdexcept>
#include <thread>

#include "core/error.hpp"

namespace livedrp {

DoorbellRing::DoorbellRing(std::size_t slot_count, std::size_t slot_bytes, Allocate allocate,
                           Free free)
    : slots_(slot_count), slot_bytes_(slot_bytes), free_(std::move(free)) {
  if (slot_count == 0) throw InputError("doorbell ring: the number of slots must be at least 1");
  for (auto& slot : slots_) {
    slot.data = slot.owned = allocate(slot_bytes);
    if (!slot.data && slot_bytes > 0)
      throw RuntimeFault("doorbell ring: cannot allocate " + std::to_string(slot_count) +
                         " slots of " + std::to_string(slot_bytes) + " bytes");
  }
}

DoorbellRing::~DoorbellRing() {
  for (auto& slot : slots_)
    if (slot.owned) free_(slot.owned);
}

int DoorbellRing::producer_claim() const {
  const std::size_t index = write_position_ % slots_.size();
  if (slots_[index].doorbell.load(std::memory_order_acquire) != 0) return -1;
  return int(index);
}

void DoorbellRing::ring_doorbell(int slot) {
  occupied_.fetch_add(1, std::memory_order_relaxed);
  // Release: the header and data written before become visible with the doorbell.
  slots_[std::size_t(slot)].doorbell.store(1, std::memory_order_release);
  ++write_position_;
}

int DoorbellRing::consumer_peek() const {
  if (read_position_ - rearmed_ >= slots_.size()) return -1;
  const std::size_t index = read_position_ % slots_.size();
  return slots_[index].doorbell.load(std::memory_order_acquire) != 0 ? int(index) : -1;
}

int DoorbellRing::consumer_wait(std::chrono::microseconds timeout,
                                const std::function<bool()>& keep_waiting) {
  // Polling with backoff: a short spin catches a producer that is about to ring, yields keep the
  // core usable, and sleeps bound the cost of an idle ring.
  constexpr int kSpins = 64, kYields = 64;
  constexpr auto kSleep = std::chrono::microseconds(50);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (int attempt = 0;; ++attempt) {
    if (int slot = consumer_peek(); slot >= 0) return slot;
    if (!keep_waiting()) return -1;
    if (attempt < kSpins) continue;
    if (std::chrono::steady_clock::now() >= deadline) return -1;
    if (attempt < kSpins + kYields)
      std::this_thread::yield();
    else
      std::this_thread::sleep_for(kSleep);
  }
}

void DoorbellRing::consumer_advance() {
  ++read_position_;
}

void DoorbellRing::rearm(int slot) {
  ++rearmed_;
  slots_[std::size_t(slot)].doorbell.store(0, std::memory_order_release);
  occupied_.fetch_sub(1, std::memory_order_relaxed);
}

void DoorbellRing::copy_into_slot(int slot, const void* buffer) {
  Slot& s = slots_[std::size_t(slot)];
  s.data = s.owned;
  std::memcpy(s.owned, buffer, slot_bytes_);
}

}  // namespace livedrp
