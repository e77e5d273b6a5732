#pragma once
// Every event's radial profile of a live run to one NeXus file (docs/formats.md, "Live profile
// series"), growing event by event:
//   /entry (NXentry, default "profiles")
//   /entry/profiles (NXdata; signal "intensity", axes [".", AXIS], AXIS_indices 1)
//     intensity     N x npt float64, NaN where no pixel contributed to a bin
//     AXIS          npt float64, bin centres ("q", "2th" or "r"; units "1/nm", "degree", ...)
//     pulse_id, event_sequence (N uint64), timestamp_ns (N int64)
//   /entry/configuration (NXnote, type text/json, data: the pipeline configuration)
// and the configuration as the root attribute pipeline_config as well (as recordings and hit
// files carry it). Rows are appended in the run's event order and flushed at close().
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/event.hpp"
#include "integrate/units.hpp"

namespace livedrp::io {

struct ProfileSeriesOptions {
  std::string path;
  std::vector<double> radial;  // bin centres
  integrate::RadialUnit unit = integrate::RadialUnit::QNm;
  std::string pipeline_config_json;
};

class ProfileSeriesWriter {
 public:
  // Creates the file now, so that a path that cannot be written is reported (InputError naming
  // the option and the path) before the run starts; an existing file is not overwritten.
  explicit ProfileSeriesWriter(ProfileSeriesOptions options);
  ~ProfileSeriesWriter();
  ProfileSeriesWriter(const ProfileSeriesWriter&) = delete;
  ProfileSeriesWriter& operator=(const ProfileSeriesWriter&) = delete;

  // One event's intensities (radial.size() values). Throws RuntimeFault when the disk refuses.
  void append(const EventHeader& header, const std::vector<double>& intensity);
  void close();  // idempotent; throws RuntimeFault when closing fails

  std::uint64_t rows() const { return rows_; }
  const std::string& path() const { return options_.path; }

 private:
  struct File;
  ProfileSeriesOptions options_;
  std::unique_ptr<File> file_;
  std::uint64_t rows_ = 0;
};

}  // namespace livedrp::io
