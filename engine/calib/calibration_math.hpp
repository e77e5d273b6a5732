#pragma once
// The per-pixel and per-bank-row math of calibration, written once for both backends.
//
//   value = (adc - pedestal[mode][pixel] - common_mode) * gain[mode][pixel],   0 where masked
//
// `mode` comes from the raw word (and, for the ePix10ka, the pixel's gain configuration); the
// common mode is the median of (adc - pedestal) over the quiet pixels of one bank row (a run of
// `bank_columns` pixels of one segment row read out by one ADC bank). It is an electronic baseline
// shift, so it is estimated and subtracted in ADU, before the gain.
//
// Arithmetic is single precision on both backends. The expression has no multiply-add shape, so
// floating-point contraction cannot change it and the CUDA results equal the CPU ones bit for bit.
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "core/host_device.hpp"
#include "core/raw_encoding.hpp"

namespace livedrp::calib {

// Per-pixel status byte of the calibration constants.
inline constexpr std::uint8_t kStatusMasked = 0x80;      // bad pixel: output 0
inline constexpr std::uint8_t kStatusConfigBits = 0x07;  // ePix10ka gain configuration, below

// ePix10ka per-pixel gain configuration (the low bits of the status byte).
enum Epix10kaConfig : std::uint8_t {
  kConfigFH = 0,
  kConfigFM = 1,
  kConfigFL = 2,
  kConfigAHL = 3,
  kConfigAML = 4
};
// ePix10ka gain modes: index of the pedestal and gain planes. Auto modes switch to their low gain
// when the pixel's charge crossed the switching point, which the raw word shows in bit 14.
enum Epix10kaMode : int {
  kFH = 0,
  kFM = 1,
  kFL = 2,
  kAHL_H = 3,
  kAML_M = 4,
  kAHL_L = 5,
  kAML_L = 6
};
inline constexpr int kEpix10kaModes = 7;
inline constexpr int kJungfrauModes = 3;

inline constexpr std::uint16_t kAdcBits = 0x3FFF;  // 14 ADC bits of both uint16 encodings
inline constexpr int kMaxBankColumns = 64;         // widest bank row (Jungfrau: 64 columns)

struct PedestalGain {
  float pedestal;  // ADU
  float gain;      // output unit (keV) per ADU
};

struct DecodedPixel {
  float adc;  // ADC value (the calibrated value for float32, the count for integer images)
  int mode;   // index into the pedestal and gain planes
  bool bad;   // masked by the constants or by the raw word (Jungfrau gain bits 10, bad config,
              // an integer image's marker value)
};

// Calibration settings that can change while a run goes.
struct CalibrationParams {
  bool common_mode = true;
  // A pixel is quiet (used for the common mode) when |adc - pedestal| is below this, in ADU:
  // a few times the electronic noise, well under one photon in high gain.
  float common_mode_threshold_adu = 40.0f;
  // Fewer quiet pixels than this in a bank row: the median is not trusted and no correction is
  // made.
  int common_mode_min_pixels = 8;
};

// The ePix10ka's mode for (gain configuration, bit 14 of the raw word), one 4-bit entry per pair
// at nibble 2 * config + bit: a table lookup instead of a branch per pixel (on the GPU a switch
// compiled to a tree of branches per pixel and dominated the calibration's instruction count).
// 0xF: a configuration value the detector does not have (configurations 5-7).
inline constexpr std::uint64_t kEpix10kaModeTable =
    (std::uint64_t(kFH) << 0) | (std::uint64_t(kFH) << 4) |          // FH: fixed high
    (std::uint64_t(kFM) << 8) | (std::uint64_t(kFM) << 12) |         // FM: fixed medium
    (std::uint64_t(kFL) << 16) | (std::uint64_t(kFL) << 20) |        // FL: fixed low
    (std::uint64_t(kAHL_H) << 24) | (std::uint64_t(kAHL_L) << 28) |  // AHL: high, switched low
    (std::uint64_t(kAML_M) << 32) | (std::uint64_t(kAML_L) << 36) |  // AML: medium, switched low
    (std::uint64_t(0xFFFFFF) << 40);                                 // 5, 6, 7: not a configuration

LIVEDRP_HD DecodedPixel decode_epix10ka(std::uint16_t raw, std::uint8_t status) {
  const unsigned index = (unsigned(status & kStatusConfigBits) << 1) | ((raw >> 14) & 1u);
  const unsigned entry = unsigned(kEpix10kaModeTable >> (4 * index)) & 0xFu;
  const bool no_such_config = entry == 0xFu;
  return {float(raw & kAdcBits), no_such_config ? 0 : int(entry),
          (status & kStatusMasked) != 0 || no_such_config};
}

LIVEDRP_HD DecodedPixel decode_jungfrau(std::uint16_t raw, std::uint8_t status) {
  // Gain stage bits 15:14: 00 -> g0, 01 -> g1, 11 -> g2, 10 -> not a valid stage (bad).
  const unsigned stage = raw >> 14;
  const int mode = stage == 0u ? 0 : stage == 1u ? 1 : stage == 3u ? 2 : 0;
  const bool bad = (status & kStatusMasked) != 0 || stage == 2u;
  return {float(raw & kAdcBits), mode, bad};
}

LIVEDRP_HD DecodedPixel decode_float32(float value, std::uint8_t status) {
  return {value, 0, (status & kStatusMasked) != 0};
}

// Integer images (Dectris Eiger/Pilatus counts, Jungfraujoch frames): the value, converted to
// float (rounded to nearest above 2^24, as on the device), in the one mode. The detector writes a
// marker where it has no value: Eiger the all-ones word of its bit depth for gap, defective and
// saturated pixels; Jungfraujoch's int32 frames INT32_MIN for masked or erroneous pixels and
// INT32_MAX for saturated ones (a lower bound, not a value). All ones of an int32 is -1, a value
// converted Jungfrau data may hold, so it marks nothing there.
inline constexpr std::uint16_t kUint16Marker = 0xFFFFu;
inline constexpr std::uint32_t kUint32Marker = 0xFFFFFFFFu;
inline constexpr std::int32_t kInt32ErrorMarker = -2147483647 - 1;  // INT32_MIN
inline constexpr std::int32_t kInt32SaturatedMarker = 2147483647;   // INT32_MAX

LIVEDRP_HD DecodedPixel decode_uint16(std::uint16_t raw, std::uint8_t status) {
  return {float(raw), 0, (status & kStatusMasked) != 0 || raw == kUint16Marker};
}

LIVEDRP_HD DecodedPixel decode_uint32(std::uint32_t raw, std::uint8_t status) {
  return {float(raw), 0, (status & kStatusMasked) != 0 || raw == kUint32Marker};
}

LIVEDRP_HD DecodedPixel decode_int32(std::int32_t raw, std::uint8_t status) {
  return {
      float(raw), 0,
      (status & kStatusMasked) != 0 || raw == kInt32ErrorMarker || raw == kInt32SaturatedMarker};
}

// Raw offset from the pedestal, in ADU.
LIVEDRP_HD float pedestal_offset(DecodedPixel pixel, PedestalGain constants) {
  return pixel.adc - constants.pedestal;
}

// Both conditions are evaluated (`&`, not `&&`): no branch per pixel on the GPU.
LIVEDRP_HD bool is_quiet(DecodedPixel pixel, float offset, float threshold_adu) {
  return !pixel.bad & (std::fabs(offset) < threshold_adu);
}

LIVEDRP_HD float calibrated_value(DecodedPixel pixel, float offset, float common_mode,
                                  PedestalGain constants) {
  return pixel.bad ? 0.0f : (offset - common_mode) * constants.gain;
}

// Median from the two middle order statistics of `count` sorted values: lower = v[(n-1)/2],
// upper = v[n/2] (the same element when n is odd). Both backends find these two elements by their
// own means and combine them here; with too few quiet pixels the bank row is left uncorrected.
LIVEDRP_HD float common_mode_from_order_statistics(float lower, float upper, int count,
                                                   int min_pixels) {
  if (count < min_pixels || count == 0) return 0.0f;
  return 0.5f * (lower + upper);
}

// Reads pixel `index` of a raw event and decodes it.
LIVEDRP_HD DecodedPixel decode_raw(RawEncoding encoding, const void* raw, std::size_t index,
                                   std::uint8_t status) {
  switch (encoding) {
    case RawEncoding::Epix10ka:
      return decode_epix10ka(static_cast<const std::uint16_t*>(raw)[index], status);
    case RawEncoding::Jungfrau:
      return decode_jungfrau(static_cast<const std::uint16_t*>(raw)[index], status);
    case RawEncoding::Uint16:
      return decode_uint16(static_cast<const std::uint16_t*>(raw)[index], status);
    case RawEncoding::Uint32:
      return decode_uint32(static_cast<const std::uint32_t*>(raw)[index], status);
    case RawEncoding::Int32:
      return decode_int32(static_cast<const std::int32_t*>(raw)[index], status);
    case RawEncoding::Float32:
    default:
      return decode_float32(static_cast<const float*>(raw)[index], status);
  }
}

}  // namespace livedrp::calib
