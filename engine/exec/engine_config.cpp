// EngineConfig <-> JSON. Strict: unknown keys and ill-typed or out-of-range values are errors that
// name the file, the field, the value and what is allowed, so a typo never passes silently.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <set>

#include "calib/constants.hpp"
#include "core/config_fields.hpp"
#include "core/error.hpp"
#include "core/json_input.hpp"
#include "exec/engine.hpp"
#include "peaks/peak_params.hpp"
#include "stages/registry.hpp"
#include "stream/stream_source.hpp"

namespace livedrp {
namespace {

using nlohmann::json;

constexpr int kConfigSchemaVersion = 1;

json range_json(const std::optional<std::pair<double, double>>& range) {
  return range ? json::array({range->first, range->second}) : json();
}

json integration_json(const LiveIntegrationConfig& i) {
  return {{"enabled", i.enabled},
          {"poni", i.poni},
          {"npt", i.npt},
          {"unit", i.unit},
          {"method", i.method},
          {"radial_range", range_json(i.radial_range)},
          {"azimuth_range", range_json(i.azimuth_range)},
          {"polarization", i.polarization ? json(*i.polarization) : json()},
          {"solid_angle", i.solid_angle},
          {"mask", i.mask},
          {"error_model", i.error_model},
          {"average_events", i.average_events},
          {"publish_hz", i.publish_hz}};
}

json peak_finding_json(const LivePeakFindingConfig& p) {
  return {{"enabled", p.enabled},
          {"params", peaks::to_json(p.params)},
          {"beam", p.beam ? json::array({p.beam->first, p.beam->second}) : json()},
          {"radius_map", p.radius_map},
          {"mask", p.mask},
          {"search_gain_configs", p.search_gain_configs},
          {"peaks_hz", p.peaks_hz},
          {"recent_frames", p.recent_frames}};
}

// The quoted list of the ePix10ka gain-configuration names, for messages.
std::string allowed_gain_config_names() {
  std::string allowed;
  for (const std::string& name : epix10ka_config_names())
    allowed += (allowed.empty() ? "\"" : ", \"") + name + "\"";
  return allowed;
}

// One entry of a list of ePix10ka gain-configuration names, checked (`field` names the list).
std::string read_gain_config_name(const FieldReader& reader, const std::string& field,
                                  const json& item, const json& list) {
  const std::string allowed = allowed_gain_config_names();
  if (!item.is_string())
    reader.fail(field, "must hold gain-configuration names (strings: " + allowed + "), got " +
                           json_excerpt(item) + " in " + json_excerpt(list));
  const std::string name = item.get<std::string>();
  if (!epix10ka_config_value(name)) {
    std::string upper = name;
    std::transform(upper.begin(), upper.end(), upper.begin(),
                   [](unsigned char ch) { return char(std::toupper(ch)); });
    const std::string hint =
        upper != name && epix10ka_config_value(upper) ? " (did you mean \"" + upper + "\"?)" : "";
    reader.fail(field, "has \"" + name + "\", which is not an ePix10ka gain configuration" + hint +
                           "; the configurations are " + allowed);
  }
  return name;
}

// peak_finding.search_gain_configs: distinct ePix10ka gain-configuration names (null: none, every
// pixel searched, so that a merge patch may clear it). Whether the detector has such a
// configuration is the engine's to check (LivePeakGeometry): a replay names its detector in the
// file.
std::vector<std::string> read_gain_config_names(const FieldReader& reader, const json& value) {
  const std::string field = reader.name("search_gain_configs");
  if (value.is_null()) return {};
  if (!value.is_array())
    reader.fail(field, "must be a list of ePix10ka gain-configuration names (" +
                           allowed_gain_config_names() +
                           "), e.g. [\"FH\", \"AHL\"], or [] to search every pixel; got " +
                           json_excerpt(value));
  std::vector<std::string> names;
  for (const json& item : value) {
    const std::string name = read_gain_config_name(reader, field, item, value);
    if (std::find(names.begin(), names.end(), name) != names.end())
      reader.fail(field, "names \"" + name + "\" twice in " + json_excerpt(value));
    names.push_back(name);
  }
  return names;
}

// simulator.gain_configs: the configurations the simulated ePix10ka deals to its ASICs in turn
// (SimulatorConfig::epix10ka_asic_configs); at least one, repeats allowed (they weight the deal).
std::vector<std::string> read_simulator_gain_configs(const FieldReader& reader, const json& value) {
  const std::string field = reader.name("gain_configs");
  if (!value.is_array() || value.empty())
    reader.fail(field, "must be a non-empty list of ePix10ka gain-configuration names (" +
                           allowed_gain_config_names() +
                           ") dealt to the ASICs in turn, e.g. [\"AHL\"]; got " +
                           json_excerpt(value));
  std::vector<std::string> names;
  for (const json& item : value) names.push_back(read_gain_config_name(reader, field, item, value));
  return names;
}

// What `source` and each of mpi.inputs may be (their files and endpoints are checked when the
// engine opens them).
bool is_source_name(const std::string& source) {
  return (source.rfind("sim:", 0) == 0 && source.size() > 4) ||
         (source.rfind("replay:", 0) == 0 && source.size() > 7) || stream::is_stream_source(source);
}
const std::string kSourceForms =
    "must be sim:DETECTOR (e.g. sim:epix10ka2m), replay:FILE.h5[:/dataset], "
    "sls:tcp://HOST:PORT[,...] or dectris:tcp://HOST:PORT, got ";

// The most frames a re-run may keep: 256 ePix10ka2M frames are 2.2 GB of device memory.
constexpr int kMaxRecentFrames = 256;

}  // namespace

EngineConfig EngineConfig::from_json(const json& object, const std::string& origin) {
  EngineConfig c;
  FieldReader root(object, origin, "");
  int version = kConfigSchemaVersion;
  root.read_integer("schema_version", version, 0, 1 << 20);
  if (version != kConfigSchemaVersion)
    root.fail("schema_version", "is " + std::to_string(version) + "; this livedrp reads version " +
                                    std::to_string(kConfigSchemaVersion));
  root.read("source", c.source);
  if (!is_source_name(c.source)) root.fail("source", kSourceForms + json_excerpt(json(c.source)));
  root.read_integer("events", c.events, 0, (1LL << 62));
  root.read_number("rate_hz", c.rate_hz, 0.0, 1e7);
  root.read_choice("full_ring", c.full_ring, {"auto", "drop", "wait"});
  root.read_integer("run", c.run, 0, (1LL << 62));
  root.read_choice("backend", c.backend, {"auto", "cpu", "cuda"});
  root.read_integer("cpu_threads", c.cpu_threads, 0, 1024);
  root.read("publish", c.publish);
  root.read("constants_file", c.constants_file);
  root.read_integer("ring_slots", c.ring_slots, 1, 4096);
  root.read_number("stats_interval_s", c.stats_interval_s, 0.01, 60.0);
  if (const json* calibration = root.find("calibration")) {
    FieldReader reader(*calibration, origin, "calibration");
    reader.read("common_mode", c.calibration.common_mode);
    double threshold = c.calibration.common_mode_threshold_adu;
    reader.read_number("common_mode_threshold_adu", threshold, 0.0, 16384.0);
    c.calibration.common_mode_threshold_adu = float(threshold);
    reader.read_integer("common_mode_min_pixels", c.calibration.common_mode_min_pixels, 1, 64);
    reader.reject_unknown_keys();
  }
  if (const json* runtime = root.find("runtime"))
    c.runtime = stream_config_from_json(*runtime, "configuration " + origin);
  if (const json* simulator = root.find("simulator")) {
    FieldReader reader(*simulator, origin, "simulator");
    reader.read_integer("seed", c.seed, 0, (1LL << 62));
    reader.read_number("hit_fraction", c.hit_fraction, 0.0, 1.0);
    reader.read_integer("pool_events", c.simulator_pool, 1, 4096);
    reader.read_choice("pool_selection", c.simulator_pool_selection, {"first", "hit_fraction"});
    if (const json* configs = reader.find("gain_configs"))
      c.simulator_gain_configs = read_simulator_gain_configs(reader, *configs);
    reader.reject_unknown_keys();
  }
  if (const json* compression = root.find("compression")) {
    FieldReader reader(*compression, origin, "compression");
    reader.read_choice("codec", c.compression.codec, {"off", "lossless", "lossy"});
    reader.read_number("error_bound", c.compression.error_bound, 0.0, 1e30);
    if (c.compression.codec == "lossy" && !(c.compression.error_bound > 0))
      reader.fail("compression.error_bound", "must be > 0 for the lossy codec, got " +
                                                 std::to_string(c.compression.error_bound));
    reader.read_integer("chunk_bytes", c.compression.chunk_bytes, 1024, 1 << 20);
    // The container's chunk table counts in 128-byte units (docs/formats.md).
    if (c.compression.chunk_bytes % 128 != 0)
      reader.fail("compression.chunk_bytes",
                  "must be a multiple of 128, got " + std::to_string(c.compression.chunk_bytes));
    reader.reject_unknown_keys();
  }
  if (const json* fidelity = root.find("fidelity")) {
    FieldReader reader(*fidelity, origin, "fidelity");
    read_fidelity_section(reader, c.fidelity);
  }
  if (const json* replay = root.find("replay")) {
    FieldReader reader(*replay, origin, "replay");
    reader.read("dataset", c.replay.dataset);
    if (!c.replay.dataset.empty() && c.replay.dataset.front() != '/')
      reader.fail("replay.dataset", "must start with '/', got \"" + c.replay.dataset + "\"");
    reader.read("detector", c.replay.detector);
    reader.read_choice("pace", c.replay.pace, {"recorded", "rate", "flat_out"});
    reader.read("loop", c.replay.loop);
    reader.read_integer("prefetch_events", c.replay.prefetch_events, 1, 1024);
    reader.read_integer("readers", c.replay.readers, 0, 64);
    reader.reject_unknown_keys();
  }
  if (const json* stream = root.find("stream")) {
    FieldReader reader(*stream, origin, "stream");
    reader.read("detector", c.stream.detector);
    reader.read_number("module_timeout_s", c.stream.module_timeout_s, 0.001, 3600);
    reader.read_integer("queue_events", c.stream.queue_events, 1, 4096);
    reader.read_integer("pending_events", c.stream.pending_events, 1, 4096);
    reader.read_number("max_message_mb", c.stream.max_message_mb, 0.001, 65536);
    reader.read_number("wait_for_start_s", c.stream.wait_for_start_s, 0, 3600);
    reader.reject_unknown_keys();
  }
  if (c.replay.pace == "rate" && !(c.rate_hz > 0))
    root.fail("replay.pace", "is \"rate\" but rate_hz is 0; give rate_hz > 0");
  if (const json* record = root.find("record")) {
    FieldReader reader(*record, origin, "record");
    reader.read("directory", c.record.directory);
    reader.read_integer("max_file_bytes", c.record.max_file_bytes, 1 << 20, (1LL << 62));
    reader.read("dataset", c.record.dataset);
    if (c.record.dataset.size() < 2 || c.record.dataset.front() != '/')
      reader.fail("record.dataset", "must start with '/', got \"" + c.record.dataset + "\"");
    reader.read_choice("layout", c.record.layout, {"segments", "stacked"});
    reader.read_integer("deflate", c.record.deflate, 0, 9);
    reader.read_choice("codec", c.record.codec, {"off", "lossless", "lossy"});
    reader.read_number("error_bound", c.record.error_bound, 0.0, 1e30);
    if (c.record.codec == "lossy" && !(c.record.error_bound > 0))
      reader.fail("record.error_bound",
                  "must be > 0 for the lossy codec, got " + std::to_string(c.record.error_bound));
    if (c.record.codec != "off" && c.record.deflate > 0)
      reader.fail("record.codec", "choose deflate or the livedrp codec, not both (deflate is " +
                                      std::to_string(c.record.deflate) + ")");
    reader.read_choice("when_full", c.record.when_full, {"auto", "drop", "wait"});
    reader.read_integer("queue_events", c.record.queue_events, 1, 1024);
    reader.read("hits_only", c.record.hits_only);
    reader.reject_unknown_keys();
  }
  if (const json* write = root.find("write")) {
    FieldReader reader(*write, origin, "write");
    reader.read("hits_directory", c.write.hits_directory);
    reader.read_integer("hits_per_file", c.write.hits_per_file, 1, (1LL << 40));
    reader.read("profiles", c.write.profiles);
    reader.read("average", c.write.average);
    reader.read_choice("when_full", c.write.when_full, {"auto", "drop", "wait"});
    reader.read_integer("queue_events", c.write.queue_events, 1, 1024);
    reader.read_integer("segment", c.write.segment, 1, WriteConfig::kMaxSegment);
    reader.reject_unknown_keys();
  }
  if (const json* integration = root.find("integration")) {
    FieldReader reader(*integration, origin, "integration");
    LiveIntegrationConfig& i = c.integration;
    reader.read("enabled", i.enabled);
    reader.read("poni", i.poni);
    reader.read_integer("npt", i.npt, 1, 65536);  // protocol::kMaxProfileBins
    reader.read_choice("unit", i.unit, {"2th_deg", "q_nm^-1", "q_A^-1", "r_mm"});
    reader.read_choice("method", i.method, {"no", "bbox"});
    reader.read_range("radial_range", i.radial_range, false);
    reader.read_range("azimuth_range", i.azimuth_range, true);
    if (const json* v = reader.find("polarization"); v && !v->is_null()) {
      double factor = 0;
      reader.read_number("polarization", factor, -1.0, 1.0);
      i.polarization = factor;
    }
    reader.read("solid_angle", i.solid_angle);
    reader.read("mask", i.mask);
    reader.read_choice("error_model", i.error_model, {"poisson", "azimuthal"});
    // The window's profiles are kept to average exactly: window x bins doubles.
    reader.read_integer("average_events", i.average_events, 1, 10000);
    reader.read_number("publish_hz", i.publish_hz, 0.1, 100.0);
    if (i.enabled && i.poni.empty())
      reader.fail("integration.poni",
                  "must name a pyFAI PONI file, or a shipped geometry (\"builtin:epix10ka2m\", "
                  "resources/geometry/), when integration is enabled");
    reader.reject_unknown_keys();
  }
  if (const json* peak_finding = root.find("peak_finding")) {
    FieldReader reader(*peak_finding, origin, "peak_finding");
    LivePeakFindingConfig& p = c.peak_finding;
    reader.read("enabled", p.enabled);
    if (const json* params = reader.find("params"))
      p.params = peaks::parse_peak_params(
          *params, "configuration " + origin + ": field 'peak_finding.params'");
    if (const json* beam = reader.find("beam"); beam && !beam->is_null()) {
      const bool pair = beam->is_array() && beam->size() == 2 && (*beam)[0].is_number() &&
                        (*beam)[1].is_number() && std::isfinite((*beam)[0].get<double>()) &&
                        std::isfinite((*beam)[1].get<double>());
      if (!pair)
        reader.fail(
            "peak_finding.beam",
            "must be [X, Y], two finite numbers (assembled pixels), got " + json_excerpt(*beam));
      p.beam = std::make_pair((*beam)[0].get<double>(), (*beam)[1].get<double>());
    }
    reader.read("radius_map", p.radius_map);
    reader.read("mask", p.mask);
    if (const json* configs = reader.find("search_gain_configs"))
      p.search_gain_configs = read_gain_config_names(reader, *configs);
    reader.read_number("peaks_hz", p.peaks_hz, 0.1, 100.0);
    reader.read_integer("recent_frames", p.recent_frames, 0, kMaxRecentFrames);
    reader.reject_unknown_keys();
  }
  if (const json* image = root.find("image")) {
    FieldReader reader(*image, origin, "image");
    reader.read_number("publish_hz", c.image.publish_hz, 0.0, 30.0);
    reader.reject_unknown_keys();
  }
  if (const json* mpi = root.find("mpi")) {
    // A CUDA device index: far more than one node holds, small enough for any int.
    constexpr std::int64_t kMaxCudaDevice = 1023;
    FieldReader reader(*mpi, origin, "mpi");
    reader.read_choice("collector", c.mpi.collector, {"dedicated", "processing"});
    reader.read_number("silent_after_s", c.mpi.silent_after_s, 0.5, 86400.0);
    if (const json* devices = reader.find("devices")) {
      const auto device = [](const json& d) {
        return d.is_number_integer() && d.get<std::int64_t>() >= 0 &&
               d.get<std::int64_t>() <= kMaxCudaDevice;
      };
      if (!devices->is_array() || !std::all_of(devices->begin(), devices->end(), device))
        reader.fail("mpi.devices", "must be a list of CUDA device indices (integers 0.." +
                                       std::to_string(kMaxCudaDevice) + "), got " +
                                       json_excerpt(*devices));
      c.mpi.devices = devices->get<std::vector<int>>();
    }
    reader.read_choice("share_by", c.mpi.share_by, {"event_index", "pulse_id"});
    if (const json* inputs = reader.find("inputs")) {
      if (!inputs->is_array() || inputs->empty())
        reader.fail("mpi.inputs",
                    "must be a list of sources, one for each processing rank in rank order, "
                    "got " +
                        json_excerpt(*inputs));
      for (std::size_t k = 0; k < inputs->size(); ++k) {
        const json& input = (*inputs)[k];
        const std::string field = "mpi.inputs[" + std::to_string(k) + "]";
        if (!input.is_string() || !is_source_name(input.get<std::string>()))
          reader.fail(field, kSourceForms + json_excerpt(input));
        c.mpi.inputs.push_back(input.get<std::string>());
      }
      // Each rank takes all of its own input: there is nothing to share by.
      if (c.mpi.share_by != MpiRunConfig{}.share_by)
        reader.fail("mpi.share_by",
                    "is \"" + c.mpi.share_by +
                        "\", but with mpi.inputs every processing rank takes all of its own "
                        "input; share_by applies to a common source (leave it out)");
    }
    reader.reject_unknown_keys();
  }
  // Sections of registered stages (stages/registry.hpp), each read by its stage.
  for (auto it = object.begin(); it != object.end(); ++it)
    if (stages::is_registered(it.key()))
      c.stages[it.key()] =
          stages::parse_stage_section(it.key(), *root.find(it.key().c_str()), origin);
  root.reject_unknown_keys();
  return c;
}

json EngineConfig::to_json() const {
  json out = {{"schema_version", kConfigSchemaVersion},
              {"source", source},
              {"events", events},
              {"rate_hz", rate_hz},
              {"full_ring", full_ring},
              {"run", run},
              {"backend", backend},
              {"cpu_threads", cpu_threads},
              {"publish", publish},
              {"constants_file", constants_file},
              {"ring_slots", ring_slots},
              {"stats_interval_s", stats_interval_s},
              {"calibration",
               {{"common_mode", calibration.common_mode},
                {"common_mode_threshold_adu", calibration.common_mode_threshold_adu},
                {"common_mode_min_pixels", calibration.common_mode_min_pixels}}},
              {"runtime", livedrp::to_json(runtime)},
              {"simulator",
               {{"seed", seed},
                {"hit_fraction", hit_fraction},
                {"pool_events", simulator_pool},
                {"pool_selection", simulator_pool_selection},
                {"gain_configs", simulator_gain_configs}}},
              {"compression",
               {{"codec", compression.codec},
                {"error_bound", compression.error_bound},
                {"chunk_bytes", compression.chunk_bytes}}},
              {"fidelity", fidelity_section_json(fidelity)},
              {"replay",
               {{"dataset", replay.dataset},
                {"detector", replay.detector},
                {"pace", replay.pace},
                {"loop", replay.loop},
                {"prefetch_events", replay.prefetch_events},
                {"readers", replay.readers}}},
              {"stream",
               {{"detector", stream.detector},
                {"module_timeout_s", stream.module_timeout_s},
                {"queue_events", stream.queue_events},
                {"pending_events", stream.pending_events},
                {"max_message_mb", stream.max_message_mb},
                {"wait_for_start_s", stream.wait_for_start_s}}},
              {"record",
               {{"directory", record.directory},
                {"max_file_bytes", record.max_file_bytes},
                {"dataset", record.dataset},
                {"layout", record.layout},
                {"deflate", record.deflate},
                {"codec", record.codec},
                {"error_bound", record.error_bound},
                {"when_full", record.when_full},
                {"queue_events", record.queue_events},
                {"hits_only", record.hits_only}}},
              {"write",
               {{"hits_directory", write.hits_directory},
                {"hits_per_file", write.hits_per_file},
                {"profiles", write.profiles},
                {"average", write.average},
                {"when_full", write.when_full},
                {"queue_events", write.queue_events},
                {"segment", write.segment}}},
              {"integration", integration_json(integration)},
              {"peak_finding", peak_finding_json(peak_finding)},
              {"image", {{"publish_hz", image.publish_hz}}}};
  // Echoed only when set: configurations of single engines read as they always did.
  if (mpi.collector != MpiRunConfig{}.collector ||
      mpi.silent_after_s != MpiRunConfig{}.silent_after_s || !mpi.devices.empty() ||
      mpi.share_by != MpiRunConfig{}.share_by || !mpi.inputs.empty()) {
    out["mpi"] = {{"collector", mpi.collector},
                  {"silent_after_s", mpi.silent_after_s},
                  {"devices", mpi.devices},
                  {"share_by", mpi.share_by}};
    if (!mpi.inputs.empty()) out["mpi"]["inputs"] = mpi.inputs;
  }
  for (const auto& [name, section] : stages) out[name] = section;
  return out;
}

EngineConfig load_engine_config_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError("cannot read configuration file '" + path + "'");
  const json object = parse_json_input(in, "configuration file '" + path + "'");
  return EngineConfig::from_json(object, "'" + path + "'");
}

}  // namespace livedrp
