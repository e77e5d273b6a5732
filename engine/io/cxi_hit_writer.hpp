#pragma once
// Hit events to CXI files that CrystFEL's indexamajig reads (docs/formats.md, "Hit files"), as
// Cheetah and OM write them: per file, N frames of
//   /entry_1/data_1/data              N x slab_ss x slab_fs float32, the calibrated image in the
//                                     slab the peak positions refer to (segments stacked along
//                                     the slow scan), one frame per chunk
//   /entry_1/result_1/nPeaks          N int32, peaks listed for the frame
//   /entry_1/result_1/peakXPosRaw     N x max_peaks float32, fs; zero past nPeaks
//   /entry_1/result_1/peakYPosRaw     N x max_peaks float32, ss (pixel centres at integers: the
//                                     Cheetah convention, which indexamajig shifts by half a pixel)
//   /entry_1/result_1/peakTotalIntensity, peakMaximumValue, peakSNR, peakNPixels (the same shape)
//   /entry_1/pulse_id, /entry_1/event_sequence (uint64), /entry_1/timestamp_ns (int64)
// and the pipeline configuration (JSON) as the root attribute pipeline_config, as recordings
// carry it. Files are DIR/runRRRR-hits-NNN.cxi, a new one after every hits_per_file hits; a file
// is closed (complete) when it is full and by close().
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "core/event.hpp"
#include "peaks/peak_search.hpp"

namespace livedrp::io {

struct CxiHitOptions {
  std::filesystem::path directory;
  std::int64_t run = 1;
  int segment = 1;  // of a controlled run: 1 keeps the plain names (io/segment_names.hpp)
  int rank = -1;    // of an MPI run: the rank's own names; -1 keeps the plain ones (likewise)
  std::uint64_t hits_per_file = 1000;
  int slab_height = 0, slab_width = 0;  // peaks::slab_layout(detector)
  int max_peaks = 0;                    // columns of the peak arrays
  std::string image_unit;               // the data's units attribute; empty: none
  std::string detector_name;
  std::string pipeline_config_json;
};

struct CxiHit {
  EventHeader header;
  const float* image = nullptr;  // slab_height * slab_width values
  const std::vector<peaks::Peak>* peaks = nullptr;
};

class CxiHitWriter {
 public:
  // Creates the directory if needed and the first file, so that a directory that cannot be
  // written is reported (InputError naming it) before the run starts; a file of the same name is
  // never overwritten (InputError).
  explicit CxiHitWriter(CxiHitOptions options);
  ~CxiHitWriter();
  CxiHitWriter(const CxiHitWriter&) = delete;
  CxiHitWriter& operator=(const CxiHitWriter&) = delete;

  // Appends one hit; its first max_peaks peaks are listed (returns how many were left out).
  // Throws RuntimeFault when the disk refuses.
  std::size_t append(const CxiHit& hit);
  void close();  // closes the current file; idempotent; throws RuntimeFault when that fails

  std::uint64_t hits() const { return hits_; }
  const std::vector<std::filesystem::path>& files() const { return files_; }

 private:
  struct File;
  void open_next();

  CxiHitOptions options_;
  std::unique_ptr<File> file_;
  std::vector<std::filesystem::path> files_;
  std::uint64_t hits_ = 0;
  std::vector<float> row_;  // one row of a peak array
};

}  // namespace livedrp::io
