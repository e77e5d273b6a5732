#include "stream/dectris/cbor_reader.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

namespace livedrp::stream::cbor {
namespace {

// Thrown inside the reader only; read() turns it into a ReadResult.
struct Failure {
  ReadFailure kind;
  std::string what;
};

// RFC 8949 section 3: the initial byte's major type (3 bits) and additional information (5).
constexpr int kMajorUnsigned = 0, kMajorNegative = 1, kMajorBytes = 2, kMajorText = 3,
              kMajorArray = 4, kMajorMap = 5, kMajorTag = 6, kMajorSimple = 7;
constexpr int kIndefinite = 31;

// Half precision to double (RFC 8949 appendix D).
double half_to_double(std::uint16_t half) {
  const int exponent = (half >> 10) & 0x1f;
  const int mantissa = half & 0x3ff;
  double value;
  if (exponent == 0)
    value = std::ldexp(mantissa, -24);
  else if (exponent != 31)
    value = std::ldexp(mantissa + 1024, exponent - 25);
  else
    value = mantissa == 0 ? std::numeric_limits<double>::infinity()
                          : std::numeric_limits<double>::quiet_NaN();
  return (half & 0x8000) ? -value : value;
}

class Reader {
 public:
  explicit Reader(std::span<const std::byte> input) : input_(input) {}

  Value item(int depth) {
    if (depth > kMaxDepth)
      fail(ReadFailure::Unsupported,
           "nesting deeper than " + std::to_string(kMaxDepth) + " levels");
    if (++items_ > kMaxItems)
      fail(ReadFailure::Unsupported, "more than " + std::to_string(kMaxItems) + " items");
    const std::size_t start = at_;
    const std::uint8_t initial = byte();
    const int major = initial >> 5;
    const int info = initial & 0x1f;
    Value value;
    switch (major) {
      case kMajorUnsigned:
      case kMajorNegative:
        value.type = major == kMajorUnsigned ? Value::Type::Unsigned : Value::Type::Negative;
        value.number = argument(info, start);
        return value;
      case kMajorBytes:
      case kMajorText: {
        if (info == kIndefinite)
          fail(ReadFailure::Unsupported,
               "indefinite-length string at byte " + std::to_string(start) + " (not supported)");
        const std::uint64_t length = argument(info, start);
        value.type = major == kMajorBytes ? Value::Type::Bytes : Value::Type::Text;
        value.bytes = take(length, start);
        return value;
      }
      case kMajorArray:
      case kMajorMap: {
        value.type = major == kMajorArray ? Value::Type::Array : Value::Type::Map;
        const std::uint64_t per_entry = major == kMajorMap ? 2 : 1;
        if (info == kIndefinite) {
          while (!at_break()) value.items.push_back(item(depth + 1));
          ++at_;  // the break
          if (value.items.size() % per_entry != 0)
            fail(ReadFailure::Invalid,
                 "map at byte " + std::to_string(start) + " ends between a key and its value");
          return value;
        }
        const std::uint64_t entries = argument(info, start);
        // Every item takes at least one byte: a count beyond the bytes left is a cut (or lying)
        // header, refused before anything is reserved for it.
        if (entries > (input_.size() - at_) / per_entry)
          fail(ReadFailure::EndOfInput, std::string(major == kMajorArray ? "array" : "map") +
                                            " at byte " + std::to_string(start) + " announces " +
                                            std::to_string(entries) +
                                            " entries, more than the bytes left");
        value.items.reserve(std::size_t(std::min<std::uint64_t>(entries * per_entry, 1024)));
        for (std::uint64_t i = 0; i < entries * per_entry; ++i)
          value.items.push_back(item(depth + 1));
        return value;
      }
      case kMajorTag:
        if (info == kIndefinite)
          fail(ReadFailure::Invalid, "invalid tag header at byte " + std::to_string(start));
        value.type = Value::Type::Tagged;
        value.number = argument(info, start);
        value.items.push_back(item(depth + 1));
        return value;
      case kMajorSimple:
      default:
        return simple(info, start);
    }
  }

  std::size_t position() const { return at_; }

 private:
  [[noreturn]] static void fail(ReadFailure kind, std::string what) {
    throw Failure{kind, std::move(what)};
  }

  std::uint8_t byte() {
    if (at_ >= input_.size())
      fail(ReadFailure::EndOfInput,
           "the message ends at byte " + std::to_string(at_) + " inside an item");
    return std::uint8_t(input_[at_++]);
  }

  std::uint64_t big_endian(int bytes) {
    std::uint64_t value = 0;
    for (int i = 0; i < bytes; ++i) value = (value << 8) | byte();
    return value;
  }

  // The argument of an initial byte: the value itself below 24, else the 1, 2, 4 or 8 bytes that
  // follow; 28..31 are reserved (31, indefinite length, is handled by the callers that allow it).
  std::uint64_t argument(int info, std::size_t start) {
    if (info < 24) return std::uint64_t(info);
    if (info <= 27) return big_endian(1 << (info - 24));
    fail(ReadFailure::Invalid, "reserved additional information " + std::to_string(info) +
                                   " at byte " + std::to_string(start));
  }

  std::span<const std::byte> take(std::uint64_t length, std::size_t start) {
    if (length > input_.size() - at_)
      fail(ReadFailure::EndOfInput, "string at byte " + std::to_string(start) + " announces " +
                                        std::to_string(length) + " bytes, " +
                                        std::to_string(input_.size() - at_) + " are left");
    const auto bytes = input_.subspan(at_, std::size_t(length));
    at_ += std::size_t(length);
    return bytes;
  }

  bool at_break() {
    if (at_ >= input_.size())
      fail(ReadFailure::EndOfInput, "the message ends inside an indefinite-length item");
    return std::uint8_t(input_[at_]) == 0xff;
  }

  Value simple(int info, std::size_t start) {
    Value value;
    switch (info) {
      case 20:
      case 21:
        value.type = Value::Type::Bool;
        value.number = info == 21 ? 1 : 0;
        return value;
      case 22:
        value.type = Value::Type::Null;
        return value;
      case 23:
        value.type = Value::Type::Undefined;
        return value;
      case 24:
        value.type = Value::Type::Simple;
        value.number = byte();
        return value;
      case 25:
        value.type = Value::Type::Float;
        value.real = half_to_double(std::uint16_t(big_endian(2)));
        return value;
      case 26:
        value.type = Value::Type::Float;
        value.real = std::bit_cast<float>(std::uint32_t(big_endian(4)));
        return value;
      case 27:
        value.type = Value::Type::Float;
        value.real = std::bit_cast<double>(big_endian(8));
        return value;
      case kIndefinite:
        fail(ReadFailure::Invalid,
             "break byte 0xff outside an indefinite-length item at byte " + std::to_string(start));
      default:
        if (info < 20) {
          value.type = Value::Type::Simple;
          value.number = std::uint64_t(info);
          return value;
        }
        fail(ReadFailure::Invalid,
             "reserved simple value " + std::to_string(info) + " at byte " + std::to_string(start));
    }
  }

  std::span<const std::byte> input_;
  std::size_t at_ = 0;
  std::size_t items_ = 0;
};

}  // namespace

const Value* Value::find(std::string_view key) const {
  if (type != Type::Map) return nullptr;
  for (std::size_t i = 0; i + 1 < items.size(); i += 2) {
    const Value& k = items[i].untagged();
    if (k.type == Type::Text && k.text() == key) return &items[i + 1];
  }
  return nullptr;
}

const Value& Value::untagged() const {
  const Value* value = this;
  while (value->type == Type::Tagged && !value->items.empty()) value = &value->items.front();
  return *value;
}

std::string Value::type_name() const {
  switch (type) {
    case Type::Unsigned:
      return "unsigned integer";
    case Type::Negative:
      return "negative integer";
    case Type::Bytes:
      return "byte string";
    case Type::Text:
      return "text string";
    case Type::Array:
      return "array";
    case Type::Map:
      return "map";
    case Type::Tagged:
      return "tag " + std::to_string(number);
    case Type::Bool:
      return "boolean";
    case Type::Null:
      return "null";
    case Type::Undefined:
      return "undefined";
    case Type::Float:
      return "float";
    case Type::Simple:
      return "simple value " + std::to_string(number);
  }
  return "unknown";
}

ReadResult read(std::span<const std::byte> message) {
  ReadResult result;
  Reader reader(message);
  try {
    result.value = reader.item(0);
  } catch (const Failure& failure) {
    result.failure = failure.kind;
    result.error = failure.what;
    return result;
  }
  if (reader.position() != message.size()) {
    result.failure = ReadFailure::TrailingBytes;
    result.error = std::to_string(message.size() - reader.position()) +
                   " bytes after the first item (which ends at byte " +
                   std::to_string(reader.position()) + ")";
  }
  return result;
}

}  // namespace livedrp::stream::cbor
