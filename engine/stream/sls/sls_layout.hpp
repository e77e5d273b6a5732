#pragma once
// Where each UDP port's part of an sls frame lands in the engine's event, and the checks that a
// part belongs to the engine's detector. The convention (docs/formats.md, "Live detector
// streams"):
//   - the detector's segments are its modules, on a grid taken from their placement: module row
//     r is the r-th distinct y_px, module column c the c-th distinct x_px (no rotation);
//   - with one port per module a port carries the whole module and sits at (row r, column c);
//   - with two ports per module (Jungfrau's two 10GbE interfaces) the module is cut into two
//     halves of rows/2 rows: the outer interface (the receiver's first port) sends module rows
//     0 .. rows/2-1 and reports row 2r, the inner one rows rows/2 .. rows-1 and reports 2r+1 (the
//     firmware adds one to the row of the inner interface);
//   - detshape is [module columns, module rows * ports per module].
// Parts are placed by the row and column in their headers, never by the endpoint they came from.
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "core/detector.hpp"
#include "stream/sls/sls_header.hpp"

namespace livedrp::stream::sls {

struct SlsPortPosition {
  int row = 0;
  int column = 0;
};

// Where one part goes: its segment (module), which half of it (0 with one port per module), and
// its first byte in the event; `position` numbers the detector's ports row by row
// (row * port_columns + column).
struct SlsPartPlace {
  int segment = 0;
  int half = 0;
  std::size_t byte_offset = 0;
  int position = 0;
};

struct SlsPartCheck {
  std::optional<SlsPartPlace> place;
  std::string reason;   // StreamCounts::rejected key when refused
  std::string problem;  // what is wrong, naming the field
};

class SlsLayout {
 public:
  // Throws InputError naming the detector when an sls stream cannot feed it (not Jungfrau raw
  // words, modules not on an unrotated grid, rows that do not halve) or `ports_per_module` is not
  // 1 or 2.
  SlsLayout(const DetectorDescription& detector, int ports_per_module);

  // 1 or 2 ports per module from the number of endpoints; throws InputError otherwise.
  static int ports_per_module_for(const DetectorDescription& detector, std::size_t endpoints);

  const DetectorDescription& detector() const { return detector_; }
  int ports_per_module() const { return ports_per_module_; }
  int ports() const { return detector_.segments * ports_per_module_; }
  int module_rows() const { return module_rows_; }
  int module_columns() const { return module_columns_; }
  int port_rows() const { return module_rows_ * ports_per_module_; }
  int port_columns() const { return module_columns_; }
  int part_rows() const { return detector_.rows / ports_per_module_; }
  int part_columns() const { return detector_.cols; }
  std::size_t part_bytes() const;
  std::size_t event_bytes() const { return detector_.raw_event_bytes(); }

  // The row and column the receiver reports for a segment's half.
  SlsPortPosition position_of(int segment, int half) const;
  // The place of a data header's part whose pixel part has `data_bytes` bytes, or why it is
  // refused: "wrong_detector" (detshape, shape, size, detType or a position that do not match),
  // "truncated" / "oversized" (fewer / more bytes than the header's size).
  SlsPartCheck place(const SlsHeader& header, std::size_t data_bytes) const;

 private:
  DetectorDescription detector_;
  int ports_per_module_ = 1;
  int module_rows_ = 0;
  int module_columns_ = 0;
  std::vector<int> segment_at_;             // [module_row * module_columns + module_column]
  std::vector<SlsPortPosition> module_of_;  // per segment: its module row and column
};

}  // namespace livedrp::stream::sls
