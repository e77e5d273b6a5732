#include "core/crystfel_geometry.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

#include "core/error.hpp"

namespace livedrp::crystfel {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

bool starts_with(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

// The whole text as one finite number (strtod, so "1e-3" and "+2" are fine), else nothing.
std::optional<double> to_number(std::string_view text) {
  const std::string s(trim(text));
  if (s.empty()) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size() || errno == ERANGE || !std::isfinite(v)) return std::nullopt;
  return v;
}

std::optional<long long> to_integer(std::string_view text, int base = 10) {
  const std::string s(trim(text));
  if (s.empty()) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(s.c_str(), &end, base);
  if (end != s.c_str() + s.size() || errno == ERANGE) return std::nullopt;
  return v;
}

// "+1.0x -0.002y", "-x", "0.5y+0.866x +0.01z": signed terms, each a coefficient (1 when left out)
// and an axis. CrystFEL sums repeated axes; a repeated axis here is more likely a typo, so it is
// refused with the rest of the malformed directions.
std::optional<LabVector> to_direction(std::string_view text) {
  std::string s;
  for (const char c : text)
    if (!std::isspace(static_cast<unsigned char>(c))) s += c;
  if (s.empty()) return std::nullopt;
  LabVector v;
  bool seen[3] = {false, false, false};
  std::size_t i = 0;
  while (i < s.size()) {
    // A term runs to the next sign that does not belong to an exponent.
    std::size_t j = i + 1;
    while (j < s.size() && !((s[j] == '+' || s[j] == '-') && s[j - 1] != 'e' && s[j - 1] != 'E'))
      ++j;
    const std::string term = s.substr(i, j - i);
    i = j;
    const char axis = term.back();
    if (axis != 'x' && axis != 'y' && axis != 'z') return std::nullopt;
    std::string coefficient = term.substr(0, term.size() - 1);
    double value = 1;
    if (coefficient == "+" || coefficient.empty()) {
      value = 1;
    } else if (coefficient == "-") {
      value = -1;
    } else if (const auto n = to_number(coefficient)) {
      value = *n;
    } else {
      return std::nullopt;
    }
    const int k = axis - 'x';
    if (seen[k]) return std::nullopt;
    seen[k] = true;
    (k == 0 ? v.x : k == 1 ? v.y : v.z) = value;
  }
  return v;
}

// "0.1", "0.1 m", "100 mm", or a data-file location ("/LCLS/detector_1/EncoderValue mm").
bool valid_quantity(std::string_view value, std::initializer_list<std::string_view> units) {
  const std::size_t space = value.find_first_of(" \t");
  const std::string_view number = value.substr(0, space);
  const std::string_view unit = space == std::string_view::npos ? "" : trim(value.substr(space));
  if (!unit.empty() && std::find(units.begin(), units.end(), unit) == units.end()) return false;
  return starts_with(number, "/") || to_number(number).has_value();
}

struct PanelState {
  GeomPanel panel;
  bool fs_set = false, ss_set = false, corner_x_set = false, corner_y_set = false;
  std::map<std::string, int> key_lines;  // the line that last set each key
};

struct BadState {
  BadRegion region;
  bool kind_set = false;
  int coordinates_set = 0;  // bit per min/max key of its kind
};

class Parser {
 public:
  explicit Parser(const std::string& file) { g_.file = file; }

  Geometry run(std::string_view text) {
    int line_number = 0;
    std::size_t start = 0;
    while (start < text.size()) {
      std::size_t end = text.find_first_of("\r\n", start);
      if (end == std::string_view::npos) end = text.size();
      parse_line(text.substr(start, end - start), ++line_number);
      // A CR LF pair ends one line, not two, so line numbers match an editor's.
      const bool crlf = end + 1 < text.size() && text[end] == '\r' && text[end + 1] == '\n';
      start = end + (crlf ? 2 : 1);
    }
    finish(line_number);
    return std::move(g_);
  }

 private:
  [[noreturn]] void fail(int line, const std::string& problem) const {
    throw InputError("CrystFEL geometry " + g_.file + ":" + std::to_string(line) + ": " + problem);
  }
  void warn(int line, const std::string& what) {
    g_.warnings.push_back(g_.file + ":" + std::to_string(line) + ": " + what);
  }

  void parse_line(std::string_view raw, int line) {
    std::string_view s = raw.substr(0, raw.find(';'));
    s = trim(s);
    if (s.empty()) return;
    const std::size_t eq = s.find('=');
    if (eq == std::string_view::npos)
      fail(line, "expected 'key = value', got '" + std::string(s) + "'");
    const std::string_view key = trim(s.substr(0, eq)), value = trim(s.substr(eq + 1));
    if (key.empty()) fail(line, "a line with no key before '='");
    if (value.empty()) fail(line, "'" + std::string(key) + "' has no value");
    if (value.find('=') != std::string_view::npos)
      fail(line, "more than one '=' in '" + std::string(s) + "'");

    const std::size_t slash = key.find('/');
    if (slash == std::string_view::npos) return top_level(std::string(key), value, line);
    const std::string name(trim(key.substr(0, slash)));
    const std::string field(trim(key.substr(slash + 1)));
    if (name.empty() || field.empty() || field.find('/') != std::string::npos)
      fail(line, "expected 'panel/key = value', got key '" + std::string(key) + "'");
    if (starts_with(name, "bad")) return bad_field(bad_region(name, line), field, value, line);
    if (starts_with(name, "group") || starts_with(name, "rigid_group"))
      fail(line, "'" + name + "' cannot name a panel (names starting with 'group' or " +
                     "'rigid_group' are reserved)");
    panel_field(panel(name, line), field, value, line);
  }

  void top_level(const std::string& key, std::string_view value, int line) {
    const std::string v(value);
    if (starts_with(key, "rigid_group") || starts_with(key, "group_")) return;  // refinement only
    if (key == "clen") {
      if (!valid_quantity(value, {"m", "mm"}))
        fail(line,
             "clen must be a length (\"0.1\", \"0.1 m\", \"100 mm\") or a data location, got '" +
                 v + "'");
      g_.clen = v;  // for every panel that does not set its own (older files do)
      return;
    }
    if (key == "photon_energy") {
      if (!valid_quantity(value, {"eV", "keV"}))
        fail(line,
             "photon_energy must be a number (eV or keV) or a data location, got '" + v + "'");
      g_.photon_energy = v;
      return;
    }
    if (key == "wavelength") {
      if (!valid_quantity(value, {"m", "A"}))
        fail(line, "wavelength must be a number (m or A) or a data location, got '" + v + "'");
      g_.wavelength = v;
      return;
    }
    if (key == "electron_voltage") {
      if (!valid_quantity(value, {"V", "kV"}))
        fail(line,
             "electron_voltage must be a number (V or kV) or a data location, got '" + v + "'");
      g_.electron_voltage = v;
      return;
    }
    if (key == "bandwidth") {
      if (!to_number(value)) fail(line, "bandwidth must be a number, got '" + v + "'");
      g_.bandwidth = v;
      return;
    }
    if (key == "peak_list") return void(g_.peak_list = v);
    if (key == "peak_list_type") return void(g_.peak_list_type = v);
    if (key == "detector_shift_x") return void(g_.detector_shift_x = v);
    if (key == "detector_shift_y") return void(g_.detector_shift_y = v);
    // Anything else is a default for the panels mentioned from here on.
    panel_field(defaults_, key, value, line);
    defaults_used_ = false;
    defaults_line_ = line;
  }

  PanelState& panel(const std::string& name, int line) {
    for (PanelState& p : panels_)
      if (p.panel.name == name) return p;
    PanelState p = defaults_;
    p.panel.name = name;
    p.panel.line = line;
    p.key_lines.clear();
    panels_.push_back(std::move(p));
    defaults_used_ = true;
    return panels_.back();
  }

  BadState& bad_region(const std::string& name, int line) {
    for (BadState& b : bad_)
      if (b.region.name == name) return b;
    BadState b;
    b.region.name = name;
    b.region.line = line;
    bad_.push_back(std::move(b));
    return bad_.back();
  }

  int integer(std::string_view value, const std::string& key, int line) {
    const auto v = to_integer(value);
    if (!v || *v < 0 || *v > 1'000'000'000)
      fail(line,
           key + " must be a whole number of pixels (0 or more), got '" + std::string(value) + "'");
    return int(*v);
  }
  double number(std::string_view value, const std::string& key, int line) {
    const auto v = to_number(value);
    if (!v) fail(line, key + " must be a number, got '" + std::string(value) + "'");
    return *v;
  }
  std::uint64_t bits(std::string_view value, const std::string& key, int line) {
    const std::string_view v = trim(value);
    const bool hex = starts_with(v, "0x") || starts_with(v, "0X");
    const auto n = to_integer(hex ? v.substr(2) : v, hex ? 16 : 10);
    if (!n || *n < 0)
      fail(line, key + " must be a bit mask (decimal or 0x hex), got '" + std::string(value) + "'");
    return std::uint64_t(*n);
  }

  void panel_field(PanelState& state, const std::string& key, std::string_view value, int line) {
    GeomPanel& p = state.panel;
    const std::string v(value);
    state.key_lines[key] = line;
    if (key == "min_fs") {
      p.min_fs = integer(value, key, line);
    } else if (key == "max_fs") {
      p.max_fs = integer(value, key, line);
    } else if (key == "min_ss") {
      p.min_ss = integer(value, key, line);
    } else if (key == "max_ss") {
      p.max_ss = integer(value, key, line);
    } else if (key == "fs" || key == "ss") {
      const auto d = to_direction(value);
      if (!d)
        fail(line, key + " must be a direction such as '+1.0x -0.002y' (terms in x, y, z, each " +
                       "axis once), got '" + v + "'");
      (key == "fs" ? p.fs : p.ss) = *d;
      (key == "fs" ? state.fs_set : state.ss_set) = true;
    } else if (key == "corner_x") {
      p.corner_x = number(value, key, line);
      state.corner_x_set = true;
    } else if (key == "corner_y") {
      p.corner_y = number(value, key, line);
      state.corner_y_set = true;
    } else if (key == "res") {
      p.res = number(value, key, line);
      if (!(p.res > 0)) fail(line, "res (pixels per metre) must be positive, got '" + v + "'");
    } else if (key == "clen") {
      if (!valid_quantity(value, {"m", "mm"}))
        fail(line, "clen must be a length or a data location, got '" + v + "'");
      p.clen = v;
    } else if (key == "coffset") {
      p.coffset = number(value, key, line);
    } else if (key == "adu_per_eV") {
      p.adu_per_eV = number(value, key, line);
      p.adu_per_photon.reset();  // CrystFEL keeps one scale: the last one given
    } else if (key == "adu_per_photon") {
      p.adu_per_photon = number(value, key, line);
      p.adu_per_eV.reset();
    } else if (key == "data") {
      if (!starts_with(value, "/"))
        fail(line, "data must be a location such as /data/data, got '" + v + "'");
      p.data = v;
    } else if (starts_with(key, "dim")) {
      const auto n = to_integer(std::string_view(key).substr(3));
      if (!n || *n < 0 || *n > 15) fail(line, "'" + key + "' is not dim0, dim1, ...");
      if (v != "%" && v != "ss" && v != "fs" && !to_integer(value))
        fail(line, key + " must be %, ss, fs or an index, got '" + v + "'");
      if (p.dims.size() <= std::size_t(*n)) p.dims.resize(std::size_t(*n) + 1);
      p.dims[std::size_t(*n)] = v;
    } else if (key == "mask" || key == "mask0_data") {
      if (!starts_with(value, "/")) fail(line, key + " must be a data location, got '" + v + "'");
      p.mask = v;
    } else if (key == "mask_file" || key == "mask0_file") {
      p.mask_file = v;
    } else if (key == "mask_good" || key == "mask0_goodbits") {
      p.mask_good = bits(value, key, line);
    } else if (key == "mask_bad" || key == "mask0_badbits") {
      p.mask_bad = bits(value, key, line);
    } else if (key == "mask_edge_pixels") {
      p.mask_edge_pixels = integer(value, key, line);
    } else if (key == "no_index") {
      std::string lower(trim(value));
      for (char& c : lower) c = char(std::tolower(static_cast<unsigned char>(c)));
      if (lower == "true" || lower == "1")
        p.no_index = true;
      else if (lower == "false" || lower == "0")
        p.no_index = false;
      else
        fail(line, "no_index must be 0, 1, true or false, got '" + v + "'");
    } else if (starts_with(key, "mask") || starts_with(key, "flag_") || key == "max_adu" ||
               starts_with(key, "saturation_map") || key == "badrow_direction") {
      warn(line, "'" + key + "' is not used by livedrp (ignored)");
    } else {
      warn(line, "unknown key '" + key + "' (ignored)");
    }
  }

  void bad_field(BadState& state, const std::string& key, std::string_view value, int line) {
    BadRegion& b = state.region;
    static const char* xy_keys[] = {"min_x", "max_x", "min_y", "max_y"};
    static const char* fsss_keys[] = {"min_fs", "max_fs", "min_ss", "max_ss"};
    if (key == "panel") {
      b.panel_name = std::string(trim(value));
      return;
    }
    for (int k = 0; k < 4; ++k) {
      const bool xy = key == xy_keys[k], fsss = key == fsss_keys[k];
      if (!xy && !fsss) continue;
      if (state.kind_set && b.in_slab != fsss)
        fail(line, "bad region '" + b.name + "' mixes x/y and fs/ss coordinates");
      state.kind_set = true;
      b.in_slab = fsss;
      state.coordinates_set |= 1 << k;
      if (xy) {
        double* target[] = {&b.min_x, &b.max_x, &b.min_y, &b.max_y};
        *target[k] = number(value, b.name + "/" + key, line);
      } else {
        int* target[] = {&b.min_fs, &b.max_fs, &b.min_ss, &b.max_ss};
        *target[k] = integer(value, b.name + "/" + key, line);
      }
      return;
    }
    warn(line, "unknown bad-region key '" + b.name + "/" + key + "' (ignored)");
  }

  int line_of(const PanelState& s, const std::string& key) const {
    const auto it = s.key_lines.find(key);
    return it != s.key_lines.end() ? it->second : s.panel.line;
  }

  void finish(int last_line) {
    if (panels_.empty()) fail(std::max(last_line, 1), "no panels (lines such as 'p0/min_fs = 0')");
    if (!defaults_used_ && defaults_line_ > 0)
      warn(defaults_line_, "defaults after the last panel apply to no panel (ignored)");

    for (const PanelState& s : panels_) {
      const GeomPanel& p = s.panel;
      const std::string who = "panel '" + p.name + "'";
      for (const auto& [key, value] :
           {std::pair{"min_fs", p.min_fs}, std::pair{"max_fs", p.max_fs},
            std::pair{"min_ss", p.min_ss}, std::pair{"max_ss", p.max_ss}})
        if (value < 0) fail(p.line, who + " has no " + key);
      if (!s.fs_set) fail(p.line, who + " has no fs direction");
      if (!s.ss_set) fail(p.line, who + " has no ss direction");
      if (!s.corner_x_set) fail(p.line, who + " has no corner_x");
      if (!s.corner_y_set) fail(p.line, who + " has no corner_y");
      if (!(p.res > 0)) fail(p.line, who + " has no res (pixels per metre)");
      if (p.min_fs > p.max_fs)
        fail(line_of(s, "max_fs"), who + ": max_fs " + std::to_string(p.max_fs) +
                                       " is below min_fs " + std::to_string(p.min_fs));
      if (p.min_ss > p.max_ss)
        fail(line_of(s, "max_ss"), who + ": max_ss " + std::to_string(p.max_ss) +
                                       " is below min_ss " + std::to_string(p.min_ss));
      // Non-degenerate: both steps non-zero and not parallel (the panel spans an area).
      const LabVector& f = p.fs;
      const LabVector& g = p.ss;
      const double nf = std::sqrt(f.x * f.x + f.y * f.y + f.z * f.z);
      const double ng = std::sqrt(g.x * g.x + g.y * g.y + g.z * g.z);
      const double cx = f.y * g.z - f.z * g.y, cy = f.z * g.x - f.x * g.z,
                   cz = f.x * g.y - f.y * g.x;
      const int vector_line = std::max(line_of(s, "fs"), line_of(s, "ss"));
      if (nf < 1e-6) fail(line_of(s, "fs"), who + ": the fs direction is zero");
      if (ng < 1e-6) fail(line_of(s, "ss"), who + ": the ss direction is zero");
      if (std::sqrt(cx * cx + cy * cy + cz * cz) < 1e-3 * nf * ng)
        fail(vector_line, who + ": the fs and ss directions are parallel");
      // The panel must have extent in the detector plane, or its radius map is meaningless.
      if (std::fabs(cz) < 1e-3 * nf * ng)
        fail(vector_line, who + ": the fs and ss directions span no area across the beam");

      // One slab: every panel reads the same data block in the same layout.
      const GeomPanel& first = panels_.front().panel;
      if (p.data != first.data)
        fail(p.line, who + " reads data '" + p.data + "' but panel '" + first.name + "' reads '" +
                         first.data + "'; livedrp reads one slab per frame");
      if (p.dims != first.dims)
        fail(p.line, who + " has other dim0/dim1/... than panel '" + first.name +
                         "'; livedrp reads one slab per frame");
      int ss_dim = -1, fs_dim = -1, placeholders = 0;
      for (std::size_t d = 0; d < p.dims.size(); ++d) {
        if (p.dims[d] == "ss") ss_dim = ss_dim < 0 ? int(d) : -2;
        if (p.dims[d] == "fs") fs_dim = fs_dim < 0 ? int(d) : -2;
        if (p.dims[d] == "%") ++placeholders;
        if (p.dims[d].empty())
          fail(p.line, who + ": dim" + std::to_string(d) + " is not given but a higher one is");
      }
      if (ss_dim < 0 || fs_dim < 0 || fs_dim < ss_dim)
        fail(p.line, who + ": dim0/dim1/... must name ss once and fs once, ss before fs");
      if (placeholders > 1) fail(p.line, who + ": more than one % dimension");
    }

    for (PanelState& s : panels_) {
      if (s.panel.clen.empty()) s.panel.clen = g_.clen;
      g_.panels.push_back(s.panel);
    }
    for (const GeomPanel& p : g_.panels) {
      g_.slab_width = std::max(g_.slab_width, p.max_fs + 1);
      g_.slab_height = std::max(g_.slab_height, p.max_ss + 1);
    }
    // No two panels share a slab pixel (CrystFEL's ranges are inclusive: a classic mistake is
    // max_ss = 256 on one panel and min_ss = 256 on the next).
    for (std::size_t i = 0; i < g_.panels.size(); ++i)
      for (std::size_t j = 0; j < i; ++j) {
        const GeomPanel &a = g_.panels[i], &b = g_.panels[j];
        if (a.min_fs <= b.max_fs && b.min_fs <= a.max_fs && a.min_ss <= b.max_ss &&
            b.min_ss <= a.max_ss)
          fail(a.line, "panel '" + a.name + "' (fs " + std::to_string(a.min_fs) + "-" +
                           std::to_string(a.max_fs) + ", ss " + std::to_string(a.min_ss) + "-" +
                           std::to_string(a.max_ss) + ") overlaps panel '" + b.name + "' (fs " +
                           std::to_string(b.min_fs) + "-" + std::to_string(b.max_fs) + ", ss " +
                           std::to_string(b.min_ss) + "-" + std::to_string(b.max_ss) +
                           ") in the slab (ranges are inclusive)");
      }

    for (BadState& s : bad_) {
      BadRegion& b = s.region;
      const std::string who = "bad region '" + b.name + "'";
      if (s.coordinates_set != 0xf)
        fail(b.line, who + (b.in_slab ? " needs min_fs, max_fs, min_ss and max_ss"
                                      : " needs min_x, max_x, min_y and max_y (or min_fs, "
                                        "max_fs, min_ss, max_ss and panel)"));
      if (!b.panel_name.empty()) {
        for (std::size_t i = 0; i < g_.panels.size(); ++i)
          if (g_.panels[i].name == b.panel_name) b.panel = int(i);
        if (b.panel < 0)
          fail(b.line, who + " names panel '" + b.panel_name + "', which is not defined");
      }
      if (!b.in_slab) {
        if (b.min_x > b.max_x || b.min_y > b.max_y)
          fail(b.line, who + " has a minimum above its maximum");
        continue;
      }
      if (b.panel < 0) {
        if (g_.panels.size() != 1)
          fail(b.line, who + " is in fs/ss but names no panel (" + b.name + "/panel = ...)");
        b.panel = 0;
        b.panel_name = g_.panels[0].name;
      }
      const GeomPanel& p = g_.panels[std::size_t(b.panel)];
      if (b.min_fs > b.max_fs || b.min_ss > b.max_ss)
        fail(b.line, who + " has a minimum above its maximum");
      if (b.min_fs < p.min_fs || b.max_fs > p.max_fs || b.min_ss < p.min_ss || b.max_ss > p.max_ss)
        fail(b.line, who + " (fs " + std::to_string(b.min_fs) + "-" + std::to_string(b.max_fs) +
                         ", ss " + std::to_string(b.min_ss) + "-" + std::to_string(b.max_ss) +
                         ") is outside panel '" + p.name + "' (fs " + std::to_string(p.min_fs) +
                         "-" + std::to_string(p.max_fs) + ", ss " + std::to_string(p.min_ss) + "-" +
                         std::to_string(p.max_ss) + ")");
    }
    for (BadState& s : bad_) g_.bad_regions.push_back(s.region);
  }

  Geometry g_;
  PanelState defaults_;
  bool defaults_used_ = true;
  int defaults_line_ = 0;
  std::vector<PanelState> panels_;
  std::vector<BadState> bad_;
};

}  // namespace

Geometry parse_geometry(std::string_view text, const std::string& file_name) {
  return Parser(file_name).run(text);
}

Geometry read_geometry(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw InputError("CrystFEL geometry file '" + file.string() + "' cannot be read");
  std::ostringstream text;
  text << in.rdbuf();
  return parse_geometry(text.str(), file.string());
}

LabPoint pixel_centre(const GeomPanel& panel, int slab_fs, int slab_ss) {
  const double i = double(slab_fs - panel.min_fs) + 0.5, j = double(slab_ss - panel.min_ss) + 0.5;
  return {panel.corner_x + i * panel.fs.x + j * panel.ss.x,
          panel.corner_y + i * panel.fs.y + j * panel.ss.y};
}

std::vector<std::int32_t> panel_map(const Geometry& geometry) {
  std::vector<std::int32_t> map(geometry.pixels(), -1);
  const std::size_t width = std::size_t(geometry.slab_width);
  for (std::size_t n = 0; n < geometry.panels.size(); ++n) {
    const GeomPanel& p = geometry.panels[n];
    for (int ss = p.min_ss; ss <= p.max_ss; ++ss)
      for (int fs = p.min_fs; fs <= p.max_fs; ++fs)
        map[std::size_t(ss) * width + std::size_t(fs)] = std::int32_t(n);
  }
  return map;
}

std::vector<float> radius_map(const Geometry& geometry, double beam_x, double beam_y) {
  std::vector<float> radius(geometry.pixels(), 0.0f);
  const std::size_t width = std::size_t(geometry.slab_width);
  for (const GeomPanel& p : geometry.panels)
    for (int ss = p.min_ss; ss <= p.max_ss; ++ss)
      for (int fs = p.min_fs; fs <= p.max_fs; ++fs) {
        const LabPoint c = pixel_centre(p, fs, ss);
        radius[std::size_t(ss) * width + std::size_t(fs)] =
            float(std::hypot(c.x - beam_x, c.y - beam_y));
      }
  return radius;
}

std::vector<std::uint8_t> bad_mask(const Geometry& geometry) {
  std::vector<std::uint8_t> bad(geometry.pixels(), 1);  // pixels of no panel stay bad
  const std::size_t width = std::size_t(geometry.slab_width);
  for (std::size_t n = 0; n < geometry.panels.size(); ++n) {
    const GeomPanel& p = geometry.panels[n];
    const int edge = p.mask_edge_pixels;
    for (int ss = p.min_ss; ss <= p.max_ss; ++ss)
      for (int fs = p.min_fs; fs <= p.max_fs; ++fs) {
        bool is_bad = p.no_index || fs < p.min_fs + edge || fs > p.max_fs - edge ||
                      ss < p.min_ss + edge || ss > p.max_ss - edge;
        // x/y regions test the pixel's outer corner, as CrystFEL's image loader does, so that a
        // region drawn for CrystFEL masks the same pixels here.
        const double i = fs - p.min_fs, j = ss - p.min_ss;
        const double x = p.corner_x + i * p.fs.x + j * p.ss.x;
        const double y = p.corner_y + i * p.fs.y + j * p.ss.y;
        for (const BadRegion& b : geometry.bad_regions) {
          if (is_bad) break;
          if (b.panel >= 0 && std::size_t(b.panel) != n) continue;
          if (b.in_slab)
            is_bad = fs >= b.min_fs && fs <= b.max_fs && ss >= b.min_ss && ss <= b.max_ss;
          else
            is_bad = x >= b.min_x && x <= b.max_x && y >= b.min_y && y <= b.max_y;
        }
        bad[std::size_t(ss) * width + std::size_t(fs)] = is_bad ? 1 : 0;
      }
  }
  return bad;
}

std::vector<peaks::Asic> panel_asics(const Geometry& geometry) {
  std::vector<peaks::Asic> asics;
  for (std::size_t n = 0; n < geometry.panels.size(); ++n) {
    const GeomPanel& p = geometry.panels[n];
    asics.push_back({p.min_ss, p.min_fs, p.height(), p.width(), int(n)});
  }
  return asics;
}

}  // namespace livedrp::crystfel
