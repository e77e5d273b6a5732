#pragma once
// Undoes HDF5's built-in shuffle and deflate filters on a raw chunk, so that replay readers can
// decompress in parallel, outside the HDF5 library (whose calls are serialised). The byte layouts
// are HDF5's: deflate is a zlib stream (RFC 1950, with its Adler-32 check), shuffle stores byte 0
// of every element, then byte 1 of every element, and so on; bytes past the last whole element
// are left in place.
#include <cstddef>
#include <span>
#include <string>

namespace livedrp {
class ThreadPool;
}

namespace livedrp::replay {

// Inflates `compressed` into exactly `out.size()` bytes. Returns an empty string on success, else
// what is wrong (a damaged stream, a checksum mismatch, a size other than expected).
std::string inflate_chunk(std::span<const std::byte> compressed, std::span<std::byte> out);

// Reverses HDF5's byte shuffle of `in` (elements of `element_size` bytes) into `out` (same size).
void unshuffle_chunk(std::span<const std::byte> in, std::span<std::byte> out,
                     std::size_t element_size);

// The HDF5 LZ4 filter (32004): the uncompressed size (uint64, big-endian), the block size in
// bytes (uint32, big-endian), then per block its stored size (uint32, big-endian) and an LZ4
// block, or the block's bytes as they are when LZ4 did not make it smaller. Decodes into exactly
// `out.size()` bytes; returns an empty string on success, else what is wrong.
inline constexpr unsigned kLz4Filter = 32004;
// With `pool`, the blocks (independent of each other) are decoded on its threads: one large
// chunk, a detector's whole image as a stream sends it, is then decoded at the rate of several
// cores.
std::string lz4_decode_chunk(std::span<const std::byte> stored, std::span<std::byte> out,
                             ThreadPool* pool = nullptr);

// The bitshuffle HDF5 filter's id (32008); its LZ4 mode (cd_values[4] == 2) is decoded below.
inline constexpr unsigned kBitshuffleFilter = 32008;
inline constexpr unsigned kBitshuffleLz4 = 2;

// Decodes a chunk stored by the bitshuffle filter with LZ4 into exactly `out.size()` bytes. The
// layout is the filter's: the uncompressed size (uint64, big-endian), the block size in bytes
// (uint32, big-endian), then each block of that size as its compressed size (uint32,
// big-endian) and an LZ4 block; the last, shorter block holds the remaining elements rounded
// down to a multiple of 8, and the last (count mod 8) elements follow as they are. Inside a
// block of n elements the bits are transposed: bit k of byte j of element i is bit i of row
// 8j + k, rows of n bits stored one after another, least significant bit first. Returns an
// empty string on success, else what is wrong. With `pool`, blocks are decoded on its threads.
std::string bitshuffle_lz4_decode_chunk(std::span<const std::byte> stored, std::span<std::byte> out,
                                        std::size_t element_size, ThreadPool* pool = nullptr);

}  // namespace livedrp::replay
