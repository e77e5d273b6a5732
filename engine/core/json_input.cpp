#include "core/json_input.hpp"

#include <iterator>
#include <utility>
#include <vector>

#include "core/error.hpp"

namespace livedrp {
namespace {

using nlohmann::json;

// Thrown from the parser callback to stop at the first level too deep, before the value is built.
struct TooDeep {};

// Nesting depth of a value, without recursion; stops counting past `limit`.
int nesting_depth(const json& value, int limit) {
  int deepest = 0;
  std::vector<std::pair<const json*, int>> pending{{&value, value.is_structured() ? 1 : 0}};
  while (!pending.empty()) {
    const auto [item, depth] = pending.back();
    pending.pop_back();
    if (depth > deepest) deepest = depth;
    if (deepest > limit) return deepest;
    if (item->is_structured())
      for (const json& child : *item)
        if (child.is_structured()) pending.emplace_back(&child, depth + 1);
  }
  return deepest;
}

}  // namespace

std::optional<json> try_parse_json(std::string_view text, std::string& error) {
  const json::parser_callback_t limit_depth = [](int depth, json::parse_event_t event, json&) {
    if ((event == json::parse_event_t::object_start || event == json::parse_event_t::array_start) &&
        depth >= kMaxJsonDepth)
      throw TooDeep{};
    return true;
  };
  try {
    return json::parse(text.begin(), text.end(), limit_depth);
  } catch (const TooDeep&) {
    error =
        "refused: arrays and objects nested more than " + std::to_string(kMaxJsonDepth) + " deep";
  } catch (const json::exception& e) {
    error = std::string("not valid JSON (") + e.what() + ")";
  }
  return std::nullopt;
}

json parse_json_input(std::string_view text, const std::string& origin) {
  std::string error;
  if (auto value = try_parse_json(text, error)) return std::move(*value);
  throw InputError(origin + ": " + error);
}

json parse_json_input(std::istream& in, const std::string& origin) {
  const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  if (in.bad()) throw InputError(origin + ": cannot be read");
  return parse_json_input(text, origin);
}

std::string json_excerpt(const json& value, std::size_t max_chars) {
  if (value.is_structured() && nesting_depth(value, kMaxJsonDepth) > kMaxJsonDepth)
    return std::string("an ") + value.type_name() + " nested more than " +
           std::to_string(kMaxJsonDepth) + " deep";
  std::string text;
  if (value.is_string()) {
    // Only the head of a long string is rendered.
    const std::string& s = value.get_ref<const std::string&>();
    text = json(s.substr(0, max_chars + 1)).dump(-1, ' ', false, json::error_handler_t::replace);
    if (s.size() > max_chars)
      return text.substr(0, max_chars) + "... (a string of " + std::to_string(s.size()) + " bytes)";
  } else {
    text = value.dump(-1, ' ', false, json::error_handler_t::replace);
  }
  if (text.size() <= max_chars) return text;
  return text.substr(0, max_chars) + "... (" + std::to_string(text.size()) + " characters)";
}

}  // namespace livedrp
