#pragma once
// Bounding-box pixel splitting as pyFAI 0.21 does it (splitBBox_common.calc_lut_1d): a pixel
// spans [centre - delta, centre + delta] radially, delta being the largest centre-to-corner
// distance, and each bin it overlaps gets the overlapped fraction of it. LIVEDRP_HD so a device
// can build or check the same matrix.
#include <cmath>

#include "core/host_device.hpp"
#include "integrate/accumulate.hpp"

namespace livedrp::integrate {

// The bins [first, last] a pixel's box covers, with its ends in fractional bins.
struct BBoxSpan {
  bool inside = false;  // false: the box misses every bin
  int first = 0, last = 0;
  double fmin = 0.0, fmax = 0.0;
};

LIVEDRP_HD BBoxSpan bbox_span(const BinGrid& g, double centre, double delta) {
  BBoxSpan s;
  s.fmin = (centre - delta - g.min) / g.delta;
  s.fmax = (centre + delta - g.min) / g.delta;
  if (!(s.fmin == s.fmin) || !(s.fmax == s.fmax)) return s;  // NaN
  // pyFAI truncates towards zero before testing, so a box ending less than one bin below the
  // range still reaches bin 0; kept for identical matrices.
  const double limit = 1.0e9;
  const double tmin = std::trunc(s.fmin < -limit ? -limit : (s.fmin > limit ? limit : s.fmin));
  const double tmax = std::trunc(s.fmax < -limit ? -limit : (s.fmax > limit ? limit : s.fmax));
  if (tmax < 0.0 || tmin >= g.bins) return s;
  s.first = tmin < 0.0 ? 0 : static_cast<int>(tmin);
  s.last = tmax > g.bins - 1 ? g.bins - 1 : static_cast<int>(tmax);
  s.inside = true;
  return s;
}

// The share of the pixel that goes to `bin` (first <= bin <= last). pyFAI's edge shares use the
// clipped first/last bins, so a box sticking out of the range gives its edge bin a share as if the
// outside part were there too (a share above 1 is possible); reproduced as is.
LIVEDRP_HD float bbox_coef(const BBoxSpan& s, int bin) {
  if (s.first == s.last) return 1.0f;
  const double inv_area = 1.0 / (s.fmax - s.fmin);
  if (bin == s.first) return static_cast<float>(inv_area * ((s.first + 1) - s.fmin));
  if (bin == s.last) return static_cast<float>(inv_area * (s.fmax - s.last));
  return static_cast<float>(inv_area);
}

// Largest |corner - centre| of chi over the 4 corners, across the discontinuity at +-pi.
LIVEDRP_HD double chi_delta(double centre, double corner) {
  double d = std::fabs(corner - centre);
  if (d > kPi) d = 2.0 * kPi - d;
  return d;
}

}  // namespace livedrp::integrate
