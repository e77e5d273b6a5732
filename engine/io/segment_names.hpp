#pragma once
// The names of the live writers' files for one segment of a run (docs/formats.md, "Segments of a
// controlled run"). Segment 1 is a run's first start and keeps the configured names; a later start
// of the same writers under --control (an `apply`, or `start` after `stop`) writes segment 2, 3,
// ... to names derived from the configured ones, so that it neither overwrites nor is refused for
// the files its previous segment wrote:
//   FILE.EXT                  -> FILE.segSSS.EXT        (profiles.h5 -> profiles.seg002.h5)
//   DIR/runRRRR-hits-NNN.cxi  -> DIR/runRRRR-segSSS-hits-NNN.cxi
// SSS is the segment with at least three digits.
#include <cstddef>
#include <cstdint>
#include <string>

namespace livedrp::io {

// The first segment, whose names are the configured ones.
inline constexpr int kFirstSegment = 1;

// `path` for segment `segment`: unchanged for segment 1, else ".segSSS" before the extension (or
// at the end when the file name has none).
std::string segment_file_path(const std::string& path, int segment);

// The name (no folder) of hit file `index` (0-based) of run `run`, segment `segment`.
std::string cxi_hit_file_name(std::int64_t run, int segment, std::size_t index);

}  // namespace livedrp::io
