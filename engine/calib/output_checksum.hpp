#pragma once
// A 64-bit checksum of a calibrated image, computed the same way on the host and on the device, so
// that a device-resident run (where images never leave the GPU) can still be checked bit for bit
// against the CPU backend: each pixel contributes a mixed term of its float's bits and its index,
// and the terms are added modulo 2^64. Addition commutes, so threads and blocks may add their
// partial sums in any order and the result is the same; mixing the index in makes swapped or
// shifted pixels change the sum.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "core/host_device.hpp"

namespace livedrp::calib {

// 32-bit multiplicative mixing (constants of MurmurHash3's finaliser); cheap on the GPU, where
// 64-bit multiplies are slow, and the sum over many pixels is 64-bit.
LIVEDRP_HD std::uint64_t checksum_term(std::uint32_t value_bits, std::uint32_t index) {
  std::uint32_t h = value_bits ^ (index * 0x9E3779B9u);
  h ^= h >> 16;
  h *= 0x85EBCA6Bu;
  h ^= h >> 13;
  h *= 0xC2B2AE35u;
  h ^= h >> 16;
  return std::uint64_t(h) * 2u + 1u;  // never 0: an all-zero image still counts every pixel
}

// The checksum of `pixels` floats (host).
inline std::uint64_t image_checksum(const float* image, std::size_t pixels) {
  std::uint64_t sum = 0;
  for (std::size_t i = 0; i < pixels; ++i) {
    std::uint32_t bits;
    std::memcpy(&bits, &image[i], sizeof bits);
    sum += checksum_term(bits, std::uint32_t(i));
  }
  return sum;
}

}  // namespace livedrp::calib
