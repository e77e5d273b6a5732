// libFuzzer target: a control request (docs/protocol.md, "Control socket"), sent as one part to a
// real ControlServer over inproc and answered by it: size bound, JSON, envelope, request name,
// each request's field shapes, and the reply, which must come and must be a well-formed reply.
// The server is read-only, so that no input starts runs, builds engines or touches files; the
// changes a full server would hand to the controller are read here by the same parsers the
// controller uses (EngineConfig::from_json on the merged configuration, the peak parameters'
// merge), which is where their values are decoded.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "exec/engine_controller.hpp"
#include "exec/peak_requests.hpp"
#include "fuzz_refusal.hpp"
#include "protocol/control.hpp"
#include "protocol/control_client.hpp"
#include "publish/control_server.hpp"

namespace {

using nlohmann::json;
using namespace livedrp;

// Long enough for a loaded 2-core machine; a reply that takes longer is reported as a hang.
constexpr std::chrono::milliseconds kReplyTimeout{10000};

struct Served {
  EngineController controller;
  ControlServer server;
  protocol::ControlClient client;

  static EngineConfig idle_config() {
    EngineConfig config;
    config.source = "sim:generic_f32";
    config.backend = "cpu";
    config.publish = "";  // nothing published: the target looks at replies only
    config.simulator_pool = 1;
    return config;
  }
  Served()
      : controller(idle_config()),
        server(controller, "inproc://livedrp-fuzz-control", ControlAccess::ReadOnly),
        client(server.endpoint()) {}
};

// The sections EngineController::apply_json merges key by key; other keys replace.
bool merged_section(const std::string& key) {
  for (const char* name : {"runtime", "calibration", "simulator", "compression", "replay", "record",
                           "integration", "peak_finding", "image"})
    if (key == name) return true;
  return false;
}

// What a full server would make of a configuration change: the configuration in force with
// `partial` merged, read as apply_json reads it.
void read_change(const Served& served, const json& partial) {
  json merged = served.controller.config().to_json();
  for (const auto& [key, value] : partial.items()) {
    auto target = merged.find(key);
    if (merged_section(key) && value.is_object() && target != merged.end() && target->is_object())
      target->update(value);
    else
      merged[key] = value;
  }
  EngineConfig::from_json(merged, "change");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::unique_ptr<Served> served = std::make_unique<Served>();
  const std::string request(reinterpret_cast<const char*>(data), size);

  // Throws (and so fails the target) when no reply comes or the reply is malformed.
  const json reply = served->client.request_raw({request}, kReplyTimeout);
  if (!reply.at("ok").get<bool>())
    fuzz::check_refusal_text(reply.at("error").get_ref<const std::string&>().c_str());

  protocol::ControlRequest parsed;
  if (!fuzz::accepted([&] { parsed = protocol::parse_control_request(request); })) return 0;
  const json& body = parsed.body;
  fuzz::accepted([&] {
    if (parsed.name == "apply" && body.contains("config") && body["config"].is_object())
      read_change(*served, body["config"]);
    if (parsed.name == "set_runtime" && body.contains("runtime") && body["runtime"].is_object())
      read_change(*served, {{"runtime", body["runtime"]}});
    if (parsed.name == "set_calibration" && body.contains("calibration") &&
        body["calibration"].is_object())
      read_change(*served, {{"calibration", body["calibration"]}});
    if (parsed.name == "set_peak_params" && body.contains("params"))
      merge_peak_params_request(peaks::PeakFinderParams{}, body["params"]);
  });
  return 0;
}
