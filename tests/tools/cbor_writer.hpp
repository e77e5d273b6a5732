#pragma once
// A minimal CBOR (RFC 8949) writer for the test publisher: definite-length items in their
// shortest form, written independently of the engine's reader so that the two check each other.
#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace livedrp::testing {

class CborWriter {
 public:
  // RFC 8949 section 3: major type in the top 3 bits, the argument in the shortest encoding.
  void head(unsigned major, std::uint64_t argument) {
    const std::uint8_t type = std::uint8_t(major << 5);
    if (argument < 24) {
      put(type | std::uint8_t(argument));
    } else if (argument <= 0xff) {
      put(type | 24);
      put_big_endian(argument, 1);
    } else if (argument <= 0xffff) {
      put(type | 25);
      put_big_endian(argument, 2);
    } else if (argument <= 0xffffffffull) {
      put(type | 26);
      put_big_endian(argument, 4);
    } else {
      put(type | 27);
      put_big_endian(argument, 8);
    }
  }
  void unsigned_integer(std::uint64_t value) { head(0, value); }
  void bytes(std::span<const std::byte> data) {
    head(2, data.size());
    out_.insert(out_.end(), data.begin(), data.end());
  }
  void text(std::string_view value) {
    head(3, value.size());
    for (char c : value) put(std::uint8_t(c));
  }
  void array(std::size_t items) { head(4, items); }
  void map(std::size_t pairs) { head(5, pairs); }
  void tag(std::uint64_t number) { head(6, number); }
  void boolean(bool value) { put(value ? 0xf5 : 0xf4); }
  void float64(double value) {
    put(0xfb);
    put_big_endian(std::bit_cast<std::uint64_t>(value), 8);
  }

  std::vector<std::byte>& bytes_written() { return out_; }
  std::vector<std::byte> take() { return std::move(out_); }

 private:
  void put(std::uint8_t value) { out_.push_back(std::byte(value)); }
  void put_big_endian(std::uint64_t value, int bytes) {
    for (int i = bytes - 1; i >= 0; --i) put(std::uint8_t(value >> (8 * i)));
  }
  std::vector<std::byte> out_;
};

}  // namespace livedrp::testing
