#include "protocol/message.hpp"

#include <array>
#include <bit>
#include <cstring>
#include <limits>
#include <optional>
#include <utility>

#include "core/json_input.hpp"

namespace livedrp::protocol {

// Frames go on the wire as the host's bytes; the protocol says little-endian, so a big-endian host
// would need a byte swap that nobody has written yet. Fail the build instead of the data.
static_assert(std::endian::native == std::endian::little,
              "livedrp frames are little-endian on the wire; this host is not");

namespace {

using nlohmann::json;

// Parts before the binary frames: the topic and the header.
constexpr std::size_t kTopicPart = 0;
constexpr std::size_t kHeaderPart = 1;
constexpr std::size_t kFirstFramePart = 2;

// Error texts quote values from the wire; a hostile or broken peer must not be able to make them
// arbitrarily long.
constexpr std::size_t kMaxQuotedChars = 40;

struct DTypeInfo {
  DType dtype;
  std::string_view name;  // numpy's name, so Python clients can pass it to numpy.dtype()
  std::size_t size;
};

constexpr std::array<DTypeInfo, 8> kDTypes{{
    {DType::UInt8, "uint8", 1},
    {DType::UInt16, "uint16", 2},
    {DType::UInt32, "uint32", 4},
    {DType::UInt64, "uint64", 8},
    {DType::Int32, "int32", 4},
    {DType::Int64, "int64", 8},
    {DType::Float32, "float32", 4},
    {DType::Float64, "float64", 8},
}};

const DTypeInfo& info_of(DType dtype) {
  for (const auto& info : kDTypes) {
    if (info.dtype == dtype) return info;
  }
  // Only reachable by casting an out-of-range integer to DType.
  throw ProtocolError("unknown dtype code " + std::to_string(static_cast<int>(dtype)));
}

std::string known_dtype_names() {
  std::string names;
  for (const auto& info : kDTypes) {
    if (!names.empty()) names += ", ";
    names += info.name;
  }
  return names;
}

std::string quote_for_error(std::string_view text) {
  if (text.size() <= kMaxQuotedChars) return "'" + std::string(text) + "'";
  return "'" + std::string(text.substr(0, kMaxQuotedChars)) + "...' (" +
         std::to_string(text.size()) + " bytes)";
}

// A short description of a JSON value for error texts. Containers are named, not dumped: dumping
// recurses, and a deeply nested value from the wire must not exhaust the stack.
std::string describe(const json& value) {
  if (value.is_string()) return "string " + quote_for_error(value.get_ref<const std::string&>());
  if (value.is_structured()) return std::string(value.type_name());
  return std::string(value.type_name()) + " " + value.dump();
}

// Product of a frame's shape times its element size, or nullopt when it does not fit in size_t.
std::optional<std::size_t> checked_byte_count(const std::vector<std::uint64_t>& shape,
                                              std::size_t element_size) {
  std::size_t bytes = element_size;
  for (const std::uint64_t extent : shape) {
    if (extent > std::numeric_limits<std::size_t>::max()) return std::nullopt;
    std::size_t product = 0;
    if (__builtin_mul_overflow(bytes, static_cast<std::size_t>(extent), &product)) {
      return std::nullopt;
    }
    bytes = product;
  }
  return bytes;
}

std::string shape_text(const std::vector<std::uint64_t>& shape) {
  std::string text = "[";
  for (std::size_t axis = 0; axis < shape.size(); ++axis) {
    if (axis > 0) text += ", ";
    text += std::to_string(shape[axis]);
  }
  return text + "]";
}

// A topic is what ZeroMQ filters on and what people type on a command line: printable ASCII,
// no spaces.
void check_topic(std::string_view topic, const std::string& where) {
  if (topic.empty()) throw ProtocolError(where + ": topic is empty");
  for (const char character : topic) {
    const auto code = static_cast<unsigned char>(character);
    if (code < 0x21 || code > 0x7e) {
      throw ProtocolError(where + ": topic " + quote_for_error(topic) +
                          " has a character outside printable ASCII (code " + std::to_string(code) +
                          ")");
    }
  }
}

// Reads header fields with errors that say "part 1 (header of 'stats'): field 'run' ...".
class HeaderReader {
 public:
  HeaderReader(const json& header, std::string context)
      : header_(header), context_(std::move(context)) {}

  [[noreturn]] void fail(const std::string& field, const std::string& problem) const {
    throw ProtocolError(context_ + ": field '" + field + "' " + problem);
  }

  const json& field(const std::string& name) const {
    const auto found = header_.find(name);
    if (found == header_.end()) fail(name, "is missing");
    return *found;
  }

  std::string string(const std::string& name) const {
    const json& value = field(name);
    if (!value.is_string()) fail(name, "must be a string, got " + describe(value));
    return value.get<std::string>();
  }

  std::uint64_t unsigned_integer(const std::string& name) const {
    return as_unsigned(field(name), name);
  }

  std::int64_t signed_nonnegative(const std::string& name) const {
    const std::uint64_t value = as_unsigned(field(name), name);
    if (value > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      fail(name, "is out of range (" + std::to_string(value) + " > 2^63-1)");
    }
    return static_cast<std::int64_t>(value);
  }

  // Shared by header fields and shape entries: a JSON integer that is not negative.
  std::uint64_t as_unsigned(const json& value, const std::string& name) const {
    if (value.is_number_unsigned()) return value.get<std::uint64_t>();
    if (value.is_number_integer()) {
      fail(name, "must not be negative, got " + value.dump());
    }
    if (value.is_number_float()) fail(name, "must be an integer, got " + value.dump());
    fail(name, "must be an integer, got " + describe(value));
  }

 private:
  const json& header_;
  std::string context_;
};

json parse_header(std::string_view text, const std::string& context) {
  std::string error;
  if (auto parsed = try_parse_json(text, error)) return std::move(*parsed);
  throw ProtocolError(context + ": invalid JSON (" + error + ")");
}

}  // namespace

std::string_view to_string(DType dtype) {
  return info_of(dtype).name;
}

std::size_t dtype_size(DType dtype) {
  return info_of(dtype).size;
}

DType dtype_from_string(std::string_view name) {
  for (const auto& info : kDTypes) {
    if (info.name == name) return info.dtype;
  }
  throw ProtocolError("unknown dtype " + quote_for_error(name) + " (known: " + known_dtype_names() +
                      ")");
}

std::size_t Frame::element_count() const {
  std::size_t count = 1;  // shape [] is a scalar, as in numpy
  for (const std::uint64_t extent : shape) count *= static_cast<std::size_t>(extent);
  return count;
}

std::vector<std::string> encode(const Message& message) {
  // The encoder checks what the decoder checks, so that a bug in a publisher shows up as an error
  // where the message is made, not as a silent drop in every subscriber.
  const std::string context = "cannot encode message";
  check_topic(message.topic, context);
  if (message.run < 0) {
    throw ProtocolError(context + " '" + message.topic + "': run must not be negative, got " +
                        std::to_string(message.run));
  }
  if (message.time_ns < 0) {
    throw ProtocolError(context + " '" + message.topic + "': time_ns must not be negative, got " +
                        std::to_string(message.time_ns));
  }
  if (!message.payload.is_object()) {
    throw ProtocolError(context + " '" + message.topic + "': payload must be a JSON object, got " +
                        std::string(message.payload.type_name()));
  }

  json frames = json::array();
  for (std::size_t index = 0; index < message.frames.size(); ++index) {
    const Frame& frame = message.frames[index];
    const auto expected = checked_byte_count(frame.shape, dtype_size(frame.dtype));
    if (!expected || *expected != frame.data.size()) {
      throw ProtocolError(context + " '" + message.topic + "': frame " + std::to_string(index) +
                          " (" + std::string(to_string(frame.dtype)) + ", shape " +
                          shape_text(frame.shape) + ") holds " + std::to_string(frame.data.size()) +
                          " bytes, its shape needs " +
                          (expected ? std::to_string(*expected) : std::string("more than 2^64")));
    }
    frames.push_back({{"dtype", to_string(frame.dtype)}, {"shape", frame.shape}});
  }

  const json header = {
      {"schema", kSchemaName},        {"schema_version", kSchemaVersion},
      {"topic", message.topic},       {"run", message.run},
      {"sequence", message.sequence}, {"pulse_id", message.pulse_id},
      {"time_ns", message.time_ns},   {"frames", std::move(frames)},
      {"payload", message.payload},
  };

  std::vector<std::string> parts;
  parts.reserve(kFirstFramePart + message.frames.size());
  parts.push_back(message.topic);
  try {
    parts.push_back(header.dump());
  } catch (const json::exception& error) {
    // dump() refuses strings that are not UTF-8; the header must be UTF-8 on the wire.
    throw ProtocolError(context + " '" + message.topic + "': header is not valid UTF-8 JSON (" +
                        error.what() + ")");
  }
  for (const Frame& frame : message.frames) {
    parts.emplace_back(reinterpret_cast<const char*>(frame.data.data()), frame.data.size());
  }
  return parts;
}

Message decode(const std::vector<std::string_view>& parts) {
  if (parts.size() < kFirstFramePart) {
    throw ProtocolError("message has " + std::to_string(parts.size()) +
                        " part(s); expected at least 2 (topic, header JSON)");
  }

  const std::string_view topic = parts[kTopicPart];
  check_topic(topic, "part 0 (topic)");

  const std::string context = "part 1 (header of " + quote_for_error(topic) + ")";
  const json header = parse_header(parts[kHeaderPart], context);
  if (!header.is_object()) {
    throw ProtocolError(context + ": must be a JSON object, got " + describe(header));
  }
  const HeaderReader reader(header, context);

  // Schema first: a foreign message should be reported as foreign, not as missing fields.
  const std::string schema = reader.string("schema");
  if (schema != kSchemaName) {
    reader.fail("schema", "is " + quote_for_error(schema) + "; expected '" +
                              std::string(kSchemaName) + "' (not a livedrp message)");
  }
  const std::uint64_t version = reader.unsigned_integer("schema_version");
  if (version != static_cast<std::uint64_t>(kSchemaVersion)) {
    reader.fail("schema_version", "is " + std::to_string(version) +
                                      ", unsupported: this decoder supports version " +
                                      std::to_string(kSchemaVersion));
  }

  Message message;
  message.topic = reader.string("topic");
  if (message.topic != topic) {
    reader.fail("topic", "is " + quote_for_error(message.topic) + " but part 0 says " +
                             quote_for_error(topic));
  }
  message.run = reader.signed_nonnegative("run");
  message.sequence = reader.unsigned_integer("sequence");
  message.pulse_id = reader.unsigned_integer("pulse_id");
  message.time_ns = reader.signed_nonnegative("time_ns");

  const json& payload = reader.field("payload");
  if (!payload.is_object()) reader.fail("payload", "must be an object, got " + describe(payload));
  message.payload = payload;

  const json& frames = reader.field("frames");
  if (!frames.is_array()) reader.fail("frames", "must be an array, got " + describe(frames));
  const std::size_t binary_parts = parts.size() - kFirstFramePart;
  if (frames.size() != binary_parts) {
    reader.fail("frames", "describes " + std::to_string(frames.size()) +
                              " frame(s) but the message has " + std::to_string(binary_parts) +
                              " binary part(s)");
  }

  message.frames.reserve(frames.size());
  for (std::size_t index = 0; index < frames.size(); ++index) {
    const std::string name = "frames[" + std::to_string(index) + "]";
    const json& description = frames[index];
    if (!description.is_object()) {
      reader.fail(name, "must be an object, got " + describe(description));
    }
    const HeaderReader frame_reader(description, context + ": " + name);

    Frame frame;
    const std::string dtype_name = frame_reader.string("dtype");
    try {
      frame.dtype = dtype_from_string(dtype_name);
    } catch (const ProtocolError&) {
      frame_reader.fail("dtype", "is " + quote_for_error(dtype_name) +
                                     ", an unknown dtype (known: " + known_dtype_names() + ")");
    }

    const json& shape = frame_reader.field("shape");
    if (!shape.is_array()) frame_reader.fail("shape", "must be an array, got " + describe(shape));
    frame.shape.reserve(shape.size());
    for (std::size_t axis = 0; axis < shape.size(); ++axis) {
      frame.shape.push_back(
          frame_reader.as_unsigned(shape[axis], "shape[" + std::to_string(axis) + "]"));
    }

    const std::size_t part_index = kFirstFramePart + index;
    const std::string_view bytes = parts[part_index];
    const auto expected = checked_byte_count(frame.shape, dtype_size(frame.dtype));
    if (!expected) {
      throw ProtocolError("part " + std::to_string(part_index) + " (" + name + " of " +
                          quote_for_error(topic) + "): shape " + shape_text(frame.shape) + " of " +
                          dtype_name + " overflows the byte count");
    }
    if (*expected != bytes.size()) {
      throw ProtocolError("part " + std::to_string(part_index) + " (" + name + " of " +
                          quote_for_error(topic) + "): has " + std::to_string(bytes.size()) +
                          " bytes; " + dtype_name + " shape " + shape_text(frame.shape) +
                          " needs " + std::to_string(*expected));
    }
    frame.data.resize(bytes.size());
    if (!bytes.empty()) std::memcpy(frame.data.data(), bytes.data(), bytes.size());
    message.frames.push_back(std::move(frame));
  }
  return message;
}

}  // namespace livedrp::protocol
