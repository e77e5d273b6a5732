#pragma once
// The device-resident source and its consumers: events are written into a ring in GPU memory and
// announced by a doorbell word per slot; consumers wait for the doorbell on the device, calibrate,
// write a result record into a pinned host ring and re-arm the slot. No host work per event in the
// persistent and device-graph modes. This is the LCLS-II GPU DAQ's shape, with a producer kernel
// in place of the FPGA's DMA.
//
//   producer kernel        takes sequence numbers in order (atomic ticket), waits until the slot is
//                          re-armed and the host has room for the result, writes the event's raw
//                          words into the slot (Copy: from a pool of simulated events in device
//                          memory; InPlace: the slot already holds them, written once at set-up, as
//                          an external DMA engine would have), then the header, then the doorbell
//                          (sequence + 1, a release store), at a set rate or flat out.
//   consumers, by LaunchMode
//     Persistent           one resident kernel: blocks take tiles of events in order (atomic
//                          ticket), wait for the tile's doorbell, calibrate it; the block finishing
//                          an event's last tile writes its result and re-arms the slot.
//     DeviceGraph          per lane a CUDA graph [wait for doorbell -> calibrate -> finish] whose
//                          last kernel relaunches the graph from the device (tail launch); lane l
//                          takes events l, l + lanes, ...
//     Graph, Plain         the same three kernels, replayed as a host-launched graph or launched
//                          plainly, enqueued ahead by the host (no host wait per event; the host
//                          only keeps the queues filled) — the comparison points.
//
// Results come back in a pinned, device-mapped ring indexed by sequence number; each record is
// written fully, then published with a system-scope fence and its `ready` word, and the host reads
// them in sequence order (so the ring itself is the reorder stage). Timestamps are the device's
// %globaltimer (ns); to_host_ns maps them onto the host's steady clock.
//
// Stages after calibration (ResidentStages, launched modes only): each lane calibrates into its
// own image buffer and records, behind the calibration, the stages configured: the codec
// (lossless: the raw event, copied from its slot; lossy: the calibrated image) into the lane's
// output, the integrator's bin values, and peakfinder8's list (compacted on the device), each
// followed by a %globaltimer stamp. A publish kernel then copies the lane's results into the
// event's entry of a pinned, mapped payload ring (stamps, compressed size, bin values, the peak
// list's header and its stored peaks only) and the compressed stream into the event's entry of
// a device arena, both indexed by sequence like the result ring; the finish kernel marks the
// record ready after them. A result's payload stays valid until the next call of next_result,
// which is when the host acknowledges it to the producer.
//
// Plain C++ interface (no CUDA headers).
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "calib/calibration_math.hpp"
#include "calib/constants.hpp"
#include "codec/codec.hpp"
#include "core/detector.hpp"
#include "exec/stream_config.hpp"
#include "integrate/integrator.hpp"
#include "peaks/peakfinder8.hpp"

namespace livedrp::gpu {

enum class ProducerMode { Copy, InPlace };
std::string_view to_string(ProducerMode mode);

// What each event goes through after calibration, on the device (all off: calibration only).
// The persistent consumer calibrates only; the launched modes carry every stage.
struct ResidentStages {
  std::optional<codec::CodecParams> compression;    // Lossless: raw words; Lossy: calibrated
  std::optional<integrate::Integrator> integrator;  // layout_from_detector(detector)
  std::optional<peaks::PeakFinder8> peak_finder;    // slab_layout(detector)
  bool any() const { return compression || integrator || peak_finder; }
};

// Device-clock stamps of one event's stages (ResidentResult::stamps), 0 where a stage is off.
enum ResidentStamp : int {
  kStampStart = 0,   // the lane saw the doorbell
  kStampCalibrated,  // calibration done
  kStampCompressed,  // compression done
  kStampIntegrated,  // integration done
  kStampSearched,    // peak finding done
  kResidentStamps
};

struct ResidentConfig {
  LaunchMode launch = LaunchMode::Persistent;
  int lanes = 1;        // DeviceGraph / Graph / Plain: concurrent lanes (streams), 1..16
  int ring_slots = 32;  // device ring slots (events in flight), 2..1024
  ProducerMode producer = ProducerMode::Copy;
  int producer_blocks = 0;   // 0: chosen by mode (Copy 32, InPlace 16)
  double rate_hz = 0;        // 0: flat out
  std::uint64_t events = 0;  // stop after this many; 0: until stop()
  bool checksum = false;     // per-event checksum of the calibrated image (calib/output_checksum)
  std::uint64_t first_pulse_id = 1'000'000;
  std::uint64_t pulses_per_event = 3;
  calib::CalibrationParams params;
  ResidentStages stages;
  // Tests only: the publish kernel executes a trap instruction at this event, so that a fault in
  // a stage's kernels can be shown to be reported (with CUDA's text) rather than hang.
  std::uint64_t trap_at_event = ~std::uint64_t(0);
};

// One event's result as the device wrote it.
struct ResidentResult {
  std::uint64_t sequence = 0;
  std::uint64_t pulse_id = 0;
  std::uint64_t doorbell_ns = 0;  // device clock: when the producer rang the doorbell
  std::uint64_t done_ns = 0;      // device clock: when the consumer finished the event
  std::uint64_t checksum = 0;     // 0 unless ResidentConfig::checksum
  int slot = 0;                   // device ring slot
  int lane = 0;                   // consumer lane (0 for Persistent)
  std::int64_t seen_host_ns = 0;  // host steady clock when next_result returned it
  // With stages (valid until the next call of next_result): each stage's end on the device clock,
  // the compressed stream's size (0: compression off), and where the payload lies.
  std::array<std::uint64_t, kResidentStamps> stamps{};
  std::uint64_t compressed_bytes = 0;
  const void* payload = nullptr;
  // The event's raw words and calibrated pixels (detector.pixels() floats) when it was the
  // event a request_snapshot() was granted to; null otherwise. Valid until the next next_result.
  const std::uint8_t* snapshot_raw = nullptr;
  const float* snapshot_image = nullptr;
  // Microseconds from the previous stamp to `stamp` (a stage's time in its lane); 0 when off.
  double stage_us(ResidentStamp stamp) const {
    if (stamp == kStampStart || stamps[stamp] == 0) return 0;
    int previous = stamp - 1;
    while (previous > kStampStart && stamps[std::size_t(previous)] == 0) --previous;
    return double(stamps[stamp] - stamps[std::size_t(previous)]) * 1e-3;
  }
};

class ResidentPipeline {
 public:
  // `pool`: distinct raw events (detector.raw_event_bytes() each); event s is pool[s %
  // pool.size()]. InPlace needs ring_slots to be a multiple of pool.size(), so that every slot
  // always holds the same pool event. Throws InputError for a bad configuration, RuntimeFault on a
  // CUDA error (out of memory included). Allocates everything here; nothing runs until start().
  ResidentPipeline(const DetectorDescription& detector, const CalibrationConstants& constants,
                   const std::vector<std::vector<std::uint8_t>>& pool,
                   const ResidentConfig& config);
  ~ResidentPipeline();  // stops and drains if still running
  ResidentPipeline(const ResidentPipeline&) = delete;
  ResidentPipeline& operator=(const ResidentPipeline&) = delete;

  // Launches the producer and the consumers. Once only.
  void start();
  // The next result in sequence order. With `block`, waits for it; nullopt when every event of
  // the run has been returned (or, without `block`, none is ready yet). Throws RuntimeFault on a
  // CUDA error, or when no result came for `stall_timeout_s` while events were still owed.
  std::optional<ResidentResult> next_result(bool block, double stall_timeout_s = 10.0);
  // Asks for one event's raw words and calibrated image on the host (the `image` topic's sample):
  // the next event whose kernels the host enqueues has them copied, on its lane, before its slot
  // is released, and its result carries them (ResidentResult::snapshot_*). One at a time: a
  // request while one is outstanding is the same request. Graph and Plain lanes only (the host
  // enqueues their events); false for Persistent and DeviceGraph, whose events the host never
  // sees before their results.
  bool request_snapshot();
  // Asks the producer to stop; events it already announced are still processed and returned by
  // next_result. Returns at once; next_result(true) returns nullopt once all are back.
  void request_stop();
  // request_stop, then waits for the kernels to finish (drains the results not yet read).
  void stop();

  // Events the run will deliver: known once the producer has finished (after request_stop or
  // with a fixed count), else nullopt.
  std::optional<std::uint64_t> final_count() const;
  std::uint64_t results_returned() const { return returned_; }
  // Sequence numbers the producer has claimed so far (events announced or about to be): a small
  // device-to-host copy, for statistics a few times a second, not per event.
  std::uint64_t announced() const;
  // Device-clock nanoseconds to host steady-clock nanoseconds (offset measured at start()).
  std::int64_t to_host_ns(std::uint64_t device_ns) const;

  // A result's stage outputs, read from its payload (valid until the next next_result call).
  // Each throws InputError when its stage is off.
  integrate::Profile profile(const ResidentResult& result) const;
  peaks::PeakList peaks(const ResidentResult& result) const;
  // The compressed stream, copied from the device arena (a writer's or a test's read; it waits
  // for the copy).
  std::vector<std::uint8_t> compressed(const ResidentResult& result) const;
  std::size_t device_bytes() const;  // GPU memory this pipeline allocated
  const ResidentConfig& config() const { return config_; }
  std::string describe() const;  // "persistent, ring 32, producer copy, flat out"

  // The device's coordination words (tickets, limit, doorbells of the first slots), for error
  // messages; "unavailable: ..." when the device cannot be read.
  std::string diagnostics() const;

  struct State;  // CUDA objects (resident_pipeline.cu)

 private:
  // Tells every kernel to leave its loops, and waits (bounded) until they have. If they have not
  // after 10 s, the device memory is deliberately not freed, since freeing would wait for them.
  void abort_and_wait();

  ResidentConfig config_;
  std::unique_ptr<State> state_;
  std::uint64_t returned_ = 0;
  bool started_ = false;
};

}  // namespace livedrp::gpu
