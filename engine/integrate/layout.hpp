#pragma once
// Where the input pixels of an event sit on the detector plane: one plain image, the segments
// of a multi-segment detector (core/detector.hpp placement) read as a stack without assembling
// them, or the slab of a CrystFEL geometry whose panels place every pixel on their own. pyFAI
// integrates the assembled image; integrating the stack with each pixel at its assembled position
// gives the same numbers (gaps simply have no pixels).
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/detector.hpp"

namespace livedrp::crystfel {
struct Geometry;  // core/crystfel_geometry.hpp; not included, so that this header stays light
}

namespace livedrp::integrate {

// One panel of a CrystFEL geometry, in the geometry's own numbers (lab pixels, +x, +y up).
struct PanelPlacement {
  std::string name;
  int min_fs = 0, min_ss = 0;         // slab index of the panel's first pixel
  double corner_x = 0, corner_y = 0;  // outer corner of that pixel
  double fs_x = 0, fs_y = 0;          // lab step per fast-scan index
  double ss_x = 0, ss_y = 0;          // lab step per slow-scan index
  double res = 0;                     // pixels per metre, the panel's own
};

// The panels of a CrystFEL geometry and which of them holds each slab pixel.
struct GeometryPlacement {
  std::string source;  // the .geom file, for messages
  std::vector<PanelPlacement> panels;
  std::vector<std::int32_t> panel_of_pixel;  // per slab pixel (row = ss), -1: no panel
};

struct PixelLayout {
  int segments = 1;
  int rows = 0;  // per segment
  int cols = 0;
  std::vector<SegmentPlacement> placement;  // one per segment; empty for a plain image
  // The segments' pixel grid: large pixels at ASIC edges sit and span where assembled_point puts
  // them. Default: normal pixels.
  SegmentGrid grid;
  // Set by layout_from_geometry: then segments = 1, rows x cols is the slab and pixels take
  // their places from the panels (geometry_pixel_corners), not from `placement`.
  std::optional<GeometryPlacement> geometry;
  // Per pixel, non-zero: the layout itself leaves the pixel out (a geometry's pixels of no
  // panel, bad regions, no_index panels). Empty: none. Integrator adds it to any mask it is
  // given, so that a user's mask can only mask more.
  std::vector<std::uint8_t> bad;

  std::size_t pixels() const {
    return std::size_t(segments) * std::size_t(rows) * std::size_t(cols);
  }
};

PixelLayout plain_layout(int rows, int cols);
// Throws InputError when the description has no usable layout.
PixelLayout layout_from_detector(const DetectorDescription& detector);

// A CrystFEL geometry's slab (slab_height x slab_width) with every panel pixel placed on pyFAI's
// detector plane, in metres, by this convention (pyFAI 0.21's default orientation 3):
//   dim1 (pyFAI's axis 1, poni1) = +y / res   (up)
//   dim2 (pyFAI's axis 2, poni2) = -x / res
//   origin: CrystFEL's lab origin, where the beam crosses the detector (x = y = 0).
// pyFAI's lab frame (x1 up, x2 horizontal, x3 along the beam) is right-handed like CrystFEL's
// (+y up, +z along the beam), so x2 = x3 cross x1 = z cross y = -x: CrystFEL draws the detector as
// seen from behind (into the beam), pyFAI as seen from the sample. A PONI with poni1 = poni2 = 0,
// no rotation and dist = clen is then CrystFEL's own geometry, and chi is pyFAI's chi of the
// same physical point: atan2(y, -x). Each panel converts with its own res; CrystFEL's coffset
// and the z parts of fs/ss are not used (the PONI places one flat detector). Pixels of no panel,
// in bad regions or on no_index panels go to `bad`. Throws InputError naming the file and the
// panel for a res that is not a finite positive number, or a slab without pixels.
PixelLayout layout_from_geometry(const crystfel::Geometry& geometry);

// A point of the detector plane (m) along dim1 and dim2, in float32 as pyFAI keeps the corners of
// a detector given by them (Detector.set_pixel_corners).
struct PlanePoint {
  float p1 = 0.0f, p2 = 0.0f;
};
// The four corners of slab pixel `pixel` (row-major, row = ss) of a geometry layout, in pyFAI's
// order: slab index steps (row, column) = (0, 0), (1, 0), (1, 1), (0, 1) from the pixel. With
// i = fs - min_fs and j = ss - min_ss of its panel, corner + a fs + b ss for (a, b) = (i, j),
// (i, j + 1), (i + 1, j + 1), (i + 1, j). nullopt for a pixel of no panel or a layout without a
// geometry.
std::optional<std::array<PlanePoint, 4>> geometry_pixel_corners(const PixelLayout& layout,
                                                                std::size_t pixel);
// The centre pyFAI takes for a pixel given by its corners: bilinear interpolation at (0.5, 0.5),
// the corners' mean summed in double and rounded to float32 (pyFAI's ext/bilinear). It is
// crystfel::pixel_centre's point, corner + (i + 0.5) fs + (j + 0.5) ss, up to float32 rounding.
PlanePoint corners_centre(const std::array<PlanePoint, 4>& corners);

// Centre of input pixel (segment, row, col) in assembled pixel coordinates (slow c1 = y, fast
// c2 = x): core/detector.hpp's assembled_point of (row + 0.5, col + 0.5), the segment's pixel
// (0, 0) corner at (y_px, x_px) and its fast axis along (cos, sin) of rotation_deg in (x, y).
// For plain and segment layouts; a geometry layout places its pixels in metres
// (geometry_pixel_corners) and gets its slab coordinates here.
struct PixelCentre {
  double c1, c2;
};
PixelCentre pixel_centre(const PixelLayout& layout, int segment, int row, int col);

// The assembled rectangle input pixel (segment, row, col) covers, in the same coordinates: its
// centre +- 0.5 for a normal pixel; a large pixel at an ASIC edge spans its true size
// (layout.grid), which is what the bbox splitting spreads it over.
struct PixelSpan {
  double min_c1, max_c1, min_c2, max_c2;
};
PixelSpan pixel_span(const PixelLayout& layout, int segment, int row, int col);
// Area of that pixel in normal pixels: 1, or the large pixel's F or F x F.
int pixel_area(const PixelLayout& layout, int row, int col);

// The assembled image's extent (rows, columns) from (0, 0): what pyFAI would be given. For a
// geometry layout the slab itself (pyFAI is given the slab with the pixels' corners).
struct FrameExtent {
  int rows = 0, cols = 0;
};
FrameExtent assembled_extent(const PixelLayout& layout);

}  // namespace livedrp::integrate
