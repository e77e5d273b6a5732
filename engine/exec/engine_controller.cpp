#include "exec/engine_controller.hpp"

#include <spdlog/spdlog.h>

#include <filesystem>
#include <system_error>

#include "core/error.hpp"
#include "exec/config_change.hpp"
#include "exec/config_check.hpp"
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
  auto engine = build_segment(config);
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

std::shared_ptr<Engine> EngineController::build_segment(EngineConfig& config) {
  // The first segment none of whose files an engine of this controller created: a restart of
  // the same writers takes the next names; a file that exists for any other reason is still
  // refused by the writer ("it exists").
  segments_.choose(config);
  auto engine = build(config);
  segments_.note_created(config);
  if (config.write.enabled())
    spdlog::info("engine controller: run {} writes segment {}: {}", config.run,
                 config.write.segment, write_file_list(engine->write_status()));
  return engine;
}

std::optional<WriteSegment> EngineController::finished_segment(const Current& old) {
  if (!old.started) return std::nullopt;
  WriteSegment segment = write_segment_of(*old.engine);
  if (!any_writer(segment.status)) return std::nullopt;
  return segment;
}

void EngineController::discard_unstarted(Current old) {
  if (old.started) return;
  // Never started: no event reached its writers. Its files go with it, once it is released.
  const WriteStatus status = old.engine->write_status();
  old.engine.reset();
  for (const WriterStatus* w : {&status.hits, &status.profiles, &status.average})
    for (const std::string& file : w->files) {
      std::error_code error;
      if (std::filesystem::remove(file, error))
        spdlog::info("engine controller: removed {} (its run was replaced before it started)",
                     file);
    }
}

std::vector<WriteSegment> EngineController::write_segments() const {
  std::vector<WriteSegment> segments;
  Current now;
  {
    const std::lock_guard lock(state_mutex_);
    segments = finished_segments_;
    now = current_;
  }
  if (now.started) {
    WriteSegment segment = write_segment_of(*now.engine);
    if (any_writer(segment.status)) segments.push_back(std::move(segment));
  }
  return segments;
}

WriteStatus EngineController::write_status() const {
  return current().engine->write_status();
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
    auto engine = build_segment(next);
    const std::optional<WriteSegment> finished = finished_segment(now);
    const std::lock_guard lock(state_mutex_);
    if (finished) finished_segments_.push_back(*finished);
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

  Current old = current();
  const EngineConfig old_config = this->config();
  const bool was_running = old.started && !old.engine->finished();
  // Run numbers are never reused: after a run, the next one counts on, unless the caller asked
  // for a number of its own.
  if (old.started && next.run == old_config.run) next.run = old_config.run + 1;

  // Built before the old run is touched: a configuration the engine refuses changes nothing.
  auto engine = build_segment(next);

  if (was_running) {
    old.engine->request_stop();
    old.engine->wait();
  }
  const std::optional<WriteSegment> finished = finished_segment(old);
  {
    const std::lock_guard lock(state_mutex_);
    if (finished) finished_segments_.push_back(*finished);
    config_ = next;
    current_ = {std::move(engine), false};
    if (was_running) {
      current_.engine->start();
      current_.started = true;
      spdlog::info("engine controller: run {} restarted as run {} with the new configuration",
                   old_config.run, next.run);
    }
  }
  discard_unstarted(std::move(old));
  return was_running;
}

bool EngineController::apply_json(const nlohmann::json& partial) {
  const std::lock_guard operation(operation_mutex_);
  return apply_locked(merge_config_change(config(), partial));
}

EngineConfig EngineController::check_json(const nlohmann::json& partial) const {
  // No operation lock: nothing changes, so a check need not wait for a run that drains.
  EngineConfig next = merge_config_change(config(), partial);
  const std::string bound = publisher_ ? publisher_->endpoint() : std::string();
  check_publish_unchanged(next.publish, bound, requested_publish_);
  next.publish = bound;
  check_engine_config(next);
  return next;
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
