#pragma once
// The integration as a sparse matrix in CSR form: one row per radial bin listing the input pixels
// that contribute and their share (1 without pixel splitting). Built once per geometry and
// binning; every event is then a gather per bin, which is also how a CUDA kernel walks it (the
// CPU walks the same entries in bands of bins, pixel by pixel: banded_entries.hpp).
#include <cstdint>
#include <span>
#include <vector>

namespace livedrp::integrate {

struct CsrMatrix {
  int bins = 0;
  std::vector<std::int32_t> row_start;  // bins + 1 entries: bin b is [row_start[b], row_start[b+1])
  std::vector<std::int32_t> pixel;      // input pixel index of each entry
  std::vector<float> coef;              // its share of the pixel

  std::size_t entries() const { return pixel.size(); }
};

// No splitting: pixel k goes whole into bin_of_pixel[k], or nowhere when that is < 0. Entries of a
// bin keep ascending pixel order (the order pyFAI's histogram sums them in).
CsrMatrix build_csr_no_split(std::span<const int> bin_of_pixel, int bins);

// General form: (bin, pixel, share) triples in ascending pixel order; bins keep that order.
struct CsrEntry {
  std::int32_t bin, pixel;
  float coef;
};
CsrMatrix build_csr(std::span<const CsrEntry> entries, int bins);

}  // namespace livedrp::integrate
