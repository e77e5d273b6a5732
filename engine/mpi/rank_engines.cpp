#include "mpi/rank_engines.hpp"

#include <chrono>

#include "core/error.hpp"

namespace livedrp::mpi {

RankEngines::RankEngines(const EngineConfig& config, EventShare share)
    : share_(share), current_(build(config)) {}

RankEngines::Built RankEngines::build(const EngineConfig& config) const {
  EngineConfig own = config;
  own.publish = "";  // the collector publishes for the run
  Built built;
  built.sums = std::make_unique<RankSums>();
  built.messages = std::make_unique<RankMessages>();
  built.engine = std::make_unique<Engine>(own);
  built.engine->set_event_share(share_);
  built.engine->set_event_observer(built.sums->observer());
  built.engine->keep_images();  // sent with the reports: the collector publishes the newest
  built.engine->forward_stage_messages(built.messages->sink());
  return built;
}

void RankEngines::prepare(const EngineConfig& config) {
  if (building_.valid()) wait_prepared();
  discard();
  building_ = std::async(std::launch::async, [this, config] { return build(config); });
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
