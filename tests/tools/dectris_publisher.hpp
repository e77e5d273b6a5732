#pragma once
// A stand-in for a Dectris detector's SIMPLON stream (version 2): binds a ZeroMQ PUSH socket and
// sends start, image and end messages for given frames, raw or compressed (bslz4, lz4), and on
// request the faults a receiver must survive: bytes that are not CBOR, an image cut short, an
// image of another shape, an unknown compression, an image outside its series, a message cut
// in the middle, an oversized message, an end before all images. The messages follow the
// SIMPLON API 1.8 stream v2 documentation (github.com/dectris/documentation, stream_v2) and
// Dectris' compression tag 56500 (cbor/dectris-compression-tag.md).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <zmq.hpp>

namespace livedrp::testing {

enum class PixelType { Uint16, Uint32, Int32, Float32 };
enum class Compression { None, Bslz4, Lz4 };

std::size_t element_size(PixelType type);
// RFC 8746 typed-array tags, little-endian: 69 uint16, 70 uint32, 78 int32, 85 float32.
std::uint64_t typed_array_tag(PixelType type);
const char* type_name(PixelType type);  // "uint16", ...
std::optional<PixelType> pixel_type_named(const std::string& name);
std::optional<Compression> compression_named(const std::string& name);  // none, bslz4, lz4

// The HDF5 bitshuffle filter's framing with LZ4 (what "bslz4" holds): the uncompressed size
// (uint64 BE), the block size in bytes (uint32 BE), then each block of `block_elements`
// elements (the last one shorter, a multiple of 8) bit-transposed and LZ4-compressed after its
// compressed size (uint32 BE); the last (count mod 8) elements follow as they are.
std::vector<std::byte> bitshuffle_lz4_frame(std::span<const std::byte> data,
                                            std::size_t element_size,
                                            std::size_t block_elements = 0);  // 0: 8 KiB worth
// The HDF5 LZ4 filter's framing (what "lz4" holds): the same header, then per block of
// `block_bytes` its stored size (uint32 BE) and the LZ4 block, or the bytes as they are when LZ4
// does not make them smaller.
std::vector<std::byte> lz4_frame(std::span<const std::byte> data, std::size_t block_bytes = 65536);

struct SeriesSettings {
  std::uint64_t series_id = 1;
  std::string series_unique_id;  // empty: "livedrp-series-<series_id>"
  std::uint32_t width = 0;       // image_size_x
  std::uint32_t height = 0;      // image_size_y
  PixelType type = PixelType::Uint16;
  Compression compression = Compression::None;
  std::uint64_t number_of_images = 0;
  double pixel_size_m = 75e-6;
  double frame_time_s = 0.01;
  std::string channel = "threshold_1";               // an Eiger's first threshold
  std::string series_date = "2026-01-01T00:00:00Z";  // images' start_time counts from it
  std::uint64_t time_base = 1'000'000;    // denominator of start_time, stop_time, real_time
  bool announce_dtype = false;            // Jungfraujoch's image_dtype in the start message
  std::vector<std::uint32_t> pixel_mask;  // one per pixel; empty: no pixel_mask field
};

// What to do wrong with one image message.
struct ImageFaults {
  std::string algorithm;           // sent in tag 56500 instead of the settings' one (e.g. "bszstd")
  std::size_t cut_data_bytes = 0;  // the (compressed or raw) data lose this many last bytes
  std::optional<std::uint32_t> width, height;  // dimensions other than the series'
  std::size_t padding_bytes = 0;  // a user_data byte string of this size (an oversized image)
};

std::vector<std::byte> start_message(const SeriesSettings& series);
// The image's data as the series stores it: raw, or compressed (bslz4, lz4). A frame sent many
// times is encoded once and passed to image_message, so that the send rate is not the
// compressor's.
std::vector<std::byte> encode_pixels(const SeriesSettings& series,
                                     std::span<const std::byte> pixels);
// `pixels`: width x height elements of the series' type, little-endian; `encoded`, when given,
// is encode_pixels of them.
std::vector<std::byte> image_message(const SeriesSettings& series, std::uint64_t image_id,
                                     std::span<const std::byte> pixels,
                                     const ImageFaults& faults = {},
                                     const std::vector<std::byte>* encoded = nullptr);
std::vector<std::byte> end_message(const SeriesSettings& series);
// A well-formed map of another type (Jungfraujoch sends "calibration" and "metadata").
std::vector<std::byte> other_message(const std::string& type);

class DectrisPublisher {
 public:
  // Binds a PUSH socket ("tcp://127.0.0.1:*" picks a free port; see endpoint()). Sends wait up
  // to `send_timeout_ms` for a receiver, then throw std::runtime_error.
  explicit DectrisPublisher(const std::string& bind = "tcp://127.0.0.1:*",
                            int send_timeout_ms = 20000);
  // The bound endpoint with its port, e.g. "tcp://127.0.0.1:41234".
  const std::string& endpoint() const { return endpoint_; }

  void send(std::span<const std::byte> message);
  void send_start(const SeriesSettings& series) { send(start_message(series)); }
  void send_image(const SeriesSettings& series, std::uint64_t image_id,
                  std::span<const std::byte> pixels, const ImageFaults& faults = {},
                  const std::vector<std::byte>* encoded = nullptr) {
    send(image_message(series, image_id, pixels, faults, encoded));
  }
  void send_end(const SeriesSettings& series) { send(end_message(series)); }
  // Bytes that are not CBOR at all.
  void send_garbage();
  // A valid message cut in the middle (its CBOR ends inside the map).
  void send_cut(std::span<const std::byte> message, std::size_t keep_bytes);

 private:
  // Its own context, terminated with the publisher: termination waits (up to the linger time)
  // for queued messages to leave, so a tool that exits right after its last send still
  // delivers it (the engine's shared context is never terminated).
  zmq::context_t context_{1};
  zmq::socket_t socket_;
  std::string endpoint_;
};

}  // namespace livedrp::testing
