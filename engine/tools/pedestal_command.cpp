#include "tools/pedestal_command.hpp"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "calib/constants.hpp"
#include "calib/pedestal.hpp"
#include "core/detector.hpp"
#include "core/error.hpp"
#include "core/thread_pool.hpp"
#include "replay/dataset_discovery.hpp"
#include "replay/hdf5_event_file.hpp"
#include "replay/replay_source.hpp"
#include "sim/simulator.hpp"
#include "stream/stream_source.hpp"
#include "tools/command_status.hpp"

namespace livedrp::tools {

struct PedestalCommandOptions {
  std::string detector, output, gains, gain_config;
  std::vector<std::string> inputs;
  livedrp::PedestalOptions thresholds;
  std::uint64_t live_frames = 1000;  // frames of each dark run taken from a live stream
  double live_timeout_s = 30;        // a live dark run fails when no frame comes this long
};

struct SimulateDarkOptions {
  std::string detector, output, truth, gain_stage;
  // ePix10ka gain configurations dealt to the ASICs in turn; empty: the simulator's default.
  std::vector<std::string> gain_configs;
  std::uint64_t frames = 100, first_event = 0, seed = SimulatorConfig{}.seed;
  double noise_adu = SimulatorConfig{}.noise_adu;
  double common_mode_sigma_adu = SimulatorConfig{}.common_mode_sigma_adu;
};

namespace {

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return char(std::tolower(c)); });
  return text;
}

// One --input, one dark run: a file, a directory (its .h5 files in name order, as the recorder
// rolls a run over) or a comma-separated list, and the dataset (when not named, found in each file
// as replay finds it, a master file's linked data parts included: replay/dataset_discovery.hpp).
// Parsed as a replay source is.
struct DarkInput {
  std::string name;         // FILE(S):/dataset, or the live source
  std::string live_source;  // "sls:..." or "dectris:...": frames taken from the stream
  struct Part {
    std::filesystem::path file;
    std::string dataset;
  };
  std::vector<Part> parts;  // in frame order
};
DarkInput parse_input(const std::string& text) {
  if (stream::is_stream_source(text)) return DarkInput{text, text, {}};
  const replay::ReplaySpec spec = replay::parse_replay_source("replay:" + text);
  DarkInput input;
  for (const std::filesystem::path& file : spec.files) {
    const std::vector<std::string> datasets = spec.dataset.empty()
                                                  ? replay::event_dataset_parts(file)
                                                  : std::vector<std::string>{spec.dataset};
    for (const std::string& dataset : datasets) input.parts.push_back({file, dataset});
  }
  input.name = text.substr(0, text.find(":/")) + ":" + input.parts.front().dataset;
  if (input.parts.size() > spec.files.size())
    input.name += " (+" + std::to_string(input.parts.size() - spec.files.size()) + " linked parts)";
  return input;
}

// The ePix10ka pixels' gain configuration: --gain-config for every pixel, else the gain file's
// /config; nothing for other detectors.
std::vector<std::uint8_t> pixel_configuration(const PedestalCommandOptions& o,
                                              const DetectorDescription& detector,
                                              const GainMap* gains) {
  if (detector.encoding != RawEncoding::Epix10ka) {
    if (!o.gain_config.empty())
      throw InputError("--gain-config is for ePix10ka detectors; " + detector.name +
                       " has no per-pixel gain configuration");
    return {};
  }
  if (!o.gain_config.empty()) {
    const auto value = epix10ka_config_value(o.gain_config);
    if (!value)
      throw InputError("--gain-config '" + o.gain_config +
                       "' is not an ePix10ka gain configuration (FH, FM, FL, AHL, AML)");
    return std::vector<std::uint8_t>(detector.pixels(), *value);
  }
  if (gains && !gains->config.empty()) return gains->config;
  throw InputError("detector " + detector.name +
                   ": the pixels' gain configuration is needed to tell their modes: give "
                   "--gains FILE with a /config dataset, or --gain-config FH|FM|FL|AHL|AML");
}

std::string nominal_gains_text(const DetectorDescription& detector) {
  std::ostringstream text;
  text << "nominal: 1 / nominal_adu_per_kev of the detector description (";
  for (std::size_t m = 0; m < detector.gain_modes.size(); ++m)
    text << (m ? ", " : "") << detector.gain_modes[m].name << " "
         << 1.0 / detector.gain_modes[m].nominal_adu_per_kev << " keV/ADU";
  text << ")";
  return text.str();
}

// One dark run from a live detector stream: the next `live_frames` frames it assembles. The
// detector is the command's; frames the stream could not assemble or the accumulator could not
// take in time are counted by the stream and reported with the run.
nlohmann::json add_live_run(const DarkInput& input, const PedestalCommandOptions& o,
                            PedestalAccumulator& accumulator) {
  using Clock = std::chrono::steady_clock;
  stream::StreamOptions options;
  options.detector = o.detector;
  const std::unique_ptr<stream::StreamSource> source =
      stream::open_stream_source(input.live_source, options);
  source->start();
  std::fprintf(stderr, "pedestal: dark run %s: taking %llu frames (%s)\n", input.name.c_str(),
               (unsigned long long)o.live_frames, source->describe().c_str());
  std::uint64_t taken = 0;
  auto last_frame = Clock::now();
  const auto timeout = std::chrono::duration<double>(o.live_timeout_s);
  while (taken < o.live_frames) {
    const std::optional<stream::StreamEvent> event = source->next(std::chrono::milliseconds(100));
    if (!event) {
      if (Clock::now() - last_frame > timeout) {
        const stream::StreamCounts counts = source->counts();
        throw InputError(
            "dark run " + input.name + ": no frame for " + std::to_string(o.live_timeout_s) +
            " s after " + std::to_string(taken) + " of " + std::to_string(o.live_frames) + " (" +
            std::to_string(counts.messages) + " messages, " +
            std::to_string(counts.rejected_total()) + " refused" +
            (counts.last_problem.empty() ? "" : ", last: " + counts.last_problem) + ")");
      }
      continue;
    }
    accumulator.add_frame(event->data);
    ++taken;
    last_frame = Clock::now();
  }
  source->stop();
  const stream::StreamCounts counts = source->counts();
  return {{"messages", counts.messages},
          {"rejected", counts.rejected},
          {"dropped", counts.dropped},
          {"last_problem", counts.last_problem}};
}

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  auto middle = values.begin() + std::ptrdiff_t(values.size() / 2);
  std::nth_element(values.begin(), middle, values.end());
  return *middle;
}

int compute(const PedestalCommandOptions& o, const std::string& command_line) {
  const DetectorDescription detector = find_detector(o.detector);
  require_pedestal_detector(detector);
  if (!(o.thresholds.noisy_sigmas > 0) || !(o.thresholds.pedestal_sigmas > 0))
    throw InputError("--noisy-sigmas and --pedestal-sigmas must be positive");
  if (!(o.thresholds.stuck_fraction >= 0 && o.thresholds.stuck_fraction < 1))
    throw InputError("--stuck-fraction must be in [0, 1), got " +
                     std::to_string(o.thresholds.stuck_fraction));

  // Everything is checked before the first frame is read: the gains, then every input.
  std::optional<GainMap> gains;
  if (!o.gains.empty()) gains = load_gain_map_hdf5(o.gains, detector);
  std::vector<std::uint8_t> config = pixel_configuration(o, detector, gains ? &*gains : nullptr);
  std::vector<DarkInput> inputs;
  for (const std::string& text : o.inputs) {
    DarkInput input = parse_input(text);
    if (!input.live_source.empty()) {
      if (o.live_frames == 0) throw InputError("--live-frames must be at least 1");
      if (!(o.live_timeout_s > 0))
        throw InputError("--live-timeout must be > 0 seconds, got " +
                         std::to_string(o.live_timeout_s));
      inputs.push_back(std::move(input));
      continue;
    }
    // Names the file and the dataset for a missing file, a non-HDF5 file, a missing dataset, a
    // wrong element type or shape, or a recording of another detector.
    std::uint64_t frames = 0;
    for (const DarkInput::Part& part : input.parts) {
      const replay::EventFileInfo info = replay::Hdf5EventReader::inspect(part.file, part.dataset);
      (void)replay::detector_for_file(info, o.detector);
      frames += replay::Hdf5EventReader(part.file, part.dataset, detector).events();
    }
    if (frames == 0) throw InputError("input " + input.name + " holds no frames");
    inputs.push_back(std::move(input));
  }

  ThreadPool pool(std::max(1u, std::thread::hardware_concurrency()));
  PedestalAccumulator accumulator(detector, config, &pool);
  std::vector<std::uint8_t> frame(detector.raw_event_bytes());
  nlohmann::json inputs_json = nlohmann::json::array();
  std::map<std::string, nlohmann::json> live_counts;  // by run name
  for (const DarkInput& input : inputs) {
    accumulator.begin_run(input.name);
    if (!input.live_source.empty()) live_counts[input.name] = add_live_run(input, o, accumulator);
    for (const DarkInput::Part& part : input.parts) {
      replay::Hdf5EventReader reader(part.file, part.dataset, detector);
      for (std::uint64_t e = 0; e < reader.events(); ++e) {
        std::uint64_t pulse_id = 0;
        std::int64_t timestamp = 0;
        reader.read(e, frame.data(), pulse_id, timestamp);
        accumulator.add_frame(frame.data());
      }
    }
    accumulator.end_run();
  }
  const livedrp::PedestalResult result = accumulator.finish(o.thresholds);

  std::vector<float> gain;
  std::string gain_source;
  if (gains) {
    gain = gains->gain;
    gain_source = "copied from " + o.gains;
  } else {
    for (const GainMode& mode : detector.gain_modes)
      gain.insert(gain.end(), detector.pixels(), float(1.0 / mode.nominal_adu_per_kev));
    gain_source = nominal_gains_text(detector);
  }
  for (const DarkRunSummary& run : result.runs) {
    inputs_json.push_back({{"input", run.name},
                           {"frames", run.frames},
                           {"stage", run.stage},
                           {"stuck_pixels", run.stuck_pixels},
                           {"invalid_gain_readings", run.invalid_gain_readings}});
    if (const auto live = live_counts.find(run.name); live != live_counts.end())
      inputs_json.back()["stream"] = live->second;
  }
  const nlohmann::json thresholds = {{"noisy_sigmas", o.thresholds.noisy_sigmas},
                                     {"pedestal_sigmas", o.thresholds.pedestal_sigmas},
                                     {"stuck_fraction", o.thresholds.stuck_fraction}};
  std::string reasons;
  for (std::size_t bit = 0; bit < bad_pixel_reason_names().size(); ++bit)
    reasons += (bit ? ", " : "") + std::to_string(1u << bit) + " " + bad_pixel_reason_names()[bit];
  const std::map<std::string, std::string> attributes = {
      {"created_by", "livedrp-engine pedestal"},
      {"command_line", command_line},
      {"inputs", inputs_json.dump()},
      {"gain_source", gain_source},
      {"thresholds", thresholds.dump()},
      {"bad_pixel_reasons", reasons},
  };
  const CalibrationConstants constants = pedestal_constants(detector, result, gain);
  save_pedestal_hdf5(o.output, detector, constants, result, attributes);

  std::printf("pedestal: detector %s, %zu dark run%s\n", detector.name.c_str(), result.runs.size(),
              result.runs.size() == 1 ? "" : "s");
  for (const DarkRunSummary& run : result.runs)
    std::printf("  %s: %llu frames, stage %s, %zu stuck pixels, %llu invalid gain readings\n",
                run.name.c_str(), (unsigned long long)run.frames,
                run.stage.empty() ? "-" : run.stage.c_str(), run.stuck_pixels,
                (unsigned long long)run.invalid_gain_readings);
  for (int m = 0; m < result.modes; ++m) {
    std::vector<double> frames, noise, pedestal;
    for (std::size_t p = 0; p < result.pixels; ++p) {
      const std::size_t i = std::size_t(m) * result.pixels + p;
      if (!result.needed[i]) continue;
      frames.push_back(result.frames[i]);
      if (result.bad_reason[p] == 0) {
        noise.push_back(result.noise[i]);
        pedestal.push_back(result.pedestal[i]);
      }
    }
    if (frames.empty()) continue;
    std::printf(
        "  mode %s: %zu pixels, median %.0f frames, median pedestal %.1f ADU, median "
        "noise %.2f ADU (good pixels)\n",
        detector.gain_modes[std::size_t(m)].name.c_str(), frames.size(), median(frames),
        median(pedestal), median(noise));
  }
  std::printf("bad pixels: %zu of %zu masked", result.masked(), result.pixels);
  for (std::size_t bit = 0; bit < bad_pixel_reason_names().size(); ++bit)
    std::printf("%s%s %zu", bit ? ", " : " (", bad_pixel_reason_names()[bit].c_str(),
                result.count(BadPixelReason(1u << bit)));
  std::printf(")\ngains: %s\nwrote %s\n", gain_source.c_str(), o.output.c_str());
  return 0;
}

int simulate_dark(const SimulateDarkOptions& o) {
  const DetectorDescription detector = find_detector(o.detector);
  require_pedestal_detector(detector);  // dark runs are of detectors with a pedestal
  if (o.frames == 0) throw InputError("--frames must be at least 1");
  SimulatorConfig config;
  config.seed = o.seed;
  config.hit_fraction = 0;
  config.background_photons = 0;
  config.ring_peak_photons = 0;
  config.bright_spots_per_event = 0;
  config.noise_adu = o.noise_adu;
  config.common_mode_sigma_adu = o.common_mode_sigma_adu;
  if (!o.gain_configs.empty()) {
    if (detector.encoding != RawEncoding::Epix10ka)
      throw InputError("--gain-configs is for ePix10ka detectors; " + detector.name +
                       " has no per-pixel gain configuration");
    config.epix10ka_asic_configs.clear();
    for (const std::string& name : o.gain_configs) {
      const auto value = epix10ka_config_value(name);
      if (!value)
        throw InputError("--gain-configs: '" + name +
                         "' is not an ePix10ka gain configuration (FH, FM, FL, AHL, AML)");
      config.epix10ka_asic_configs.push_back(*value);
    }
  }
  std::vector<std::string> config_names;
  for (const std::uint8_t value : config.epix10ka_asic_configs)
    config_names.push_back(epix10ka_config_names()[value]);
  if (!o.gain_stage.empty()) {
    config.forced_gain_stage = -2;  // not understood
    for (std::size_t m = 0; m < detector.gain_modes.size(); ++m)
      if (detector.encoding == RawEncoding::Jungfrau &&
          lower(detector.gain_modes[m].name) == lower(o.gain_stage))
        config.forced_gain_stage = int(m);
    if (detector.encoding == RawEncoding::Epix10ka && lower(o.gain_stage) == "low")
      config.forced_gain_stage = 1;
    if (detector.encoding == RawEncoding::Epix10ka && lower(o.gain_stage) == "high")
      config.forced_gain_stage = 0;
    if (config.forced_gain_stage == -2)
      throw InputError("--gain-stage '" + o.gain_stage + "' is not a gain stage of " +
                       detector.name +
                       (detector.encoding == RawEncoding::Jungfrau
                            ? " (G0, G1, G2)"
                            : " (high: no pixel switches; low: auto pixels forced to low gain)"));
  }
  ThreadPool pool(std::max(1u, std::thread::hardware_concurrency()));
  const DetectorSimulator simulator(detector, config, &pool);
  // As a recording's pipeline_config: a replay of the file without --constants calibrates with
  // the simulator's constants of this seed.
  const nlohmann::json settings = {{"simulator",
                                    {{"seed", config.seed},
                                     {"dark", true},
                                     {"first_event", o.first_event},
                                     {"frames", o.frames},
                                     {"forced_gain_stage", config.forced_gain_stage},
                                     {"noise_adu", config.noise_adu},
                                     {"common_mode_sigma_adu", config.common_mode_sigma_adu},
                                     {"gain_configs", config_names}}}};
  replay::Hdf5EventWriter writer(o.output, detector, replay::WriteLayout{}, settings.dump());
  std::vector<std::uint8_t> raw(detector.raw_event_bytes());
  for (std::uint64_t i = 0; i < o.frames; ++i) {
    const std::uint64_t index = o.first_event + i;
    simulator.generate(index, raw.data(), nullptr, &pool);
    writer.append(simulator.header_for(index), raw.data());
  }
  writer.close();
  if (!o.truth.empty()) save_constants_hdf5(o.truth, detector, simulator.constants());
  std::printf("simulate-dark: %llu dark frames of %s (gain stage %s) -> %s%s%s\n",
              (unsigned long long)o.frames, detector.name.c_str(),
              o.gain_stage.empty() ? "as configured" : o.gain_stage.c_str(), o.output.c_str(),
              o.truth.empty() ? "" : ", true constants -> ", o.truth.c_str());
  return 0;
}

}  // namespace

PedestalCommand::PedestalCommand(CLI::App& app)
    : options_(std::make_unique<PedestalCommandOptions>()) {
  PedestalCommandOptions& o = *options_;
  command_ = app.add_subcommand(
      "pedestal", "Calibration constants (pedestal, noise, bad-pixel mask) from dark runs");
  command_->add_option("--detector", o.detector, "Detector: a built-in name or a JSON file")
      ->required();
  command_
      ->add_option("--input", o.inputs,
                   "Dark run: FILE.h5[:/dataset] (dataset found when not named: "
                   "/entry/data/data, NeXus, CXI, a master file's data files), a directory "
                   "of .h5 files (a recorded run) or a comma-separated list; frames of "
                   "[N, segments, rows, cols], [N, segments*rows, cols] or [N, pixels] uint16; "
                   "repeat for several runs (Jungfrau: the runs forced to G0, G1, G2); or a live "
                   "stream, sls:tcp://HOST:PORT[,...] or dectris:tcp://HOST:PORT, whose next "
                   "--live-frames frames are the run")
      ->required();
  command_
      ->add_option("--live-frames", o.live_frames,
                   "Frames of each dark run taken from a live stream --input")
      ->capture_default_str();
  command_
      ->add_option("--live-timeout", o.live_timeout_s,
                   "Seconds without a frame after which a live dark run fails")
      ->capture_default_str();
  command_->add_option("--output", o.output, "Constants file to write (HDF5, docs/formats.md)")
      ->required();
  command_->add_option("--gains", o.gains,
                       "Constants file or gain map (/gain, and /config for the ePix10ka) whose "
                       "gains are copied; default: the detector description's nominal gains");
  command_->add_option("--gain-config", o.gain_config,
                       "ePix10ka: every pixel's gain configuration (FH, FM, FL, AHL, AML), "
                       "instead of the /config of --gains");
  command_
      ->add_option("--noisy-sigmas", o.thresholds.noisy_sigmas,
                   "Noisy: noise above the segment's median + this many robust sigmas (MAD)")
      ->capture_default_str();
  command_
      ->add_option("--pedestal-sigmas", o.thresholds.pedestal_sigmas,
                   "Bad pedestal: further than this many robust sigmas from the segment's median")
      ->capture_default_str();
  command_
      ->add_option("--stuck-fraction", o.thresholds.stuck_fraction,
                   "Stuck gain: more than this fraction of a run's frames not in the run's stage")
      ->capture_default_str();
}

PedestalCommand::~PedestalCommand() = default;

bool PedestalCommand::parsed() const {
  return command_->parsed();
}

int PedestalCommand::run(const std::string& command_line) const {
  return run_reporting_errors([&] { return compute(*options_, command_line); });
}

SimulateDarkCommand::SimulateDarkCommand(CLI::App& app)
    : options_(std::make_unique<SimulateDarkOptions>()) {
  SimulateDarkOptions& o = *options_;
  command_ = app.add_subcommand(
      "simulate-dark", "Dark run of the simulated detector (no photons) as recorded HDF5 events");
  command_->add_option("--detector", o.detector, "Detector: a built-in name or a JSON file")
      ->required();
  command_->add_option("--output", o.output, "HDF5 file of the frames (/entry/data/data)")
      ->required();
  command_->add_option("--frames", o.frames, "Number of frames")->capture_default_str();
  command_
      ->add_option("--first-event", o.first_event,
                   "Index of the first simulated event (runs with different indices have "
                   "independent noise)")
      ->capture_default_str();
  command_->add_option("--seed", o.seed, "Simulator seed (fixes constants and defects)")
      ->capture_default_str();
  command_->add_option("--gain-stage", o.gain_stage,
                       "Forced gain: Jungfrau G0, G1 or G2; ePix10ka low (auto pixels forced to "
                       "low gain) or high; default: no forcing");
  command_
      ->add_option("--gain-configs", o.gain_configs,
                   "ePix10ka: gain configurations dealt to the ASICs in turn, e.g. "
                   "FH,FM,FL,AHL,AML (default: AHL on every ASIC, as the simulated source)")
      ->delimiter(',');
  command_->add_option("--noise", o.noise_adu, "Electronic noise, ADU rms")->capture_default_str();
  command_
      ->add_option("--common-mode-sigma", o.common_mode_sigma_adu,
                   "Per-event bank-row baseline offset, ADU rms")
      ->capture_default_str();
  command_->add_option("--truth", o.truth,
                       "Also write the simulator's true constants (a constants file) here");
}

SimulateDarkCommand::~SimulateDarkCommand() = default;

bool SimulateDarkCommand::parsed() const {
  return command_->parsed();
}

int SimulateDarkCommand::run() const {
  return run_reporting_errors([&] { return simulate_dark(*options_); });
}

}  // namespace livedrp::tools
