#include "cuda/codec/resident_queue.hpp"

#include <cuda_runtime.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "core/error.hpp"

namespace livedrp::gpu {

using codec_kernels::ResidentHostControl;
using codec_kernels::ResidentJob;
using codec_kernels::ResidentResult;

namespace {

using Clock = std::chrono::steady_clock;

// Spins (with the CPU's pause hint), yielding now and then: a result is usually microseconds
// away, and a sleeping thread would add the scheduler's wake-up to every job. The deadline is read
// every 256 rounds; `failed` (which throws on a kernel failure) runs about once a millisecond: it
// asks the CUDA driver, whose lock every host thread shares, and asked on every few rounds it made
// 16 waiting threads slower than one.
template <class Done, class Failed>
bool poll_until(Done done, Failed failed, double timeout_s) {
  const auto start = Clock::now();
  const auto deadline = start + std::chrono::duration<double>(timeout_s);
  auto next_check = start + std::chrono::milliseconds(1);
  for (unsigned round = 1;; ++round) {
    if (done()) return true;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
    if (round % 256 == 0) {
      const auto now = Clock::now();
      if (now >= next_check) {
        failed();
        next_check = now + std::chrono::milliseconds(1);
        std::this_thread::yield();
      }
      if (now > deadline) return done();
    }
  }
}

// The free work slots: a bounded lock-free queue for many producers and consumers (D. Vyukov's
// design: each cell's sequence number says whether it is ready to be written or read on the
// current lap), so that threads taking and returning slots never sleep on a lock.
class FreeSlots {
 public:
  explicit FreeSlots(int slots) {
    std::size_t capacity = 1;
    while (capacity < std::size_t(slots)) capacity *= 2;
    cells_ = std::vector<Cell>(capacity);
    mask_ = capacity - 1;
    for (std::size_t i = 0; i < capacity; ++i) cells_[i].sequence.store(i);
    for (int k = 0; k < slots; ++k) push(k);
  }
  void push(int slot) {
    std::size_t at = tail_.load(std::memory_order_relaxed);
    for (;;) {
      Cell& cell = cells_[at & mask_];
      const std::size_t sequence = cell.sequence.load(std::memory_order_acquire);
      if (sequence == at) {
        if (tail_.compare_exchange_weak(at, at + 1, std::memory_order_relaxed)) {
          cell.slot = slot;
          cell.sequence.store(at + 1, std::memory_order_release);
          return;
        }
      } else {
        // Another thread took this cell (never full: each slot is pushed once per pop, and the
        // cells are at least as many as the slots).
        at = tail_.load(std::memory_order_relaxed);
      }
    }
  }
  // A free slot, or -1 when none is.
  int pop() {
    std::size_t at = head_.load(std::memory_order_relaxed);
    for (;;) {
      Cell& cell = cells_[at & mask_];
      const std::size_t sequence = cell.sequence.load(std::memory_order_acquire);
      if (sequence == at + 1) {
        if (head_.compare_exchange_weak(at, at + 1, std::memory_order_relaxed)) {
          const int slot = cell.slot;
          cell.sequence.store(at + mask_ + 1, std::memory_order_release);
          return slot;
        }
      } else if (sequence < at + 1) {
        return -1;  // empty
      } else {
        at = head_.load(std::memory_order_relaxed);
      }
    }
  }

 private:
  struct alignas(64) Cell {
    std::atomic<std::size_t> sequence{0};
    int slot = -1;
  };
  std::vector<Cell> cells_;
  std::size_t mask_ = 0;
  alignas(64) std::atomic<std::size_t> head_{0};
  alignas(64) std::atomic<std::size_t> tail_{0};
};

template <class T>
std::atomic_ref<T> shared_word(T& word) {
  return std::atomic_ref<T>(word);
}

}  // namespace

struct ResidentQueue::State {
  Stream stream;
  MappedHostBuffer jobs, results, control;
  DeviceBuffer device_jobs, device_done, words;  // words: ticket, limit
  std::vector<DeviceBuffer> owned;
  // Per work slot (a cache line each: neighbouring slots belong to different threads): the
  // sequence + 1 of the job holding it, 0 when free.
  struct alignas(64) Holder {
    std::atomic<std::uint64_t> sequence_plus_one{0};
  };
  std::vector<Holder> held_by;
  std::unique_ptr<FreeSlots> free_slots;
  alignas(64) std::atomic<std::uint64_t> next_sequence{0};
  alignas(64) std::atomic<std::uint64_t> dispatched_seen{0};  // a past value of `dispatched`
  std::atomic<bool> stopped{false};
  bool launched = false, kernel_done = false, abandoned = false;

  ResidentJob* host_jobs() const { return static_cast<ResidentJob*>(jobs.host()); }
  ResidentResult* host_results() const { return static_cast<ResidentResult*>(results.host()); }
  ResidentHostControl* host_control() const {
    return static_cast<ResidentHostControl*>(control.host());
  }
};

ResidentQueue::ResidentQueue(std::string name, int work_slots)
    : name_(std::move(name)), slots_(work_slots) {
  if (work_slots < 32 || work_slots > 4096)
    throw InputError(name_ + ": ring_slots must be in [32, 4096], got " +
                     std::to_string(work_slots));
  use_device();
  state_ = std::make_unique<State>();
  State& s = *state_;
  const auto slots = std::size_t(work_slots);
  s.jobs = MappedHostBuffer(slots * sizeof(ResidentJob));
  s.results = MappedHostBuffer(slots * sizeof(ResidentResult));
  s.control = MappedHostBuffer(sizeof(ResidentHostControl));
  s.host_control()->stop_after = ~0ull;
  s.device_jobs = DeviceBuffer(slots * sizeof(ResidentJob));
  s.device_done = DeviceBuffer(slots * 8);
  s.words = DeviceBuffer(16);
  fill_async(s.device_jobs.get(), 0, s.device_jobs.bytes(), s.stream);
  fill_async(s.device_done.get(), 0, s.device_done.bytes(), s.stream);
  fill_async(s.words.get(), 0, 8, s.stream);                      // ticket
  fill_async(s.words.as<std::uint8_t>() + 8, 0xFF, 8, s.stream);  // limit: ~0
  s.held_by = std::vector<State::Holder>(slots);
  s.free_slots = std::make_unique<FreeSlots>(work_slots);
}

ResidentQueue::~ResidentQueue() {
  try {
    stop();
  } catch (...) {
    // stop() has abandoned the memory if it had to; a destructor has no one to tell.
  }
  if (state_ && state_->abandoned) (void)state_.release();
}

void* ResidentQueue::device_buffer(std::size_t bytes) {
  State& s = *state_;
  s.owned.emplace_back(bytes);
  fill_async(s.owned.back().get(), 0, bytes, s.stream);
  return s.owned.back().get();
}

codec_kernels::ResidentRing ResidentQueue::ring() const {
  const State& s = *state_;
  codec_kernels::ResidentRing r{};
  r.host_jobs = static_cast<const ResidentJob*>(s.jobs.device());
  r.host_control = static_cast<ResidentHostControl*>(s.control.device());
  r.host_results = static_cast<ResidentResult*>(s.results.device());
  r.device_jobs = s.device_jobs.as<ResidentJob>();
  r.device_done = s.device_done.as<unsigned long long>();
  r.ticket = s.words.as<unsigned long long>();
  r.limit = s.words.as<unsigned long long>() + 1;
  r.post_slots = unsigned(slots_);
  return r;
}

const Stream& ResidentQueue::stream() const {
  return state_->stream;
}

void ResidentQueue::launched() {
  state_->launched = true;
}

void ResidentQueue::check_kernel() const {
  const cudaError_t status = cudaStreamQuery(state_->stream.get());
  if (status != cudaSuccess && status != cudaErrorNotReady)
    throw RuntimeFault(name_ + ": the kernel failed: " + cudaGetErrorString(status));
}

ResidentTicket ResidentQueue::submit(const void* in, void* out, std::uint64_t in_bytes,
                                     std::uint64_t out_capacity, double timeout_s) {
  State& s = *state_;
  if (s.stopped.load(std::memory_order_acquire)) throw RuntimeFault(name_ + ": submit after stop");
  int slot = s.free_slots->pop();
  if (slot < 0 && !poll_until([&] { return (slot = s.free_slots->pop()) >= 0; },
                              [&] { check_kernel(); }, timeout_s))
    throw RuntimeFault(name_ + ": no work slot came free within " + std::to_string(timeout_s) +
                       " s: all " + std::to_string(slots_) +
                       " are held by jobs not yet collected with wait()");
  const std::uint64_t sequence = s.next_sequence.fetch_add(1, std::memory_order_relaxed);
  s.held_by[std::size_t(slot)].sequence_plus_one.store(sequence + 1, std::memory_order_relaxed);
  // The post entry is free once the job a ring turn earlier has been dispatched, which needs
  // nothing from the host but the jobs before it, all posted or about to be.
  const std::uint64_t entry = sequence % std::uint64_t(slots_);
  const std::uint64_t needed = sequence < std::uint64_t(slots_) ? 0 : sequence - slots_ + 1;
  // The device rewrites `dispatched` after every batch, so reading it costs a cache miss: a
  // count seen before that is already high enough saves it.
  const auto dispatched_enough = [&] {
    std::uint64_t seen = s.dispatched_seen.load(std::memory_order_acquire);
    if (seen >= needed) return true;
    const std::uint64_t now =
        shared_word(s.host_control()->dispatched).load(std::memory_order_acquire);
    while (seen < now && !s.dispatched_seen.compare_exchange_weak(seen, now)) {
    }
    return now >= needed;
  };
  const bool free =
      dispatched_enough() || poll_until(
                                 dispatched_enough, [&] { check_kernel(); }, timeout_s);
  if (!free) {
    // The sequence number is claimed but will never be posted: nothing after it can run.
    s.host_control()->abort = 1;
    throw RuntimeFault(name_ + ": the kernel did not take job " +
                       std::to_string(sequence - slots_) + " within " + std::to_string(timeout_s) +
                       " s (" + diagnostics() + "); aborted");
  }
  ResidentJob& job = s.host_jobs()[entry];
  job.in = static_cast<const std::uint8_t*>(in);
  job.out = static_cast<std::uint8_t*>(out);
  job.in_bytes = in_bytes;
  job.out_capacity = out_capacity;
  job.work_slot = std::uint64_t(slot);
  shared_word(job.ready).store(sequence + 1, std::memory_order_release);
  return {sequence, slot};
}

ResidentResult ResidentQueue::wait(const ResidentTicket& ticket, double timeout_s) {
  State& s = *state_;
  if (ticket.work_slot < 0 || ticket.work_slot >= slots_ ||
      s.held_by[std::size_t(ticket.work_slot)].sequence_plus_one.load(std::memory_order_relaxed) !=
          ticket.sequence + 1)
    throw InputError(name_ + ": job " + std::to_string(ticket.sequence) +
                     " was not submitted here, or was already collected");
  ResidentResult& record = s.host_results()[ticket.work_slot];
  const bool done = poll_until(
      [&] {
        return shared_word(record.ready).load(std::memory_order_acquire) == ticket.sequence + 1;
      },
      [&] { check_kernel(); }, timeout_s);
  if (!done)
    throw RuntimeFault(name_ + ": job " + std::to_string(ticket.sequence) + " not done within " +
                       std::to_string(timeout_s) + " s (" + diagnostics() + ")");
  const ResidentResult result = record;  // complete: its ready word was seen (acquire)
  // One collection per ticket, even when two threads wait for it at once.
  std::uint64_t holder = ticket.sequence + 1;
  if (!s.held_by[std::size_t(ticket.work_slot)].sequence_plus_one.compare_exchange_strong(
          holder, 0, std::memory_order_relaxed))
    throw InputError(name_ + ": job " + std::to_string(ticket.sequence) + " was already collected");
  s.free_slots->push(ticket.work_slot);
  return result;
}

void ResidentQueue::stop() {
  if (!state_ || !state_->launched || state_->kernel_done || state_->abandoned) return;
  State& s = *state_;
  s.stopped.store(true, std::memory_order_release);
  shared_word(s.host_control()->stop_after)
      .store(s.next_sequence.load(std::memory_order_acquire), std::memory_order_release);
  const auto finished = [&] { return cudaStreamQuery(s.stream.get()) != cudaErrorNotReady; };
  const auto wait_for = [&](auto limit, auto pause) {
    const auto deadline = Clock::now() + limit;
    while (!finished() && Clock::now() < deadline) std::this_thread::sleep_for(pause);
    return finished();
  };
  if (!wait_for(std::chrono::seconds(10), std::chrono::microseconds(100))) {
    s.host_control()->abort = 1;
    if (!wait_for(std::chrono::seconds(10), std::chrono::milliseconds(1))) {
      s.abandoned = true;
      throw RuntimeFault(name_ + ": the kernel did not finish within 20 s of stop (" +
                         diagnostics() + "); its memory is abandoned");
    }
  }
  s.kernel_done = true;
  check_kernel();
}

std::string ResidentQueue::diagnostics() const {
  const State& s = *state_;
  unsigned long long words[2] = {0, 0};
  // On a stream of its own: the kernel's stream is busy for as long as it runs.
  const Stream side;
  cudaError_t status =
      cudaMemcpyAsync(words, s.words.get(), sizeof(words), cudaMemcpyDeviceToHost, side.get());
  if (status == cudaSuccess) status = cudaStreamSynchronize(side.get());
  const std::string device =
      status != cudaSuccess
          ? std::string("device words unavailable: ") + cudaGetErrorString(status)
          : "tickets claimed " + std::to_string(words[0]) + ", limit " +
                (words[1] == ~0ull ? std::string("none yet") : std::to_string(words[1]));
  return "submitted " + std::to_string(s.next_sequence.load()) + ", dispatched " +
         std::to_string(shared_word(s.host_control()->dispatched).load()) + ", " + device;
}

}  // namespace livedrp::gpu
