#pragma once
// Shared by the topic decoders (topics.cpp, profile_topic.cpp): reading one payload object with
// errors that name the topic and the field, and the JSON spelling of numbers that may be NaN.
// Internal to the protocol library; clients use the typed payloads of topics.hpp.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "protocol/message.hpp"

namespace livedrp::protocol::detail {

// A short description of a wire value for error texts: strings are quoted and cut short, and
// containers are named, not dumped (dump() recurses and wire data may nest arbitrarily deep).
std::string describe(const nlohmann::json& value);

// JSON has no NaN or infinity: nlohmann writes them as null. A rate before the first interval is
// legitimately not a number, so null reads back as NaN instead of failing the whole payload.
nlohmann::json number_or_null(double value);

// A message's time stamp: now, in ns since the Unix epoch.
std::int64_t now_ns();

// A one-dimensional float64 frame holding `values` (the profile and fidelity curves).
Frame float64_frame(const std::vector<double>& values);

// Reads one payload object with errors such as "stats payload: field 'stages[2].gbps' must be a
// number, got string 'fast'". Unknown fields are ignored so that a version-1 decoder accepts
// payloads that later gained fields (docs/protocol.md, versioning).
class PayloadReader {
 public:
  PayloadReader(const nlohmann::json& object, std::string topic, std::string prefix = {});

  [[noreturn]] void fail(const std::string& name, const std::string& problem) const;
  void require_object(const std::string& what) const;

  const nlohmann::json& field(const std::string& name) const;
  std::string string(const std::string& name) const;
  double number(const std::string& name) const;  // null reads as NaN
  std::uint64_t count(const std::string& name) const;
  std::uint64_t count_value(const nlohmann::json& value, const std::string& name) const;

  const std::string& topic() const { return topic_; }
  const std::string& prefix() const { return prefix_; }

 private:
  const nlohmann::json& object_;
  std::string topic_;
  std::string prefix_;
};

}  // namespace livedrp::protocol::detail
