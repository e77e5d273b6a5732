#include "exec/engine_controller.hpp"

#include <spdlog/spdlog.h>

#include "core/error.hpp"
#include "exec/config_change.hpp"
#include "exec/peak_requests.hpp"
#include "peaks/peak_params.hpp"
#include "publish/publisher.hpp"

namespace livedrp {

EngineController::EngineController(EngineConfig config) : requested_publish_(config.publish) {
  // Bind first: a bad endpoint is reported before the engine's heavy set-up.
  if (!config.publish.empty()) {
    publisher_ = std::make_shared<Publisher>(config.publish);
    publisher_->forward_log();  // warnings of every run it serves, and between runs
  }
  config.publish = publisher_ ? publisher_->endpoint() : std::string();
  auto engine = build(config);
  const std::lock_guard lock(state_mutex_);
  config_ = std::move(config);
  current_ = {std::move(engine), false};
}

EngineController::~EngineController() {
  try {
    stop();
  } catch (const std::exception& error) {
    spdlog::error("engine controller: stopping the run on destruction: {}", error.what());
  }
}

std::shared_ptr<Engine> EngineController::build(const EngineConfig& config) const {
  auto engine = std::make_shared<Engine>(config, publisher_);
  std::function<void(const protocol::StatsPayload&)> progress;
  {
    const std::lock_guard lock(state_mutex_);
    progress = progress_;
  }
  if (progress) engine->set_progress_callback(std::move(progress));
  return engine;
}

EngineController::Current EngineController::current() const {
  const std::lock_guard lock(state_mutex_);
  return current_;
}

bool EngineController::start() {
  const std::lock_guard operation(operation_mutex_);
  Current now = current();
  if (now.started && !now.engine->finished()) return false;
  if (now.started) {
    // An engine runs once; the next run is a new engine with the next run number.
    EngineConfig next = config();
    next.run += 1;
    auto engine = build(next);
    const std::lock_guard lock(state_mutex_);
    config_ = std::move(next);
    current_ = {std::move(engine), false};
  }
  const std::lock_guard lock(state_mutex_);
  current_.engine->start();
  current_.started = true;
  spdlog::info("engine controller: run {} started", config_.run);
  return true;
}

void EngineController::stop() {
  const std::lock_guard operation(operation_mutex_);
  const Current now = current();
  if (!now.started) return;
  now.engine->request_stop();
  now.engine->wait();
}

bool EngineController::apply(const EngineConfig& config) {
  const std::lock_guard operation(operation_mutex_);
  return apply_locked(config);
}

bool EngineController::apply_locked(const EngineConfig& config) {
  EngineConfig next = config;
  const std::string bound = publisher_ ? publisher_->endpoint() : std::string();
  check_publish_unchanged(next.publish, bound, requested_publish_);
  next.publish = bound;

  const Current old = current();
  const EngineConfig old_config = this->config();
  const bool was_running = old.started && !old.engine->finished();
  // Run numbers are never reused: after a run, the next one counts on, unless the caller asked
  // for a number of its own.
  if (old.started && next.run == old_config.run) next.run = old_config.run + 1;

  // Built before the old run is touched: a configuration the engine refuses changes nothing.
  auto engine = build(next);

  if (was_running) {
    old.engine->request_stop();
    old.engine->wait();
  }
  const std::lock_guard lock(state_mutex_);
  config_ = next;
  current_ = {std::move(engine), false};
  if (was_running) {
    current_.engine->start();
    current_.started = true;
    spdlog::info("engine controller: run {} restarted as run {} with the new configuration",
                 old_config.run, next.run);
  }
  return was_running;
}

bool EngineController::apply_json(const nlohmann::json& partial) {
  const std::lock_guard operation(operation_mutex_);
  return apply_locked(merge_config_change(config(), partial));
}

EngineConfig EngineController::config() const {
  const std::lock_guard lock(state_mutex_);
  return config_;
}

std::string EngineController::state() const {
  const Current now = current();
  if (!now.started) return "idle";
  if (!now.engine->finished()) return "running";
  return now.engine->summary().error.empty() ? "finished" : "error";
}

std::int64_t EngineController::run() const {
  const std::lock_guard lock(state_mutex_);
  return config_.run;
}

RunSummary EngineController::summary() const {
  return current().engine->summary();
}

std::string EngineController::publish_endpoint() const {
  return publisher_ ? publisher_->endpoint() : std::string();
}

std::string EngineController::backend_note() const {
  return current().engine->backend_note();
}

void EngineController::pause() {
  current().engine->pause();
}
void EngineController::resume() {
  current().engine->resume();
}
void EngineController::step(std::int64_t delta) {
  current().engine->step(delta);
}
void EngineController::seek(std::uint64_t index) {
  current().engine->seek(index);
}
ReplayStatus EngineController::replay_status() const {
  return current().engine->replay_status();
}
RecordStatus EngineController::record_status() const {
  return current().engine->record_status();
}

nlohmann::json EngineController::peak_params_json() const {
  return peak_params_reply(current().engine->peak_params());
}

nlohmann::json EngineController::set_peak_params(const nlohmann::json& partial) {
  const std::lock_guard operation(operation_mutex_);
  const peaks::PeakFinderParams params = apply_peak_params_request(*current().engine, partial);
  {
    const std::lock_guard lock(state_mutex_);
    config_.peak_finding.params = params;
  }
  return peak_params_json();
}

nlohmann::json EngineController::rerun_peaks(std::optional<std::uint64_t> frames) {
  return rerun_peaks_reply(current().engine->rerun_peaks(frames));
}

void EngineController::set_progress_callback(
    std::function<void(const protocol::StatsPayload&)> callback) {
  std::shared_ptr<Engine> engine;
  {
    const std::lock_guard lock(state_mutex_);
    progress_ = callback;
    engine = current_.engine;
  }
  if (engine) engine->set_progress_callback(std::move(callback));
}

}  // namespace livedrp
