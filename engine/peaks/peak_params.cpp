#include "peaks/peak_params.hpp"

#include <cmath>
#include <fstream>
#include <functional>
#include <map>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/json_input.hpp"

namespace livedrp::peaks {

std::string validate(const PeakFinderParams& p) {
  auto bad = [](const std::string& name, const std::string& value, const std::string& why) {
    return name + " = " + value + ": " + why;
  };
  if (p.max_num_peaks < 1 || p.max_num_peaks > 100000)
    return bad("max_num_peaks", std::to_string(p.max_num_peaks), "must be 1..100000");
  if (!std::isfinite(p.adc_threshold))
    return bad("adc_threshold", std::to_string(p.adc_threshold), "must be a finite number");
  if (!std::isfinite(p.minimum_snr) || p.minimum_snr < 0)
    return bad("minimum_snr", std::to_string(p.minimum_snr), "must be finite and >= 0");
  if (p.min_pixel_count < 1)
    return bad("min_pixel_count", std::to_string(p.min_pixel_count), "must be >= 1");
  if (p.max_pixel_count < p.min_pixel_count)
    return bad("max_pixel_count", std::to_string(p.max_pixel_count),
               "must be >= min_pixel_count (" + std::to_string(p.min_pixel_count) + ")");
  if (p.max_pixel_count > 100000)
    return bad("max_pixel_count", std::to_string(p.max_pixel_count), "must be <= 100000");
  if (p.local_bg_radius < 1 || p.local_bg_radius > 64)
    return bad("local_bg_radius", std::to_string(p.local_bg_radius), "must be 1..64 pixels");
  if (!std::isfinite(p.min_res) || p.min_res < 0)
    return bad("min_res", std::to_string(p.min_res), "must be finite and >= 0");
  if (std::isnan(p.max_res) || p.max_res <= p.min_res)
    return bad("max_res", std::to_string(p.max_res),
               "must be > min_res (" + std::to_string(p.min_res) + ")");
  if (p.iterations < 1 || p.iterations > 100)
    return bad("iterations", std::to_string(p.iterations), "must be 1..100");
  if (p.min_peaks_for_hit < 0)
    return bad("min_peaks_for_hit", std::to_string(p.min_peaks_for_hit), "must be >= 0");
  return {};
}

namespace {

template <typename T>
void read_number(const nlohmann::json& value, T& target, const std::string& where) {
  if (!value.is_number()) throw InputError(where + " must be a number, not " + json_excerpt(value));
  if constexpr (std::is_integral_v<T>) {
    if (!value.is_number_integer() && !value.is_number_unsigned())
      throw InputError(where + " must be a whole number, not " + json_excerpt(value));
    const auto v = value.get<long long>();
    if (v < -(1ll << 31) || v > (1ll << 31) - 1)
      throw InputError(where + " is out of range: " + json_excerpt(value));
    target = T(v);
  } else {
    target = value.get<T>();
  }
}

}  // namespace

PeakFinderParams parse_peak_params(const nlohmann::json& json, const std::string& origin) {
  if (!json.is_object())
    throw InputError(origin + ": peak-finder parameters must be a JSON object");
  PeakFinderParams p;
  const std::map<std::string, std::function<void(const nlohmann::json&, const std::string&)>>
      fields = {
          {"max_num_peaks", [&](auto& v, auto& w) { read_number(v, p.max_num_peaks, w); }},
          {"adc_threshold", [&](auto& v, auto& w) { read_number(v, p.adc_threshold, w); }},
          {"minimum_snr", [&](auto& v, auto& w) { read_number(v, p.minimum_snr, w); }},
          {"min_pixel_count", [&](auto& v, auto& w) { read_number(v, p.min_pixel_count, w); }},
          {"max_pixel_count", [&](auto& v, auto& w) { read_number(v, p.max_pixel_count, w); }},
          {"local_bg_radius", [&](auto& v, auto& w) { read_number(v, p.local_bg_radius, w); }},
          {"min_res", [&](auto& v, auto& w) { read_number(v, p.min_res, w); }},
          {"max_res", [&](auto& v, auto& w) { read_number(v, p.max_res, w); }},
          {"iterations", [&](auto& v, auto& w) { read_number(v, p.iterations, w); }},
          {"min_peaks_for_hit", [&](auto& v, auto& w) { read_number(v, p.min_peaks_for_hit, w); }},
      };
  for (const auto& [name, value] : json.items()) {
    const auto field = fields.find(name);
    if (field == fields.end()) {
      std::string known;
      for (const auto& [k, unused] : fields) known += (known.empty() ? "" : ", ") + k;
      throw InputError(origin + ": unknown peak-finder parameter '" + name + "' (known: " + known +
                       ")");
    }
    field->second(value, origin + ": " + name);
  }
  if (const std::string problem = validate(p); !problem.empty())
    throw InputError(origin + ": " + problem);
  return p;
}

PeakFinderParams load_peak_params(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError(path + ": cannot open the peak-finder parameter file");
  return parse_peak_params(parse_json_input(in, path), path);
}

nlohmann::json to_json(const PeakFinderParams& p) {
  return {{"max_num_peaks", p.max_num_peaks},
          {"adc_threshold", p.adc_threshold},
          {"minimum_snr", p.minimum_snr},
          {"min_pixel_count", p.min_pixel_count},
          {"max_pixel_count", p.max_pixel_count},
          {"local_bg_radius", p.local_bg_radius},
          {"min_res", p.min_res},
          {"max_res", p.max_res},
          {"iterations", p.iterations},
          {"min_peaks_for_hit", p.min_peaks_for_hit}};
}

}  // namespace livedrp::peaks
