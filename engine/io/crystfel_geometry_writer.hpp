#pragma once
// A CrystFEL geometry (.geom) for the hit files of `livedrp-engine run --write-hits`
// (docs/formats.md, "Hit files for CrystFEL"), from a detector description's placement and the
// PONI that livedrp integrates it with: `livedrp-engine geometry`.
//
// The hit files hold the slab (segments stacked along the slow scan); the geometry names it
// (data, dim0 = %, dim1 = ss, dim2 = fs, peak_list, peak_list_type = cxi) and has one panel per
// ASIC, p<segment>a<asic> (ASICs row by row from the segment's first pixel, as the peak lists'
// panel names). Positions follow livedrp's reading of a .geom (integrate/layout.hpp,
// layout_from_geometry): dim1 = +y / res, dim2 = -x / res, the beam at x = y = 0; so an assembled
// pixel at (row Y, column X) of the detector's placement, with the PONI's beam at (by, bx) pixels,
// is at lab x = -(X - bx), y = Y - by. With clen = the PONI's distance, integrating the slab with
// this geometry and an untilted PONI at the beam is integrating the detector with the PONI given.
#include <string>

#include "core/detector.hpp"
#include "integrate/poni.hpp"

namespace livedrp::io {

// The .geom text. `poni_name` is quoted in its header. Throws InputError naming what cannot be
// written: a detector without placement, large pixels at ASIC edges (a CrystFEL panel has one
// pixel size; not written yet), a tilted PONI (rot1..3 not 0) or one with another orientation
// than 3, or PONI pixel sizes other than the detector's.
std::string crystfel_geometry_text(const DetectorDescription& detector,
                                   const integrate::PoniGeometry& poni,
                                   const std::string& poni_name);

}  // namespace livedrp::io
