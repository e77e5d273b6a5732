#include "calib/pedestal.hpp"

#include <algorithm>
#include <cmath>

#include <hdf5.h>

#include "calib/calibration_math.hpp"
#include "core/error.hpp"
#include "core/thread_pool.hpp"
#include "io/hdf5_handle.hpp"

namespace livedrp {
namespace {

using io::H5Handle;
using io::QuietHdf5Errors;

// MAD of a normal distribution times this is its standard deviation.
constexpr double kMadToSigma = 1.4826;
// Raw-word gain codes counted per pixel and run: Jungfrau bits 15:14 (0..3), ePix10ka bit 14.
constexpr int kGainCodes = 4;
constexpr unsigned kJungfrauInvalidCode = 2;  // bits 10

bool is_auto(std::uint8_t config) {
  return config == calib::kConfigAHL || config == calib::kConfigAML;
}

// Median of `values` (reordered); the mean of the two middle values for an even count.
double median_of(std::vector<float>& values) {
  const std::size_t n = values.size();
  auto upper = values.begin() + std::ptrdiff_t(n / 2);
  std::nth_element(values.begin(), upper, values.end());
  const double high = *upper;
  if (n % 2 == 1) return high;
  const double low = *std::max_element(values.begin(), upper);
  return 0.5 * (low + high);
}

struct RobustSpread {
  double median = 0;
  double sigma = 0;  // 1.4826 MAD; 0 when there are no values or no spread
};
RobustSpread robust_spread(std::vector<float> values) {
  RobustSpread r;
  if (values.empty()) return r;
  r.median = median_of(values);
  for (float& v : values) v = float(std::fabs(double(v) - r.median));
  r.sigma = kMadToSigma * median_of(values);
  return r;
}

void write_string_attribute(hid_t file, const std::string& path, const std::string& name,
                            const std::string& value) {
  H5Handle type(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(type.get(), value.size() + 1);
  H5Handle scalar(H5Screate(H5S_SCALAR), H5Sclose);
  if (H5Aexists(file, name.c_str()) > 0) H5Adelete(file, name.c_str());
  H5Handle attribute(
      H5Acreate2(file, name.c_str(), type.get(), scalar.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  if (!attribute.valid() || H5Awrite(attribute.get(), type.get(), value.c_str()) < 0)
    throw RuntimeFault("constants file " + path + ": cannot write the attribute " + name);
}

void write_plane(hid_t file, const std::string& path, const std::string& name,
                 const std::vector<hsize_t>& shape, hid_t file_type, hid_t memory_type,
                 const void* values) {
  H5Handle space(H5Screate_simple(int(shape.size()), shape.data(), nullptr), H5Sclose);
  H5Handle dataset(
      H5Dcreate2(file, name.c_str(), file_type, space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
      H5Dclose);
  if (!dataset.valid() ||
      H5Dwrite(dataset.get(), memory_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, values) < 0)
    throw RuntimeFault("constants file " + path + ": cannot write /" + name);
}

}  // namespace

const std::vector<std::string>& bad_pixel_reason_names() {
  static const std::vector<std::string> names = {"dead", "noisy", "pedestal", "stuck gain",
                                                 "no frames"};
  return names;
}

void require_pedestal_detector(const DetectorDescription& detector) {
  if (detector.encoding == RawEncoding::Float32)
    throw InputError("detector " + detector.name +
                     " holds calibrated float32 data: pedestals come from raw uint16 detectors "
                     "(ePix10ka, Jungfrau)");
  if (is_integer_image(detector.encoding))
    throw InputError(
        "detector " + detector.name + " delivers " + std::string(to_string(detector.encoding)) +
        " integer images: a photon-counting detector's threshold removes the electronic "
        "baseline in every pixel (and a converted frame has had its pedestal subtracted "
        "upstream), so a dark run has no pedestal to measure; its constants are pedestal 0, "
        "gain 1 and its mask (a constants file with /mask, and /gain for a flat field)");
}

std::size_t PedestalResult::masked() const {
  return std::size_t(
      std::count_if(bad_reason.begin(), bad_reason.end(), [](std::uint8_t r) { return r != 0; }));
}

std::size_t PedestalResult::count(BadPixelReason reason) const {
  return std::size_t(std::count_if(bad_reason.begin(), bad_reason.end(),
                                   [reason](std::uint8_t r) { return (r & reason) != 0; }));
}

// Per slot (a mode a pixel can be in: Jungfrau its 3 stages, ePix10ka its configuration's mode and,
// for the auto configurations, their low mode) and pixel, exact integer sums of the readings
// shifted by the first one.
struct PedestalAccumulator::State {
  DetectorDescription detector;
  RawEncoding encoding = RawEncoding::Float32;
  std::size_t pixels = 0;
  int slots = 0;
  std::vector<std::uint8_t> config;  // ePix10ka only
  ThreadPool* pool = nullptr;

  std::vector<std::uint32_t> n;
  std::vector<std::uint16_t> shift;
  std::vector<std::int64_t> sum;
  std::vector<std::uint64_t> sum_sq;

  // The run being fed: gain codes per pixel.
  bool in_run = false;
  DarkRunSummary run;
  std::vector<std::uint32_t> codes;  // [pixels][kGainCodes]
  // Per finished run: per pixel, the fraction of its frames not at the run's stage.
  std::vector<std::vector<float>> disagreement;
  std::vector<DarkRunSummary> runs;

  int slot_of(int mode) const {
    if (encoding == RawEncoding::Jungfrau) return mode;
    return mode == calib::kAHL_L || mode == calib::kAML_L ? 1 : 0;
  }
  // The mode of `slot` for pixel p, or -1 where the pixel has no such slot.
  int mode_of(int slot, std::size_t p) const {
    if (encoding == RawEncoding::Jungfrau) return slot;
    const std::uint8_t c = config[p];
    if (slot == 0) return int(c);  // FH FM FL AHL AML = modes FH FM FL AHL-H AML-M
    if (c == calib::kConfigAHL) return calib::kAHL_L;
    if (c == calib::kConfigAML) return calib::kAML_L;
    return -1;
  }
  bool tells_stage(std::size_t p) const {
    return encoding == RawEncoding::Jungfrau || is_auto(config[p]);
  }
};

PedestalAccumulator::PedestalAccumulator(const DetectorDescription& detector,
                                         std::vector<std::uint8_t> config, ThreadPool* pool)
    : s_(std::make_unique<State>()) {
  State& s = *s_;
  s.detector = detector;
  s.encoding = detector.encoding;
  s.pixels = detector.pixels();
  s.pool = pool;
  require_pedestal_detector(detector);
  if (s.encoding == RawEncoding::Epix10ka) {
    if (config.size() != s.pixels)
      throw InputError("detector " + detector.name + ": the gain configuration of its " +
                       std::to_string(s.pixels) + " pixels is needed, got " +
                       std::to_string(config.size()) + " values");
    for (std::size_t p = 0; p < s.pixels; ++p)
      if (config[p] > calib::kConfigAML)
        throw InputError("gain configuration " + std::to_string(int(config[p])) + " of pixel " +
                         std::to_string(p) + " is not one of 0..4 (FH FM FL AHL AML)");
    s.config = std::move(config);
    s.slots = 2;
  } else {
    s.slots = calib::kJungfrauModes;
  }
  const std::size_t cells = std::size_t(s.slots) * s.pixels;
  s.n.assign(cells, 0);
  s.shift.assign(cells, 0);
  s.sum.assign(cells, 0);
  s.sum_sq.assign(cells, 0);
}

PedestalAccumulator::~PedestalAccumulator() = default;

void PedestalAccumulator::begin_run(const std::string& name) {
  State& s = *s_;
  if (s.in_run) end_run();
  s.in_run = true;
  s.run = DarkRunSummary{};
  s.run.name = name;
  s.codes.assign(s.pixels * kGainCodes, 0);
}

void PedestalAccumulator::add_frame(const void* raw) {
  State& s = *s_;
  if (!s.in_run) begin_run("run " + std::to_string(s.runs.size() + 1));
  const auto* words = static_cast<const std::uint16_t*>(raw);
  auto body = [&s, words, raw](std::size_t begin, std::size_t end) {
    for (std::size_t p = begin; p < end; ++p) {
      const std::uint16_t word = words[p];
      const std::uint8_t status = s.config.empty() ? 0 : s.config[p];
      const calib::DecodedPixel pixel = calib::decode_raw(s.encoding, raw, p, status);
      const unsigned code = s.encoding == RawEncoding::Jungfrau ? word >> 14 : (word >> 14) & 1u;
      ++s.codes[p * kGainCodes + code];
      if (pixel.bad) continue;  // Jungfrau gain bits 10: no stage to put it in
      const std::size_t cell = std::size_t(s.slot_of(pixel.mode)) * s.pixels + p;
      const auto adc = std::uint16_t(word & calib::kAdcBits);
      if (s.n[cell] == 0) s.shift[cell] = adc;
      const std::int64_t d = std::int64_t(adc) - std::int64_t(s.shift[cell]);
      ++s.n[cell];
      s.sum[cell] += d;
      s.sum_sq[cell] += std::uint64_t(d * d);
    }
  };
  if (s.pool)
    s.pool->parallel_for(s.pixels, body);
  else
    body(0, s.pixels);
  ++s.run.frames;
}

void PedestalAccumulator::end_run() {
  State& s = *s_;
  if (!s.in_run) return;
  s.in_run = false;
  // The run's stage: the gain code most readings of the pixels that can show one have.
  std::uint64_t totals[kGainCodes] = {};
  for (std::size_t p = 0; p < s.pixels; ++p)
    if (s.tells_stage(p))
      for (int c = 0; c < kGainCodes; ++c) totals[c] += s.codes[p * kGainCodes + std::size_t(c)];
  if (s.encoding == RawEncoding::Jungfrau) {
    s.run.invalid_gain_readings = totals[kJungfrauInvalidCode];
    totals[kJungfrauInvalidCode] = 0;
  }
  const int stage_code = int(std::max_element(totals, totals + kGainCodes) - totals);
  std::vector<float> disagreement(s.pixels, 0.0f);
  if (s.run.frames > 0 && totals[stage_code] > 0) {
    if (s.encoding == RawEncoding::Jungfrau) {
      // Codes 00 01 11 are g0 g1 g2.
      const int mode = stage_code == 0 ? 0 : stage_code == 1 ? 1 : 2;
      s.run.stage = s.detector.gain_modes[std::size_t(mode)].name;
    } else {
      s.run.stage = stage_code == 0 ? "auto pixels in high gain" : "auto pixels forced to low gain";
    }
    for (std::size_t p = 0; p < s.pixels; ++p)
      if (s.tells_stage(p))
        disagreement[p] = float(1.0 - double(s.codes[p * kGainCodes + std::size_t(stage_code)]) /
                                          double(s.run.frames));
  }
  s.disagreement.push_back(std::move(disagreement));
  s.runs.push_back(s.run);
  s.codes.clear();
  s.codes.shrink_to_fit();
}

PedestalResult PedestalAccumulator::finish(const PedestalOptions& options) const {
  const State& s = *s_;
  if (s.in_run) throw InputError("pedestal: finish() during a run (call end_run() first)");
  const DetectorDescription& d = s.detector;
  const int modes = d.modes();
  const std::size_t pixels = s.pixels;
  PedestalResult r;
  r.modes = modes;
  r.pixels = pixels;
  r.pedestal.assign(std::size_t(modes) * pixels, 0.0f);
  r.noise.assign(std::size_t(modes) * pixels, 0.0f);
  r.frames.assign(std::size_t(modes) * pixels, 0);
  r.needed.assign(std::size_t(modes) * pixels, 0);
  r.bad_reason.assign(pixels, 0);
  r.config = s.config;
  r.mode_readings.assign(std::size_t(modes), 0);
  r.runs = s.runs;

  // Per mode: how many pixels need it, and whether any has frames of it.
  std::vector<std::size_t> needing(std::size_t(modes), 0);
  std::vector<std::uint8_t> zero_variance(pixels, 0), has_variance(pixels, 0);
  for (std::size_t p = 0; p < pixels; ++p) {
    for (int slot = 0; slot < s.slots; ++slot) {
      const int mode = s.mode_of(slot, p);
      if (mode < 0) continue;
      const std::size_t cell = std::size_t(slot) * pixels + p;
      const std::size_t out = std::size_t(mode) * pixels + p;
      r.needed[out] = 1;
      ++needing[std::size_t(mode)];
      const std::uint32_t n = s.n[cell];
      r.frames[out] = n;
      r.mode_readings[std::size_t(mode)] += n;
      if (n == 0) continue;
      r.pedestal[out] = float(double(s.shift[cell]) + double(s.sum[cell]) / double(n));
      if (n < 2) continue;
      // n * sum(d^2) - (sum d)^2, exactly: n (n - 1) times the sample variance.
      const __int128 scaled =
          __int128(n) * __int128(s.sum_sq[cell]) - __int128(s.sum[cell]) * __int128(s.sum[cell]);
      const double variance = double(scaled) / (double(n) * double(n - 1));
      r.noise[out] = float(std::sqrt(variance));
      (scaled == 0 ? zero_variance : has_variance)[p] = 1;
    }
  }
  for (int mode = 0; mode < modes; ++mode)
    if (needing[std::size_t(mode)] > 0 && r.mode_readings[std::size_t(mode)] == 0) {
      const std::string& name = d.gain_modes[std::size_t(mode)].name;
      const std::string run = s.encoding == RawEncoding::Jungfrau
                                  ? "the dark run taken with the gain forced to " + name
                              : (mode == calib::kAHL_L || mode == calib::kAML_L)
                                  ? "a dark run with the auto configurations forced to low gain"
                                  : "a dark run with pixels in that configuration";
      throw InputError("gain mode " + name + " (mode " + std::to_string(mode) +
                       ") has no frames; " + std::to_string(needing[std::size_t(mode)]) +
                       " pixels need it: give " + run);
    }

  for (std::size_t p = 0; p < pixels; ++p) {
    if (zero_variance[p] && !has_variance[p]) r.bad_reason[p] |= kBadDead;
    for (int mode = 0; mode < modes; ++mode) {
      const std::size_t out = std::size_t(mode) * pixels + p;
      if (r.needed[out] && r.frames[out] < 2) r.bad_reason[p] |= kBadNoFrames;
    }
    for (const std::vector<float>& run : s.disagreement)
      if (double(run[p]) > options.stuck_fraction) r.bad_reason[p] |= kBadStuckGain;
  }
  for (std::size_t i = 0; i < r.runs.size(); ++i)
    r.runs[i].stuck_pixels =
        std::size_t(std::count_if(s.disagreement[i].begin(), s.disagreement[i].end(),
                                  [&](float f) { return double(f) > options.stuck_fraction; }));

  // Noisy and pedestal outliers, against the robust spread of the segment's pixels in the mode.
  const std::size_t segment_pixels = d.pixels_per_segment();
  std::vector<float> noises, pedestals;
  for (int segment = 0; segment < d.segments; ++segment)
    for (int mode = 0; mode < modes; ++mode) {
      const std::size_t first = std::size_t(segment) * segment_pixels;
      const std::size_t plane = std::size_t(mode) * pixels;
      noises.clear();
      pedestals.clear();
      auto usable = [&](std::size_t p) {
        return r.needed[plane + p] && r.frames[plane + p] >= 2 && !(r.bad_reason[p] & kBadDead);
      };
      for (std::size_t p = first; p < first + segment_pixels; ++p)
        if (usable(p)) {
          noises.push_back(r.noise[plane + p]);
          pedestals.push_back(r.pedestal[plane + p]);
        }
      const RobustSpread noise = robust_spread(noises);
      const RobustSpread pedestal = robust_spread(pedestals);
      for (std::size_t p = first; p < first + segment_pixels; ++p) {
        if (!usable(p)) continue;
        if (noise.sigma > 0 &&
            double(r.noise[plane + p]) > noise.median + options.noisy_sigmas * noise.sigma)
          r.bad_reason[p] |= kBadNoisy;
        if (pedestal.sigma > 0 && std::fabs(double(r.pedestal[plane + p]) - pedestal.median) >
                                      options.pedestal_sigmas * pedestal.sigma)
          r.bad_reason[p] |= kBadPedestal;
      }
    }
  return r;
}

CalibrationConstants pedestal_constants(const DetectorDescription& detector,
                                        const PedestalResult& result,
                                        const std::vector<float>& gain) {
  CalibrationConstants c;
  c.modes = detector.modes();
  c.pixels = detector.pixels();
  if (result.pixels != c.pixels || result.modes != c.modes || gain.size() != result.pedestal.size())
    throw InputError("pedestal result or gains do not match detector " + detector.name);
  c.pedestal_gain.resize(result.pedestal.size());
  for (std::size_t i = 0; i < c.pedestal_gain.size(); ++i)
    c.pedestal_gain[i] = {result.pedestal[i], gain[i]};
  c.pixel_status.assign(c.pixels, calib::kConfigFH);
  for (std::size_t p = 0; p < c.pixels; ++p) {
    if (!result.config.empty()) c.pixel_status[p] = result.config[p];
    if (result.bad_reason[p]) c.pixel_status[p] |= calib::kStatusMasked;
  }
  return c;
}

void save_pedestal_hdf5(const std::filesystem::path& file_path, const DetectorDescription& detector,
                        const CalibrationConstants& constants, const PedestalResult& result,
                        const std::map<std::string, std::string>& attributes) {
  save_constants_hdf5(file_path, detector, constants);
  const std::string path = file_path.string();
  QuietHdf5Errors quiet;
  H5Handle file(H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT), H5Fclose);
  if (!file.valid()) throw RuntimeFault("cannot reopen constants file " + path);
  const hsize_t modes = hsize_t(detector.modes()), segments = hsize_t(detector.segments),
                rows = hsize_t(detector.rows), cols = hsize_t(detector.cols);
  write_plane(file.get(), path, "noise", {modes, segments, rows, cols}, H5T_IEEE_F32LE,
              H5T_NATIVE_FLOAT, result.noise.data());
  write_plane(file.get(), path, "frames", {modes, segments, rows, cols}, H5T_STD_U32LE,
              H5T_NATIVE_UINT32, result.frames.data());
  write_plane(file.get(), path, "bad_pixel_reason", {segments, rows, cols}, H5T_STD_U8LE,
              H5T_NATIVE_UINT8, result.bad_reason.data());
  for (const auto& [name, value] : attributes)
    write_string_attribute(file.get(), path, name, value);
}

}  // namespace livedrp
