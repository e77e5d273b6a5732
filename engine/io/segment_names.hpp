#pragma once
// The names of the live writers' files for one segment of a run (docs/formats.md, "Segments of a
// controlled run"). Segment 1 is a run's first start and keeps the configured names; a later start
// of the same writers under --control (an `apply`, or `start` after `stop`) writes segment 2, 3,
// ... to names derived from the configured ones, so that it neither overwrites nor is refused for
// the files its previous segment wrote:
//   FILE.EXT                  -> FILE.segSSS.EXT        (profiles.h5 -> profiles.seg002.h5)
//   DIR/runRRRR-hits-NNN.cxi  -> DIR/runRRRR-segSSS-hits-NNN.cxi
// SSS is the segment with at least three digits.
// In a run of many engines under MPI (docs/mpi.md, "Output files") every processing rank writes
// files of its own, named for its rank RRR (its number in MPI_COMM_WORLD, at least three digits),
// before any segment part:
//   FILE.EXT                  -> FILE.rankRRR.EXT       (profiles.h5 -> profiles.rank001.h5,
//                                                        profiles.rank001.seg002.h5)
//   DIR/runRRRR-hits-NNN.cxi  -> DIR/runRRRR-rankRRR[-segSSS]-hits-NNN.cxi
//   DIR/runRRRR-NNN.h5        -> DIR/runRRRR-rankRRR-NNN.h5  (a recording, replay/recorder.cpp)
#include <cstddef>
#include <cstdint>
#include <string>

namespace livedrp::io {

// The first segment, whose names are the configured ones.
inline constexpr int kFirstSegment = 1;
// Not a rank of an MPI run: the configured names.
inline constexpr int kNoRank = -1;

// `path` for segment `segment`: unchanged for segment 1, else ".segSSS" before the extension (or
// at the end when the file name has none).
std::string segment_file_path(const std::string& path, int segment);

// `path` for MPI rank `rank`: unchanged for kNoRank, else ".rankRRR" before the extension (or at
// the end when the file name has none).
std::string rank_file_path(const std::string& path, int rank);

// A live writer's file: the rank's name, then the segment's.
std::string writer_file_path(const std::string& path, int rank, int segment);

// The name (no folder) of hit file `index` (0-based) of run `run`, segment `segment`, written by
// MPI rank `rank` (kNoRank: not an MPI run's).
std::string cxi_hit_file_name(std::int64_t run, int segment, std::size_t index, int rank = kNoRank);

// "-rankRRR" for a recording's or hit file's name; empty for kNoRank.
std::string rank_name_part(int rank);

}  // namespace livedrp::io
