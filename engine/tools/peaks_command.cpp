#include "tools/peaks_command.hpp"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "core/crystfel_geometry.hpp"
#include "core/detector.hpp"
#include "core/error.hpp"
#include "integrate/array_values.hpp"
#include "io/array_file.hpp"
#include "io/hdf5_array.hpp"
#include "peaks/peakfinder8.hpp"
#include "replay/dataset_discovery.hpp"
#include "tools/command_status.hpp"
#include "tools/peaks_stream.hpp"
#ifdef LIVEDRP_HAVE_CUDA
#include "cuda/device.hpp"
#include "cuda/peaks/device_peakfinder8.hpp"
#include "exec/backend.hpp"
#endif

namespace livedrp::tools {

struct PeaksOptions {
  std::string detector, geometry, radius_map, input, mask, params, output, backend = "cpu";
  std::vector<double> beam;
};

namespace {

// `events`: an HDF5 file named without a dataset is a detector file whose events are found as
// replay finds them (NeXus, CXI, a master file's data files in order).
io::Array read_input(const std::string& what, const std::string& text, bool events = false) {
  const io::ArrayLocation location = io::parse_array_location(text);
  if (!std::filesystem::exists(location.file))
    throw InputError(what + " file '" + location.file.string() + "' does not exist");
  if (io::detect_format(location.file) == io::ArrayFormat::Raw)
    throw InputError(what + " '" + text +
                     "' is neither a NumPy .npy file nor HDF5 (FILE.h5:/dataset)");
  if (events && location.dataset.empty() &&
      io::detect_format(location.file) == io::ArrayFormat::Hdf5)
    return replay::read_event_frames(location.file);
  return io::read_array(location);
}

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// How the input's frames are laid out: a slab ((segments x rows) x cols) or segments x rows x
// cols, one frame or a stack. Reported ss follow the input's own coordinates.
struct InputFrames {
  std::uint64_t frames = 0;
  bool segmented = false;  // frames are segments x rows x cols: ss within the segment
  std::vector<std::uint64_t> frame_shape;
};

// `stacked` is empty where only a slab is accepted (a CrystFEL geometry's panels are arbitrary
// rectangles of the slab); `what` names the layout in the error.
InputFrames input_frames(const std::vector<std::uint64_t>& slab,
                         const std::vector<std::uint64_t>& stacked, const std::string& what,
                         const io::Array& input, const std::string& name) {
  const auto& s = input.shape;
  auto ends_in = [&s](const std::vector<std::uint64_t>& tail) {
    return s.size() >= tail.size() && std::equal(tail.begin(), tail.end(), s.end() - tail.size());
  };
  InputFrames f;
  if (!stacked.empty() && (s.size() == 3 || s.size() == 4) && ends_in(stacked)) {
    f.segmented = true;
    f.frame_shape = stacked;
    f.frames = s.size() == 4 ? s[0] : 1;
  } else if ((s.size() == 2 || s.size() == 3) && ends_in(slab)) {
    f.frame_shape = slab;
    f.frames = s.size() == 3 ? s[0] : 1;
  } else {
    throw InputError("input '" + name + "' has shape " + io::shape_text(s) + "; " + what +
                     " needs a slab " + io::shape_text(slab) +
                     (stacked.empty() ? std::string() : " or " + io::shape_text(stacked)) +
                     ", or a stack of them (frames first)");
  }
  if (f.frames == 0) throw InputError("input '" + name + "' holds no frames");
  return f;
}

InputFrames input_frames(const DetectorDescription& d, const io::Array& input,
                         const std::string& name) {
  const std::uint64_t segments = std::uint64_t(d.segments), rows = std::uint64_t(d.rows),
                      cols = std::uint64_t(d.cols);
  return input_frames({segments * rows, cols},
                      segments > 1 ? std::vector<std::uint64_t>{segments, rows, cols}
                                   : std::vector<std::uint64_t>{},
                      "detector '" + d.name + "'", input, name);
}

// The peak lists of every frame, to a CSV or a CXI file.
struct Result {
  std::vector<peaks::PeakList> lists;
};

void write_csv(const std::string& path, const Result& result, bool segmented) {
  std::FILE* out = path == "-" ? stdout : std::fopen(path.c_str(), "w");
  if (!out) throw InputError("cannot write output file '" + path + "'");
  std::fprintf(out, "event,segment,fs,ss,intensity,num_pixels,max_value,sigma,snr\n");
  for (std::size_t e = 0; e < result.lists.size(); ++e)
    for (const peaks::Peak& p : result.lists[e].peaks)
      std::fprintf(out, "%zu,%d,%.6f,%.6f,%.9g,%d,%.9g,%.9g,%.9g\n", e, p.segment, double(p.fs),
                   double(segmented ? p.ss_in_segment : p.ss), double(p.intensity), p.num_pixels,
                   double(p.max_value), double(p.local_sigma), double(p.snr));
  const bool written = std::fflush(out) == 0 && !std::ferror(out);
  if (out != stdout) std::fclose(out);
  if (!written) throw RuntimeFault("writing output file '" + path + "' failed");
}

// Cheetah's CXI peak arrays, as CrystFEL reads them (peak_list_type = cxi): one row per event,
// max_num_peaks columns, positions in the slab's raw coordinates (pixel centres at integers).
void write_cxi(const std::string& path, const Result& result, int max_num_peaks) {
  const std::uint64_t events = result.lists.size(), width = std::uint64_t(max_num_peaks);
  auto table = [&](auto field) {
    io::Array a;
    a.type = io::ElementType::Float32;
    a.shape = {events, width};
    a.bytes.assign(events * width * sizeof(float), 0);
    float* v = a.as<float>();
    for (std::uint64_t e = 0; e < events; ++e)
      for (std::size_t k = 0; k < result.lists[e].peaks.size(); ++k)
        v[e * width + k] = field(result.lists[e].peaks[k]);
    return a;
  };
  std::error_code ignored;
  std::filesystem::remove(path, ignored);  // a new file, not datasets added to an old one
  io::Array counts;
  counts.type = io::ElementType::Int32;
  counts.shape = {events};
  counts.bytes.resize(events * sizeof(std::int32_t));
  for (std::uint64_t e = 0; e < events; ++e)
    counts.as<std::int32_t>()[e] = std::int32_t(result.lists[e].peaks.size());
  const std::string group = "/entry_1/result_1/";
  io::write_hdf5_dataset(path, group + "nPeaks", counts);
  io::write_hdf5_dataset(path, group + "peakXPosRaw",
                         table([](const peaks::Peak& p) { return p.fs; }));
  io::write_hdf5_dataset(path, group + "peakYPosRaw",
                         table([](const peaks::Peak& p) { return p.ss; }));
  io::write_hdf5_dataset(path, group + "peakTotalIntensity",
                         table([](const peaks::Peak& p) { return p.intensity; }));
  io::write_hdf5_dataset(path, group + "peakMaximumValue",
                         table([](const peaks::Peak& p) { return p.max_value; }));
  io::write_hdf5_dataset(path, group + "peakSNR",
                         table([](const peaks::Peak& p) { return p.snr; }));
  io::write_hdf5_dataset(path, group + "peakNPixels",
                         table([](const peaks::Peak& p) { return float(p.num_pixels); }));
}

// What the search needs from the detector: the slab and its ASICs, the radius of each pixel
// and the pixels the detector description itself marks bad; and how a stream names its panels.
struct Layout {
  peaks::SlabLayout slab;
  InputFrames frames;
  std::vector<float> radius;
  std::vector<std::uint8_t> bad;  // empty: none
  std::optional<StreamGeometry> stream;
};

std::string file_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in && !in.eof()) throw InputError("cannot read '" + path + "'");
  return text.str();
}

Layout detector_layout(const PeaksOptions& o, const io::Array& input) {
  const DetectorDescription detector = find_detector(o.detector);
  Layout l;
  l.slab = peaks::slab_layout(detector);
  l.frames = input_frames(detector, input, o.input);
  l.stream.emplace(detector);
  if (o.radius_map.empty()) {
    AssembledPoint beam = assembled_bounds(detector).centre();
    if (!o.beam.empty()) beam = {o.beam[0], o.beam[1]};
    l.radius = peaks::radius_map(detector, beam.x, beam.y);
  }
  return l;
}

// A CrystFEL geometry: the panels are the ASICs (segment = panel index) of one slab; the beam is
// at the lab origin unless --beam moves it; bad regions, no_index panels and pixels of no panel
// are masked.
Layout geometry_layout(const PeaksOptions& o, const io::Array& input) {
  const crystfel::Geometry geometry = crystfel::read_geometry(o.geometry);
  for (const std::string& warning : geometry.warnings)
    std::cerr << "livedrp-engine: warning: " << warning << "\n";
  Layout l;
  l.slab.height = geometry.slab_height;
  l.slab.width = geometry.slab_width;
  l.slab.segment_rows = 0;  // panels are arbitrary rectangles: ss stays in slab coordinates
  l.slab.asics = crystfel::panel_asics(geometry);
  l.frames = input_frames({std::uint64_t(geometry.slab_height), std::uint64_t(geometry.slab_width)},
                          {}, "geometry '" + o.geometry + "'", input, o.input);
  if (o.radius_map.empty())
    l.radius = o.beam.empty() ? crystfel::radius_map(geometry)
                              : crystfel::radius_map(geometry, o.beam[0], o.beam[1]);
  l.bad = crystfel::bad_mask(geometry);
  l.stream.emplace(geometry, file_text(o.geometry));
  return l;
}

int find_all(const PeaksOptions& o) {
  if (!o.geometry.empty() && !o.detector.empty())
    throw InputError(
        "--detector and --geometry are mutually exclusive: give the detector as a built-in "
        "name or JSON file, or as a CrystFEL .geom file");
  if (o.detector.empty() && o.geometry.empty())
    throw InputError(
        "--detector (a built-in name or a JSON file) or --geometry (a CrystFEL .geom file) is "
        "required");
  if (o.backend != "cpu" && o.backend != "cuda")
    throw InputError("--backend must be cpu or cuda, got '" + o.backend + "'");
  const bool cxi = ends_with(o.output, ".cxi") || ends_with(o.output, ".h5");
  const bool stream = ends_with(o.output, ".stream");
  if (!cxi && !stream && !ends_with(o.output, ".csv") && o.output != "-")
    throw InputError(
        "--output must end in .csv, .cxi or .stream (or be - for CSV on stdout), got '" + o.output +
        "'");
  if (!o.geometry.empty() && !std::filesystem::exists(o.geometry))
    throw InputError("--geometry file '" + o.geometry + "' does not exist");

  const peaks::PeakFinderParams params = peaks::load_peak_params(o.params);
  const io::Array input = read_input("input", o.input, true);
  Layout layout = o.geometry.empty() ? detector_layout(o, input) : geometry_layout(o, input);
  const InputFrames& frames = layout.frames;
  const std::uint64_t pixels = layout.slab.pixels();

  std::vector<float> radius = std::move(layout.radius);
  if (!o.radius_map.empty()) {
    const io::Array map = read_input("radius map", o.radius_map);
    if (map.elements() != pixels)
      throw InputError("radius map '" + o.radius_map + "' has " + std::to_string(map.elements()) +
                       " values; one frame has " + std::to_string(pixels) + " pixels");
    radius = integrate::float_values(map);
  }
  std::vector<std::uint8_t> mask = std::move(layout.bad);
  if (!o.mask.empty()) {
    const io::Array m = read_input("mask", o.mask);
    if (m.elements() != pixels)
      throw InputError("mask '" + o.mask + "' has " + std::to_string(m.elements()) +
                       " values; one frame has " + std::to_string(pixels) + " pixels");
    const std::vector<std::uint8_t> given = integrate::mask_values(m);
    if (mask.empty())
      mask = given;
    else  // the geometry's bad pixels stay bad: the union of both masks
      for (std::size_t p = 0; p < mask.size(); ++p) mask[p] = mask[p] != 0 || given[p] != 0;
  }
  peaks::PeakFinder8 finder(std::move(layout.slab), radius, mask, params);

  Result result;
  auto last_report = std::chrono::steady_clock::now();
  auto report = [&](std::uint64_t done) {
    const auto now = std::chrono::steady_clock::now();
    if (frames.frames > 1 &&
        (now - last_report > std::chrono::seconds(1) || done == frames.frames)) {
      std::fprintf(stderr, "livedrp-engine: %llu / %llu frames searched\n",
                   (unsigned long long)done, (unsigned long long)frames.frames);
      last_report = now;
    }
  };
  if (o.backend == "cpu") {
    for (std::uint64_t f = 0; f < frames.frames; ++f) {
      const std::vector<float> frame = integrate::float_values(input, f * pixels, pixels);
      result.lists.push_back(finder.find(frame.data()));
      report(f + 1);
    }
  } else {
#ifdef LIVEDRP_HAVE_CUDA
    if (const auto reason = cuda_unavailable_reason())
      throw InputError("--backend cuda: no usable CUDA device: " + *reason);
    gpu::DevicePeakFinder8 device(finder);
    gpu::Stream stream;
    gpu::DeviceBuffer frame_on_device(pixels * sizeof(float));
    for (std::uint64_t f = 0; f < frames.frames; ++f) {
      const std::vector<float> frame = integrate::float_values(input, f * pixels, pixels);
      gpu::copy_async(frame_on_device.get(), frame.data(), pixels * sizeof(float), stream,
                      "frame to the device");
      device.enqueue(frame_on_device.as<const float>(), stream);
      result.lists.push_back(device.collect(stream));
      report(f + 1);
    }
#else
    throw InputError("--backend cuda: this build has no CUDA backend");
#endif
  }

  if (cxi) {
    write_cxi(o.output, result, params.max_num_peaks);
  } else if (stream) {
    StreamSource source;
    source.image_filename = io::parse_array_location(o.input).file.string();
    source.stack = input.shape.size() > frames.frame_shape.size();
    source.segmented = frames.segmented;
    write_crystfel_stream(o.output, source, result.lists, *layout.stream);
    if (!layout.stream->inverse_d_note().empty())
      std::cerr << "livedrp-engine: note: the stream's (1/d)/nm^-1 column is nan: "
                << layout.stream->inverse_d_note() << "\n";
  } else {
    write_csv(o.output, result, frames.segmented);
  }
  std::size_t total = 0, hits = 0;
  for (const auto& list : result.lists) total += list.peaks.size(), hits += list.hit ? 1 : 0;
  std::cerr << "livedrp-engine: " << frames.frames << (frames.frames == 1 ? " frame" : " frames")
            << ", " << total << " peaks, " << hits << " hits (>= " << params.min_peaks_for_hit
            << " peaks) -> " << o.output << "\n";
  return 0;
}

}  // namespace

PeaksCommand::PeaksCommand(CLI::App& app) : options_(std::make_unique<PeaksOptions>()) {
  PeaksOptions& o = *options_;
  command_ = app.add_subcommand(
      "peaks", "peakfinder8 over a slab or a stack of slabs (CSV, CXI or CrystFEL stream)");
  command_->add_option("--detector", o.detector, "Detector: a built-in name or a JSON file");
  command_->add_option("--geometry", o.geometry,
                       "CrystFEL .geom file: panels of one slab (instead of --detector)");
  command_->add_option("--radius-map", o.radius_map,
                       "Per-pixel radius in pixels (FILE.npy or FILE.h5:/dataset), replacing the "
                       "radius from the detector's placement");
  command_
      ->add_option("--beam", o.beam,
                   "Beam position X Y in assembled pixels (default: the middle of the "
                   "assembled image; with --geometry: lab pixels, default 0 0)")
      ->expected(2);
  command_
      ->add_option("--input", o.input,
                   "Slab or stack of slabs: FILE.npy or FILE.h5[:/dataset] (no dataset: a "
                   "detector file's events, found as replay finds them: /entry/data/data, NeXus, "
                   "CXI, a master file's data files)")
      ->required();
  command_->add_option("--mask", o.mask, "Mask, non-zero = bad (FILE.npy or FILE.h5:/dataset)");
  command_->add_option("--params", o.params, "Peak-finder parameters (JSON)")->required();
  command_->add_option("--backend", o.backend, "cpu or cuda")->capture_default_str();
  command_
      ->add_option("--output", o.output,
                   "OUT.csv, OUT.cxi, OUT.stream (CrystFEL stream: fs/ss with pixel corners at "
                   "integers as CrystFEL writes them; panels named as in --geometry, else "
                   "p<segment>a<asic> with a segment's ASICs counted row by row; 1/d from the "
                   "geometry's clen and photon_energy, else nan), or - (CSV on stdout)")
      ->required();
}

PeaksCommand::~PeaksCommand() = default;

bool PeaksCommand::parsed() const {
  return command_->parsed();
}

int PeaksCommand::run() const {
  return run_reporting_errors([this] { return find_all(*options_); });
}

}  // namespace livedrp::tools
