#pragma once
// The CSR's entries regrouped for a pixel-order walk on the CPU. A bin's pixels lie on a ring of
// the detector, so a bin-by-bin gather jumps across the whole frame for every bin and misses the
// cache on nearly every read. Here the bins are cut into a few bands of neighbouring bins (rings of
// about equal entry counts) and each band lists its entries in ascending pixel order: a band's walk
// reads the frame (and the per-pixel tables) forwards, and bands are independent, so threads take
// whole bands. Every bin still receives its entries in the CSR's order (ascending pixel, which both
// CSR builders keep), so sums taken in this order are the same numbers bit for bit.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "integrate/csr.hpp"

namespace livedrp::integrate {

struct BandedEntries {
  std::vector<int> band_first_bin;       // bands + 1 entries: band i holds bins [i], [i+1])
  std::vector<std::size_t> band_start;   // bands + 1 entries: band i is entries [i], [i+1])
  std::vector<std::int32_t> pixel, bin;  // per entry, ascending pixel within a band
  std::vector<float> coef;               // per entry, the CSR's share
  bool unit_shares = true;               // every share is 1 (no pixel splitting)

  std::size_t bands() const { return band_first_bin.empty() ? 0 : band_first_bin.size() - 1; }
};

// At most `bands` bands (at least 1, at most one per bin), cut where the running entry count
// passes each equal share. `pixels`: the number of input pixels (every CSR pixel index is below
// it).
BandedEntries band_entries(const CsrMatrix& csr, std::size_t pixels, int bands);

}  // namespace livedrp::integrate
