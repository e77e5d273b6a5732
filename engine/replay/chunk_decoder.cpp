#include "replay/chunk_decoder.hpp"

#include <cstring>
#include <limits>

#include <zlib.h>

namespace livedrp::replay {
namespace {

// A fixed element size lets the compiler turn the gather into vector shuffles.
template <std::size_t N>
void unshuffle_fixed(const std::byte* in, std::byte* out, std::size_t elements) {
  for (std::size_t e = 0; e < elements; ++e)
    for (std::size_t byte = 0; byte < N; ++byte) out[e * N + byte] = in[byte * elements + e];
}

}  // namespace

std::string inflate_chunk(std::span<const std::byte> compressed, std::span<std::byte> out) {
  // zlib counts in 32-bit uInt; HDF5 chunks are below 4 GiB (its own limit).
  if (compressed.size() > std::numeric_limits<uInt>::max() ||
      out.size() > std::numeric_limits<uInt>::max())
    return "chunk larger than 4 GiB";
  z_stream stream{};
  if (inflateInit(&stream) != Z_OK) return "zlib cannot start inflating";
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<std::byte*>(compressed.data()));
  stream.avail_in = uInt(compressed.size());
  stream.next_out = reinterpret_cast<Bytef*>(out.data());
  stream.avail_out = uInt(out.size());
  const int status = inflate(&stream, Z_FINISH);
  const std::size_t produced = out.size() - stream.avail_out;
  const std::string message = stream.msg ? stream.msg : "";
  inflateEnd(&stream);
  if (status == Z_STREAM_END && produced == out.size()) return {};
  if (status == Z_STREAM_END)
    return "the deflate stream holds " + std::to_string(produced) + " bytes, expected " +
           std::to_string(out.size());
  if (status == Z_BUF_ERROR && stream.avail_out == 0)
    return "the deflate stream holds more than the " + std::to_string(out.size()) +
           " bytes of a chunk";
  return "damaged deflate stream (zlib: " + (message.empty() ? std::to_string(status) : message) +
         ")";
}

void unshuffle_chunk(std::span<const std::byte> in, std::span<std::byte> out,
                     std::size_t element_size) {
  const std::size_t elements = element_size > 0 ? in.size() / element_size : 0;
  if (element_size <= 1 || elements <= 1) {
    std::memcpy(out.data(), in.data(), in.size());
    return;
  }
  if (element_size == 2) {
    unshuffle_fixed<2>(in.data(), out.data(), elements);
  } else if (element_size == 4) {
    unshuffle_fixed<4>(in.data(), out.data(), elements);
  } else {
    for (std::size_t byte = 0; byte < element_size; ++byte) {
      const std::byte* plane = in.data() + byte * elements;
      std::byte* target = out.data() + byte;
      for (std::size_t e = 0; e < elements; ++e) target[e * element_size] = plane[e];
    }
  }
  const std::size_t tail = elements * element_size;
  std::memcpy(out.data() + tail, in.data() + tail, in.size() - tail);
}

}  // namespace livedrp::replay
