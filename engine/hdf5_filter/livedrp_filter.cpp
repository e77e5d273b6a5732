#include "hdf5_filter/livedrp_filter.hpp"

#include <cstring>

#include "codec/codec.hpp"
#include "core/error.hpp"

namespace livedrp::hdf5_filter {
namespace {

unsigned cd_value(const unsigned* cd, std::size_t count, CdIndex index, unsigned fallback) {
  return index < count ? cd[index] : fallback;
}

double bound_of(const unsigned* cd, std::size_t count) {
  const std::uint64_t bits = std::uint64_t(cd_value(cd, count, kCdBoundLow, 0)) |
                             std::uint64_t(cd_value(cd, count, kCdBoundHigh, 0)) << 32;
  double bound;
  std::memcpy(&bound, &bits, sizeof bound);
  return bound;
}

}  // namespace

std::vector<unsigned> filter_parameters(bool lossy, double error_bound,
                                        std::uint32_t codec_chunk_bytes) {
  std::uint64_t bits;
  std::memcpy(&bits, &error_bound, sizeof bits);
  return {kCdValuesVersion,
          unsigned(lossy ? codec::Codec::Lossy : codec::Codec::Lossless),
          0,
          codec_chunk_bytes,
          unsigned(bits & 0xFFFFFFFFu),
          unsigned(bits >> 32),
          0};
}

std::vector<std::uint8_t> encode_chunk(const unsigned* cd, std::size_t cd_count,
                                       const std::uint8_t* bytes, std::size_t size) {
  if (cd_value(cd, cd_count, kCdVersion, kCdValuesVersion) != kCdValuesVersion)
    throw InputError("livedrp filter: parameters of version " + std::to_string(cd[kCdVersion]) +
                     ", this plugin reads version " + std::to_string(kCdValuesVersion));
  const unsigned dtype = cd_value(cd, cd_count, kCdDType, 0);
  if (dtype != unsigned(codec::DType::UInt16) && dtype != unsigned(codec::DType::Float32))
    throw InputError("livedrp filter: the element type is not set (uint16 or float32 datasets)");
  codec::CodecParams params;
  const unsigned codec = cd_value(cd, cd_count, kCdCodec, unsigned(codec::Codec::Lossless));
  if (codec != unsigned(codec::Codec::Lossless) && codec != unsigned(codec::Codec::Lossy))
    throw InputError("livedrp filter: codec " + std::to_string(codec) +
                     " is neither 1 (lossless) nor 2 (lossy)");
  params.codec = codec::Codec(codec);
  params.error_bound = params.codec == codec::Codec::Lossy ? bound_of(cd, cd_count) : 0.0;
  if (const unsigned chunk = cd_value(cd, cd_count, kCdChunkBytes, 0)) params.chunk_bytes = chunk;
  const codec::DType type = codec::DType(dtype);
  if (size % codec::element_bytes(type) != 0)
    throw InputError("livedrp filter: a chunk of " + std::to_string(size) +
                     " bytes is not whole elements of " + codec::to_string(type));
  return codec::compress_flat_cpu(bytes, type, size / codec::element_bytes(type), params);
}

std::vector<std::uint8_t> decode_chunk(const unsigned* cd, std::size_t cd_count,
                                       const std::uint8_t* bytes, std::size_t size) {
  codec::DecodedArray decoded = codec::decompress_cpu(bytes, size);
  const unsigned expected = cd_value(cd, cd_count, kCdRawChunkBytes, 0);
  if (expected != 0 && decoded.bytes.size() != expected)
    throw InputError("livedrp filter: the chunk decodes to " +
                     std::to_string(decoded.bytes.size()) + " bytes, the dataset's chunks hold " +
                     std::to_string(expected));
  const unsigned dtype = cd_value(cd, cd_count, kCdDType, 0);
  if (dtype != 0 && dtype != unsigned(decoded.info.dtype))
    throw InputError(std::string("livedrp filter: the chunk holds ") +
                     codec::to_string(decoded.info.dtype) + ", the dataset " +
                     codec::to_string(codec::DType(dtype)));
  return std::move(decoded.bytes);
}

}  // namespace livedrp::hdf5_filter
