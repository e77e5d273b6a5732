#pragma once
// The livedrp codec as an HDF5 filter (docs/formats.md, "The livedrp codec as an HDF5 filter"):
// every chunk of a filtered dataset is one whole compressed stream of the codec (the container of
// codec/container.hpp: header, chunk table, checksums, payload), so a chunk written with
// H5Dwrite_chunk from the live compression's output is decoded by H5Dread, h5dump or h5py once the
// plugin (liblivedrp_h5filter.so) is on HDF5_PLUGIN_PATH.
//
// Filter id 386: HDF5 sets 256..511 aside for testing and private filters (H5Zpublic.h); The HDF
// Group has given 305 (LZO) and 307 (BZIP2) of that range to PyTables, 386 to nobody.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace livedrp::hdf5_filter {

inline constexpr int kFilterId = 386;
inline constexpr const char* kFilterName = "livedrp codec, docs/formats.md";

// The filter's client data (cd_values), each an unsigned int as HDF5 keeps them. A writer gives
// the first two (or none: lossless) and, for the lossy codec, the bound; the filter's set_local
// fills in the element type and the chunk's bytes from the dataset when it is created.
enum CdIndex : std::size_t {
  kCdVersion = 0,        // kCdValuesVersion
  kCdCodec = 1,          // 1 lossless, 2 lossy (codec::Codec)
  kCdDType = 2,          // 1 uint16, 2 float32 (codec::DType); from the dataset's type
  kCdChunkBytes = 3,     // the codec's own chunk size in bytes; 0: its default (16 KiB)
  kCdBoundLow = 4,       // the lossy bound, an IEEE double: its low 32 bits
  kCdBoundHigh = 5,      // and its high 32 bits
  kCdRawChunkBytes = 6,  // bytes of one HDF5 chunk, decoded; from the dataset's chunk shape
  kCdCount = 7
};
inline constexpr unsigned kCdValuesVersion = 1;

// The client data for a codec and bound (what H5Pset_filter takes; set_local completes it).
std::vector<unsigned> filter_parameters(bool lossy, double error_bound = 0.0,
                                        std::uint32_t codec_chunk_bytes = 0);

// The filter's two directions, outside HDF5 so that they can be tested alone. Both throw
// InputError naming what is wrong (the filter function turns that into a failed read or write).
// encode: `bytes` of elements of the dtype in cd (little-endian) into one codec stream.
std::vector<std::uint8_t> encode_chunk(const unsigned* cd, std::size_t cd_count,
                                       const std::uint8_t* bytes, std::size_t size);
// decode: one codec stream into its elements, which must be the chunk's raw bytes when cd says.
std::vector<std::uint8_t> decode_chunk(const unsigned* cd, std::size_t cd_count,
                                       const std::uint8_t* bytes, std::size_t size);

}  // namespace livedrp::hdf5_filter
