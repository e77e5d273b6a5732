#pragma once
// The test-only stage's math, once for both backends (DESIGN: one math, two backends): the
// float64 sum of every `stride`-th calibrated value from `begin`. The CPU part takes the whole
// image in one run (begin 0, stride 1); each CUDA thread takes its grid-stride share and the
// kernels add the shares in a fixed tree, so both are float64 sums of the same float32 values
// and differ only in the order of the additions.
#include <cstddef>

#include "core/host_device.hpp"

namespace livedrp::test_stages {

LIVEDRP_HD double strided_sum(const float* values, std::size_t begin, std::size_t end,
                              std::size_t stride) {
  double sum = 0.0;
  for (std::size_t k = begin; k < end; k += stride) sum += double(values[k]);
  return sum;
}

}  // namespace livedrp::test_stages
