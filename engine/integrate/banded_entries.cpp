#include "integrate/banded_entries.hpp"

#include <algorithm>

namespace livedrp::integrate {

BandedEntries band_entries(const CsrMatrix& csr, std::size_t pixels, int bands) {
  BandedEntries out;
  const int bins = csr.bins;
  const std::size_t entries = csr.entries();
  bands = std::clamp(bands, 1, std::max(bins, 1));
  // Band cuts: bin b closes a band once the entries up to it reach the band's equal share.
  out.band_first_bin.push_back(0);
  for (int b = 0, band = 1; b < bins && band < bands; ++b) {
    const std::size_t through = std::size_t(csr.row_start[std::size_t(b) + 1]);
    if (through * std::size_t(bands) >= entries * std::size_t(band) && b + 1 < bins) {
      out.band_first_bin.push_back(b + 1);
      ++band;
    }
  }
  out.band_first_bin.push_back(bins);
  for (const int first : out.band_first_bin)
    out.band_start.push_back(std::size_t(csr.row_start[std::size_t(first)]));

  // Transpose to pixel-major (each pixel's entries in bin order), then deal the entries out to
  // their bands walking pixels upwards: each band comes out in ascending pixel order.
  std::vector<std::int32_t> pixel_start(pixels + 1, 0);
  for (const std::int32_t k : csr.pixel) ++pixel_start[std::size_t(k) + 1];
  for (std::size_t k = 0; k < pixels; ++k) pixel_start[k + 1] += pixel_start[k];
  std::vector<std::int32_t> entry_of(entries);  // pixel-major order -> CSR entry
  {
    std::vector<std::int32_t> next(pixel_start.begin(), pixel_start.end() - 1);
    for (std::size_t e = 0; e < entries; ++e)
      entry_of[std::size_t(next[std::size_t(csr.pixel[e])]++)] = std::int32_t(e);
  }
  std::vector<int> band_of_bin(std::size_t(std::max(bins, 0)));
  for (std::size_t band = 0; band < out.bands(); ++band)
    for (int b = out.band_first_bin[band]; b < out.band_first_bin[band + 1]; ++b)
      band_of_bin[std::size_t(b)] = int(band);
  std::vector<int> bin_of_entry(entries);
  for (int b = 0; b < bins; ++b)
    for (std::int32_t e = csr.row_start[std::size_t(b)]; e < csr.row_start[std::size_t(b) + 1]; ++e)
      bin_of_entry[std::size_t(e)] = b;

  out.pixel.resize(entries);
  out.bin.resize(entries);
  out.coef.resize(entries);
  std::vector<std::size_t> cursor(out.band_start.begin(), out.band_start.end() - 1);
  for (const std::int32_t e : entry_of) {
    const int b = bin_of_entry[std::size_t(e)];
    const std::size_t at = cursor[std::size_t(band_of_bin[std::size_t(b)])]++;
    out.pixel[at] = csr.pixel[std::size_t(e)];
    out.bin[at] = b;
    out.coef[at] = csr.coef[std::size_t(e)];
    if (out.coef[at] != 1.0f) out.unit_shares = false;
  }
  return out;
}

}  // namespace livedrp::integrate
