#pragma once
#include <cstdint>

namespace livedrp {

// How a raw pixel word is laid out (decoded in calib/calibration_math.hpp).
enum class RawEncoding : std::uint8_t {
  Epix10ka,  // uint16: bit 14 gain bit, bits 13:0 ADC; the per-pixel configuration picks the mode
  Jungfrau,  // uint16: bits 15:14 gain stage (00 g0, 01 g1, 11 g2, 10 bad), bits 13:0 ADC
  Float32,   // float32, already calibrated; calibration applies only the mask
  Uint16,    // uint16 photon counts (photon-counting detectors: Eiger, Pilatus)
  Uint32,    // uint32 photon counts
  Int32,     // int32 photon counts (negative values flag pixels, as some senders do)
};

}  // namespace livedrp
