#pragma once
// Per-pixel geometry as pyFAI computes it (pyFAI.geometry.Geometry: calc_pos_zyx, tth, chi,
// qFunction, rFunction) for a flat detector without distortion, in double precision. The
// per-pixel functions are LIVEDRP_HD so the CUDA kernels compute the same numbers.
#include <cmath>
#include <cstddef>
#include <vector>

#include "core/host_device.hpp"
#include "integrate/orientation.hpp"
#include "integrate/poni.hpp"

namespace livedrp::integrate {

// The PONI's numbers with the rotations' sines and cosines taken once.
struct GeometryParams {
  double distance, poni1, poni2;
  double pixel1, pixel2;
  double cos1, sin1, cos2, sin2, cos3, sin3;
  double wavelength;  // m; 0 when unknown (q is then not defined)
  // The detector orientation (integrate/orientation.hpp), set by orient_geometry for the image's
  // extent: a pixel coordinate c along a flipped axis of n pixels is read as n - c (0: the axis
  // is not flipped), and sign1, sign2 (+-1) multiply t1 and t2.
  double flip1 = 0.0, flip2 = 0.0;
  double sign1 = 1.0, sign2 = 1.0;
};

// Orientation 3 (no flip) whatever the PONI says: orient_geometry applies the PONI's.
GeometryParams make_geometry_params(const PoniGeometry& poni);
// Applies `orientation` (1..4) to an image of rows x columns pixels, the image pyFAI would be
// given. Throws InputError for an orientation outside 1..4.
void orient_geometry(GeometryParams& g, int orientation, int rows, int columns);

// A pixel coordinate (in pixels, from the image's corner) along axis 1 or 2 where pyFAI's
// orientation puts it: n - c on a flipped axis of n pixels, c otherwise. Exact in double and in
// float32 for half-integer c below 2^23, as pyFAI's float32 re-indexing is.
LIVEDRP_HD double oriented1(const GeometryParams& g, double c1) {
  return g.flip1 != 0.0 ? g.flip1 - c1 : c1;
}
LIVEDRP_HD double oriented2(const GeometryParams& g, double c2) {
  return g.flip2 != 0.0 ? g.flip2 - c2 : c2;
}

inline constexpr double kPi = 3.14159265358979323846;

// Position of a point in the sample's frame (pyFAI's t1, t2, t3; t3 along the beam).
struct LabPosition {
  double t1, t2, t3;
};

// p1, p2: position on the detector relative to the PONI (m), along axes 1 (rows) and 2 (columns).
// pyFAI applies rot1, then rot2, then rot3 (R = R3 R2 R1, the first two left-handed) to
// (p1, p2, distance); this is that product written out, in the same grouping as pyFAI's Cython
// (_geometry.pyx) so the rounding matches it closely. The orientation's signs multiply t1 and t2
// as pyFAI's f_t1 and f_t2 do (an exact operation: 2theta and r are unchanged).
LIVEDRP_HD LabPosition lab_position(const GeometryParams& g, double p1, double p2) {
  const double L = g.distance;
  LabPosition t;
  t.t1 = g.sign1 * (p1 * g.cos2 * g.cos3 + p2 * (g.cos3 * g.sin1 * g.sin2 - g.cos1 * g.sin3) -
                    L * (g.cos1 * g.cos3 * g.sin2 + g.sin1 * g.sin3));
  t.t2 = g.sign2 * (p1 * g.cos2 * g.sin3 + p2 * (g.cos1 * g.cos3 + g.sin1 * g.sin2 * g.sin3) -
                    L * (-g.cos3 * g.sin1 + g.cos1 * g.sin2 * g.sin3));
  t.t3 = p1 * g.sin2 - p2 * g.cos2 * g.sin1 + L * g.cos1 * g.cos2;
  return t;
}

// Pixel (row, column) of the detector, indices from 0: its centre sits half a pixel in from its
// corner, as pyFAI's Detector.calc_cartesian_positions places it (after the orientation's
// re-indexing).
LIVEDRP_HD LabPosition pixel_lab_position(const GeometryParams& g, double row, double column) {
  const double p1 = g.pixel1 * oriented1(g, row + 0.5) - g.poni1;
  const double p2 = g.pixel2 * oriented2(g, column + 0.5) - g.poni2;
  return lab_position(g, p1, p2);
}

// Scattering angle 2theta (rad).
LIVEDRP_HD double two_theta(const LabPosition& t) {
  return std::atan2(std::sqrt(t.t1 * t.t1 + t.t2 * t.t2), t.t3);
}

// Azimuthal angle chi (rad) in (-pi, pi], pyFAI's default (discontinuity at pi).
LIVEDRP_HD double chi(const LabPosition& t) {
  return std::atan2(t.t1, t.t2);
}

// Scattering vector q in nm^-1 (pyFAI's q_nm^-1) for a wavelength in m.
LIVEDRP_HD double q_nm(double two_theta_rad, double wavelength_m) {
  return 4.0e-9 * kPi / wavelength_m * std::sin(0.5 * two_theta_rad);
}

// Distance from the incident beam in mm (pyFAI's r_mm: rArray() in m, scaled by 1000).
LIVEDRP_HD double r_mm(const LabPosition& t) {
  return 1000.0 * std::sqrt(t.t1 * t.t1 + t.t2 * t.t2);
}

// Every pixel of a rows x columns detector, C order (row-major).
struct GeometryArrays {
  int rows = 0, columns = 0;
  std::vector<double> two_theta;  // rad
  std::vector<double> chi;        // rad
  std::vector<double> q_nm;       // nm^-1; empty when the PONI has no wavelength
  std::vector<double> r_mm;       // mm
};

// Throws InputError when the shape is not positive.
GeometryArrays compute_geometry_arrays(const PoniGeometry& poni, int rows, int columns);
// The PONI's max_shape; throws InputError when the PONI does not give one.
GeometryArrays compute_geometry_arrays(const PoniGeometry& poni);

}  // namespace livedrp::integrate
