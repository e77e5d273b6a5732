#include "stream/sls/sls_header.hpp"

#include <algorithm>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "core/json_input.hpp"

namespace livedrp::stream::sls {
namespace {

using nlohmann::json;

constexpr std::uint64_t kSupportedBitMode = 16;

// A value quoted in an error message: short, and safe whatever bytes the sender put in strings.
std::string quoted(const json& value) {
  std::string text = value.dump(-1, ' ', false, json::error_handler_t::replace);
  constexpr std::size_t kLongest = 40;
  if (text.size() > kLongest) text = text.substr(0, kLongest) + "...";
  return text;
}

// The first bytes of a message that is not JSON, in hex, so that the log shows what came instead.
std::string leading_bytes(std::string_view bytes) {
  std::string text;
  const std::size_t shown = std::min<std::size_t>(bytes.size(), 8);
  for (std::size_t i = 0; i < shown; ++i) {
    char hex[4];
    std::snprintf(hex, sizeof hex, "%02x",
                  static_cast<unsigned>(static_cast<unsigned char>(bytes[i])));
    if (i > 0) text += ' ';
    text += hex;
  }
  return text.empty() ? "an empty part" : "bytes " + text + (bytes.size() > shown ? " ..." : "");
}

class FieldReader {
 public:
  explicit FieldReader(const json& object) : object_(object) {}

  // A required non-negative integer; false (with problem()) when missing or not one.
  bool unsigned_field(const char* name, std::uint64_t& out) {
    const auto it = object_.find(name);
    if (it == object_.end()) return fail(std::string("field '") + name + "' is missing");
    return as_unsigned(*it, name, out);
  }

  // An optional non-negative integer: absent leaves `out` as it is.
  bool optional_unsigned_field(const char* name, std::uint64_t& out) {
    const auto it = object_.find(name);
    if (it == object_.end()) return true;
    return as_unsigned(*it, name, out);
  }

  // A required pair of non-negative integers ([x, y]).
  bool pair_field(const char* name, std::uint64_t& x, std::uint64_t& y) {
    const auto it = object_.find(name);
    if (it == object_.end()) return fail(std::string("field '") + name + "' is missing");
    if (!it->is_array() || it->size() != 2)
      return fail(std::string("field '") + name + "' is " + quoted(*it) +
                  ", not a pair of integers [x, y]");
    return as_unsigned((*it)[0], name, x) && as_unsigned((*it)[1], name, y);
  }

  const std::string& problem() const { return problem_; }

 private:
  bool as_unsigned(const json& value, const char* name, std::uint64_t& out) {
    if (value.is_number_unsigned()) {
      out = value.get<std::uint64_t>();
      return true;
    }
    if (value.is_number_integer() && value.get<std::int64_t>() >= 0) {
      out = static_cast<std::uint64_t>(value.get<std::int64_t>());
      return true;
    }
    return fail(std::string("field '") + name + "' is " + quoted(value) +
                ", not a non-negative integer");
  }
  bool fail(std::string problem) {
    problem_ = std::move(problem);
    return false;
  }

  const json& object_;
  std::string problem_;
};

SlsHeaderResult refuse(std::string reason, std::string problem) {
  return {std::nullopt, std::move(reason), std::move(problem)};
}

}  // namespace

SlsHeaderResult parse_sls_header(std::string_view bytes) {
  const std::size_t first = bytes.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos || bytes[first] != '{')
    return refuse("foreign", "not an sls JSON header (" + leading_bytes(bytes) + ")");

  std::string error;
  std::optional<json> parsed = try_parse_json(bytes, error);
  if (!parsed) return refuse("malformed", "header is " + error);
  const json object = std::move(*parsed);
  if (!object.is_object()) return refuse("malformed", "header is not a JSON object");

  SlsHeader header;
  FieldReader reader(object);
  std::uint64_t data = 0;
  if (!reader.unsigned_field("data", data)) return refuse("malformed", reader.problem());
  header.data = data != 0;
  if (!reader.optional_unsigned_field("jsonversion", header.json_version))
    return refuse("malformed", reader.problem());
  // The end-of-acquisition header carries its other fields as zeros; none of them is needed.
  if (!header.data) return {header, {}, {}};

  std::uint64_t complete_image = 0;
  std::uint64_t detector_type = 0;
  const bool read =
      reader.unsigned_field("jsonversion", header.json_version) &&
      reader.unsigned_field("bitmode", header.bit_mode) &&
      reader.pair_field("detshape", header.detector_port_columns, header.detector_port_rows) &&
      reader.pair_field("shape", header.part_columns, header.part_rows) &&
      reader.unsigned_field("size", header.size) &&
      reader.unsigned_field("frameNumber", header.frame_number) &&
      reader.unsigned_field("row", header.row) && reader.unsigned_field("column", header.column) &&
      reader.unsigned_field("completeImage", complete_image) &&
      reader.unsigned_field("timestamp", header.timestamp) &&
      reader.optional_unsigned_field("packetNumber", header.packets);
  if (!read) return refuse("malformed", reader.problem());
  header.complete_image = complete_image != 0;
  if (object.contains("detType")) {
    if (!reader.unsigned_field("detType", detector_type))
      return refuse("malformed", reader.problem());
    header.detector_type = detector_type;
  }

  if (header.bit_mode != kSupportedBitMode)
    return refuse("unsupported", "bit mode " + std::to_string(header.bit_mode) +
                                     " (field 'bitmode'); the sls source takes bit mode 16 only");
  // Eiger's bottom half-modules and quads send rows to be flipped; Jungfrau never does, and this
  // source copies rows as they come.
  for (const char* flag : {"flipRows", "quad"}) {
    std::uint64_t value = 0;
    if (!reader.optional_unsigned_field(flag, value)) return refuse("malformed", reader.problem());
    if (value != 0)
      return refuse("unsupported", std::string("field '") + flag + "' is " + std::to_string(value) +
                                       "; the sls source does not flip rows (Eiger layouts)");
  }
  return {header, {}, {}};
}

std::int64_t epoch_timestamp_ns(const SlsHeader& header) {
  constexpr std::uint64_t kYear2000Ns = 946'684'800ull * 1'000'000'000ull;
  constexpr std::uint64_t kYear2200Ns = 7'258'118'400ull * 1'000'000'000ull;
  if (header.timestamp >= kYear2000Ns && header.timestamp < kYear2200Ns)
    return static_cast<std::int64_t>(header.timestamp);
  return 0;
}

}  // namespace livedrp::stream::sls
