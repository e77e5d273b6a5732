#pragma once
// pyFAI's named detectors (pyFAI.detectors: _dectris.py, _psi.py, _others.py): what a PONI file's
// `Detector: Eiger2_4M` stands for. pyFAI-calib2 writes only the name (and a Detector_config that
// may be empty), so the pixel size, the shape and the mask of the gaps between modules come from
// this table. The facts are pyFAI's; names match as pyFAI's detector_factory matches them, case
// aside and with ' ' read as '_' ("Eiger2 4M" is Eiger2_4M).
#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace livedrp::integrate {

// Dead columns that pyFAI's CdTe variants mask in the middle of every module, on top of the gaps:
// none, Eiger2 CdTe's two (module_cols / 2 - 1 and module_cols / 2) or Pilatus CdTe's three
// (module_cols / 2 - 1 .. module_cols / 2 + 1).
enum class MidModuleGap { None, EigerCdTe2, PilatusCdTe3 };

struct PyfaiDetector {
  std::string_view name;                    // pyFAI's class name, as pyFAI-calib2 writes it
  std::array<std::string_view, 4> aliases;  // pyFAI's aliases; empty ones unused
  double pixel1 = 0.0, pixel2 = 0.0;        // m, along axis 1 (rows) and axis 2 (columns)
  int rows = 0, cols = 0;                   // pyFAI's MAX_SHAPE
  // Modules tiled with gaps between them (pyFAI's MODULE_SIZE, MODULE_GAP; calc_mask of
  // _Dectris): 0 where the detector masks no gaps.
  int module_rows = 0, module_cols = 0;
  int gap_rows = 0, gap_cols = 0;
  MidModuleGap mid_gap = MidModuleGap::None;
  // pyFAI's raw Jungfrau module: the pixels on either side of every internal border between its
  // 256 x 256 chips are twice as wide (BORDER_SIZE_RELATIVE). 0: uniform pixels.
  int large_pixel_chip = 0;
  // Where livedrp took the entry from when it is not pyFAI's own table.
  std::string_view source;
};

// Every detector of the table, in the order the docs list them.
std::span<const PyfaiDetector> pyfai_detectors();

// The entry whose name or alias matches `name` as pyFAI matches it; nullptr when none does.
const PyfaiDetector* find_pyfai_detector(std::string_view name);

// A few of the table's names for an error message: "Eiger2_4M, Pilatus1M, ...".
std::string pyfai_detector_examples();

// pyFAI's calc_mask for a detector of rows x columns with modules of module_rows x module_cols
// (the table's, or a Detector_config's module_size): 1 on the rows and columns of the gaps (and
// the CdTe mid-module columns), 0 elsewhere, row-major. Empty when the detector masks nothing.
std::vector<std::uint8_t> pyfai_gap_mask(const PyfaiDetector& detector, int rows, int cols,
                                         int module_rows, int module_cols);

}  // namespace livedrp::integrate
