#include "tools/integrate_command.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/crystfel_geometry.hpp"
#include "core/detector.hpp"
#include "core/error.hpp"
#include "core/thread_pool.hpp"
#include "integrate/array_values.hpp"
#include "integrate/integrator.hpp"
#include "integrate/poni.hpp"
#include "integrate/shipped_geometry.hpp"
#include "io/array_file.hpp"
#include "io/profile_output.hpp"
#include "replay/dataset_discovery.hpp"
#include "tools/command_status.hpp"
#ifdef LIVEDRP_HAVE_CUDA
#include "cuda/device.hpp"
#include "cuda/integrate/device_integrator.hpp"
#include "exec/backend.hpp"
#endif

namespace livedrp::tools {

struct IntegrateOptions {
  std::string poni, input, mask, dark, flat, output, detector, geometry;
  int npt = 0;
  std::string unit = "q_nm^-1", method = "no", error_model = "poisson", backend = "cpu";
  std::vector<double> radial_range, azimuth_range;
  std::optional<double> polarization, dummy, sigma_clip;
  int clip_iterations = 5;
  double delta_dummy = 0.0;
  bool no_solid_angle = false;
};

namespace {

using integrate::IntegrationConfig;
using integrate::Integrator;
using integrate::PixelLayout;

// `events`: an HDF5 file named without a dataset is a detector file whose events are found as
// replay finds them (NeXus, CXI, a master file's data files in order).
io::Array read_input(const std::string& what, const std::string& location_text,
                     bool events = false) {
  const io::ArrayLocation location = io::parse_array_location(location_text);
  if (!std::filesystem::exists(location.file))
    throw InputError(what + " file '" + location.file.string() + "' does not exist");
  if (io::detect_format(location.file) == io::ArrayFormat::Raw)
    throw InputError(what + " '" + location_text +
                     "' is neither a NumPy .npy file nor HDF5 (FILE.h5:/dataset)");
  if (events && location.dataset.empty() &&
      io::detect_format(location.file) == io::ArrayFormat::Hdf5)
    return replay::read_event_frames(location.file);
  return io::read_array(location);
}

IntegrationConfig make_config(const IntegrateOptions& o) {
  IntegrationConfig c;
  const auto unit = integrate::radial_unit_from_name(o.unit);
  if (!unit)
    throw InputError("--unit must be 2th_deg, q_nm^-1, q_A^-1 or r_mm, got '" + o.unit + "'");
  c.unit = *unit;
  c.bins = o.npt;
  if (o.method == "bbox")
    c.splitting = integrate::Splitting::BBox;
  else if (o.method != "no")
    throw InputError("--method must be no or bbox, got '" + o.method + "'");
  // As the pipeline JSON reads them: two finite numbers, the first below the second.
  auto range = [](const std::vector<double>& given, const char* option, const char* what) {
    if (!(std::isfinite(given[0]) && std::isfinite(given[1]) && given[0] < given[1]))
      throw InputError(std::string(option) + ": the " + what +
                       " must be MIN MAX, two finite numbers with MIN < MAX, got " +
                       std::to_string(given[0]) + " " + std::to_string(given[1]));
    return std::pair{given[0], given[1]};
  };
  if (!o.radial_range.empty())
    c.radial_range = range(o.radial_range, "--radial-range", "radial range");
  if (!o.azimuth_range.empty())
    c.azimuth_range = range(o.azimuth_range, "--azimuth-range", "azimuth range");
  c.solid_angle = !o.no_solid_angle;
  c.polarization = o.polarization;
  if (o.error_model == "poisson")
    c.error_model = integrate::ErrorModel::Poisson;
  else if (o.error_model == "azimuthal")
    c.error_model = integrate::ErrorModel::Azimuthal;
  else
    throw InputError("--error-model must be poisson or azimuthal, got '" + o.error_model + "'");
  c.dummy = o.dummy;
  c.delta_dummy = o.delta_dummy;
  return c;
}

// The per-frame shape the input must end with, and the layout it stands for.
struct FrameShape {
  PixelLayout layout;
  std::vector<std::uint64_t> shape;  // trailing dimensions of one frame
};

// A CrystFEL geometry's slab, one frame or a stack (frames first); its panels place the pixels.
FrameShape geometry_frame_shape(const IntegrateOptions& o, const io::Array& input) {
  const crystfel::Geometry geometry = crystfel::read_geometry(o.geometry);
  for (const std::string& warning : geometry.warnings)
    std::cerr << "livedrp-engine: warning: " << warning << "\n";
  FrameShape f;
  f.layout = integrate::layout_from_geometry(geometry);
  f.shape = {std::uint64_t(geometry.slab_height), std::uint64_t(geometry.slab_width)};
  const auto& s = input.shape;
  if ((s.size() != 2 && s.size() != 3) || !std::equal(f.shape.begin(), f.shape.end(), s.end() - 2))
    throw InputError("input '" + o.input + "' has shape " + io::shape_text(s) + "; geometry '" +
                     o.geometry + "' needs its slab " + io::shape_text(f.shape) +
                     " (slab_height x slab_width) or a stack of them (frames first)");
  // The flat-detector model places every panel in one plane at the PONI's distance; say so where
  // the geometry moves a panel along the beam.
  for (const crystfel::GeomPanel& p : geometry.panels)
    if (p.coffset != 0.0 || p.fs.z != 0.0 || p.ss.z != 0.0)
      std::cerr << "livedrp-engine: warning: " << o.geometry << ":" << p.line << ": panel '"
                << p.name
                << "' has coffset or z components, which integration ignores (the PONI places "
                   "one flat detector)\n";
  return f;
}

FrameShape frame_shape(const IntegrateOptions& o, const io::Array& input) {
  if (!o.geometry.empty()) return geometry_frame_shape(o, input);
  FrameShape f;
  if (!o.detector.empty()) {
    f.layout = integrate::layout_from_detector(find_detector(o.detector));
    f.shape = {std::uint64_t(f.layout.segments), std::uint64_t(f.layout.rows),
               std::uint64_t(f.layout.cols)};
    const auto& s = input.shape;
    if ((s.size() != 3 && s.size() != 4) ||
        !std::equal(f.shape.begin(), f.shape.end(), s.end() - 3))
      throw InputError("input '" + o.input + "' has shape " + io::shape_text(s) + "; detector " +
                       o.detector + " needs " + io::shape_text(f.shape) + " or N x " +
                       io::shape_text(f.shape));
    return f;
  }
  const auto& s = input.shape;
  if (s.size() != 2 && s.size() != 3)
    throw InputError("input '" + o.input + "' has shape " + io::shape_text(s) +
                     "; expected one image (rows x columns) or a stack (frames x rows x columns)");
  const std::uint64_t rows = s[s.size() - 2], cols = s[s.size() - 1];
  if (rows < 1 || cols < 1 || rows > 1u << 20 || cols > 1u << 20)
    throw InputError("input '" + o.input + "' has an unusable image shape " + io::shape_text(s));
  f.layout = integrate::plain_layout(int(rows), int(cols));
  f.shape = {rows, cols};
  return f;
}

// A mask, dark or flat: one frame's shape exactly.
io::Array read_frame_sized(const std::string& what, const std::string& location,
                           const FrameShape& frame) {
  io::Array a = read_input(what, location);
  if (a.shape != frame.shape)
    throw InputError(what + " '" + location + "' has shape " + io::shape_text(a.shape) +
                     ", one frame of the input is " + io::shape_text(frame.shape));
  return a;
}

// What produced the profiles, echoed into the pyFAI header and the NeXus file: the command's
// options and the geometry as read (a builtin: PONI included).
nlohmann::json configuration(const IntegrateOptions& o, const integrate::PoniGeometry& g) {
  nlohmann::json c = {{"command", "integrate"},
                      {"poni", o.poni},
                      {"input", o.input},
                      {"npt", o.npt},
                      {"unit", o.unit},
                      {"method", o.method},
                      {"error_model", o.error_model},
                      {"solid_angle", !o.no_solid_angle},
                      {"backend", o.backend}};
  const std::pair<const char*, const std::string*> files[] = {{"mask", &o.mask},
                                                              {"dark", &o.dark},
                                                              {"flat", &o.flat},
                                                              {"detector", &o.detector},
                                                              {"geometry", &o.geometry}};
  for (const auto& [key, value] : files)
    if (!value->empty()) c[key] = *value;
  if (!o.radial_range.empty()) c["radial_range"] = o.radial_range;
  if (!o.azimuth_range.empty()) c["azimuth_range"] = o.azimuth_range;
  if (o.polarization) c["polarization"] = *o.polarization;
  if (o.dummy) {
    c["dummy"] = *o.dummy;
    c["delta_dummy"] = o.delta_dummy;
  }
  if (o.sigma_clip) {
    c["sigma_clip"] = *o.sigma_clip;
    c["clip_iterations"] = o.clip_iterations;
  }
  nlohmann::json geometry = {{"distance", g.distance}, {"poni1", g.poni1},  {"poni2", g.poni2},
                             {"rot1", g.rot1},         {"rot2", g.rot2},    {"rot3", g.rot3},
                             {"pixel1", g.pixel1},     {"pixel2", g.pixel2}};
  if (g.wavelength) geometry["wavelength"] = *g.wavelength;
  if (!g.detector.empty()) geometry["detector"] = g.detector;
  if (g.max_shape) geometry["max_shape"] = *g.max_shape;
  // The orientation changes where every pixel sits (integrate/orientation.hpp): the output says
  // which one was used, the default included.
  geometry["orientation"] = g.orientation;
  c["poni_geometry"] = geometry;
  return nlohmann::json{{"livedrp_version", LIVEDRP_VERSION}, {"integrate", c}};
}

// What pyFAI's header says of the mask (ProfileOutputContext::mask_applied).
std::string mask_label(const IntegrateOptions& o, const integrate::PoniGeometry& poni,
                       const FrameShape& frame) {
  if (!o.mask.empty()) return "user provided";
  const auto any_masked = [](const std::vector<std::uint8_t>& mask) {
    return std::any_of(mask.begin(), mask.end(), [](std::uint8_t v) { return v != 0; });
  };
  if (any_masked(frame.layout.bad)) return "from detector";
  // A plain image under a PONI that names one of pyFAI's detectors: its module gaps, which the
  // Integrator masks as pyFAI does.
  if (o.detector.empty() && o.geometry.empty() &&
      any_masked(integrate::poni_detector_mask(poni, frame.layout.rows, frame.layout.cols)))
    return "from detector";
  return "False";
}

io::ProfileOutputContext output_context(const IntegrateOptions& o,
                                        const integrate::PoniGeometry& poni,
                                        const FrameShape& frame, const IntegrationConfig& config,
                                        std::uint64_t frames) {
  io::ProfileOutputContext context;
  context.frames = frames;
  context.bins = std::size_t(config.bins);
  context.unit = config.unit;
  context.poni = poni;
  context.mask_applied = mask_label(o, poni, frame);
  context.dark_applied = !o.dark.empty();
  context.flat_applied = !o.flat.empty();
  context.polarization = o.polarization;
  context.program = std::string("livedrp-engine integrate ") + LIVEDRP_VERSION;
  context.configuration_json = configuration(o, poni).dump();
  return context;
}

int integrate_all(const IntegrateOptions& o) {
  // The output's format follows its extension; an unknown one is refused before any work.
  const io::ProfileFormat format = io::profile_format_for(o.output);
  if (!o.geometry.empty() && !o.detector.empty())
    throw InputError(
        "--detector and --geometry are mutually exclusive: give the detector as a built-in "
        "name or JSON file, or as a CrystFEL .geom file");
  if (!o.geometry.empty() && !std::filesystem::exists(o.geometry))
    throw InputError("--geometry file '" + o.geometry + "' does not exist");
  if (o.backend != "cpu" && o.backend != "cuda")
    throw InputError("--backend must be cpu or cuda, got '" + o.backend + "'");
  const IntegrationConfig config = make_config(o);
  integrate::validate(config);
  if (o.sigma_clip && !(std::isfinite(*o.sigma_clip) && *o.sigma_clip >= 0.0))
    throw InputError("--sigma-clip cutoff must be a finite number >= 0, got " +
                     std::to_string(*o.sigma_clip));
  if (o.clip_iterations < 0)
    throw InputError("--clip-iterations (max_iter) must be >= 0, got " +
                     std::to_string(o.clip_iterations));

  const integrate::PoniGeometry poni = integrate::load_poni(o.poni);
  const io::Array input = read_input("input", o.input, true);
  const FrameShape frame = frame_shape(o, input);
  if (o.detector.empty() && poni.max_shape &&
      ((*poni.max_shape)[0] != frame.layout.rows || (*poni.max_shape)[1] != frame.layout.cols))
    std::cerr << "livedrp-engine: warning: PONI file '" << o.poni << "' describes a "
              << (*poni.max_shape)[0] << " x " << (*poni.max_shape)[1]
              << " detector, the images are " << frame.layout.rows << " x " << frame.layout.cols
              << "\n";

  Integrator integrator(poni, frame.layout, config);
  ThreadPool pool;
  integrator.set_thread_pool(&pool);
  if (!o.mask.empty())
    integrator.set_mask(integrate::mask_values(read_frame_sized("mask", o.mask, frame)));
  if (!o.dark.empty())
    integrator.set_dark(integrate::float_values(read_frame_sized("dark", o.dark, frame)));
  if (!o.flat.empty())
    integrator.set_flat(integrate::float_values(read_frame_sized("flat", o.flat, frame)));

  const std::uint64_t pixels = integrator.pixels();
  const std::uint64_t frames = input.elements() / pixels;
  // One frame's profile on the chosen backend; both give the same numbers
  // (tests/test_gpu_integrate).
  std::function<integrate::Profile(const std::vector<float>&)> profile_of;
  if (o.backend == "cpu") {
    profile_of = [&](const std::vector<float>& values) {
      return o.sigma_clip ? integrator.sigma_clip(values, {o.clip_iterations, *o.sigma_clip})
                          : integrator.integrate(values);
    };
  } else {
#ifdef LIVEDRP_HAVE_CUDA
    if (const auto reason = cuda_unavailable_reason())
      throw InputError("--backend cuda: no usable CUDA device: " + *reason);
    auto device = std::make_shared<gpu::DeviceIntegrator>(integrator);
    auto stream = std::make_shared<gpu::Stream>();
    auto frame_on_device = std::make_shared<gpu::DeviceBuffer>(pixels * sizeof(float));
    profile_of = [&o, device, stream, frame_on_device, pixels](const std::vector<float>& values) {
      gpu::copy_async(frame_on_device->get(), values.data(), pixels * sizeof(float), *stream,
                      "frame to the device");
      if (o.sigma_clip)
        device->enqueue_sigma_clip(frame_on_device->as<const float>(),
                                   {o.clip_iterations, *o.sigma_clip}, *stream);
      else
        device->enqueue(frame_on_device->as<const float>(), *stream);
      return device->collect(*stream);
    };
#else
    throw InputError("--backend cuda: this build has no CUDA backend; use --backend cpu");
#endif
  }
  const std::unique_ptr<io::ProfileWriter> writer =
      io::open_profile_writer(format, o.output, output_context(o, poni, frame, config, frames));
  auto last_report = std::chrono::steady_clock::now();
  // Time spent in the integration itself (the backend's call per frame; not reading the input or
  // writing the output), and in the first frame apart: a backend may finish its set-up there.
  std::chrono::duration<double> integrating{0}, first_frame{0};
  for (std::uint64_t f = 0; f < frames; ++f) {
    const std::vector<float> values = integrate::float_values(input, f * pixels, pixels);
    const auto begin = std::chrono::steady_clock::now();
    const integrate::Profile p = profile_of(values);
    (f == 0 ? first_frame : integrating) += std::chrono::steady_clock::now() - begin;
    writer->write(f, p);
    const auto now = std::chrono::steady_clock::now();
    if (frames > 1 && (now - last_report > std::chrono::seconds(1) || f + 1 == frames)) {
      std::fprintf(stderr, "livedrp-engine: integrated %llu / %llu frames\n",
                   (unsigned long long)(f + 1), (unsigned long long)frames);
      last_report = now;
    }
  }
  writer->close();
  std::cerr << "livedrp-engine: " << frames << (frames == 1 ? " frame" : " frames") << ", "
            << config.bins << " bins in " << o.unit << " -> " << writer->destination() << "\n";
  std::cerr << "livedrp-engine: integration on " << o.backend << ": first frame "
            << first_frame.count() * 1e3 << " ms";
  if (frames > 1)
    std::cerr << ", then " << double(frames - 1) / integrating.count() << " frames/s over "
              << frames - 1 << " frames";
  std::cerr << " ("
            << (o.backend == "cpu" ? std::to_string(pool.size()) + " threads" : "one stream")
            << ")\n";
  return 0;
}

}  // namespace

IntegrateCommand::IntegrateCommand(CLI::App& app) : options_(std::make_unique<IntegrateOptions>()) {
  IntegrateOptions& o = *options_;
  command_ = app.add_subcommand(
      "integrate",
      "Azimuthal integration of an image or a stack to radial profiles (CSV, pyFAI text or "
      "NeXus, by the output's extension)");
  command_
      ->add_option("--poni", o.poni,
                   "Geometry: a pyFAI PONI file, or builtin:DETECTOR for the geometry shipped for "
                   "the simulated detector")
      ->required();
  command_
      ->add_option("--input", o.input,
                   "Image (rows x columns) or stack (frames x rows x columns): FILE.npy or "
                   "FILE.h5[:/dataset] (no dataset: a detector file's events, found as replay "
                   "finds them: /entry/data/data, NeXus, CXI, a master file's data files)")
      ->required();
  command_
      ->add_option("--output", o.output,
                   "Output, its format by the extension: .csv (frame,radial,intensity,sigma; - for "
                   "stdout), .xy/.dat (pyFAI's text format; a stack gives FILE_0000.xy, "
                   "FILE_0001.xy, ...), .h5/.nxs/.hdf5 (NeXus NXdata, intensity [frame, bin])")
      ->required();
  command_->add_option("--npt", o.npt, "Number of radial bins")->required();
  command_->add_option("--unit", o.unit, "2th_deg | q_nm^-1 | q_A^-1 | r_mm")
      ->capture_default_str();
  command_
      ->add_option("--radial-range", o.radial_range,
                   "MIN MAX in the unit (default: all pixels, as pyFAI)")
      ->expected(2);
  command_->add_option("--azimuth-range", o.azimuth_range, "MIN MAX chi in degrees")->expected(2);
  command_->add_option("--mask", o.mask, "Mask (non-zero masks a pixel), one frame's shape");
  command_->add_option("--dark", o.dark, "Dark image to subtract, one frame's shape");
  command_->add_option("--flat", o.flat, "Flat field to divide by, one frame's shape");
  command_->add_option("--method", o.method, "Pixel splitting: no | bbox")->capture_default_str();
  command_->add_option("--polarization", o.polarization,
                       "Polarisation factor in [-1, 1] (pyFAI's; default: no correction)");
  command_->add_flag("--no-solid-angle", o.no_solid_angle, "Skip the solid-angle correction");
  command_->add_option("--error-model", o.error_model, "poisson | azimuthal")
      ->capture_default_str();
  command_->add_option("--dummy", o.dummy,
                       "Pixels of this value are invalid (and empty bins get "
                       "it)");
  command_->add_option("--delta-dummy", o.delta_dummy, "Tolerance for --dummy");
  command_->add_option("--sigma-clip", o.sigma_clip,
                       "Radial statistics with sigma clipping at this cutoff (pyFAI's "
                       "sigma_clip_ng thres): intensity is then the clipped mean");
  command_
      ->add_option("--clip-iterations", o.clip_iterations,
                   "Sigma-clipping iterations (pyFAI's max_iter)")
      ->capture_default_str();
  command_->add_option("--detector", o.detector,
                       "Segmented input: a built-in detector name or description .json; the "
                       "input is then (frames x) segments x rows x columns");
  command_->add_option("--geometry", o.geometry,
                       "Slab input placed by a CrystFEL .geom file (instead of --detector): the "
                       "input is then (frames x) slab_height x slab_width; pixels of no panel, "
                       "bad regions and no_index panels are masked");
  command_->add_option("--backend", o.backend, "cpu | cuda")->capture_default_str();
}

IntegrateCommand::~IntegrateCommand() = default;

bool IntegrateCommand::parsed() const {
  return command_->parsed();
}

int IntegrateCommand::run() const {
  return run_reporting_errors([this] { return integrate_all(*options_); });
}

}  // namespace livedrp::tools
