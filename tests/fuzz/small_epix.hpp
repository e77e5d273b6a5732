#pragma once
// The detector the constants fuzz target and its seed share: an ePix10ka-like detector (7 gain
// modes and a per-pixel configuration, the richest constants layout) of two 4 x 6 segments, small
// enough that a constants file stays a few kB for the fuzzer to mutate.
#include "core/detector.hpp"
#include "core/json_input.hpp"

namespace livedrp::fuzz {

inline DetectorDescription small_epix() {
  return parse_detector_description(parse_json_input(R"({
    "schema_version": 1, "name": "fuzz_epix", "description": "fuzz target's small ePix10ka",
    "raw_encoding": "epix10ka", "segments": 2, "segment_shape": [4, 6], "pixel_size_um": 100.0,
    "asic_shape": [2, 3], "bank_columns": 3,
    "gain_modes": [{"name": "FH", "nominal_adu_per_kev": 16.0},
                   {"name": "FM", "nominal_adu_per_kev": 5.33},
                   {"name": "FL", "nominal_adu_per_kev": 0.16},
                   {"name": "AHL-H", "nominal_adu_per_kev": 16.0},
                   {"name": "AML-M", "nominal_adu_per_kev": 5.33},
                   {"name": "AHL-L", "nominal_adu_per_kev": 0.16},
                   {"name": "AML-L", "nominal_adu_per_kev": 0.16}],
    "placement": [{"x_px": 0, "y_px": 0, "rotation_deg": 0},
                  {"x_px": 0, "y_px": 10, "rotation_deg": 0}]})",
                                                     "fuzz detector"),
                                    "fuzz detector");
}

}  // namespace livedrp::fuzz
