// Writes the seeds that are made with the project's own encoders into tests/fuzz/corpus/:
// protocol messages of every topic, Dectris SIMPLON messages (the stand-in detector's encoder),
// a pipeline configuration and a constants file. Run once when a format changes:
//   build-sanitize/tests/fuzz/livedrp-fuzz-write-seeds tests/fuzz/corpus
// The other seeds are real files from resources/ and tests/reference/, or written by hand.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "calib/constants.hpp"
#include "dectris_publisher.hpp"
#include "exec/engine.hpp"
#include "protocol/message.hpp"
#include "protocol/peaks_topic.hpp"
#include "protocol/profile_topic.hpp"
#include "protocol/topics.hpp"
#include "small_epix.hpp"

namespace {

using namespace livedrp;
namespace fs = std::filesystem;

// fuzz_protocol_message.cpp splits its input at this separator.
constexpr char kPartSeparator[] = "\n--part--\n";

void write(const fs::path& path, const void* data, std::size_t size) {
  fs::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary);
  out.write(static_cast<const char*>(data), std::streamsize(size));
  if (!out) throw std::runtime_error("cannot write " + path.string());
  std::printf("%s (%zu bytes)\n", path.c_str(), size);
}

void write_message(const fs::path& dir, const std::string& name, const protocol::Message& m) {
  std::string joined;
  const std::vector<std::string> parts = protocol::encode(m);
  for (std::size_t i = 0; i < parts.size(); ++i) joined += (i ? kPartSeparator : "") + parts[i];
  write(dir / (name + ".msg"), joined.data(), joined.size());
}

void write_protocol_messages(const fs::path& dir) {
  protocol::StatsPayload stats;
  stats.events_in = 12;
  stats.events_processed = 10;
  stats.events_dropped = 2;
  stats.drops_by_reason = {{"ring_full", 2}};
  stats.backend = "cpu";
  stats.stages = {{"calibrate", 120.0, 300.0, 2.5}};
  stats.streams = {{0, 1, 4, 10}};
  stats.compression = protocol::CompressionStats{"lossless", 0, 100, 40, 1000, 400, 2.5, 1.2, {}};
  stats.peak_finding = protocol::PeakFindingStats{4, 1, 12, 10, 3, 30, 0.25, 1, 3, 0};
  stats.rate_bound = protocol::RateBound{"pacing", 0.2, "the pace is kept"};
  stats.source_stream = protocol::SourceStreamStats{"sls", 20, 10, 1, 0, {{"malformed", 1}}, ""};
  write_message(dir, "stats", protocol::make_stats_message(stats));

  protocol::StatusPayload status;
  status.state = "running";
  status.source = "sim:generic_f32";
  write_message(dir, "status", protocol::make_status_message(status));

  protocol::RadialProfile profile;
  profile.centres = {0.5, 1.5, 2.5, 3.5};
  profile.latest = {1.0, std::nan(""), 3.0, 4.0};
  profile.average = {1.5, std::nan(""), 2.5, 3.5};
  write_message(dir, "profile", protocol::make_profile_message(profile));

  protocol::EventPeaks peaks;
  peaks.sequence = 7;
  peaks.found = 2;
  peaks.hit = true;
  peaks.min_peaks_for_hit = 1;
  peaks.params_version = 1;
  peaks.peaks = {{1, 2, 1.5f, 2.5f, 500, 90, 2, 25, 0, 4},
                 {3, 1, 3.5f, 0.5f, 200, 40, 2, 10, 1, 3}};
  write_message(dir, "peaks", protocol::make_peaks_message(peaks));

  protocol::ImageFrame image;
  image.sequence = peaks.sequence;
  image.height = 3;
  image.width = 4;
  image.pixels = {0, 1, 2, 3, 4, 5, 6, std::nanf(""), 8, 9, 10, 11};
  image.unit = "keV";
  image.gain_modes = {"g0", "g1", "bad"};
  image.segments = 2;
  image.gain_occupancy = {0.5f, 0.5f, 0.0f, 1.0f, 0.0f, 0.0f};
  image.has_peaks = true;
  image.peaks = peaks;
  write_message(dir, "image", protocol::make_image_message(image));
}

void write_dectris_messages(const fs::path& dir) {
  namespace pub = livedrp::testing;
  pub::SeriesSettings series;
  series.width = 6;
  series.height = 4;
  series.number_of_images = 1;
  series.pixel_mask = std::vector<std::uint32_t>(24, 0);
  series.pixel_mask[5] = 1;
  const auto save = [&](const std::string& name, const std::vector<std::byte>& bytes) {
    write(dir / (name + ".cbor"), bytes.data(), bytes.size());
  };
  save("start", pub::start_message(series));
  std::vector<std::byte> pixels(24 * 2);
  for (std::size_t i = 0; i < pixels.size(); i += 2) pixels[i] = std::byte(i);
  for (const auto& [name, compression] : {std::pair{"image_raw", pub::Compression::None},
                                          std::pair{"image_bslz4", pub::Compression::Bslz4},
                                          std::pair{"image_lz4", pub::Compression::Lz4}}) {
    series.compression = compression;
    save(name, pub::image_message(series, 0, pixels, {}));
  }
  save("end", pub::end_message(series));
  save("other", pub::other_message("calibration"));
}

void write_pipeline_config(const fs::path& dir) {
  EngineConfig config;
  config.source = "sim:epix10ka2m";
  config.compression.codec = "lossless";
  const std::string text = config.to_json().dump(1);
  write(dir / "defaults_lossless.json", text.data(), text.size());
}

void write_constants(const fs::path& dir) {
  const DetectorDescription detector = fuzz::small_epix();
  // Constants that differ per mode and pixel, a few pixels masked and every configuration used,
  // so that the seed reaches every check of the reader.
  CalibrationConstants constants = identity_constants(detector);
  for (std::size_t i = 0; i < constants.pedestal_gain.size(); ++i)
    constants.pedestal_gain[i] = {float(1000 + i), 1.0f / float(1 + i % 7)};
  for (std::size_t p = 0; p < constants.pixels; ++p)
    constants.pixel_status[p] = std::uint8_t((p % 5) | (p % 11 == 0 ? calib::kStatusMasked : 0));
  fs::create_directories(dir);
  save_constants_hdf5(dir / "small_epix.h5", detector, constants);
  std::printf("%s\n", (dir / "small_epix.h5").c_str());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR (tests/fuzz/corpus)\n", argv[0]);
    return 2;
  }
  const fs::path corpus = argv[1];
  write_protocol_messages(corpus / "protocol_message");
  write_dectris_messages(corpus / "dectris_message");
  write_pipeline_config(corpus / "pipeline_config");
  write_constants(corpus / "constants");
  return 0;
}
