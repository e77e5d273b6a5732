#pragma once
// Per-pixel corrections and pre-processing as pyFAI 0.21 does them (Geometry.solidAngleArray,
// Geometry.polarization, ext/preproc): the static part (solid angle, polarisation, flat, mask) is
// folded once into a per-pixel normalisation; the per-event part (dark, dummy, variance) is
// preprocess_pixel(). LIVEDRP_HD, so the CUDA kernels use the same formulas.
#include <cmath>

#include "core/host_device.hpp"
#include "integrate/geometry.hpp"

namespace livedrp::integrate {

// Offsets of a pixel centre from the PONI (m) as pyFAI's per-pixel arrays (twoThetaArray, qArray,
// rArray, chiArray, solidAngleArray) compute them: numpy.fromfunction hands float32 indices to
// Detector.calc_cartesian_positions, so (index + 0.5) * pixel - poni is evaluated in float32.
// Reproducing that rounding puts every pixel in the same bin as pyFAI (a 1e-7 difference in a
// position is enough to move a pixel that sits on a bin edge). c1, c2: the centre in pixels, in
// the image as stored; the orientation's re-indexing (exact, as pyFAI's float32 one) comes first.
struct PixelOffset {
  double p1, p2;
};
LIVEDRP_HD PixelOffset pyfai_pixel_offset(const GeometryParams& g, double c1, double c2) {
  const float p1 = static_cast<float>(oriented1(g, c1)) * static_cast<float>(g.pixel1);
  const float p2 = static_cast<float>(oriented2(g, c2)) * static_cast<float>(g.pixel2);
  return {static_cast<double>(p1 - static_cast<float>(g.poni1)),
          static_cast<double>(p2 - static_cast<float>(g.poni2))};
}

// Cosine of the incidence angle on a flat detector: distance over the sample-pixel length.
LIVEDRP_HD double cos_incidence(const GeometryParams& g, const PixelOffset& p) {
  const double L = g.distance;
  return L / std::sqrt(p.p1 * p.p1 + p.p2 * p.p2 + L * L);
}

// pyFAI's relative solid angle (order 3): 1 at the PONI.
LIVEDRP_HD double solid_angle(double cos_incidence_value) {
  return std::pow(cos_incidence_value, 3.0);
}

// pyFAI's polarisation correction (Geometry.polarization, axis_offset 0): factor in [-1, 1], 0 for
// unpolarised, +1 horizontal. Intensity is divided by it. float32 as pyFAI stores it.
LIVEDRP_HD float polarization_correction(double two_theta_rad, double chi_rad, double factor) {
  const double c = std::cos(two_theta_rad);
  const double cos2 = c * c;
  return static_cast<float>(0.5 * (1.0 + cos2 - factor * std::cos(2.0 * chi_rad) * (1.0 - cos2)));
}

// The static normalisation of a pixel (pyFAI preproc's normalisation channel without the event):
// flat * polarisation * solid angle, 0 for a masked pixel. Evaluated in float32 as pyFAI does.
// Anything that is not finite or is 0 marks the pixel invalid (normalisation 0).
LIVEDRP_HD float static_normalization(bool masked, float flat, float polarization,
                                      float solid_angle_value) {
  if (masked) return 0.0f;
  float norm = 1.0f;
  norm *= flat;
  norm *= polarization;
  norm *= solid_angle_value;
  if (!std::isfinite(norm)) return 0.0f;
  return norm;
}

enum class ErrorModel { None, Poisson, Azimuthal };

// What one pixel of one event contributes (pyFAI preproc with split_result=4): signal after the
// dark, its variance, the normalisation and the count (1 valid, 0 not). An invalid pixel
// contributes zeros.
struct PixelSample {
  float signal = 0, variance = 0, normalization = 0, count = 0;
};

// Dynamic masking: a dummy value (with a tolerance) marks a pixel invalid in the raw data, the dark
// or the flat (pyFAI's check_dummy).
struct DummyTest {
  bool enabled = false;
  float dummy = 0.0f;
  float delta = 0.0f;  // 0: exact comparison
};
LIVEDRP_HD bool is_dummy(const DummyTest& d, float value) {
  if (!d.enabled) return false;
  return d.delta == 0.0f ? value == d.dummy : std::fabs(value - d.dummy) <= d.delta;
}

// Poisson variance of a raw value: max(1, raw) (pyFAI 0.21: signal + dark, at least 1).
LIVEDRP_HD float poisson_variance(float raw) {
  return raw > 1.0f ? raw : 1.0f;
}

// raw, dark: this event's value and the dark (0 without one); normalization from
// static_normalization(). For a finite raw value without a dark, a dummy test or a zero
// normalisation the sample is (raw, poisson_variance(raw)): kernels that sum many such samples
// may add raw values first and fall back to this function where the sum is not finite.
LIVEDRP_HD PixelSample preprocess_pixel(float raw, float dark, float normalization,
                                        ErrorModel model, const DummyTest& dummy) {
  PixelSample s;
  if (normalization == 0.0f || is_dummy(dummy, raw) || is_dummy(dummy, dark)) return s;
  const float signal = raw - dark;
  // A finite difference of two floats needs both finite (an infinity minus anything is infinite
  // or NaN), so a finite signal also means a finite raw value and variance: one test suffices.
  if (!std::isfinite(signal)) return s;
  const float variance = model == ErrorModel::Poisson ? poisson_variance(raw) : 0.0f;
  s.signal = signal;
  s.variance = variance;
  s.normalization = normalization;
  s.count = 1.0f;
  return s;
}

}  // namespace livedrp::integrate
