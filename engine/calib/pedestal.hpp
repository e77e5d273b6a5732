#pragma once
// Calibration constants from dark runs (no beam): per pixel and gain mode the pedestal (mean ADC
// reading) and the noise (rms about it), and a bad-pixel mask. `livedrp-engine pedestal` drives
// it; the file it writes is a constants file (docs/formats.md) with the noise and the reasons for
// the mask beside it.
//
// Every frame of a run is decoded as the calibration decodes it (calib::decode_raw): a Jungfrau
// reading goes to the gain stage its bits say, an ePix10ka reading to its pixel's configuration's
// mode (the low mode of AHL/AML when bit 14 is set). Readings are integers, so the sums are kept
// as exact integers, shifted by the pixel's first reading: mean and variance come out without
// rounding error whatever the number of frames (no Welford needed), and a constant reading has a
// variance of exactly 0.
//
// Bad pixels (bits of PedestalResult::bad_reason):
//   dead          no variation: variance exactly 0 in every mode it has two frames or more of;
//   noisy         noise above median + noisy_sigmas * 1.4826 MAD of the noise of its segment's
//                 pixels in that mode (robust: the bad pixels barely move median and MAD);
//   pedestal      pedestal further than pedestal_sigmas * 1.4826 MAD from its segment's median in
//                 that mode (hot pixels: a dark current far above the rest);
//   stuck gain    in more than stuck_fraction of its frames of a run, the gain bits are not the
//                 stage the run is forced to (the stage most readings of the run show);
//   no frames     a mode the pixel needs has no frame of it (its gain never reached that mode).
// The robust statistics leave out dead pixels and pixels with fewer than two frames in the mode.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "calib/constants.hpp"
#include "core/detector.hpp"

namespace livedrp {

class ThreadPool;

enum BadPixelReason : std::uint8_t {
  kBadDead = 1,
  kBadNoisy = 2,
  kBadPedestal = 4,
  kBadStuckGain = 8,
  kBadNoFrames = 16,
};
// "dead", "noisy", ... for each bit, in bit order.
const std::vector<std::string>& bad_pixel_reason_names();

struct PedestalOptions {
  // MAD-based sigmas beyond the segment's median. Noise estimates of N frames scatter by
  // 1/sqrt(2(N-1)) relative; 6 sigma leaves a healthy pixel flagged with probability ~1e-9 under
  // Gaussian statistics, so a 4-Mpixel detector of three modes keeps all its healthy pixels.
  double noisy_sigmas = 6.0;
  // Pedestals spread by the pixel-to-pixel variation of the amplifiers (hundreds of ADU); a hot
  // pixel sits thousands of ADU above them.
  double pedestal_sigmas = 10.0;
  // A pixel whose gain bits disagree with its run's forced stage in more than this fraction of
  // the run's frames is stuck. The odd invalid reading of a healthy Jungfrau pixel stays far below.
  double stuck_fraction = 0.5;
};

// One dark run as the accumulator saw it.
struct DarkRunSummary {
  std::string name;
  std::uint64_t frames = 0;
  // The gain stage the run's readings show most (the stage it was forced to): Jungfrau "G0",
  // "G1", "G2" (the mode's name); ePix10ka "auto pixels in high gain" or "auto pixels forced to
  // low gain"; empty when no pixel could tell (an ePix10ka of fixed configurations only).
  std::string stage;
  std::uint64_t invalid_gain_readings = 0;  // Jungfrau readings with the gain bits 10
  std::size_t stuck_pixels = 0;             // pixels stuck in this run
};

struct PedestalResult {
  int modes = 0;
  std::size_t pixels = 0;
  std::vector<float> pedestal;               // [modes][pixels], ADU; 0 where no frames
  std::vector<float> noise;                  // [modes][pixels], ADU rms; 0 where fewer than 2
  std::vector<std::uint32_t> frames;         // [modes][pixels]: readings that went into it
  std::vector<std::uint8_t> needed;          // [modes][pixels]: 1 where the pixel needs the mode
  std::vector<std::uint8_t> bad_reason;      // [pixels]: BadPixelReason bits, 0 = good
  std::vector<std::uint8_t> config;          // [pixels]: ePix10ka configuration; empty otherwise
  std::vector<std::uint64_t> mode_readings;  // [modes]: readings over all pixels
  std::vector<DarkRunSummary> runs;

  std::size_t masked() const;
  std::size_t count(BadPixelReason reason) const;
};

// Throws InputError, saying why, unless the detector's raw words sit on a pedestal that a dark run
// measures: ePix10ka and Jungfrau ADC words do; float32 data is calibrated already, and integer
// images are counts (or values converted upstream) with no baseline left to measure.
void require_pedestal_detector(const DetectorDescription& detector);

// Feeds frames of one dark run after another and computes the result. Memory: per pixel 22 bytes
// for each of its slots (Jungfrau 3, ePix10ka 2: the configuration's mode and its low mode) plus
// 16 bytes of per-run gain-bit counts.
class PedestalAccumulator {
 public:
  // `config`: the ePix10ka gain configuration of every pixel (0..4), required for that detector;
  // ignored for the others. Throws InputError for a detector without raw gain modes (float32).
  PedestalAccumulator(const DetectorDescription& detector, std::vector<std::uint8_t> config,
                      ThreadPool* pool = nullptr);
  ~PedestalAccumulator();

  void begin_run(const std::string& name);
  // `raw`: detector.raw_event_bytes() bytes of one frame.
  void add_frame(const void* raw);
  void end_run();

  // Throws InputError when a mode some pixels need has no frame at all (naming the mode and the
  // dark run that would give it).
  PedestalResult finish(const PedestalOptions& options) const;

 private:
  struct State;
  std::unique_ptr<State> s_;
};

// The constants the calibration reads: the result's pedestals, `gain` ([modes][pixels]) as given,
// the ePix10ka configuration, and the mask (bad_reason != 0).
CalibrationConstants pedestal_constants(const DetectorDescription& detector,
                                        const PedestalResult& result,
                                        const std::vector<float>& gain);

// Writes the constants file (save_constants_hdf5) plus /noise (float32 [modes][segments][rows]
// [cols]), /frames (uint32, same shape), /bad_pixel_reason (uint8 [segments][rows][cols]) and the
// string attributes on the root group given in `attributes` (command line, inputs, gain source).
void save_pedestal_hdf5(const std::filesystem::path& path, const DetectorDescription& detector,
                        const CalibrationConstants& constants, const PedestalResult& result,
                        const std::map<std::string, std::string>& attributes);

}  // namespace livedrp
