#include "dectris_publisher.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <lz4.h>

#include "cbor_writer.hpp"

namespace livedrp::testing {
namespace {

constexpr std::uint64_t kSelfDescribedCbor = 55799;  // RFC 8949 section 3.4.6
constexpr std::uint64_t kDateTimeString = 0;         // RFC 8949 section 3.4.1
constexpr std::uint64_t kMultiDimArray = 40;         // RFC 8746 section 3.1.1, row-major
constexpr std::uint64_t kDectrisCompression = 56500;

void put_big_endian(std::vector<std::byte>& out, std::uint64_t value, int bytes) {
  for (int i = bytes - 1; i >= 0; --i) out.push_back(std::byte(value >> (8 * i)));
}

// LZ4-compresses `data` onto the end of `out`; returns the compressed size.
std::size_t append_lz4(std::vector<std::byte>& out, std::span<const std::byte> data) {
  const int bound = LZ4_compressBound(int(data.size()));
  const std::size_t at = out.size();
  out.resize(at + std::size_t(bound));
  const int written =
      LZ4_compress_default(reinterpret_cast<const char*>(data.data()),
                           reinterpret_cast<char*>(out.data() + at), int(data.size()), bound);
  if (written <= 0) throw std::runtime_error("LZ4 could not compress a block");
  out.resize(at + std::size_t(written));
  return std::size_t(written);
}

// The bit transpose of one block of n elements (n a multiple of 8): bit k of byte j of element
// i becomes bit i of row 8j + k, rows of n bits one after another, least significant bit first.
// Written bit by bit on purpose: the engine's decoder works 8x8 bits at a time, so the two are
// independent.
std::vector<std::byte> bit_transpose(std::span<const std::byte> block, std::size_t element_size) {
  const std::size_t n = block.size() / element_size;
  const std::size_t row_bytes = n / 8;
  std::vector<std::byte> rows(block.size(), std::byte(0));
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < element_size; ++j) {
      const unsigned value = unsigned(block[i * element_size + j]);
      for (std::size_t k = 0; k < 8; ++k)
        if ((value >> k) & 1u) rows[(8 * j + k) * row_bytes + i / 8] |= std::byte(1u << (i % 8));
    }
  return rows;
}

// Writes tag 40 [[height, width], typed array], the typed array raw or in tag 56500; `stored`
// is the data as the series stores it (encode_pixels).
void write_image_array(CborWriter& cbor, const SeriesSettings& series, std::uint32_t width,
                       std::uint32_t height, std::span<const std::byte> stored,
                       const ImageFaults& faults) {
  cbor.tag(kMultiDimArray);
  cbor.array(2);
  cbor.array(2);
  cbor.unsigned_integer(height);  // row-major: the slowest dimension first
  cbor.unsigned_integer(width);
  cbor.tag(typed_array_tag(series.type));
  std::string algorithm;
  if (series.compression == Compression::Bslz4) algorithm = "bslz4";
  if (series.compression == Compression::Lz4) algorithm = "lz4";
  if (!faults.algorithm.empty()) algorithm = faults.algorithm;
  stored = stored.first(stored.size() - std::min(faults.cut_data_bytes, stored.size()));
  if (algorithm.empty()) {
    cbor.bytes(stored);
    return;
  }
  cbor.tag(kDectrisCompression);
  cbor.array(3);
  cbor.text(algorithm);
  // The modifier: bslz4's element size; unused (0) for lz4.
  cbor.unsigned_integer(algorithm == "lz4" ? 0 : element_size(series.type));
  cbor.bytes(stored);
}

std::string unique_id(const SeriesSettings& series) {
  return series.series_unique_id.empty() ? "livedrp-series-" + std::to_string(series.series_id)
                                         : series.series_unique_id;
}

void write_rational(CborWriter& cbor, std::uint64_t numerator, std::uint64_t denominator) {
  cbor.array(2);
  cbor.unsigned_integer(numerator);
  cbor.unsigned_integer(denominator);
}

}  // namespace

std::size_t element_size(PixelType type) {
  return type == PixelType::Uint16 ? 2 : 4;
}

std::uint64_t typed_array_tag(PixelType type) {
  switch (type) {
    case PixelType::Uint16:
      return 69;
    case PixelType::Uint32:
      return 70;
    case PixelType::Int32:
      return 78;
    case PixelType::Float32:
      return 85;
  }
  return 0;
}

const char* type_name(PixelType type) {
  switch (type) {
    case PixelType::Uint16:
      return "uint16";
    case PixelType::Uint32:
      return "uint32";
    case PixelType::Int32:
      return "int32";
    case PixelType::Float32:
      return "float32";
  }
  return "unknown";
}

std::optional<PixelType> pixel_type_named(const std::string& name) {
  for (PixelType type :
       {PixelType::Uint16, PixelType::Uint32, PixelType::Int32, PixelType::Float32})
    if (name == type_name(type)) return type;
  return std::nullopt;
}

std::optional<Compression> compression_named(const std::string& name) {
  if (name == "none") return Compression::None;
  if (name == "bslz4") return Compression::Bslz4;
  if (name == "lz4") return Compression::Lz4;
  return std::nullopt;
}

std::vector<std::byte> bitshuffle_lz4_frame(std::span<const std::byte> data,
                                            std::size_t element_size, std::size_t block_elements) {
  if (block_elements == 0)  // the bitshuffle library's default: 8 KiB, a multiple of 8, >= 128
    block_elements = std::max<std::size_t>(8192 / element_size / 8 * 8, 128);
  if (block_elements % 8 != 0)
    throw std::invalid_argument("block_elements must be a multiple of 8");
  std::vector<std::byte> out;
  put_big_endian(out, data.size(), 8);
  put_big_endian(out, block_elements * element_size, 4);
  const std::size_t elements = data.size() / element_size;
  std::size_t done = 0;
  while (elements - done >= 8) {
    const std::size_t n = std::min(block_elements, (elements - done) / 8 * 8);
    const std::vector<std::byte> rows =
        bit_transpose(data.subspan(done * element_size, n * element_size), element_size);
    const std::size_t size_at = out.size();
    put_big_endian(out, 0, 4);
    const std::size_t compressed = append_lz4(out, rows);
    for (int i = 0; i < 4; ++i) out[size_at + i] = std::byte(compressed >> (8 * (3 - i)));
    done += n;
  }
  out.insert(out.end(), data.begin() + std::ptrdiff_t(done * element_size), data.end());
  return out;
}

std::vector<std::byte> lz4_frame(std::span<const std::byte> data, std::size_t block_bytes) {
  std::vector<std::byte> out;
  put_big_endian(out, data.size(), 8);
  put_big_endian(out, block_bytes, 4);
  for (std::size_t done = 0; done < data.size();) {
    const std::size_t n = std::min(block_bytes, data.size() - done);
    const std::span<const std::byte> block = data.subspan(done, n);
    std::vector<std::byte> compressed;
    append_lz4(compressed, block);
    if (compressed.size() >= n) compressed.assign(block.begin(), block.end());  // stored as is
    put_big_endian(out, compressed.size(), 4);
    out.insert(out.end(), compressed.begin(), compressed.end());
    done += n;
  }
  return out;
}

std::vector<std::byte> start_message(const SeriesSettings& series) {
  CborWriter cbor;
  cbor.tag(kSelfDescribedCbor);  // DCUs begin every message with 0xd9d9f7
  const bool mask = !series.pixel_mask.empty();
  cbor.map(19 + (mask ? 1 : 0) + (series.announce_dtype ? 1 : 0));
  cbor.text("type");
  cbor.text("start");
  cbor.text("series_id");
  cbor.unsigned_integer(series.series_id);
  cbor.text("series_unique_id");
  cbor.text(unique_id(series));
  cbor.text("arm_date");
  cbor.tag(kDateTimeString);
  cbor.text(series.series_date);
  cbor.text("image_size_x");
  cbor.unsigned_integer(series.width);
  cbor.text("image_size_y");
  cbor.unsigned_integer(series.height);
  cbor.text("number_of_images");
  cbor.unsigned_integer(series.number_of_images);
  cbor.text("channels");
  cbor.array(1);
  cbor.text(series.channel);
  cbor.text("pixel_size_x");
  cbor.float64(series.pixel_size_m);
  cbor.text("pixel_size_y");
  cbor.float64(series.pixel_size_m);
  cbor.text("beam_center_x");
  cbor.float64(series.width / 2.0);
  cbor.text("beam_center_y");
  cbor.float64(series.height / 2.0);
  cbor.text("incident_energy");
  cbor.float64(12400.0);
  cbor.text("incident_wavelength");
  cbor.float64(1.0);
  cbor.text("count_time");
  cbor.float64(series.frame_time_s);
  cbor.text("frame_time");
  cbor.float64(series.frame_time_s);
  cbor.text("countrate_correction_enabled");
  cbor.boolean(false);
  cbor.text("pixel_mask_enabled");
  cbor.boolean(mask);
  cbor.text("detector_description");
  cbor.text("livedrp-dectris-publisher");
  if (series.announce_dtype) {
    cbor.text("image_dtype");
    cbor.text(type_name(series.type));
  }
  if (mask) {
    cbor.text("pixel_mask");
    cbor.map(1);
    cbor.text(series.channel);
    cbor.tag(kMultiDimArray);
    cbor.array(2);
    cbor.array(2);
    cbor.unsigned_integer(series.height);
    cbor.unsigned_integer(series.width);
    cbor.tag(70);  // uint32, little-endian
    std::vector<std::byte> bits;
    for (std::uint32_t value : series.pixel_mask)
      for (int b = 0; b < 4; ++b) bits.push_back(std::byte(value >> (8 * b)));
    cbor.bytes(bits);
  }
  return cbor.take();
}

std::vector<std::byte> encode_pixels(const SeriesSettings& series,
                                     std::span<const std::byte> pixels) {
  switch (series.compression) {
    case Compression::Bslz4:
      return bitshuffle_lz4_frame(pixels, element_size(series.type));
    case Compression::Lz4:
      return lz4_frame(pixels);
    case Compression::None:
      break;
  }
  return {pixels.begin(), pixels.end()};
}

std::vector<std::byte> image_message(const SeriesSettings& series, std::uint64_t image_id,
                                     std::span<const std::byte> pixels, const ImageFaults& faults,
                                     const std::vector<std::byte>* encoded) {
  std::vector<std::byte> encoded_here;
  if (encoded == nullptr) {
    encoded_here = encode_pixels(series, pixels);
    encoded = &encoded_here;
  }
  CborWriter cbor;
  cbor.tag(kSelfDescribedCbor);
  cbor.map(9 + (faults.padding_bytes > 0 ? 1 : 0));
  cbor.text("type");
  cbor.text("image");
  cbor.text("series_id");
  cbor.unsigned_integer(series.series_id);
  cbor.text("series_unique_id");
  cbor.text(unique_id(series));
  cbor.text("image_id");
  cbor.unsigned_integer(image_id);
  const auto frame_ticks =
      std::uint64_t(std::llround(series.frame_time_s * double(series.time_base)));
  cbor.text("real_time");
  write_rational(cbor, frame_ticks, series.time_base);
  cbor.text("series_date");
  cbor.tag(kDateTimeString);
  cbor.text(series.series_date);
  cbor.text("start_time");
  write_rational(cbor, image_id * frame_ticks, series.time_base);
  cbor.text("stop_time");
  write_rational(cbor, (image_id + 1) * frame_ticks, series.time_base);
  cbor.text("data");
  cbor.map(1);
  cbor.text(series.channel);
  write_image_array(cbor, series, faults.width.value_or(series.width),
                    faults.height.value_or(series.height), *encoded, faults);
  if (faults.padding_bytes > 0) {
    cbor.text("user_data");
    cbor.bytes(std::vector<std::byte>(faults.padding_bytes, std::byte(0x5a)));
  }
  return cbor.take();
}

std::vector<std::byte> end_message(const SeriesSettings& series) {
  CborWriter cbor;
  cbor.tag(kSelfDescribedCbor);
  cbor.map(3);
  cbor.text("type");
  cbor.text("end");
  cbor.text("series_id");
  cbor.unsigned_integer(series.series_id);
  cbor.text("series_unique_id");
  cbor.text(unique_id(series));
  return cbor.take();
}

std::vector<std::byte> other_message(const std::string& type) {
  CborWriter cbor;
  cbor.tag(kSelfDescribedCbor);
  cbor.map(1);
  cbor.text("type");
  cbor.text(type);
  return cbor.take();
}

DectrisPublisher::DectrisPublisher(const std::string& bind, int send_timeout_ms)
    : socket_(context_, zmq::socket_type::push) {
  socket_.set(zmq::sockopt::sndtimeo, send_timeout_ms);
  socket_.set(zmq::sockopt::linger, 2000);  // what is queued still goes out after the last send
  socket_.bind(bind);
  endpoint_ = socket_.get(zmq::sockopt::last_endpoint);
}

void DectrisPublisher::send(std::span<const std::byte> message) {
  if (!socket_.send(zmq::const_buffer(message.data(), message.size()), zmq::send_flags::none))
    throw std::runtime_error("dectris publisher " + endpoint_ +
                             ": no receiver took a message in time");
}

void DectrisPublisher::send_garbage() {
  const std::string text = "this is not a CBOR message, just text";
  send(std::as_bytes(std::span(text.data(), text.size())));
}

void DectrisPublisher::send_cut(std::span<const std::byte> message, std::size_t keep_bytes) {
  send(message.first(std::min(keep_bytes, message.size())));
}

}  // namespace livedrp::testing
