#pragma once
// Undoes HDF5's built-in shuffle and deflate filters on a raw chunk, so that replay readers can
// decompress in parallel, outside the HDF5 library (whose calls are serialised). The byte layouts
// are HDF5's: deflate is a zlib stream (RFC 1950, with its Adler-32 check), shuffle stores byte 0
// of every element, then byte 1 of every element, and so on; bytes past the last whole element
// are left in place.
#include <cstddef>
#include <span>
#include <string>

namespace livedrp::replay {

// Inflates `compressed` into exactly `out.size()` bytes. Returns an empty string on success, else
// what is wrong (a damaged stream, a checksum mismatch, a size other than expected).
std::string inflate_chunk(std::span<const std::byte> compressed, std::span<std::byte> out);

// Reverses HDF5's byte shuffle of `in` (elements of `element_size` bytes) into `out` (same size).
void unshuffle_chunk(std::span<const std::byte> in, std::span<std::byte> out,
                     std::size_t element_size);

}  // namespace livedrp::replay
