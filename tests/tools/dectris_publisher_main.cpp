// livedrp-dectris-publisher: a stand-in Dectris detector. Binds a ZeroMQ PUSH socket and streams
// SIMPLON stream v2 series (start, images, end) from a replayed HDF5 run or from synthetic
// photon counts, so that the engine's `--source dectris:tcp://HOST:PORT` can be tried without
// a detector. See docs/formats.md, "Dectris SIMPLON stream".
#include <chrono>
#include <cstring>
#include <iostream>
#include <map>
#include <random>
#include <thread>

#include <CLI/CLI.hpp>

#include "core/error.hpp"
#include "dectris_publisher.hpp"
#include "replay/replay_source.hpp"

namespace {

using livedrp::testing::Compression;
using livedrp::testing::PixelType;
using livedrp::testing::SeriesSettings;

struct Options {
  std::string bind = "tcp://127.0.0.1:31001";
  std::string source = "poisson:512x512";
  std::string dtype = "uint32";
  std::string compression = "bslz4";
  double rate_hz = 100;
  std::uint64_t images = 1000;
  std::uint64_t series = 1;
  std::uint64_t stop_after = 0;
  double mean_counts = 2.0;
  std::size_t distinct_frames = 16;
  std::uint64_t seed = 1;
  double pixel_size_um = 75;
  std::vector<std::string> inject;
};

// Frames to send, one after another, with the series' shape and element type.
class FrameSource {
 public:
  virtual ~FrameSource() = default;
  virtual std::span<const std::byte> next() = 0;  // empty at the end
  // True when next() cycles through a few buffers that stay put (each may be encoded once).
  virtual bool cycled() const { return false; }
  SeriesSettings shape;
};

// Poisson photon counts around `mean` with a ring, from a few frames drawn once and cycled (so
// the rate is not bound by drawing them).
class PoissonFrames : public FrameSource {
 public:
  PoissonFrames(std::uint32_t width, std::uint32_t height, PixelType type, double mean,
                std::size_t distinct, std::uint64_t seed) {
    shape.width = width, shape.height = height, shape.type = type;
    std::mt19937_64 random(seed);
    const std::size_t pixels = std::size_t(width) * height;
    const std::size_t bytes = livedrp::testing::element_size(type);
    for (std::size_t f = 0; f < std::max<std::size_t>(distinct, 1); ++f) {
      std::vector<std::byte> frame(pixels * bytes);
      for (std::uint32_t y = 0; y < height; ++y)
        for (std::uint32_t x = 0; x < width; ++x) {
          const double r = std::hypot(x - width / 2.0, y - height / 2.0);
          const double ring = 4.0 * mean * std::exp(-0.5 * std::pow((r - height / 4.0) / 3.0, 2));
          std::poisson_distribution<std::uint32_t> counts(mean + ring);
          const std::uint32_t value = counts(random);
          if (type == PixelType::Float32) {
            const float real = float(value);
            std::memcpy(&frame[(std::size_t(y) * width + x) * bytes], &real, 4);
          } else {
            for (std::size_t b = 0; b < bytes; ++b)
              frame[(std::size_t(y) * width + x) * bytes + b] = std::byte(value >> (8 * b));
          }
        }
      frames_.push_back(std::move(frame));
    }
  }
  std::span<const std::byte> next() override { return frames_[next_++ % frames_.size()]; }
  bool cycled() const override { return true; }

 private:
  std::vector<std::vector<std::byte>> frames_;
  std::size_t next_ = 0;
};

// Events of a replayed run, each sent as one image of segments x rows by cols (the detector's
// raw layout), uint16 for the raw-ADC detectors, float32 for calibrated ones; looped.
class ReplayFrames : public FrameSource {
 public:
  explicit ReplayFrames(const std::string& source) {
    const livedrp::replay::ReplaySpec spec = livedrp::replay::parse_replay_source(source);
    livedrp::replay::ReplayOptions options;
    options.files = spec.files;
    options.dataset = spec.dataset;
    options.loop = true;
    replay_ = std::make_unique<livedrp::replay::ReplaySource>(std::move(options));
    const livedrp::DetectorDescription& d = replay_->detector();
    shape.width = std::uint32_t(d.cols);
    shape.height = std::uint32_t(d.segments * d.rows);
    shape.pixel_size_m = d.pixel_size_um * 1e-6;
    switch (d.encoding) {
      case livedrp::RawEncoding::Float32:
        shape.type = PixelType::Float32;
        break;
      case livedrp::RawEncoding::Uint32:
        shape.type = PixelType::Uint32;
        break;
      case livedrp::RawEncoding::Int32:
        shape.type = PixelType::Int32;
        break;
      default:
        shape.type = PixelType::Uint16;
    }
    bytes_ = d.raw_event_bytes();
  }
  std::span<const std::byte> next() override {
    if (acquired_) replay_->release();
    acquired_ = false;
    livedrp::replay::ReplayEvent event;
    if (!replay_->acquire(event)) return {};
    acquired_ = true;
    if (!event.data) throw livedrp::InputError(event.error);
    return {event.data, bytes_};
  }

 private:
  std::unique_ptr<livedrp::replay::ReplaySource> replay_;
  std::size_t bytes_ = 0;
  bool acquired_ = false;
};

std::unique_ptr<FrameSource> open_frames(const Options& o) {
  if (o.source.rfind("replay:", 0) == 0) return std::make_unique<ReplayFrames>(o.source);
  if (o.source.rfind("poisson:", 0) == 0) {
    unsigned width = 0, height = 0;
    char separator = 0;
    std::istringstream size(o.source.substr(8));
    if (!(size >> width >> separator >> height) || separator != 'x' || width == 0 || height == 0 ||
        width > 65536 || height > 65536)
      throw livedrp::InputError("--source " + o.source + ": expected poisson:WIDTHxHEIGHT");
    const auto type = livedrp::testing::pixel_type_named(o.dtype);
    if (!type) throw livedrp::InputError("--dtype " + o.dtype + ": uint16, uint32, int32, float32");
    return std::make_unique<PoissonFrames>(width, height, *type, o.mean_counts, o.distinct_frames,
                                           o.seed);
  }
  throw livedrp::InputError("--source " + o.source +
                            ": expected poisson:WIDTHxHEIGHT or replay:PATH[:/dataset]");
}

// Faults sent once per series after its first image, for trying a receiver's counts.
void inject_faults(livedrp::testing::DectrisPublisher& publisher, const SeriesSettings& series,
                   std::span<const std::byte> frame, const std::vector<std::string>& faults) {
  for (const std::string& fault : faults) {
    if (fault == "garbage") {
      publisher.send_garbage();
    } else if (fault == "truncated") {
      publisher.send_image(series, 0, frame, {.cut_data_bytes = 16});
    } else if (fault == "shape") {
      publisher.send_image(series, 0, frame.first(frame.size() / 2),
                           {.height = std::uint32_t(series.height / 2)});
    } else if (fault == "compression") {
      SeriesSettings compressed = series;
      compressed.compression = Compression::Bslz4;
      publisher.send_image(compressed, 0, frame, {.algorithm = "bszstd"});
    } else if (fault == "outside") {
      SeriesSettings other = series;
      other.series_id = series.series_id + 1000;
      publisher.send_image(other, 0, frame);
    } else {
      throw livedrp::InputError("--inject " + fault +
                                ": expected garbage, truncated, shape, compression, outside");
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{
      "Stand-in Dectris detector: streams SIMPLON stream v2 (CBOR over ZeroMQ PUSH) series of "
      "synthetic photon counts or of a replayed HDF5 run, for livedrp's "
      "--source dectris:tcp://HOST:PORT"};
  app.set_version_flag("--version", std::string("livedrp-dectris-publisher ") + LIVEDRP_VERSION);
  app.add_option("--bind", o.bind, "PUSH endpoint to bind (a DCU uses port 31001)")
      ->capture_default_str();
  app.add_option("--source", o.source,
                 "poisson:WIDTHxHEIGHT (synthetic Poisson counts with a powder ring) or "
                 "replay:PATH[:/dataset] (a recorded run, looped)")
      ->capture_default_str();
  app.add_option("--dtype", o.dtype, "poisson: uint16, uint32, int32 or float32")
      ->capture_default_str();
  app.add_option("--compression", o.compression, "none, bslz4 or lz4")->capture_default_str();
  app.add_option("--rate", o.rate_hz, "images per second; 0: as fast as the receiver takes them")
      ->capture_default_str();
  app.add_option("--images", o.images, "images per series (number_of_images)")
      ->capture_default_str();
  app.add_option("--series", o.series, "series to send, one after another")->capture_default_str();
  app.add_option("--stop-after", o.stop_after,
                 "end each series after this many images (0: all), as a disarm mid-series does");
  app.add_option("--mean-counts", o.mean_counts, "poisson: mean photons per pixel")
      ->capture_default_str();
  app.add_option("--distinct-frames", o.distinct_frames, "poisson: frames drawn, then cycled")
      ->capture_default_str();
  app.add_option("--seed", o.seed, "poisson: random seed")->capture_default_str();
  app.add_option("--pixel-size-um", o.pixel_size_um, "poisson: pixel size")->capture_default_str();
  app.add_option("--inject", o.inject,
                 "faults sent after each series' first image: garbage, truncated, shape, "
                 "compression, outside")
      ->delimiter(',');
  CLI11_PARSE(app, argc, argv);

  try {
    const auto compression = livedrp::testing::compression_named(o.compression);
    if (!compression)
      throw livedrp::InputError("--compression " + o.compression + ": none, bslz4, lz4");
    std::unique_ptr<FrameSource> frames = open_frames(o);
    livedrp::testing::DectrisPublisher publisher(o.bind, 3'600'000);
    std::cout << "dectris publisher: PUSH " << publisher.endpoint() << ", " << frames->shape.height
              << "x" << frames->shape.width << " "
              << livedrp::testing::type_name(frames->shape.type) << ", " << o.compression << ", "
              << o.series << " series of " << o.images << " images at "
              << (o.rate_hz > 0 ? std::to_string(o.rate_hz) + " Hz" : "full speed") << std::endl;
    // The cycled frames' encoded data, by buffer: compressed once, so that a bslz4 or lz4
    // series is sent at the socket's rate rather than the compressor's.
    std::map<const std::byte*, std::vector<std::byte>> encoded_frames;
    const auto period = o.rate_hz > 0 ? std::chrono::duration<double>(1.0 / o.rate_hz)
                                      : std::chrono::duration<double>(0);
    for (std::uint64_t s = 0; s < o.series; ++s) {
      SeriesSettings series = frames->shape;
      series.series_id = s + 1;
      series.compression = *compression;
      series.number_of_images = o.images;
      if (o.source.rfind("poisson:", 0) == 0) series.pixel_size_m = o.pixel_size_um * 1e-6;
      series.frame_time_s = o.rate_hz > 0 ? 1.0 / o.rate_hz : 0.001;
      publisher.send_start(series);
      const std::uint64_t count = o.stop_after > 0 ? std::min(o.stop_after, o.images) : o.images;
      auto due = std::chrono::steady_clock::now();
      std::uint64_t sent = 0;
      for (; sent < count; ++sent) {
        const std::span<const std::byte> frame = frames->next();
        if (frame.empty()) break;
        std::this_thread::sleep_until(due);
        due += std::chrono::duration_cast<std::chrono::steady_clock::duration>(period);
        const std::vector<std::byte>* encoded = nullptr;
        if (frames->cycled()) {
          auto [cached, fresh] = encoded_frames.try_emplace(frame.data());
          if (fresh) cached->second = livedrp::testing::encode_pixels(series, frame);
          encoded = &cached->second;
        }
        publisher.send_image(series, sent, frame, {}, encoded);
        if (sent == 0 && !o.inject.empty()) inject_faults(publisher, series, frame, o.inject);
      }
      publisher.send_end(series);
      std::cout << "series " << series.series_id << ": " << sent << " of " << o.images
                << " images sent" << std::endl;
    }
  } catch (const livedrp::InputError& error) {  // bad input: exit status 2, as livedrp's tools
    std::cerr << "livedrp-dectris-publisher: " << error.what() << std::endl;
    return 2;
  } catch (const std::exception& error) {
    std::cerr << "livedrp-dectris-publisher: " << error.what() << std::endl;
    return 1;
  }
  return 0;
}
