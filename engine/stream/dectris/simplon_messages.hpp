#pragma once
// The Dectris SIMPLON stream, version 2 (SIMPLON API 1.8; Eiger2, Pilatus4 and PSI's
// Jungfraujoch speak it): one CBOR map per ZeroMQ message, its "type" "start", "image" or "end".
// Pure decoding, from a message's bytes to the structs below, or to a problem that names the
// field and the reason it is counted under (the StreamCounts reasons).
//
// Image data are RFC 8746 arrays: tag 40 on [[rows, cols], typed array] (row-major, so the
// dimensions are [image_size_y, image_size_x]), the typed array a tag 64..87 on a byte string,
// or on Dectris' compression tag 56500 on ["bslz4" | "lz4", element size, bytes], the bytes
// framed as the HDF5 bitshuffle (32008) and LZ4 (32004) filters frame a chunk.
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <variant>
#include <vector>

namespace livedrp {
class ThreadPool;
}

namespace livedrp::stream::dectris {

// RFC 8746 section 2.1: tag 0b010_f_s_e_ll for numbers; f float, s signed, e little-endian,
// ll the length (integers 1 << ll bytes; floats 2 << ll bytes).
inline constexpr std::uint64_t kTypedArrayFirstTag = 64, kTypedArrayLastTag = 87;
inline constexpr std::uint64_t kMultiDimArrayTag = 40;          // row-major
inline constexpr std::uint64_t kDectrisCompressionTag = 56500;  // [algorithm, elem size, bytes]
inline constexpr std::uint64_t kSelfDescribedCborTag = 55799;   // 0xd9d9f7 at the start

struct ElementType {
  std::uint64_t tag = 0;
  bool is_float = false;
  bool is_signed = false;
  bool little_endian = true;
  std::size_t size = 0;      // bytes
  std::string name() const;  // "uint16", "int32", "float32", "uint16 big-endian", ...
  bool operator==(const ElementType& other) const { return tag == other.tag; }
};
// The element type of a typed-array tag; nullopt outside 64..87 and for the unassigned 76.
std::optional<ElementType> element_type_of_tag(std::uint64_t tag);
// The little-endian type named "uint8", "uint16", "uint32", "int8", "int16", "int32",
// "float32", "float64" (Jungfraujoch's image_dtype); nullopt for other names.
std::optional<ElementType> element_type_named(const std::string& name);

// A multi-dimensional array as sent: data still compressed, pointing into the message.
struct MultiDimArray {
  std::vector<std::uint64_t> dimensions;  // slowest first
  ElementType type;
  std::string compression;  // empty: raw; else the algorithm named in tag 56500
  std::uint64_t compression_element_size = 0;
  std::span<const std::byte> stored;  // the raw or the compressed bytes

  std::uint64_t elements() const;
  std::uint64_t bytes() const { return elements() * type.size; }
};

// A time as a ratio of integers (seconds: numerator / denominator).
struct Rational {
  std::uint64_t numerator = 0;
  std::uint64_t denominator = 0;
  bool valid() const { return denominator != 0; }
};

struct PixelMask {
  std::string channel;
  std::uint64_t rows = 0, cols = 0;
  std::vector<std::uint32_t> bits;  // Dectris' 32-bit mask per pixel (row-major)
};

struct StartMessage {
  std::uint64_t series_id = 0;
  std::string series_unique_id;
  std::uint64_t image_size_x = 0;  // width, pixels
  std::uint64_t image_size_y = 0;  // height
  std::uint64_t number_of_images = 0;
  std::vector<std::string> channels;  // images carry their data in this order (Eiger:
                                      // "threshold_1", ...; Jungfraujoch: "default")
  // The image element type when the start message says it (Jungfraujoch's image_dtype, or
  // bit_depth_image with pixel_signed); Dectris detectors say it only in each image's tag.
  std::optional<ElementType> image_type;
  std::optional<double> pixel_size_x_m, pixel_size_y_m;
  std::optional<double> beam_center_x_px, beam_center_y_px;
  std::optional<double> detector_distance_m;
  std::optional<double> incident_energy_ev, incident_wavelength_a;
  std::optional<double> count_time_s, frame_time_s;
  std::optional<std::uint64_t> saturation_value;
  std::optional<bool> countrate_correction_enabled, pixel_mask_enabled, flatfield_enabled;
  // The count-rate correction lookup table, widened to uint32 (header_detail "all" only).
  std::vector<std::uint32_t> countrate_correction_lookup_table;
  std::vector<PixelMask> pixel_masks;  // one per channel (header_detail "all" only)
  std::map<std::string, double> threshold_energy_ev;
  std::string detector_description, detector_serial_number, sensor_material;
  std::optional<double> sensor_thickness_m;
  std::string arm_date;  // RFC 3339 as sent
};

struct ImageChannel {
  std::string name;
  MultiDimArray data;
};

struct ImageMessage {
  std::uint64_t series_id = 0;
  std::string series_unique_id;
  std::uint64_t image_id = 0;
  std::vector<ImageChannel> channels;  // the "data" map, in message order
  Rational real_time, start_time, stop_time;
  std::string series_date;  // RFC 3339 as sent; start_time counts from it
};

struct EndMessage {
  std::uint64_t series_id = 0;
  std::string series_unique_id;
};

// A well-formed message of another type (Jungfraujoch sends "calibration" and "metadata").
struct OtherMessage {
  std::string type;
};

using Message = std::variant<StartMessage, ImageMessage, EndMessage, OtherMessage>;

// Why a message is refused: `reason` is a StreamCounts reason ("foreign", "malformed",
// "truncated", "unsupported"), `what` names the field and what is wrong with it.
struct Problem {
  std::string reason;
  std::string what;
};

struct DecodeResult {
  std::optional<Message> message;
  Problem problem;  // when !message
};

// Decodes one ZeroMQ message. Bytes that are not one CBOR item are "foreign" (or "truncated"
// when they begin as a CBOR map and end inside it); CBOR that is not a SIMPLON map, or misses a
// field or has one of the wrong type, is "malformed". A start message's compressed pixel mask
// or lookup table is decoded here ("truncated" / "unsupported" when it cannot be); image data
// stay as sent (decode_array below), pointing into `bytes`.
DecodeResult decode_message(std::span<const std::byte> bytes);

// Decodes (decompresses) an array's data into `out`, which must hold exactly array.bytes().
// An empty problem reason on success; "truncated" when compressed data do not decode or raw
// data are shorter or longer than the dimensions say; "unsupported" for an unknown algorithm.
// With `pool`, compressed blocks are decoded on its threads.
Problem decode_array(const MultiDimArray& array, std::span<std::byte> out,
                     ThreadPool* pool = nullptr);

// The Unix time in ns of an RFC 3339 date-time ("2026-01-01T12:00:00.5Z", "...+02:00");
// nullopt when it does not parse.
std::optional<std::int64_t> parse_rfc3339_ns(const std::string& text);

}  // namespace livedrp::stream::dectris
