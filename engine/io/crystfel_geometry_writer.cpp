#include "io/crystfel_geometry_writer.hpp"

#include <cmath>
#include <cstdio>

#include "core/error.hpp"
#include "core/raw_encoding.hpp"

namespace livedrp::io {
namespace {

// h * c in eV * m: a photon of wavelength L metres has h c / L eV.
constexpr double kPlanckTimesLightEvM = 1.239841984332e-6;

std::string number(double value) {
  char text[48];
  std::snprintf(text, sizeof text, "%.9g", value);
  return text;
}

// A lab vector as CrystFEL writes one: "+1x +0y".
std::string lab_vector(double x, double y) {
  char text[64];
  std::snprintf(text, sizeof text, "%+.9gx %+.9gy", x == 0.0 ? 0.0 : x, y == 0.0 ? 0.0 : y);
  return text;
}

}  // namespace

std::string crystfel_geometry_text(const DetectorDescription& detector,
                                   const integrate::PoniGeometry& poni,
                                   const std::string& poni_name) {
  const std::string what = "a CrystFEL geometry for detector " + detector.name;
  if (detector.placement.size() != std::size_t(detector.segments))
    throw InputError(what + ": its description places no segments (\"placement\")");
  if (detector.large_pixel_factor != 1)
    throw InputError(what + ": its ASIC edges have large pixels (large_pixel_factor " +
                     std::to_string(detector.large_pixel_factor) +
                     "), which one CrystFEL panel of one pixel size cannot place; not written yet");
  if (poni.rot1 != 0.0 || poni.rot2 != 0.0 || poni.rot3 != 0.0)
    throw InputError(what + ": PONI " + poni_name +
                     " is tilted (rot1, rot2, rot3 not all 0); a tilted geometry is not written "
                     "yet");
  if (poni.orientation != 3)
    throw InputError(what + ": PONI " + poni_name + " has orientation " +
                     std::to_string(poni.orientation) + "; only 3 (pyFAI's default) is written");
  const double pixel = detector.pixel_size_um * 1e-6;
  if (std::fabs(poni.pixel1 - pixel) > 1e-9 * pixel ||
      std::fabs(poni.pixel2 - pixel) > 1e-9 * pixel)
    throw InputError(what + ": PONI " + poni_name + " has pixels of " + number(poni.pixel1) +
                     " x " + number(poni.pixel2) + " m, the detector of " + number(pixel) + " m");
  // The beam (the PONI of an untilted detector) in assembled pixels.
  const double beam_y = poni.poni1 / pixel, beam_x = poni.poni2 / pixel;
  const SegmentGrid grid = detector.grid();
  const int asic_rows = detector.asic_rows > 0 ? detector.asic_rows : detector.rows;
  const int asic_cols = detector.asic_cols > 0 ? detector.asic_cols : detector.cols;

  std::string out;
  out += "; CrystFEL geometry of livedrp's hit files (livedrp-engine run --write-hits) for " +
         detector.name + ",\n";
  out += "; written by livedrp-engine geometry from its placement and PONI " + poni_name + ".\n";
  out += "; The slab: segment s, row r is slab row s * " + std::to_string(detector.rows) +
         " + r; one panel per ASIC.\n";
  out += "; Lab frame as livedrp reads a .geom: pyFAI dim1 = +y / res, dim2 = -x / res.\n\n";
  out += "data = /entry_1/data_1/data\ndim0 = %\ndim1 = ss\ndim2 = fs\n";
  out += "peak_list = /entry_1/result_1\npeak_list_type = cxi\n\n";
  out += "res = " + number(1.0 / pixel) + "\n";
  out += "clen = " + number(poni.distance) + "\n";
  if (poni.wavelength)
    out += "photon_energy = " + number(kPlanckTimesLightEvM / *poni.wavelength) + "\n";
  // The calibrated image's unit (exec/live_writers.cpp): keV, or counts of photons.
  if (detector.encoding == RawEncoding::Float32)
    out +=
        "; the float32 data's unit is the upstream calibration's: set adu_per_eV or "
        "adu_per_photon\n";
  else if (is_integer_image(detector.encoding))
    out += "adu_per_photon = 1\n";
  else
    out += "adu_per_eV = 0.001\n";
  out += "\n";

  for (int s = 0; s < detector.segments; ++s) {
    const SegmentPlacement& placement = detector.placement[std::size_t(s)];
    const double angle = placement.rotation_deg * M_PI / 180.0;
    const double c = std::round(std::cos(angle) * 1e12) / 1e12;
    const double n = std::round(std::sin(angle) * 1e12) / 1e12;
    int asic = 0;
    for (int ar = 0; ar < detector.rows / asic_rows; ++ar)
      for (int ac = 0; ac < detector.cols / asic_cols; ++ac, ++asic) {
        const std::string p = "p" + std::to_string(s) + "a" + std::to_string(asic) + "/";
        const int row0 = ar * asic_rows, col0 = ac * asic_cols;
        // The outer corner of the ASIC's first pixel.
        const AssembledPoint corner = assembled_point(placement, grid, row0, col0);
        out += p + "min_fs = " + std::to_string(col0) + "\n";
        out += p + "max_fs = " + std::to_string(col0 + asic_cols - 1) + "\n";
        out += p + "min_ss = " + std::to_string(s * detector.rows + row0) + "\n";
        out += p + "max_ss = " + std::to_string(s * detector.rows + row0 + asic_rows - 1) + "\n";
        // Along a row the assembled image steps (cos, sin), down a column (-sin, cos).
        out += p + "fs = " + lab_vector(-c, n) + "\n";
        out += p + "ss = " + lab_vector(n, c) + "\n";
        out += p + "corner_x = " + number(-(corner.x - beam_x)) + "\n";
        out += p + "corner_y = " + number(corner.y - beam_y) + "\n\n";
      }
  }
  return out;
}

}  // namespace livedrp::io
