#include "protocol/payload_reader.hpp"

#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <utility>

namespace livedrp::protocol::detail {

using nlohmann::json;

namespace {
// Error texts quote values from the wire; keep them short whatever a peer sends.
constexpr std::size_t kMaxQuotedChars = 40;
}  // namespace

std::string describe(const json& value) {
  if (value.is_string()) {
    const auto& text = value.get_ref<const std::string&>();
    if (text.size() <= kMaxQuotedChars) return "string '" + text + "'";
    return "string '" + text.substr(0, kMaxQuotedChars) + "...'";
  }
  if (value.is_structured()) return std::string(value.type_name());
  return std::string(value.type_name()) + " " + value.dump();
}

json number_or_null(double value) {
  if (std::isfinite(value)) return value;
  return nullptr;
}

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

PayloadReader::PayloadReader(const json& object, std::string topic, std::string prefix)
    : object_(object), topic_(std::move(topic)), prefix_(std::move(prefix)) {}

void PayloadReader::fail(const std::string& name, const std::string& problem) const {
  throw ProtocolError(topic_ + " payload: field '" + prefix_ + name + "' " + problem);
}

void PayloadReader::require_object(const std::string& what) const {
  if (!object_.is_object()) {
    throw ProtocolError(topic_ + " payload: " + what + " must be a JSON object, got " +
                        describe(object_));
  }
}

const json& PayloadReader::field(const std::string& name) const {
  const auto found = object_.find(name);
  if (found == object_.end()) fail(name, "is missing");
  return *found;
}

std::string PayloadReader::string(const std::string& name) const {
  const json& value = field(name);
  if (!value.is_string()) fail(name, "must be a string, got " + describe(value));
  return value.get<std::string>();
}

double PayloadReader::number(const std::string& name) const {
  const json& value = field(name);
  if (value.is_null()) return std::numeric_limits<double>::quiet_NaN();
  if (!value.is_number()) fail(name, "must be a number, got " + describe(value));
  return value.get<double>();
}

std::uint64_t PayloadReader::count(const std::string& name) const {
  return count_value(field(name), name);
}

std::uint64_t PayloadReader::count_value(const json& value, const std::string& name) const {
  if (value.is_number_unsigned()) return value.get<std::uint64_t>();
  // Parsed JSON stores non-negative integers as unsigned, but one built in memory (json(0)) may
  // hold them as signed.
  if (value.is_number_integer()) {
    if (value.get<std::int64_t>() >= 0) return std::uint64_t(value.get<std::int64_t>());
    fail(name, "must not be negative, got " + value.dump());
  }
  fail(name, "must be a non-negative integer, got " + describe(value));
}

Frame float64_frame(const std::vector<double>& values) {
  Frame frame;
  frame.dtype = DType::Float64;
  frame.shape = {values.size()};
  frame.data.resize(values.size() * sizeof(double));
  std::memcpy(frame.data.data(), values.data(), frame.data.size());
  return frame;
}

}  // namespace livedrp::protocol::detail
