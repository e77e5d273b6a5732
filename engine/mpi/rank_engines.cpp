#include "mpi/rank_engines.hpp"

#include <chrono>

#include "core/error.hpp"

namespace livedrp::mpi {

RankEngines::RankEngines(const EngineConfig& config, EventShare share, int rank)
    : share_(share), rank_(rank) {
  const EngineConfig own = next_config(config);
  current_ = build(own);
  segments_.note_created(own);
}

EngineConfig RankEngines::next_config(const EngineConfig& config) const {
  EngineConfig own = config;
  own.publish = "";  // the collector publishes for the run
  own.mpi.rank = rank_;
  if (!config.mpi.inputs.empty()) {
    if (share_.by != EventShare::By::OwnInput || share_.index >= config.mpi.inputs.size())
      throw InputError("mpi.inputs: processing rank " + std::to_string(rank_) +
                       " has no input of its own (share " + std::to_string(share_.index) + " of " +
                       std::to_string(share_.count) + ", " +
                       std::to_string(config.mpi.inputs.size()) + " inputs)");
    own.source = config.mpi.inputs[share_.index];
  }
  segments_.choose(own);
  return own;
}

RankEngines::Built RankEngines::build(const EngineConfig& own) const {
  Built built;
  built.sums = std::make_unique<RankSums>();
  built.messages = std::make_unique<RankMessages>();
  try {
    built.engine = std::make_unique<Engine>(own);
  } catch (const InputError& e) {
    // Which of the inputs it is, when each rank has its own.
    if (own.mpi.inputs.empty()) throw;
    throw InputError("mpi.inputs[" + std::to_string(share_.index) + "] '" + own.source +
                     "': " + e.what());
  }
  built.engine->set_event_share(share_);
  built.engine->set_event_observer(built.sums->observer());
  built.engine->keep_images();  // sent with the reports: the collector publishes the newest
  built.engine->forward_stage_messages(built.messages->sink());
  return built;
}

void RankEngines::prepare(const EngineConfig& config) {
  if (building_.valid()) wait_prepared();
  discard();
  // The segment is chosen on the build's thread: nothing notes a segment while a build runs
  // (wait_prepared() does, after it).
  building_ = std::async(std::launch::async, [this, config] { return build(next_config(config)); });
}

std::optional<std::string> RankEngines::prepared() {
  if (!building_.valid()) return build_error_;
  if (building_.wait_for(std::chrono::seconds(0)) != std::future_status::ready) return std::nullopt;
  return wait_prepared();
}

std::string RankEngines::wait_prepared() {
  if (!building_.valid()) return build_error_;
  try {
    prepared_ = building_.get();
    build_error_.clear();
    segments_.note_created(prepared_.engine->config());
  } catch (const std::exception& e) {
    build_error_ = e.what();
  }
  return build_error_;
}

void RankEngines::begin_commit() {
  if (building_.valid()) wait_prepared();
  if (!prepared_.engine) throw InputError("no configuration was prepared on this rank");
  current_.engine->request_stop();
}

void RankEngines::commit() {
  if (building_.valid()) wait_prepared();
  if (!prepared_.engine) throw InputError("no configuration was prepared on this rank");
  current_.engine->request_stop();
  current_.engine->wait();
  // The old engine goes before its sums (its observer holds them).
  current_.engine.reset();
  current_ = std::move(prepared_);
  prepared_ = {};
  current_.engine->start();
  ++generation_;
}

void RankEngines::discard() {
  if (building_.valid()) wait_prepared();
  prepared_.engine.reset();
  prepared_.sums.reset();
}

}  // namespace livedrp::mpi
