#pragma once
// JSON from outside the process (configuration, detector, PONI and parameter files, control
// requests, stream headers, file attributes): parsed with a bound on nesting, so that copying,
// dumping or reading the value later cannot exhaust the stack, with every failure of the JSON
// library (a syntax error, a number such as 1e309 that no double holds) turned into a message
// naming where the text came from; and shown in error texts as a bounded excerpt, so that a
// 100 MB value is never echoed whole.
#include <cstddef>
#include <istream>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace livedrp {

// Deepest nesting of arrays and objects accepted; the project's own files nest 4 deep at most.
inline constexpr int kMaxJsonDepth = 64;

// The parsed value, or nullopt with `error` saying why (no origin in it): not JSON, a number out
// of range, or nested deeper than kMaxJsonDepth.
std::optional<nlohmann::json> try_parse_json(std::string_view text, std::string& error);

// Throws InputError "<origin>: <why>" where try_parse_json fails.
nlohmann::json parse_json_input(std::string_view text, const std::string& origin);
// The whole stream; throws InputError as above, or when it cannot be read.
nlohmann::json parse_json_input(std::istream& in, const std::string& origin);

// The value's JSON for an error text, cut after `max_chars` characters with the length left out
// said; bytes that are not UTF-8 replaced. Never recurses deeper than kMaxJsonDepth: a deeper
// value is named by its type instead.
std::string json_excerpt(const nlohmann::json& value, std::size_t max_chars = 100);

}  // namespace livedrp
