#pragma once
// What the compress stage reads of an event, decided once for every backend and feeding path.
#include "codec/codec_format.hpp"
#include "core/raw_encoding.hpp"

namespace livedrp::codec {

struct CompressionInput {
  DType dtype;
  bool calibrated_image;  // the calibrated float32 image; else the event's raw words
};

// Lossless keeps what a storage path would keep, the detector's own words: the uint16 words of
// the ePix10ka, the Jungfrau and uint16 images, the values of float32 detectors. The codec has no
// 32-bit integer element, so uint32 and int32 images give their calibrated float32 image instead
// (their counts, exact up to 2^24, marker pixels 0). Lossy reduces the calibrated image, whose
// unit the error bound is given in.
constexpr CompressionInput compression_input(RawEncoding encoding, Codec codec) {
  if (codec == Codec::Lossy) return {DType::Float32, true};
  switch (encoding) {
    case RawEncoding::Epix10ka:
    case RawEncoding::Jungfrau:
    case RawEncoding::Uint16:
      return {DType::UInt16, false};
    case RawEncoding::Float32:
      return {DType::Float32, false};
    case RawEncoding::Uint32:
    case RawEncoding::Int32:
      return {DType::Float32, true};
  }
  return {DType::Float32, true};
}

}  // namespace livedrp::codec
