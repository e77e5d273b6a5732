#include "integrate/poni.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>
#include <system_error>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
// The host helpers of geometry.hpp live here too.
#include "core/json_input.hpp"
#include "integrate/geometry.hpp"
#include "integrate/orientation.hpp"

namespace livedrp::integrate {
namespace {

struct Entry {
  std::string value;
  int line = 0;
  std::string key;  // as written, for messages
};

std::string trim(std::string_view s) {
  const auto first = s.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return {};
  const auto last = s.find_last_not_of(" \t\r\n");
  return std::string(s.substr(first, last - first + 1));
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

[[noreturn]] void fail(const std::string& source, const std::string& what) {
  throw InputError("PONI file " + source + ": " + what);
}

class Reader {
 public:
  Reader(std::map<std::string, Entry> entries, std::string source)
      : entries_(std::move(entries)), source_(std::move(source)) {}

  const Entry* find(const std::string& key) const {
    const auto it = entries_.find(key);
    return it == entries_.end() ? nullptr : &it->second;
  }

  const Entry& require(const std::string& key, const std::string& shown) const {
    const Entry* e = find(key);
    if (!e) fail(source_, "missing key '" + shown + "'");
    return *e;
  }

  // pyFAI writes Python's repr of a float; anything else that is not a whole finite number is
  // a typo we would rather report than half-read.
  double number(const Entry& e) const {
    double value = 0.0;
    const char* begin = e.value.data();
    const char* end = begin + e.value.size();
    const auto [ptr, ec] = std::from_chars(begin, end, value);
    if (e.value.empty() || ec != std::errc() || ptr != end || !std::isfinite(value))
      fail(source_, "line " + std::to_string(e.line) + ": value of '" + e.key + "' is '" + e.value +
                        "', not a finite number");
    return value;
  }

  double positive(const Entry& e) const {
    const double value = number(e);
    if (!(value > 0.0))
      fail(source_,
           "line " + std::to_string(e.line) + ": '" + e.key + "' must be positive, not " + e.value);
    return value;
  }

  const std::string& source() const { return source_; }

 private:
  std::map<std::string, Entry> entries_;
  std::string source_;
};

// The named detector of `g.detector`, or an error naming it when the file leaves the pixel size
// to a detector livedrp does not know.
const PyfaiDetector& required_named(const std::string& source, const std::string& where,
                                    const PoniGeometry& g, const char* missing) {
  if (g.named) return *g.named;
  // pyFAI's generic class has no size of its own: the file must give it.
  if (g.detector == "Detector")
    fail(source, where + "has no '" + missing + "', which pyFAI's generic 'Detector' needs");
  fail(source, where + "has no '" + missing + "' and detector '" + g.detector +
                   "' is not one of pyFAI's detectors that livedrp knows (" +
                   pyfai_detector_examples() + "); give pixel1 and pixel2 in Detector_config");
}

std::optional<std::array<int, 2>> read_extent_pair(const Reader& r, const nlohmann::json& config,
                                                   const std::string& where, const char* key) {
  if (!config.contains(key) || config[key].is_null()) return std::nullopt;
  const auto& s = config[key];
  const auto extent_ok = [](const nlohmann::json& v) {
    return v.is_number_integer() && v.get<long long>() > 0 && v.get<long long>() <= (1 << 30);
  };
  if (!s.is_array() || s.size() != 2 || !extent_ok(s[0]) || !extent_ok(s[1]))
    fail(r.source(), where + "'" + key + "' must be [rows, columns] of positive integers, not " +
                         json_excerpt(s));
  return std::array<int, 2>{s[0].get<int>(), s[1].get<int>()};
}

void read_detector_config(const Reader& r, PoniGeometry& g, bool allow_orientation) {
  const Entry& e = r.require("detector_config", "Detector_config");
  const std::string where = "line " + std::to_string(e.line) + ": Detector_config ";
  std::string error;
  std::optional<nlohmann::json> parsed = try_parse_json(e.value, error);
  if (!parsed) fail(r.source(), where + "is " + error);
  const nlohmann::json config = std::move(*parsed);
  if (!config.is_object()) fail(r.source(), where + "must be a JSON object");

  // pyFAI's detector factory hands Detector_config to the named class's constructor, so what the
  // file gives (pixel size, max_shape, module_size) wins over the class's own; the table fills
  // in what it leaves out.
  const auto size = [&](const char* key, double PyfaiDetector::*from_table) {
    if (!config.contains(key) || config[key].is_null())
      return required_named(r.source(), where, g, key).*from_table;
    if (!config[key].is_number() || !(config[key].get<double>() > 0.0) ||
        !std::isfinite(config[key].get<double>()))
      fail(r.source(),
           where + "'" + key + "' must be a positive number, not " + json_excerpt(config[key]));
    return config[key].get<double>();
  };
  g.pixel1 = size("pixel1", &PyfaiDetector::pixel1);
  g.pixel2 = size("pixel2", &PyfaiDetector::pixel2);

  g.max_shape = read_extent_pair(r, config, where, "max_shape");
  if (!g.max_shape && g.named) g.max_shape = std::array<int, 2>{g.named->rows, g.named->cols};
  g.module_size = read_extent_pair(r, config, where, "module_size");

  for (const char* key : {"splineFile", "splinefile"}) {
    if (config.contains(key) && !config[key].is_null())
      fail(r.source(), where + "names a spline file; distortion correction is not supported");
  }

  if (config.contains("orientation")) {
    const auto& o = config["orientation"];
    if (!allow_orientation)
      fail(r.source(), where + "has 'orientation', which only poni_version 2.1 defines");
    if (!o.is_number_integer() ||
        !orientation_supported(int(std::clamp<long long>(o.get<long long>(), -1, 1000))))
      fail(r.source(), where + "'orientation' must be an integer from 1 to 4 (pyFAI's " +
                           "TopLeft, TopRight, BottomRight, BottomLeft), not " + json_excerpt(o));
    g.orientation = o.get<int>();
  }
}

}  // namespace

PoniGeometry parse_poni(std::string_view text, const std::string& source) {
  std::map<std::string, Entry> entries;
  int line_number = 0;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    auto end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string line = trim(text.substr(pos, end - pos));
    pos = end + 1;
    ++line_number;
    if (line.empty() || line.front() == '#') continue;
    const auto colon = line.find(':');
    if (colon == std::string::npos)
      // The line itself is not quoted: a control request may name any readable file as a PONI
      // file, and its refusal must not hand the file's content to the requester.
      fail(source, "line " + std::to_string(line_number) +
                       ": expected 'key: value', got a line of " + std::to_string(line.size()) +
                       " characters without ':' (is this a PONI file?)");
    Entry e{trim(std::string_view(line).substr(colon + 1)), line_number,
            trim(std::string_view(line).substr(0, colon))};
    // pyFAI reads keys case-insensitively.
    const std::string key = lower(e.key);
    if (key.empty()) fail(source, "line " + std::to_string(line_number) + ": empty key before ':'");
    if (const auto it = entries.find(key); it != entries.end())
      fail(source, "line " + std::to_string(line_number) + ": '" + e.key +
                       "' given again (first on line " + std::to_string(it->second.line) + ")");
    entries.emplace(key, std::move(e));
  }
  const Reader r(std::move(entries), source);

  PoniGeometry g;
  if (const Entry* v = r.find("poni_version")) {
    if (v->value == "1")
      g.version = 1;
    else if (v->value == "2")
      g.version = 2;
    else if (v->value == "2.1")
      g.version = 21;
    else
      fail(source, "line " + std::to_string(v->line) + ": unknown poni_version '" + v->value +
                       "' (livedrp reads 1, 2 and 2.1)");
  }

  if (g.version == 1) {
    if (const Entry* d = r.find("detector")) {
      g.detector = d->value;
      g.named = find_pyfai_detector(g.detector);
    }
    // Version 1 gives the pixel size as PixelSize1/PixelSize2; a file that only names the
    // detector takes the table's.
    const auto pixel = [&](const char* key, const char* shown, double PyfaiDetector::*from) {
      if (const Entry* p = r.find(key)) return r.positive(*p);
      if (g.named) return g.named->*from;
      if (!g.detector.empty())
        fail(source, std::string("missing key '") + shown + "', and detector '" + g.detector +
                         "' is not one of pyFAI's detectors that livedrp knows (" +
                         pyfai_detector_examples() + ")");
      fail(source, std::string("missing key '") + shown + "'");
    };
    g.pixel1 = pixel("pixelsize1", "PixelSize1", &PyfaiDetector::pixel1);
    g.pixel2 = pixel("pixelsize2", "PixelSize2", &PyfaiDetector::pixel2);
    if (g.named) g.max_shape = std::array<int, 2>{g.named->rows, g.named->cols};
    if (const Entry* s = r.find("splinefile"); s && lower(s->value) != "none")
      fail(source, "line " + std::to_string(s->line) +
                       ": SplineFile given; distortion correction is not supported");
  } else {
    g.detector = r.require("detector", "Detector").value;
    g.named = find_pyfai_detector(g.detector);
    read_detector_config(r, g, g.version == 21);
  }

  // pyFAI accepts "Dist" for the distance too.
  const Entry* distance = r.find("distance");
  if (!distance) distance = r.find("dist");
  if (!distance) fail(source, "missing key 'Distance'");
  g.distance = r.positive(*distance);
  g.poni1 = r.number(r.require("poni1", "Poni1"));
  g.poni2 = r.number(r.require("poni2", "Poni2"));
  g.rot1 = r.number(r.require("rot1", "Rot1"));
  g.rot2 = r.number(r.require("rot2", "Rot2"));
  g.rot3 = r.number(r.require("rot3", "Rot3"));
  if (const Entry* w = r.find("wavelength")) g.wavelength = r.positive(*w);
  return g;
}

PoniGeometry read_poni(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError("PONI file " + path.string() + ": cannot be opened");
  std::ostringstream text;
  text << in.rdbuf();
  return parse_poni(text.str(), path.string());
}

GeometryParams make_geometry_params(const PoniGeometry& poni) {
  GeometryParams g{};
  g.distance = poni.distance;
  g.poni1 = poni.poni1;
  g.poni2 = poni.poni2;
  g.pixel1 = poni.pixel1;
  g.pixel2 = poni.pixel2;
  g.cos1 = std::cos(poni.rot1);
  g.sin1 = std::sin(poni.rot1);
  g.cos2 = std::cos(poni.rot2);
  g.sin2 = std::sin(poni.rot2);
  g.cos3 = std::cos(poni.rot3);
  g.sin3 = std::sin(poni.rot3);
  g.wavelength = poni.wavelength.value_or(0.0);
  return g;
}

void orient_geometry(GeometryParams& g, int orientation, int rows, int columns) {
  if (!orientation_supported(orientation))
    throw InputError("detector orientation " + std::to_string(orientation) +
                     " is not one of pyFAI's 1 to 4");
  g.flip1 = orientation_flips_rows(orientation) ? double(rows) : 0.0;
  g.flip2 = orientation_flips_columns(orientation) ? double(columns) : 0.0;
  g.sign1 = orientation_flips_rows(orientation) ? -1.0 : 1.0;
  g.sign2 = orientation_flips_columns(orientation) ? -1.0 : 1.0;
}

std::vector<std::uint8_t> poni_detector_mask(const PoniGeometry& poni, int rows, int columns) {
  // pyFAI's calc_mask tiles the detector's max_shape (the file's, else the class's).
  if (!poni.named || !poni.max_shape || rows != (*poni.max_shape)[0] ||
      columns != (*poni.max_shape)[1])
    return {};
  const std::array<int, 2> module = poni.module_size.value_or(
      std::array<int, 2>{poni.named->module_rows, poni.named->module_cols});
  return pyfai_gap_mask(*poni.named, rows, columns, module[0], module[1]);
}

GeometryArrays compute_geometry_arrays(const PoniGeometry& poni, int rows, int columns) {
  if (rows <= 0 || columns <= 0)
    throw InputError("detector shape " + std::to_string(rows) + " x " + std::to_string(columns) +
                     " must be positive");
  GeometryParams g = make_geometry_params(poni);
  orient_geometry(g, poni.orientation, rows, columns);
  GeometryArrays out;
  out.rows = rows;
  out.columns = columns;
  const std::size_t n = static_cast<std::size_t>(rows) * static_cast<std::size_t>(columns);
  out.two_theta.resize(n);
  out.chi.resize(n);
  out.r_mm.resize(n);
  if (poni.wavelength) out.q_nm.resize(n);
  for (int i = 0; i < rows; ++i) {
    for (int j = 0; j < columns; ++j) {
      const std::size_t k = static_cast<std::size_t>(i) * columns + j;
      const LabPosition t = pixel_lab_position(g, i, j);
      out.two_theta[k] = two_theta(t);
      out.chi[k] = chi(t);
      out.r_mm[k] = r_mm(t);
      if (poni.wavelength) out.q_nm[k] = q_nm(out.two_theta[k], g.wavelength);
    }
  }
  return out;
}

GeometryArrays compute_geometry_arrays(const PoniGeometry& poni) {
  if (!poni.max_shape)
    throw InputError(
        "the PONI file gives no max_shape; the detector's shape must come from "
        "elsewhere");
  return compute_geometry_arrays(poni, (*poni.max_shape)[0], (*poni.max_shape)[1]);
}

}  // namespace livedrp::integrate
