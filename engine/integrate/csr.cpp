#include "integrate/csr.hpp"

#include <limits>

#include "core/error.hpp"

namespace livedrp::integrate {

CsrMatrix build_csr_no_split(std::span<const int> bin_of_pixel, int bins) {
  if (bins < 1) throw InputError("the number of bins must be at least 1");
  if (bin_of_pixel.size() > std::size_t(std::numeric_limits<std::int32_t>::max()))
    throw InputError("too many pixels for one integration (" + std::to_string(bin_of_pixel.size()) +
                     ")");
  CsrMatrix m;
  m.bins = bins;
  m.row_start.assign(std::size_t(bins) + 1, 0);
  for (const int b : bin_of_pixel)
    if (b >= 0 && b < bins) ++m.row_start[std::size_t(b) + 1];
  for (int b = 0; b < bins; ++b) m.row_start[std::size_t(b) + 1] += m.row_start[std::size_t(b)];
  m.pixel.resize(std::size_t(m.row_start.back()));
  m.coef.assign(m.pixel.size(), 1.0f);
  std::vector<std::int32_t> next(m.row_start.begin(), m.row_start.end() - 1);
  for (std::size_t k = 0; k < bin_of_pixel.size(); ++k) {
    const int b = bin_of_pixel[k];
    if (b >= 0 && b < bins) m.pixel[std::size_t(next[std::size_t(b)]++)] = std::int32_t(k);
  }
  return m;
}

CsrMatrix build_csr(std::span<const CsrEntry> entries, int bins) {
  if (bins < 1) throw InputError("the number of bins must be at least 1");
  if (entries.size() > std::size_t(std::numeric_limits<std::int32_t>::max()))
    throw InputError("too many matrix entries for one integration (" +
                     std::to_string(entries.size()) + ")");
  CsrMatrix m;
  m.bins = bins;
  m.row_start.assign(std::size_t(bins) + 1, 0);
  for (const CsrEntry& e : entries)
    if (e.bin >= 0 && e.bin < bins) ++m.row_start[std::size_t(e.bin) + 1];
  for (int b = 0; b < bins; ++b) m.row_start[std::size_t(b) + 1] += m.row_start[std::size_t(b)];
  m.pixel.resize(std::size_t(m.row_start.back()));
  m.coef.resize(m.pixel.size());
  std::vector<std::int32_t> next(m.row_start.begin(), m.row_start.end() - 1);
  for (const CsrEntry& e : entries) {
    if (e.bin < 0 || e.bin >= bins) continue;
    const auto at = std::size_t(next[std::size_t(e.bin)]++);
    m.pixel[at] = e.pixel;
    m.coef[at] = e.coef;
  }
  return m;
}

}  // namespace livedrp::integrate
