#include "tools/peaks_stream.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <utility>

#include "core/error.hpp"

namespace livedrp::tools {

namespace {

// h c in eV times Angstrom (CODATA 2018, as pyFAI and CrystFEL use).
constexpr double kPlanckTimesLightEvAngstrom = 12398.419843320026;

// CrystFEL writes peakfinder8's centroids (pixel centres at integers) with 0.5 added, so that
// pixel corners are at integers; livedrp's stream does the same.
constexpr double kCrystfelPixelOffset = 0.5;

struct Quantity {
  double value = 0;
  std::string unit;
};

// "9000", "9 keV", "0.1 m": a number and an optional unit; nothing for a data location
// ("/LCLS/photon_energy_eV"), which only the data files can resolve.
std::optional<Quantity> quantity(const std::string& text) {
  const std::size_t start = text.find_first_not_of(" \t");
  if (start == std::string::npos || text[start] == '/') return std::nullopt;
  const char* begin = text.c_str() + start;
  char* end = nullptr;
  errno = 0;
  const double value = std::strtod(begin, &end);
  if (end == begin || errno == ERANGE || !std::isfinite(value)) return std::nullopt;
  std::string unit(end);
  unit.erase(0, unit.find_first_not_of(" \t"));
  unit.erase(unit.find_last_not_of(" \t") + 1);
  return Quantity{value, unit};
}

// Photon energy in eV from the geometry's photon_energy (eV unless "keV") or wavelength (m
// unless "A"), as crystfel_geometry(5) reads them.
std::optional<double> geometry_photon_energy_ev(const crystfel::Geometry& geometry,
                                                std::string& note) {
  if (!geometry.photon_energy.empty()) {
    const auto energy = quantity(geometry.photon_energy);
    if (!energy) {
      note = "photon_energy is a data location ('" + geometry.photon_energy + "')";
      return std::nullopt;
    }
    const double ev = energy->unit == "keV" ? energy->value * 1e3 : energy->value;
    if (!(ev > 0)) {
      note = "photon_energy is not positive";
      return std::nullopt;
    }
    return ev;
  }
  if (!geometry.wavelength.empty()) {
    const auto wavelength = quantity(geometry.wavelength);
    if (!wavelength) {
      note = "wavelength is a data location ('" + geometry.wavelength + "')";
      return std::nullopt;
    }
    const double angstrom =
        wavelength->unit == "A" ? wavelength->value : wavelength->value * 1e10;  // metres
    if (!(angstrom > 0)) {
      note = "wavelength is not positive";
      return std::nullopt;
    }
    return kPlanckTimesLightEvAngstrom / angstrom;
  }
  note = "the geometry gives neither photon_energy nor wavelength";
  return std::nullopt;
}

// Camera length in metres (m unless "mm"); NaN for a data location.
double clen_m(const std::string& text) {
  const auto length = quantity(text);
  if (!length) return std::numeric_limits<double>::quiet_NaN();
  return length->unit == "mm" ? length->value * 1e-3 : length->value;
}

std::string format_float(const char* format, double value) {
  char text[64];
  std::snprintf(text, sizeof(text), format, value);
  return text;
}

}  // namespace

StreamGeometry::StreamGeometry(const DetectorDescription& detector) : detector_(detector) {
  inverse_d_note_ =
      "a detector description has no camera length or photon energy (give --geometry with "
      "clen and photon_energy)";
}

StreamGeometry::StreamGeometry(const crystfel::Geometry& geometry, std::string geometry_text)
    : geometry_(geometry), geometry_text_(std::move(geometry_text)) {
  photon_energy_ev_ = geometry_photon_energy_ev(geometry, inverse_d_note_);
  bool any_clen = false;
  for (const crystfel::GeomPanel& panel : geometry.panels) {
    panel_clen_m_.push_back(clen_m(panel.clen));
    any_clen = any_clen || std::isfinite(panel_clen_m_.back());
  }
  if (inverse_d_note_.empty() && !any_clen)
    inverse_d_note_ = "the geometry gives no camera length (clen) as a number";
  // A detector shift moves every panel by an amount only the data files know.
  if (inverse_d_note_.empty() &&
      (!geometry.detector_shift_x.empty() || !geometry.detector_shift_y.empty()))
    inverse_d_note_ = "the geometry shifts the detector (detector_shift_x/y)";
}

std::string StreamGeometry::panel_name(const peaks::Peak& peak) const {
  if (geometry_) {
    if (peak.segment < 0 || std::size_t(peak.segment) >= geometry_->panels.size())
      throw RuntimeFault("peak on panel " + std::to_string(peak.segment) + " of a geometry with " +
                         std::to_string(geometry_->panels.size()) + " panels");
    return geometry_->panels[std::size_t(peak.segment)].name;
  }
  // The ASIC that holds the centroid: a peak never crosses an ASIC edge, so its centroid lies
  // within the ASIC's pixel centres and rounding finds it.
  const DetectorDescription& d = *detector_;
  const int asics_per_row = d.cols / d.asic_cols, asics_per_column = d.rows / d.asic_rows;
  const int asic_row = std::clamp(int(std::floor((peak.ss_in_segment + 0.5) / d.asic_rows)), 0,
                                  asics_per_column - 1);
  const int asic_col =
      std::clamp(int(std::floor((peak.fs + 0.5) / d.asic_cols)), 0, asics_per_row - 1);
  return "p" + std::to_string(peak.segment) + "a" +
         std::to_string(asic_row * asics_per_row + asic_col);
}

double StreamGeometry::inverse_d_nm(const peaks::Peak& peak) const {
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  if (!geometry_ || !photon_energy_ev_ || !inverse_d_note_.empty() || peak.segment < 0 ||
      std::size_t(peak.segment) >= geometry_->panels.size())
    return kNaN;
  const crystfel::GeomPanel& panel = geometry_->panels[std::size_t(peak.segment)];
  const double clen = panel_clen_m_[std::size_t(peak.segment)];
  if (!std::isfinite(clen)) return kNaN;
  // The centroid relative to the panel's first pixel corner, in pixels (CrystFEL's convention:
  // the point at (fs, ss) lies at corner + fs * fs_vector + ss * ss_vector).
  const double fs = double(peak.fs) + kCrystfelPixelOffset - panel.min_fs;
  const double ss = double(peak.ss) + kCrystfelPixelOffset - panel.min_ss;
  const double x_m = (panel.corner_x + fs * panel.fs.x + ss * panel.ss.x) / panel.res;
  const double y_m = (panel.corner_y + fs * panel.fs.y + ss * panel.ss.y) / panel.res;
  const double z_m = clen + panel.coffset + (fs * panel.fs.z + ss * panel.ss.z) / panel.res;
  // 1/d = |k_out - k_in| = 2 sin(theta) / lambda, the modulus CrystFEL writes.
  const double two_theta = std::atan2(std::hypot(x_m, y_m), z_m);
  const double wavelength_nm = kPlanckTimesLightEvAngstrom / *photon_energy_ev_ / 10.0;
  return 2.0 * std::sin(0.5 * two_theta) / wavelength_nm;
}

void write_crystfel_stream(const std::string& path, const StreamSource& source,
                           const std::vector<peaks::PeakList>& lists,
                           const StreamGeometry& geometry) {
  std::FILE* out = path == "-" ? stdout : std::fopen(path.c_str(), "w");
  if (!out) throw InputError("cannot write output file '" + path + "'");
  std::fprintf(out, "CrystFEL stream format 2.3\n");
  std::fprintf(out, "Generated by livedrp-engine peaks (peakfinder8)\n");
  if (!geometry.geometry_text().empty()) {
    std::fprintf(out, "----- Begin geometry file -----\n");
    std::string text = geometry.geometry_text();
    if (text.back() != '\n') text += '\n';
    std::fputs(text.c_str(), out);
    std::fprintf(out, "----- End geometry file -----\n");
  }
  for (std::size_t frame = 0; frame < lists.size(); ++frame) {
    const peaks::PeakList& list = lists[frame];
    std::fprintf(out, "----- Begin chunk -----\n");
    std::fprintf(out, "Image filename: %s\n", source.image_filename.c_str());
    // CrystFEL names a frame of a multi-frame dataset "//N", and a single image "//".
    if (source.stack)
      std::fprintf(out, "Event: //%zu\n", frame);
    else
      std::fprintf(out, "Event: //\n");
    std::fprintf(out, "Image serial number: %zu\n", frame + 1);
    std::fprintf(out, "hit = %d\n", list.hit ? 1 : 0);
    std::fprintf(out, "indexed_by = none\n");
    if (const auto energy = geometry.photon_energy_ev())
      std::fprintf(out, "photon_energy_eV = %f\n", *energy);
    std::fprintf(out, "num_peaks = %zu\n", list.peaks.size());
    std::fprintf(out, "Peaks from peak search\n");
    std::fprintf(out, "  fs/px   ss/px (1/d)/nm^-1   Intensity  Panel\n");
    for (const peaks::Peak& peak : list.peaks) {
      const double ss = source.segmented ? peak.ss_in_segment : peak.ss;
      const double inverse_d = geometry.inverse_d_nm(peak);
      // CrystFEL's own columns (%7.2f %7.2f %10.2f  %10.2f   %s); an unknown 1/d reads as nan
      // with the %f that CrystFEL's reader uses.
      const std::string d_text =
          std::isfinite(inverse_d) ? format_float("%10.2f", inverse_d) : "       nan";
      std::fprintf(out, "%7.2f %7.2f %s  %10.2f   %s\n", double(peak.fs) + kCrystfelPixelOffset,
                   ss + kCrystfelPixelOffset, d_text.c_str(), double(peak.intensity),
                   geometry.panel_name(peak).c_str());
    }
    std::fprintf(out, "End of peak list\n");
    std::fprintf(out, "----- End chunk -----\n");
  }
  const bool written = std::fflush(out) == 0 && !std::ferror(out);
  if (out != stdout) std::fclose(out);
  if (!written) throw RuntimeFault("writing output file '" + path + "' failed");
}

}  // namespace livedrp::tools
