#include "replay/chunk_decoder.hpp"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <vector>

#include <lz4.h>
#include <zlib.h>

#include "core/thread_pool.hpp"

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

namespace {

std::uint64_t read_big_endian(const std::byte* at, int bytes) {
  std::uint64_t value = 0;
  for (int i = 0; i < bytes; ++i) value = (value << 8) | std::uint64_t(at[i]);
  return value;
}

// Transposes an 8x8 bit matrix held in a word: bit 8r + c moves to bit 8c + r.
std::uint64_t transpose_8x8(std::uint64_t x) {
  std::uint64_t t = (x ^ (x >> 7)) & 0x00AA00AA00AA00AAull;
  x ^= t ^ (t << 7);
  t = (x ^ (x >> 14)) & 0x0000CCCC0000CCCCull;
  x ^= t ^ (t << 14);
  t = (x ^ (x >> 28)) & 0x00000000F0F0F0F0ull;
  x ^= t ^ (t << 28);
  return x;
}

// Undoes the bit transpose of one block of `elements` (a multiple of 8): for each byte j of
// the element and each 8 elements, the 8 row bytes of bits k = 0..7 form an 8x8 bit matrix
// whose transpose is those 8 elements' byte j.
void bit_untranspose(const std::byte* rows, std::byte* out, std::size_t elements,
                     std::size_t element_size) {
  const std::size_t row_bytes = elements / 8;
  for (std::size_t j = 0; j < element_size; ++j)
    for (std::size_t group = 0; group < row_bytes; ++group) {
      std::uint64_t matrix = 0;
      for (std::size_t k = 0; k < 8; ++k)
        matrix |= std::uint64_t(rows[(j * 8 + k) * row_bytes + group]) << (8 * k);
      matrix = transpose_8x8(matrix);
      for (std::size_t m = 0; m < 8; ++m)
        out[(group * 8 + m) * element_size + j] = std::byte((matrix >> (8 * m)) & 0xFF);
    }
}

// Both filters start a chunk with its uncompressed size (uint64) and their block size in bytes
// (uint32), big-endian; `filter` names the filter in the error.
constexpr std::size_t kChunkHeader = 12;
std::string read_chunk_header(std::span<const std::byte> stored, std::size_t expected,
                              const char* filter, std::uint64_t& block_bytes) {
  if (stored.size() < kChunkHeader) return std::string(filter) + " chunk shorter than its header";
  const std::uint64_t total = read_big_endian(stored.data(), 8);
  block_bytes = read_big_endian(stored.data() + 8, 4);
  if (total != expected)
    return std::string(filter) + " chunk of " + std::to_string(total) + " bytes, expected " +
           std::to_string(expected);
  return {};
}

// The stored block at `at` (its size, uint32 big-endian, then its bytes); moves `at` past it.
// False when the chunk ends before the block does.
bool next_block(std::span<const std::byte> stored, std::size_t& at,
                std::span<const std::byte>& block) {
  if (stored.size() - at < 4) return false;
  const std::size_t size = std::size_t(read_big_endian(stored.data() + at, 4));
  at += 4;
  if (size > stored.size() - at || size > std::size_t(std::numeric_limits<int>::max()))
    return false;
  block = stored.subspan(at, size);
  at += size;
  return true;
}

bool lz4_block(std::span<const std::byte> block, std::byte* out, std::size_t bytes) {
  return LZ4_decompress_safe(reinterpret_cast<const char*>(block.data()),
                             reinterpret_cast<char*>(out), int(block.size()),
                             int(bytes)) == int(bytes);
}

}  // namespace

namespace {

// One stored block of a chunk and where its bytes go.
struct BlockJob {
  std::span<const std::byte> block;
  std::size_t first = 0;  // first element (bitshuffle) or byte (LZ4) of `out` it fills
  std::size_t count = 0;  // elements (bitshuffle) or bytes (LZ4)
};

// Runs `decode(job)` over the jobs, on the pool's threads when there is one and more than one
// job; returns the first job's error in job order (empty when none failed).
std::string decode_blocks(const std::vector<BlockJob>& jobs, ThreadPool* pool,
                          const std::function<std::string(const BlockJob&)>& decode) {
  if (pool == nullptr || pool->size() < 2 || jobs.size() < 2) {
    for (const BlockJob& job : jobs)
      if (std::string error = decode(job); !error.empty()) return error;
    return {};
  }
  std::vector<std::string> errors(jobs.size());
  std::atomic<bool> failed{false};
  pool->parallel_for_dynamic(jobs.size(), 4, [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end && !failed.load(std::memory_order_relaxed); ++i) {
      errors[i] = decode(jobs[i]);
      if (!errors[i].empty()) failed = true;
    }
  });
  for (const std::string& error : errors)
    if (!error.empty()) return error;
  return {};
}

}  // namespace

std::string bitshuffle_lz4_decode_chunk(std::span<const std::byte> stored, std::span<std::byte> out,
                                        std::size_t element_size, ThreadPool* pool) {
  if (element_size == 0 || out.size() % element_size != 0) return "element size does not divide";
  std::uint64_t block_bytes = 0;
  if (std::string error = read_chunk_header(stored, out.size(), "bitshuffle", block_bytes);
      !error.empty())
    return error;
  const std::size_t block_elements = std::size_t(block_bytes) / element_size;
  if (block_bytes % element_size != 0 || block_elements == 0 || block_elements % 8 != 0)
    return "bitshuffle block size " + std::to_string(block_bytes) +
           " bytes is not a multiple of 8 elements";
  // The blocks' places first (their sizes are read one after another), then their decoding,
  // which needs nothing of the other blocks.
  std::vector<BlockJob> jobs;
  std::size_t at = kChunkHeader;
  std::size_t done = 0;
  const std::size_t elements = out.size() / element_size;
  while (elements - done >= 8) {
    const std::size_t n = std::min(block_elements, (elements - done) / 8 * 8);
    std::span<const std::byte> block;
    if (!next_block(stored, at, block)) return "bitshuffle chunk truncated";
    jobs.push_back({block, done, n});
    done += n;
  }
  const std::size_t rest = (elements - done) * element_size;
  if (stored.size() - at != rest) return "bitshuffle chunk has trailing or missing bytes";
  const std::string error = decode_blocks(jobs, pool, [&](const BlockJob& job) -> std::string {
    // Sized by what the block fills, never by the block size the chunk declares: a damaged or
    // hostile header may declare 4 GiB blocks for a chunk of a few bytes (found by fuzzing).
    thread_local std::vector<std::byte> rows;
    rows.resize(job.count * element_size);
    if (!lz4_block(job.block, rows.data(), job.count * element_size))
      return "damaged LZ4 block in a bitshuffle chunk";
    bit_untranspose(rows.data(), out.data() + job.first * element_size, job.count, element_size);
    return {};
  });
  if (!error.empty()) return error;
  std::memcpy(out.data() + done * element_size, stored.data() + at, rest);
  return {};
}

std::string lz4_decode_chunk(std::span<const std::byte> stored, std::span<std::byte> out,
                             ThreadPool* pool) {
  std::uint64_t block_bytes = 0;
  if (std::string error = read_chunk_header(stored, out.size(), "LZ4", block_bytes); !error.empty())
    return error;
  if (block_bytes == 0 && !out.empty()) return "LZ4 chunk with a block size of 0";
  std::vector<BlockJob> jobs;
  std::size_t at = kChunkHeader;
  for (std::size_t done = 0; done < out.size();) {
    const std::size_t n = std::min<std::size_t>(std::size_t(block_bytes), out.size() - done);
    std::span<const std::byte> block;
    if (!next_block(stored, at, block)) return "LZ4 chunk truncated";
    jobs.push_back({block, done, n});
    done += n;
  }
  if (at != stored.size()) return "LZ4 chunk has trailing bytes";
  return decode_blocks(jobs, pool, [&](const BlockJob& job) -> std::string {
    if (job.block.size() == job.count) {  // stored as it is: LZ4 did not make it smaller
      std::memcpy(out.data() + job.first, job.block.data(), job.count);
      return {};
    }
    if (!lz4_block(job.block, out.data() + job.first, job.count)) return "damaged LZ4 block";
    return {};
  });
}

}  // namespace livedrp::replay
