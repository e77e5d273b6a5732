#pragma once
// Reads one JSON object of a configuration field by field, strictly: ill-typed or out-of-range
// values and (with reject_unknown_keys) unknown keys are InputErrors that name the origin (the
// file), the field as a dotted path ("integration.npt"), the value and what is allowed. Shared by
// EngineConfig and every stage's configuration section (stages/stage.hpp), so a stage's section
// reads and fails exactly like the engine's own.
#include <cmath>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/json_input.hpp"

namespace livedrp {

class FieldReader {
 public:
  FieldReader(const nlohmann::json& object, std::string origin, std::string prefix)
      : object_(object), origin_(std::move(origin)), prefix_(std::move(prefix)) {
    if (!object_.is_object())
      fail(prefix_.empty() ? "configuration" : prefix_, "must be a JSON object");
  }

  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    throw InputError("configuration " + origin_ + ": field '" + field + "' " + what);
  }
  std::string name(const char* key) const { return prefix_.empty() ? key : prefix_ + "." + key; }
  const nlohmann::json* find(const char* key) {
    known_.insert(key);
    auto it = object_.find(key);
    return it == object_.end() ? nullptr : &*it;
  }

  void read(const char* key, std::string& value) {
    if (const nlohmann::json* v = find(key)) {
      if (!v->is_string()) fail(name(key), "must be a string, got " + json_excerpt(*v));
      value = v->get<std::string>();
    }
  }
  void read(const char* key, bool& value) {
    if (const nlohmann::json* v = find(key)) {
      if (!v->is_boolean()) fail(name(key), "must be true or false, got " + json_excerpt(*v));
      value = v->get<bool>();
    }
  }
  template <typename Integer>
  void read_integer(const char* key, Integer& value, long long minimum, long long maximum) {
    if (const nlohmann::json* v = find(key)) {
      if (!v->is_number_integer() || v->get<long long>() < minimum ||
          v->get<long long>() > maximum ||
          (v->is_number_unsigned() && v->get<unsigned long long>() > (unsigned long long)maximum))
        fail(name(key), "must be an integer in " + std::to_string(minimum) + ".." +
                            std::to_string(maximum) + ", got " + json_excerpt(*v));
      value = Integer(v->get<long long>());
    }
  }
  void read_number(const char* key, double& value, double minimum, double maximum) {
    if (const nlohmann::json* v = find(key)) {
      if (!v->is_number() || !(v->get<double>() >= minimum) || !(v->get<double>() <= maximum))
        // JSON's own spelling of the bounds (1e+30, not 31 digits and six decimals).
        fail(name(key), "must be a number in [" + nlohmann::json(minimum).dump() + ", " +
                            nlohmann::json(maximum).dump() + "], got " + json_excerpt(*v));
      value = v->get<double>();
    }
  }
  // [MIN, MAX]: two finite numbers, MIN < MAX unless `wrap` (an azimuth range may wrap through
  // 180 degrees, so its end may be below its start, but not equal to it).
  void read_range(const char* key, std::optional<std::pair<double, double>>& value, bool wrap) {
    if (const nlohmann::json* v = find(key)) {
      if (v->is_null()) {
        value.reset();
        return;
      }
      const bool pair = v->is_array() && v->size() == 2 && (*v)[0].is_number() &&
                        (*v)[1].is_number() && std::isfinite((*v)[0].get<double>()) &&
                        std::isfinite((*v)[1].get<double>());
      if (!pair) fail(name(key), "must be [MIN, MAX], two finite numbers, got " + json_excerpt(*v));
      const double low = (*v)[0].get<double>(), high = (*v)[1].get<double>();
      if (wrap ? low == high : !(low < high))
        fail(name(key), std::string(wrap ? "must have MIN != MAX" : "must have MIN < MAX") +
                            ", got " + json_excerpt(*v));
      value = std::make_pair(low, high);
    }
  }
  void read_choice(const char* key, std::string& value, const std::set<std::string>& choices) {
    read(key, value);
    if (!choices.count(value)) {
      std::string allowed;
      for (const auto& c : choices) allowed += (allowed.empty() ? "" : ", ") + c;
      fail(name(key), "must be one of " + allowed + ", got \"" + value + "\"");
    }
  }
  // Every key of the object must have been asked for.
  void reject_unknown_keys() const {
    for (auto it = object_.begin(); it != object_.end(); ++it)
      if (!known_.count(it.key()))
        throw InputError("configuration " + origin_ + ": unknown field '" +
                         (prefix_.empty() ? it.key() : prefix_ + "." + it.key()) + "'");
  }

 private:
  const nlohmann::json& object_;
  std::string origin_;
  std::string prefix_;
  std::set<std::string> known_;
};

}  // namespace livedrp
