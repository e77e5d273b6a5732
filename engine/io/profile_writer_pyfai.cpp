#include "io/profile_writer_pyfai.hpp"

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "core/error.hpp"

namespace livedrp::io {
namespace {

// A float as Python's str() prints it (pyFAI writes the distance and wavelength with "%s"):
// the shortest text that reads back to the same double, with ".0" on integral values.
std::string python_float(double value) {
  char text[64];
  const auto result = std::to_chars(text, text + sizeof text, value);
  std::string s(text, result.ptr);
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s;
}

const char* python_bool(bool value) {
  return value ? "True" : "False";
}

// One line of JSON: the header is line-oriented.
std::string one_line(std::string text) {
  for (char& c : text)
    if (c == '\n' || c == '\r') c = ' ';
  return text;
}

class PyFaiProfileWriter final : public ProfileWriter {
 public:
  PyFaiProfileWriter(const std::string& output, const ProfileOutputContext& context)
      : output_(output), context_(context) {
    // The first file is opened now, so that a folder that cannot be written is named at once.
    open(0);
  }
  ~PyFaiProfileWriter() override {
    if (out_) std::fclose(out_);
  }

  void write(std::uint64_t frame, const integrate::Profile& p) override {
    if (!out_) open(frame);
    write_header(frame);
    for (std::size_t b = 0; b < p.radial.size(); ++b)
      std::fprintf(out_, "%18.10e %18.10e %18.10e\n", p.radial[b], p.intensity[b], p.sigma[b]);
    finish_file();
  }

  void close() override {
    // Frames never written (an empty stack) leave the first file with its header only.
    if (out_) {
      write_header(0);
      finish_file();
    }
  }

  std::string destination() const override {
    if (context_.frames <= 1) return output_;
    return pyfai_frame_path(output_, 0, context_.frames) + " .. " +
           pyfai_frame_path(output_, context_.frames - 1, context_.frames) +
           " (one file per frame)";
  }

 private:
  void open(std::uint64_t frame) {
    path_ = pyfai_frame_path(output_, frame, context_.frames);
    out_ = std::fopen(path_.c_str(), "w");
    if (!out_)
      throw InputError("cannot write output file '" + path_ + "': " + std::strerror(errno));
  }

  void finish_file() {
    const bool written = std::fflush(out_) == 0 && !std::ferror(out_);
    const bool closed = std::fclose(out_) == 0;
    out_ = nullptr;
    if (!written || !closed) throw RuntimeFault("writing output file '" + path_ + "' failed");
  }

  void write_header(std::uint64_t frame) {
    const integrate::PoniGeometry& g = context_.poni;
    std::FILE* f = out_;
    // pyFAI's Geometry.make_headers("list") lines, each behind "# ".
    std::fprintf(f, "# == pyFAI calibration ==\n");
    std::fprintf(f, "# Distance Sample to Detector: %s m\n", python_float(g.distance).c_str());
    std::fprintf(f, "# PONI: %.3e, %.3e m\n", g.poni1, g.poni2);
    std::fprintf(f, "# Rotations: %.6f %.6f %.6f rad\n", g.rot1, g.rot2, g.rot3);
    std::fprintf(f, "# \n");
    std::fprintf(f, "# Detector %s\t PixelSize= %.3e, %.3e m\n",
                 g.detector.empty() ? "Detector" : g.detector.c_str(), g.pixel1, g.pixel2);
    if (g.wavelength) std::fprintf(f, "# Wavelength: %s m\n", python_float(*g.wavelength).c_str());
    std::fprintf(f, "# Mask applied: %s\n", context_.mask_applied.c_str());
    std::fprintf(f, "# Dark current applied: %s\n", python_bool(context_.dark_applied));
    std::fprintf(f, "# Flat field applied: %s\n", python_bool(context_.flat_applied));
    std::fprintf(f, "# Polarization factor: %s\n",
                 context_.polarization ? python_float(*context_.polarization).c_str() : "None");
    std::fprintf(f, "# Normalization factor: None\n");
    std::fprintf(f, "# \n");
    // What pyFAI's header has no line for: who wrote it, which frame, and the configuration.
    std::fprintf(f, "# == livedrp ==\n");
    std::fprintf(f, "# Program: %s\n", context_.program.c_str());
    std::fprintf(f, "# Frame index: %llu (of %llu in the input, counted from 0)\n",
                 (unsigned long long)frame, (unsigned long long)context_.frames);
    std::fprintf(f, "# Configuration: %s\n", one_line(context_.configuration_json).c_str());
    std::fprintf(f, "# --> %s\n", path_.c_str());
    const std::string unit(integrate::to_string(context_.unit));
    std::fprintf(f, "#%17s %18s %18s\n", unit.c_str(), "I", "sigma");
  }

  std::string output_, path_;
  ProfileOutputContext context_;
  std::FILE* out_ = nullptr;
};

}  // namespace

std::string pyfai_frame_path(const std::string& output, std::uint64_t frame, std::uint64_t frames) {
  if (frames <= 1) return output;
  const std::filesystem::path path(output);
  char index[32];
  std::snprintf(index, sizeof index, "_%04llu", (unsigned long long)frame);
  return (path.parent_path() / (path.stem().string() + index + path.extension().string())).string();
}

std::unique_ptr<ProfileWriter> open_pyfai_profile_writer(const std::string& output,
                                                         const ProfileOutputContext& context) {
  return std::make_unique<PyFaiProfileWriter>(output, context);
}

}  // namespace livedrp::io
