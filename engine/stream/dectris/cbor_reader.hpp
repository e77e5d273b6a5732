#pragma once
// A small CBOR (RFC 8949) reader for the Dectris stream: one data item of a message, decoded
// into a tree whose byte and text strings point into the message (no copy of the image data).
//
// Why not nlohmann::json::from_cbor (the project's JSON library): SIMPLON messages tag arrays and
// maps, not only byte strings: tag 40 wraps [dimensions, typed array], tag 56500 wraps
// [algorithm, element size, bytes], and the message itself may start with the self-described
// CBOR tag 55799. nlohmann 3.11's tag_handler_t::store keeps a tag only on a byte string and
// fails on any other tagged item; tag_handler_t::ignore drops the typed array's tag (64..87),
// which is the only place a Dectris image says whether it is uint16, uint32 or int32; and every
// mode refuses tags 0..5 as invalid bytes, while `arm_date` and `series_date` are tag 0 (a
// date/time string). Besides, from_cbor copies every byte string into the JSON tree.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace livedrp::stream::cbor {

struct Value {
  enum class Type : std::uint8_t {
    Unsigned,  // `number`
    Negative,  // the value is -1 - `number`
    Bytes,     // `bytes`
    Text,      // `bytes`, UTF-8 as sent
    Array,     // `items`
    Map,       // `items`: key, value, key, value, ...
    Tagged,    // tag `number` on `items[0]`
    Bool,      // `number` 0 or 1
    Null,
    Undefined,
    Float,  // `real` (half, single and double precision)
    Simple  // another simple value, `number`
  };
  Type type = Type::Null;
  std::uint64_t number = 0;
  double real = 0;
  std::span<const std::byte> bytes;
  std::vector<Value> items;

  bool is(Type t) const { return type == t; }
  std::string_view text() const {
    return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
  }
  // A map's value under a text key; nullptr when absent or when this is not a map.
  const Value* find(std::string_view key) const;
  // The item under any tags (a tagged value's innermost content).
  const Value& untagged() const;
  // "unsigned integer", "map", "tag 40", ... for error messages.
  std::string type_name() const;
};

// Why a message did not decode as one CBOR data item.
enum class ReadFailure : std::uint8_t {
  None,
  EndOfInput,     // the bytes end inside an item (a cut message)
  Invalid,        // a byte that is not CBOR here (reserved additional information, a break
                  // outside an indefinite-length item, a non-string chunk)
  TrailingBytes,  // one complete item, then more bytes
  Unsupported,    // valid CBOR that this reader refuses: indefinite-length strings, nesting
                  // deeper than kMaxDepth, more than kMaxItems items
};

struct ReadResult {
  Value value;
  ReadFailure failure = ReadFailure::None;
  std::string error;  // empty on success; what is wrong and at which byte
};

// Limits that keep a hostile message from exhausting the stack or the memory: SIMPLON messages
// nest a few levels and hold some hundred items (image data are single byte strings).
inline constexpr int kMaxDepth = 32;
inline constexpr std::size_t kMaxItems = std::size_t(1) << 20;

// Reads exactly one data item from `message`. The result's strings point into `message`.
ReadResult read(std::span<const std::byte> message);

}  // namespace livedrp::stream::cbor
