#pragma once
#include <cstddef>
#include <cstdint>

namespace livedrp {

// How a raw pixel word is laid out (decoded in calib/calibration_math.hpp).
enum class RawEncoding : std::uint8_t {
  Epix10ka,  // uint16: bit 14 gain bit, bits 13:0 ADC; the per-pixel configuration picks the mode
  Jungfrau,  // uint16: bits 15:14 gain stage (00 g0, 01 g1, 11 g2, 10 bad), bits 13:0 ADC
  Float32,   // float32, already calibrated; calibration applies only the mask
  // Integer images (Dectris Eiger/Pilatus photon counts, PSI Jungfraujoch converted frames): the
  // value itself, one gain mode; a marker value makes the pixel bad (calibration_math.hpp).
  Uint16,  // 65535 (all ones) marks a gap, defective or saturated pixel
  Uint32,  // 4294967295 (all ones) marks a gap, defective or saturated pixel
  Int32,   // INT32_MIN marks a masked or erroneous pixel, INT32_MAX a saturated one
};

// Bytes of one raw pixel word.
constexpr std::size_t raw_word_bytes(RawEncoding encoding) {
  return encoding == RawEncoding::Float32 || encoding == RawEncoding::Uint32 ||
                 encoding == RawEncoding::Int32
             ? 4
             : 2;
}

// Integer images carry a value that needs no pedestal run and no common mode: counts of a
// photon-counting detector (its threshold removes the electronic baseline in the pixel) or values
// converted upstream.
constexpr bool is_integer_image(RawEncoding encoding) {
  return encoding == RawEncoding::Uint16 || encoding == RawEncoding::Uint32 ||
         encoding == RawEncoding::Int32;
}

}  // namespace livedrp
