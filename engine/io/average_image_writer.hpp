#pragma once
// The average calibrated image of a live run, assembled, to one NeXus file
// (`livedrp-engine run --write-average FILE.h5`; docs/formats.md, "Average image"):
//   /entry (NXentry, default "average")
//   /entry/average (NXdata, signal "data"; attributes averaged_over and averaged_over_note:
//                   what the mean is taken over, every event or a sample of them)
//     data          float32 [height, width]: per assembled pixel the mean of the events' finite
//                   calibrated values, NaN where none (gaps, pixels never finite)
//     events        uint64: events averaged
//     first_pulse_id, last_pulse_id   uint64
//   /entry/configuration (NXnote): the run's configuration; root attribute pipeline_config too.
// Image pixel (row, column) spans the assembled detector's [row, row + 1) x [column, column + 1)
// (core/detector.hpp placement), which is the frame a PONI for livedrp places (integrate/layout):
// a PONI fitted to this image (pyFAI-calib2) is one for livedrp.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace livedrp::io {

// What an average is taken over (/entry/average's attribute averaged_over).
inline constexpr const char* kAverageOverEvents = "events";  // every processed event of the run
// A sample of the run's events: the `image` messages a viewer received (image.publish_hz a
// second), as the GUI's "Export average image" writes it.
inline constexpr const char* kAverageOverSampledImages = "sampled_images";

struct AverageImageOptions {
  std::string path;
  std::string unit;  // the data's units attribute; empty: none
  std::string pipeline_config_json;
  std::string creator = "livedrp-engine";  // root attribute creator
  // Where the request came from, for errors ("--write-average: cannot create ...").
  std::string origin = "--write-average";
  // Replace a file at `path` (the GUI, after its save dialog asked); by default an existing file
  // is refused.
  bool overwrite = false;
  std::string averaged_over = kAverageOverEvents;
  // A sentence saying what the mean is of (attribute averaged_over_note); empty: the engine's.
  std::string averaged_over_note;
};

class AverageImageWriter {
 public:
  // Creates the file now (InputError naming --write-average and the path when it cannot be; an
  // existing file is not overwritten); the image is written by write().
  explicit AverageImageWriter(AverageImageOptions options);
  ~AverageImageWriter();
  AverageImageWriter(const AverageImageWriter&) = delete;
  AverageImageWriter& operator=(const AverageImageWriter&) = delete;

  // Writes the image (height * width values) and closes the file. Throws RuntimeFault.
  void write(const std::vector<float>& image, std::size_t height, std::size_t width,
             std::uint64_t events, std::uint64_t first_pulse_id, std::uint64_t last_pulse_id);
  const std::string& path() const { return options_.path; }

 private:
  AverageImageOptions options_;
  long long file_ = -1;  // hid_t, kept out of this header
};

}  // namespace livedrp::io
