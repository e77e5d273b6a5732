#pragma once
// The livedrp wire format (docs/protocol.md). Every message is multipart:
//   part 0  topic (ASCII, e.g. "stats")
//   part 1  header: UTF-8 JSON object
//             {"schema": "livedrp", "schema_version": 1, "topic": "stats", "run": 7,
//              "sequence": 1234, "pulse_id": 5678, "time_ns": 1700000000000000000,
//              "frames": [{"dtype": "float32", "shape": [1000]}], "payload": {...}}
//   part 2+ binary frames, little-endian, C order, one per entry of "frames"
// This library has no Qt and no engine dependency: the engine publishes with it, widgets and any
// other subscriber decode with it.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace livedrp::protocol {

inline constexpr std::string_view kSchemaName = "livedrp";
inline constexpr int kSchemaVersion = 1;

// A malformed or foreign message; the text says which part and what was expected.
class ProtocolError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class DType : std::uint8_t { UInt8, UInt16, UInt32, UInt64, Int32, Int64, Float32, Float64 };
std::string_view to_string(DType dtype);
DType dtype_from_string(std::string_view name);  // throws ProtocolError
std::size_t dtype_size(DType dtype);

struct Frame {
  DType dtype = DType::UInt8;
  std::vector<std::uint64_t> shape;
  std::vector<std::byte> data;  // product(shape) * dtype_size(dtype) bytes
  std::size_t element_count() const;
};

struct Message {
  std::string topic;
  std::int64_t run = 0;
  std::uint64_t sequence = 0;  // latest event sequence the message refers to
  std::uint64_t pulse_id = 0;
  std::int64_t time_ns = 0;    // when the message was made (Unix epoch, ns)
  nlohmann::json payload = nlohmann::json::object();  // topic-specific fields (protocol/topics.hpp)
  std::vector<Frame> frames;
};

// Encodes to the parts that go on the wire, in order.
std::vector<std::string> encode(const Message& message);
// Decodes and validates: schema name and version, topic agreement, header fields and types, frame
// count, dtype names, and each frame's byte size against its shape. Throws ProtocolError.
Message decode(const std::vector<std::string_view>& parts);

}  // namespace livedrp::protocol
