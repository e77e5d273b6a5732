#include "stream/dectris/simplon_messages.hpp"

#include <chrono>
#include <cstring>
#include <limits>

#include "replay/chunk_decoder.hpp"
#include "stream/dectris/cbor_reader.hpp"

namespace livedrp::stream::dectris {
namespace {

using cbor::Value;

// Thrown while decoding one message; decode_message() turns it into its Problem.
struct Refusal {
  std::string reason;
  std::string what;
};

[[noreturn]] void refuse(std::string reason, std::string what) {
  throw Refusal{std::move(reason), std::move(what)};
}
[[noreturn]] void malformed(std::string what) {
  refuse("malformed", std::move(what));
}

// One message's map, with the message's name for errors ("start message").
class Fields {
 public:
  Fields(const Value& map, std::string context) : map_(map), context_(std::move(context)) {}

  const std::string& context() const { return context_; }
  // The value (under any tags) or nullptr when the field is absent.
  const Value* optional(const char* key) const {
    const Value* value = map_.find(key);
    return value ? &value->untagged() : nullptr;
  }
  // The value with its tags (typed arrays), or nullptr when absent.
  const Value* tagged(const char* key) const { return map_.find(key); }
  const Value& required(const char* key) const {
    const Value* value = optional(key);
    if (!value) malformed(context_ + ": field '" + key + "' is missing");
    return *value;
  }
  [[noreturn]] void wrong_type(const char* key, const Value& value, const char* expected) const {
    malformed(context_ + ": field '" + key + "' is a " + value.type_name() + ", expected " +
              expected);
  }

  std::uint64_t unsigned_field(const char* key) const {
    const Value& value = required(key);
    if (!value.is(Value::Type::Unsigned)) wrong_type(key, value, "an unsigned integer");
    return value.number;
  }
  std::optional<std::uint64_t> optional_unsigned(const char* key) const {
    if (!optional(key)) return std::nullopt;
    return unsigned_field(key);
  }
  // Floats; integers are taken too (some senders write a beam centre of 512 as an integer).
  std::optional<double> optional_number(const char* key) const {
    const Value* value = optional(key);
    if (!value) return std::nullopt;
    if (value->is(Value::Type::Float)) return value->real;
    if (value->is(Value::Type::Unsigned)) return double(value->number);
    if (value->is(Value::Type::Negative)) return -1.0 - double(value->number);
    wrong_type(key, *value, "a number");
  }
  std::optional<bool> optional_bool(const char* key) const {
    const Value* value = optional(key);
    if (!value) return std::nullopt;
    if (!value->is(Value::Type::Bool)) wrong_type(key, *value, "a boolean");
    return value->number != 0;
  }
  std::string optional_text(const char* key) const {
    const Value* value = optional(key);
    if (!value) return {};
    if (!value->is(Value::Type::Text)) wrong_type(key, *value, "a text string");
    return std::string(value->text());
  }
  Rational optional_rational(const char* key) const {
    const Value* value = optional(key);
    if (!value) return {};
    if (!value->is(Value::Type::Array) || value->items.size() != 2 ||
        !value->items[0].untagged().is(Value::Type::Unsigned) ||
        !value->items[1].untagged().is(Value::Type::Unsigned))
      malformed(context_ + ": field '" + key +
                "' must be [numerator, denominator] of unsigned integers, got a " +
                value->type_name());
    return {value->items[0].untagged().number, value->items[1].untagged().number};
  }

 private:
  const Value& map_;
  std::string context_;
};

std::uint64_t read_big_endian_u64(std::span<const std::byte> bytes) {
  std::uint64_t value = 0;
  for (std::size_t i = 0; i < 8; ++i) value = (value << 8) | std::uint64_t(bytes[i]);
  return value;
}

// The typed array under `value` (a typed-array tag on a byte string or on tag 56500), with
// `dimensions` left for the caller. `what` names the field in errors.
MultiDimArray typed_array(const Value& value, const std::string& what) {
  if (!value.is(Value::Type::Tagged))
    malformed(what + " is a " + value.type_name() + ", expected a typed array (tags 64-87)");
  MultiDimArray array;
  const std::optional<ElementType> type = element_type_of_tag(value.number);
  if (!type)
    malformed(what + " is tag " + std::to_string(value.number) +
              ", expected a typed array (tags 64-87)");
  array.type = *type;
  const Value& content = value.items.front();
  if (content.is(Value::Type::Bytes)) {
    array.stored = content.bytes;
    return array;
  }
  if (!content.is(Value::Type::Tagged) || content.number != kDectrisCompressionTag)
    malformed(what + ": the typed array holds a " + content.type_name() +
              ", expected a byte string or a compressed one (tag 56500)");
  const Value& compressed = content.items.front();
  if (!compressed.is(Value::Type::Array) || compressed.items.size() != 3 ||
      !compressed.items[0].untagged().is(Value::Type::Text) ||
      !compressed.items[1].untagged().is(Value::Type::Unsigned) ||
      !compressed.items[2].untagged().is(Value::Type::Bytes))
    malformed(what + ": tag 56500 must hold [algorithm, element size, bytes]");
  array.compression = std::string(compressed.items[0].untagged().text());
  if (array.compression.empty()) malformed(what + ": tag 56500 names no algorithm");
  array.compression_element_size = compressed.items[1].untagged().number;
  array.stored = compressed.items[2].untagged().bytes;
  return array;
}

// The element count of a 1-D typed array (its dimensions: raw length, or the uncompressed
// size at the head of the HDF5 framing both algorithms use).
void set_flat_dimensions(MultiDimArray& array, const std::string& what) {
  std::uint64_t bytes = array.stored.size();
  if (!array.compression.empty()) {
    if (array.compression != "bslz4" && array.compression != "lz4")
      refuse("unsupported",
             what + ": compression '" + array.compression + "' is not supported (bslz4, lz4 are)");
    if (array.stored.size() < 12)
      refuse("truncated", what + ": compressed data shorter than their 12-byte header");
    bytes = read_big_endian_u64(array.stored);
  }
  if (bytes % array.type.size != 0)
    refuse("truncated", what + ": " + std::to_string(bytes) + " bytes are not whole " +
                            array.type.name() + " elements");
  array.dimensions = {bytes / array.type.size};
}

MultiDimArray multi_dim_array(const Value& tagged, const std::string& what) {
  if (tagged.is(Value::Type::Tagged) && tagged.number == 1040)
    refuse("unsupported", what + " is a column-major array (tag 1040); only row-major (tag 40)");
  if (!tagged.is(Value::Type::Tagged) || tagged.number != kMultiDimArrayTag)
    malformed(what + " is a " + tagged.type_name() +
              ", expected a multi-dimensional array (tag 40)");
  const Value& pair = tagged.items.front();
  if (!pair.is(Value::Type::Array) || pair.items.size() != 2)
    malformed(what + ": tag 40 must hold [dimensions, typed array]");
  const Value& dimensions = pair.items[0].untagged();
  if (!dimensions.is(Value::Type::Array) || dimensions.items.empty())
    malformed(what + ": the dimensions are a " + dimensions.type_name() +
              ", expected an array of unsigned integers");
  std::vector<std::uint64_t> extents;
  for (const Value& extent : dimensions.items) {
    const Value& number = extent.untagged();
    if (!number.is(Value::Type::Unsigned) || number.number == 0 || number.number > (1u << 24))
      malformed(what + ": a dimension is not an integer in 1.." + std::to_string(1u << 24));
    extents.push_back(number.number);
  }
  const Value& content = pair.items[1];
  if (content.is(Value::Type::Array))  // RFC 8746 allows it; no detector sends one
    refuse("unsupported", what + " holds a classic array of numbers, not a typed array");
  MultiDimArray array = typed_array(content, what);
  array.dimensions = std::move(extents);
  return array;
}

// A typed array of unsigned integers up to 32 bits, decoded and widened (masks, lookup tables).
std::vector<std::uint32_t> widened_unsigned(const MultiDimArray& array, const std::string& what) {
  if (array.type.is_float || array.type.is_signed || !array.type.little_endian ||
      array.type.size > 4)
    refuse("unsupported", what + " is " + array.type.name() +
                              ", expected little-endian unsigned integers of 8 to 32 bits");
  std::vector<std::byte> bytes(std::size_t(array.bytes()));
  if (Problem problem = decode_array(array, bytes); !problem.reason.empty())
    refuse(problem.reason, what + ": " + problem.what);
  std::vector<std::uint32_t> values(std::size_t(array.elements()));
  for (std::size_t i = 0; i < values.size(); ++i) {
    std::uint32_t value = 0;
    for (std::size_t b = 0; b < array.type.size; ++b)
      value |= std::uint32_t(bytes[i * array.type.size + b]) << (8 * b);
    values[i] = value;
  }
  return values;
}

void text_array(const Fields& fields, const char* key, std::vector<std::string>& out) {
  const Value* value = fields.optional(key);
  if (!value) return;
  if (!value->is(Value::Type::Array)) fields.wrong_type(key, *value, "an array of text strings");
  for (const Value& item : value->items) {
    if (!item.untagged().is(Value::Type::Text))
      malformed(fields.context() + ": field '" + key + "' holds a " + item.untagged().type_name() +
                ", expected text strings");
    out.emplace_back(item.untagged().text());
  }
}

StartMessage start_message(const Fields& fields) {
  StartMessage start;
  start.series_id = fields.unsigned_field("series_id");
  start.series_unique_id = fields.optional_text("series_unique_id");
  start.image_size_x = fields.unsigned_field("image_size_x");
  start.image_size_y = fields.unsigned_field("image_size_y");
  if (start.image_size_x == 0 || start.image_size_y == 0 || start.image_size_x > (1u << 16) ||
      start.image_size_y > (1u << 16))
    malformed("start message: image_size_x " + std::to_string(start.image_size_x) +
              " and image_size_y " + std::to_string(start.image_size_y) + " must be in 1..65536");
  start.number_of_images = fields.optional_unsigned("number_of_images").value_or(0);
  text_array(fields, "channels", start.channels);

  if (const Value* dtype = fields.optional("image_dtype")) {
    if (!dtype->is(Value::Type::Text)) fields.wrong_type("image_dtype", *dtype, "a text string");
    start.image_type = element_type_named(std::string(dtype->text()));
    if (!start.image_type)
      refuse("unsupported",
             "start message: image_dtype '" + std::string(dtype->text()) + "' is not supported");
  } else if (const auto bits = fields.optional_unsigned("bit_depth_image")) {
    const bool is_signed = fields.optional_bool("pixel_signed").value_or(false);
    start.image_type = element_type_named((is_signed ? "int" : "uint") + std::to_string(*bits));
    if (!start.image_type)
      refuse("unsupported", "start message: bit_depth_image " + std::to_string(*bits) +
                                " is not supported (8, 16 or 32)");
  }

  start.pixel_size_x_m = fields.optional_number("pixel_size_x");
  start.pixel_size_y_m = fields.optional_number("pixel_size_y");
  start.beam_center_x_px = fields.optional_number("beam_center_x");
  start.beam_center_y_px = fields.optional_number("beam_center_y");
  start.detector_distance_m = fields.optional_number("detector_distance");
  start.incident_energy_ev = fields.optional_number("incident_energy");
  start.incident_wavelength_a = fields.optional_number("incident_wavelength");
  start.count_time_s = fields.optional_number("count_time");
  start.frame_time_s = fields.optional_number("frame_time");
  start.saturation_value = fields.optional_unsigned("saturation_value");
  start.countrate_correction_enabled = fields.optional_bool("countrate_correction_enabled");
  start.pixel_mask_enabled = fields.optional_bool("pixel_mask_enabled");
  start.flatfield_enabled = fields.optional_bool("flatfield_enabled");
  start.detector_description = fields.optional_text("detector_description");
  start.detector_serial_number = fields.optional_text("detector_serial_number");
  start.sensor_material = fields.optional_text("sensor_material");
  start.sensor_thickness_m = fields.optional_number("sensor_thickness");
  start.arm_date = fields.optional_text("arm_date");

  // The lookup table is a plain typed array: its own tag says the element type.
  if (const Value* table = fields.tagged("countrate_correction_lookup_table")) {
    const std::string what = "start message: countrate_correction_lookup_table";
    MultiDimArray array = typed_array(*table, what);
    set_flat_dimensions(array, what);
    start.countrate_correction_lookup_table = widened_unsigned(array, what);
  }

  if (const Value* masks = fields.optional("pixel_mask")) {
    if (!masks->is(Value::Type::Map))
      fields.wrong_type("pixel_mask", *masks, "a map from channel to array");
    for (std::size_t i = 0; i + 1 < masks->items.size(); i += 2) {
      const Value& channel = masks->items[i].untagged();
      if (!channel.is(Value::Type::Text))
        malformed("start message: a pixel_mask key is a " + channel.type_name() +
                  ", expected a channel name");
      const std::string what = "start message: pixel_mask '" + std::string(channel.text()) + "'";
      const MultiDimArray array = multi_dim_array(masks->items[i + 1], what);
      if (array.dimensions.size() != 2)
        malformed(what + " has " + std::to_string(array.dimensions.size()) +
                  " dimensions, expected 2");
      PixelMask mask;
      mask.channel = std::string(channel.text());
      mask.rows = array.dimensions[0];
      mask.cols = array.dimensions[1];
      mask.bits = widened_unsigned(array, what);
      start.pixel_masks.push_back(std::move(mask));
    }
  }

  if (const Value* energies = fields.optional("threshold_energy")) {
    if (!energies->is(Value::Type::Map))
      fields.wrong_type("threshold_energy", *energies, "a map from channel to energy");
    for (std::size_t i = 0; i + 1 < energies->items.size(); i += 2) {
      const Value& channel = energies->items[i].untagged();
      const Value& energy = energies->items[i + 1].untagged();
      if (!channel.is(Value::Type::Text) ||
          !(energy.is(Value::Type::Float) || energy.is(Value::Type::Unsigned)))
        malformed("start message: threshold_energy must map channel names to numbers");
      start.threshold_energy_ev[std::string(channel.text())] =
          energy.is(Value::Type::Float) ? energy.real : double(energy.number);
    }
  }
  return start;
}

ImageMessage image_message(const Fields& fields) {
  ImageMessage image;
  image.series_id = fields.unsigned_field("series_id");
  image.image_id = fields.unsigned_field("image_id");
  image.series_unique_id = fields.optional_text("series_unique_id");
  image.real_time = fields.optional_rational("real_time");
  image.start_time = fields.optional_rational("start_time");
  image.stop_time = fields.optional_rational("stop_time");
  image.series_date = fields.optional_text("series_date");
  const Value& data = fields.required("data");
  if (!data.is(Value::Type::Map)) fields.wrong_type("data", data, "a map from channel to array");
  if (data.items.empty()) malformed("image message: field 'data' holds no channel");
  for (std::size_t i = 0; i + 1 < data.items.size(); i += 2) {
    const Value& channel = data.items[i].untagged();
    if (!channel.is(Value::Type::Text))
      malformed("image message: a data key is a " + channel.type_name() +
                ", expected a channel name");
    const std::string what = "image message: data '" + std::string(channel.text()) + "'";
    image.channels.push_back(
        {std::string(channel.text()), multi_dim_array(data.items[i + 1], what)});
  }
  return image;
}

// "truncated" when the bytes begin as a CBOR map (after the optional self-described tag) and
// end inside it; anything else that is not one CBOR item is "foreign".
std::string reason_for_unreadable(std::span<const std::byte> bytes, cbor::ReadFailure failure) {
  if (failure == cbor::ReadFailure::Unsupported) return "unsupported";
  if (failure != cbor::ReadFailure::EndOfInput) return "foreign";
  std::size_t at = 0;
  if (bytes.size() >= 3 && bytes[0] == std::byte(0xd9) && bytes[1] == std::byte(0xd9) &&
      bytes[2] == std::byte(0xf7))
    at = 3;
  const bool map_head = at < bytes.size() && (std::uint8_t(bytes[at]) >> 5) == 5;
  return map_head ? "truncated" : "foreign";
}

}  // namespace

std::string ElementType::name() const {
  std::string text = is_float ? "float" : (is_signed ? "int" : "uint");
  text += std::to_string(size * 8);
  if (!little_endian && size > 1) text += " big-endian";
  return text;
}

std::optional<ElementType> element_type_of_tag(std::uint64_t tag) {
  if (tag < kTypedArrayFirstTag || tag > kTypedArrayLastTag || tag == 76) return std::nullopt;
  const unsigned bits = unsigned(tag - kTypedArrayFirstTag);
  ElementType type;
  type.tag = tag;
  type.is_float = (bits >> 4) & 1;
  type.is_signed = !type.is_float && ((bits >> 3) & 1);
  type.little_endian = (bits >> 2) & 1;
  const unsigned length = bits & 3;
  type.size = type.is_float ? std::size_t(2) << length : std::size_t(1) << length;
  // uint8 (64) and its clamped variant (68), and int8 (72): one byte has no byte order.
  if (type.size == 1) type.little_endian = true;
  return type;
}

std::optional<ElementType> element_type_named(const std::string& name) {
  // Little-endian tags of RFC 8746 table 2.
  static const std::map<std::string, std::uint64_t> kTags = {
      {"uint8", 64}, {"uint16", 69}, {"uint32", 70}, {"uint64", 71},  {"int8", 72},
      {"int16", 77}, {"int32", 78},  {"int64", 79},  {"float32", 85}, {"float64", 86}};
  const auto it = kTags.find(name);
  if (it == kTags.end()) return std::nullopt;
  return element_type_of_tag(it->second);
}

std::uint64_t MultiDimArray::elements() const {
  std::uint64_t count = dimensions.empty() ? 0 : 1;
  for (std::uint64_t extent : dimensions) count *= extent;
  return count;
}

Problem decode_array(const MultiDimArray& array, std::span<std::byte> out, ThreadPool* pool) {
  if (out.size() != array.bytes())
    return {"malformed", "the output holds " + std::to_string(out.size()) + " bytes, the array " +
                             std::to_string(array.bytes())};
  if (array.compression.empty()) {
    if (array.stored.size() != out.size())
      return {"truncated", "raw data hold " + std::to_string(array.stored.size()) +
                               " bytes, the dimensions need " + std::to_string(out.size())};
    std::memcpy(out.data(), array.stored.data(), out.size());
    return {};
  }
  std::string error;
  if (array.compression == "bslz4") {
    const std::uint64_t element = array.compression_element_size;
    if (element != 1 && element != 2 && element != 4 && element != 8)
      return {"malformed", "bslz4 element size " + std::to_string(element) + " (1, 2, 4 or 8)"};
    error = replay::bitshuffle_lz4_decode_chunk(array.stored, out, std::size_t(element), pool);
  } else if (array.compression == "lz4") {
    error = replay::lz4_decode_chunk(array.stored, out, pool);
  } else {
    return {"unsupported",
            "compression '" + array.compression + "' is not supported (bslz4 and lz4 are)"};
  }
  if (!error.empty()) return {"truncated", array.compression + " data do not decode: " + error};
  return {};
}

DecodeResult decode_message(std::span<const std::byte> bytes) {
  DecodeResult result;
  cbor::ReadResult read = cbor::read(bytes);
  if (read.failure != cbor::ReadFailure::None) {
    result.problem = {reason_for_unreadable(bytes, read.failure),
                      "not one CBOR data item: " + read.error};
    return result;
  }
  try {
    const Value& root = read.value.untagged();  // past the self-described CBOR tag, if any
    if (!root.is(Value::Type::Map))
      malformed("a CBOR " + root.type_name() + ", not a SIMPLON message (a map)");
    const Value* type = root.find("type");
    if (!type || !type->untagged().is(Value::Type::Text))
      malformed("a CBOR map without a text 'type': not a SIMPLON message");
    const std::string kind(type->untagged().text());
    if (kind == "start") {
      result.message = start_message(Fields(root, "start message"));
    } else if (kind == "image") {
      result.message = image_message(Fields(root, "image message"));
    } else if (kind == "end") {
      const Fields fields(root, "end message");
      EndMessage end;
      end.series_id = fields.unsigned_field("series_id");
      end.series_unique_id = fields.optional_text("series_unique_id");
      result.message = end;
    } else {
      result.message = OtherMessage{kind};
    }
  } catch (const Refusal& refusal) {
    result.message.reset();
    result.problem = {refusal.reason, refusal.what};
  }
  return result;
}

std::optional<std::int64_t> parse_rfc3339_ns(const std::string& text) {
  // YYYY-MM-DDTHH:MM:SS[.fraction](Z|+HH:MM|-HH:MM)
  auto digits = [&](std::size_t at, std::size_t count) -> std::optional<int> {
    if (at + count > text.size()) return std::nullopt;
    int value = 0;
    for (std::size_t i = at; i < at + count; ++i) {
      if (text[i] < '0' || text[i] > '9') return std::nullopt;
      value = value * 10 + (text[i] - '0');
    }
    return value;
  };
  const auto year = digits(0, 4), month = digits(5, 2), day = digits(8, 2);
  const auto hour = digits(11, 2), minute = digits(14, 2), second = digits(17, 2);
  if (!year || !month || !day || !hour || !minute || !second || text.size() < 20 ||
      text[4] != '-' || text[7] != '-' || (text[10] != 'T' && text[10] != 't' && text[10] != ' ') ||
      text[13] != ':' || text[16] != ':')
    return std::nullopt;
  const std::chrono::year_month_day date{std::chrono::year(*year), std::chrono::month(*month),
                                         std::chrono::day(*day)};
  if (!date.ok() || *hour > 23 || *minute > 59 || *second > 60) return std::nullopt;
  std::size_t at = 19;
  std::int64_t fraction_ns = 0;
  if (at < text.size() && text[at] == '.') {
    std::int64_t scale = 100'000'000;
    ++at;
    const std::size_t first = at;
    for (; at < text.size() && text[at] >= '0' && text[at] <= '9'; ++at) {
      fraction_ns += (text[at] - '0') * scale;
      scale /= 10;
    }
    if (at == first) return std::nullopt;
  }
  std::int64_t offset_s = 0;
  if (at < text.size() && (text[at] == 'Z' || text[at] == 'z')) {
    ++at;
  } else if (at < text.size() && (text[at] == '+' || text[at] == '-')) {
    const auto offset_hours = digits(at + 1, 2), offset_minutes = digits(at + 4, 2);
    if (!offset_hours || !offset_minutes || at + 3 >= text.size() || text[at + 3] != ':')
      return std::nullopt;
    offset_s = (text[at] == '+' ? 1 : -1) * (*offset_hours * 3600 + *offset_minutes * 60);
    at += 6;
  } else {
    return std::nullopt;
  }
  if (at != text.size()) return std::nullopt;
  const std::int64_t days = std::chrono::sys_days(date).time_since_epoch().count();
  const std::int64_t seconds =
      days * 86400 + std::int64_t(*hour) * 3600 + std::int64_t(*minute) * 60 + *second - offset_s;
  return seconds * 1'000'000'000 + fraction_ns;
}

}  // namespace livedrp::stream::dectris
