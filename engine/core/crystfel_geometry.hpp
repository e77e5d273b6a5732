#pragma once
// CrystFEL geometry files (.geom, man 5 crystfel_geometry): the panels of a detector whose frames
// arrive as one 2-D slab (rows = slow scan), their places in the laboratory frame, and the bad
// regions to leave out.
//
// Conventions, as CrystFEL's:
// - The lab frame is in pixels: +z along the beam, +y up, +x completing a right-handed frame; the
//   beam passes through x = y = 0.
// - corner_x/corner_y place the outer corner of a panel's first pixel (not its centre), so the
//   point at panel-relative (fs, ss) lies at corner + fs * fs_vector + ss * ss_vector and the
//   centre of the pixel with indices (i, j) from the panel's min_fs/min_ss lies at
//   corner + (i + 0.5) * fs_vector + (j + 0.5) * ss_vector.
// - min_fs..max_fs, min_ss..max_ss are inclusive slab ranges; bad regions in fs/ss are inclusive
//   slab ranges too; bad regions in x/y test the outer corner of each pixel (as CrystFEL's image
//   loader), inclusive at both ends.
// - A key without a panel name sets a default for the panels first mentioned after it.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "peaks/peak_search.hpp"

namespace livedrp::crystfel {

struct LabVector {
  double x = 0, y = 0, z = 0;
};

// One panel after defaults were applied. Values that CrystFEL can take from the data files (a
// path instead of a number) are kept as their text.
struct GeomPanel {
  std::string name;
  int line = 0;  // where the panel is first mentioned
  int min_fs = -1, max_fs = -1, min_ss = -1, max_ss = -1;
  LabVector fs, ss;  // lab-frame step, in pixels, per fast-scan / slow-scan index
  double corner_x = 0, corner_y = 0;
  double res = 0;                    // pixels per metre
  std::string clen;                  // older files give it per panel; else the global one
  double coffset = 0;                // metres along z added to clen
  std::optional<double> adu_per_eV;  // at most one of the two
  std::optional<double> adu_per_photon;
  std::string data = "/data/data";
  std::vector<std::string> dims = {"ss", "fs"};  // dim0, dim1, ...: "%", "ss", "fs" or an index
  std::string mask, mask_file;                   // mask0_data / mask0_file
  std::uint64_t mask_good = 0, mask_bad = 0;     // mask0_goodbits / mask0_badbits
  int mask_edge_pixels = 0;                      // rows/columns at each edge marked bad
  bool no_index = false;

  int width() const { return max_fs - min_fs + 1; }
  int height() const { return max_ss - min_ss + 1; }
  bool contains(int slab_fs, int slab_ss) const {
    return slab_fs >= min_fs && slab_fs <= max_fs && slab_ss >= min_ss && slab_ss <= max_ss;
  }
};

struct BadRegion {
  std::string name;
  int line = 0;
  bool in_slab = false;  // fs/ss ranges (else x/y in lab pixels)
  double min_x = 0, max_x = 0, min_y = 0, max_y = 0;
  int min_fs = 0, max_fs = 0, min_ss = 0, max_ss = 0;
  std::string panel_name;  // required for fs/ss (unless one panel); optional for x/y
  int panel = -1;          // index into panels, -1: every panel
};

struct Geometry {
  std::string file;
  std::vector<GeomPanel> panels;  // in the order of first mention: panel i is CSV segment i
  std::vector<BadRegion> bad_regions;
  // Top-level values kept as written (CrystFEL reads some of them from the data files).
  std::string clen, photon_energy, wavelength, electron_voltage, bandwidth, peak_list,
      peak_list_type, detector_shift_x, detector_shift_y;
  std::vector<std::string> warnings;    // "FILE:LINE: ..." for keys livedrp does not use
  int slab_height = 0, slab_width = 0;  // max_ss + 1, max_fs + 1 over the panels

  std::size_t pixels() const { return std::size_t(slab_height) * std::size_t(slab_width); }
};

// Parses and validates; throws InputError naming `file_name`, the line and the problem.
Geometry parse_geometry(std::string_view text, const std::string& file_name);
Geometry read_geometry(const std::filesystem::path& file);

struct LabPoint {
  double x = 0, y = 0;
};
// The lab position (pixels) of the centre of the slab pixel (slab_fs, slab_ss) of `panel`.
LabPoint pixel_centre(const GeomPanel& panel, int slab_fs, int slab_ss);

// Per slab pixel (row-major, slab_height x slab_width): the panel index, -1 where none.
std::vector<std::int32_t> panel_map(const Geometry& geometry);

// Per slab pixel: the distance in pixels from the beam at (beam_x, beam_y) (default: the
// origin) to the pixel's centre in the detector plane, hypot(x, y); 0 outside every panel.
std::vector<float> radius_map(const Geometry& geometry, double beam_x = 0, double beam_y = 0);

// Per slab pixel: non-zero = bad (outside every panel, on a no_index panel, in a bad region).
std::vector<std::uint8_t> bad_mask(const Geometry& geometry);

// The panels as the peak finder's ASICs (segment = panel index), so peaks never cross a panel edge.
std::vector<peaks::Asic> panel_asics(const Geometry& geometry);

}  // namespace livedrp::crystfel
