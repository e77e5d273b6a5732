#include "mpi/mpi_run.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <set>
#include <thread>
#include <vector>

#include <mpi.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include "core/error.hpp"
#include "mpi/collector.hpp"
#include "mpi/collector_control.hpp"
#include "mpi/control_fanout.hpp"
#include "mpi/mpi_tags.hpp"
#include "mpi/rank_control.hpp"
#include "mpi/rank_engines.hpp"
#include "mpi/rank_report.hpp"
#include "mpi/rank_sums.hpp"
#include "protocol/topics.hpp"
#include "publish/bind_endpoint.hpp"
#include "publish/publisher.hpp"

namespace livedrp::mpi {
namespace {

using Clock = std::chrono::steady_clock;

// How often the MPI thread looks for reports, stop requests and the engine's end: often enough
// that a report waits at most this long, rarely enough that the thread costs nothing.
constexpr auto kPollPeriod = std::chrono::milliseconds(5);
constexpr auto kStatusPeriod = std::chrono::seconds(1);
constexpr auto kProgressPeriod = std::chrono::seconds(1);

Clock::duration period_of(double seconds) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

[[noreturn]] void abort_run(int rank, const std::string& why) {
  std::fprintf(stderr, "livedrp-engine: rank %d: %s; aborting the MPI job\n", rank, why.c_str());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::abort();  // MPI_Abort does not return; should a library's do, this process still ends
}

// How the processing ranks take their events (docs/mpi.md, "Sharing"): each its own input
// (mpi.inputs), else a share of the common source by event index or pulse id.
EventShare share_of(const EngineConfig& config, std::size_t index, std::size_t count) {
  EventShare share{std::uint64_t(index), std::uint64_t(count)};
  if (!config.mpi.inputs.empty())
    share.by = EventShare::By::OwnInput;
  else if (config.mpi.share_by == "pulse_id")
    share.by = EventShare::By::PulseId;
  return share;
}

// mpi.inputs gives one source to each processing rank: their numbers must agree. The same on
// every rank; the collector says it (once) and no rank builds an engine.
std::string inputs_mismatch(const EngineConfig& config, const std::vector<int>& processing) {
  const std::size_t inputs = config.mpi.inputs.size();
  if (inputs == 0 || inputs == processing.size()) return {};
  std::string ranks;
  if (!processing.empty())
    ranks = processing.size() == 1 ? " (rank " + std::to_string(processing.front()) + ")"
                                   : " (ranks " + std::to_string(processing.front()) + " to " +
                                         std::to_string(processing.back()) + ")";
  return "mpi.inputs lists " + std::to_string(inputs) + " source" + (inputs == 1 ? "" : "s") +
         " but the run has " + std::to_string(processing.size()) + " processing rank" +
         (processing.size() == 1 ? "" : "s") + ranks + " with mpi.collector \"" +
         config.mpi.collector +
         "\"; give one source for each processing rank, in rank order, or start as many ranks";
}

// How the collector's start line names what the ranks take.
std::string shares_text(const EngineConfig& config, std::size_t processing) {
  if (!config.mpi.inputs.empty())
    return std::to_string(processing) + " take their own inputs (mpi.inputs)";
  return std::to_string(processing) + " take a share of " + config.source + " by " +
         config.mpi.share_by;
}

// Every rank learns whether all could start; rank 0 gets each failing rank's text.
std::string agree_on_startup(const Session& session, const std::string& own_error) {
  const int ok = own_error.empty() ? 1 : 0;
  int all_ok = 0;
  check(MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD), "start-up agreement");
  if (all_ok) return {};
  const int length = int(own_error.size());
  std::vector<int> lengths(std::size_t(session.size()), 0), offsets(lengths.size(), 0);
  check(MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, kCollectorRank, MPI_COMM_WORLD),
        "gathering start-up errors");
  int total = 0;
  for (std::size_t r = 0; r < lengths.size(); ++r) {
    offsets[r] = total;
    total += lengths[r];
  }
  std::vector<char> texts(std::size_t(std::max(total, 1)));
  check(MPI_Gatherv(own_error.data(), length, MPI_CHAR, texts.data(), lengths.data(),
                    offsets.data(), MPI_CHAR, kCollectorRank, MPI_COMM_WORLD),
        "gathering start-up errors");
  if (session.rank() != kCollectorRank) return "failed";
  std::string all;
  for (std::size_t r = 0; r < lengths.size(); ++r)
    if (lengths[r] > 0)
      all += (all.empty() ? "" : "; ") +
             ("rank " + std::to_string(r) + ": " +
              std::string(texts.data() + offsets[r], std::size_t(lengths[r])));
  return all;
}

// mpi.devices: this processing rank's index among the processing ranks of its node, in rank
// order (a collective: every rank calls it; -1 for the dedicated collector).
int node_index(bool processes) {
  const int color = processes ? 0 : MPI_UNDEFINED;
  int rank = 0;
  check(MPI_Comm_rank(MPI_COMM_WORLD, &rank), "MPI_Comm_rank");
  MPI_Comm processing = MPI_COMM_NULL;
  check(MPI_Comm_split(MPI_COMM_WORLD, color, rank, &processing), "grouping the processing ranks");
  if (processing == MPI_COMM_NULL) return -1;
  MPI_Comm node = MPI_COMM_NULL;
  check(MPI_Comm_split_type(processing, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node),
        "grouping the processing ranks by node");
  int index = 0;
  check(MPI_Comm_rank(node, &index), "MPI_Comm_rank on the node");
  check(MPI_Comm_free(&node), "MPI_Comm_free");
  check(MPI_Comm_free(&processing), "MPI_Comm_free");
  return index;
}

RankReport make_report(const Session& session, RankEngines& engines, bool final) {
  Engine& engine = engines.engine();
  const RankSums& sums = engines.sums();
  RankReport report;
  report.rank = session.rank();
  report.run = engine.config().run;
  report.final = final;
  report.host = session.processor();
  report.pid = std::uint64_t(getpid());
  const RunSummary summary = engine.summary();
  report.error = summary.error;
  report.stats = summary.stats;
  report.latency = engine.latency_histogram();
  report.profile = sums.profile();
  report.hit = sums.newest_hit();
  report.image = engine.take_image();
  report.messages = engines.messages().take();
  return report;
}

// Stop and end from the collector, point to point (a collective would wait forever for a rank
// that is gone). kTagStop: stop your engine. kTagEnd: the run is over, every report is in; a rank
// waits for it after its final report, so that no message is left unmatched at MPI_Finalize.
const int kControlWord = 1;  // what stop and end carry (the tag says which)

class ControlSends {
 public:
  void send(int rank, int tag) {
    MPI_Request request = MPI_REQUEST_NULL;
    check(MPI_Isend(&kControlWord, 1, MPI_INT, rank, tag, MPI_COMM_WORLD, &request),
          tag == kTagStop ? "sending stop to a rank" : "sending the end to a rank");
    sends_.emplace_back(rank, request);
  }
  // Completes the sends to ranks still there; those to ranks that are gone are let go.
  template <typename Gone>
  void finish(const Gone& gone) {
    for (auto& [rank, request] : sends_) {
      if (gone(rank))
        check(MPI_Request_free(&request), "letting go of a send to a lost rank");
      else
        check(MPI_Wait(&request, MPI_STATUS_IGNORE), "completing a send to a rank");
    }
    sends_.clear();
  }

 private:
  std::vector<std::pair<int, MPI_Request>> sends_;
};

bool stop_arrived() {
  int flag = 0;
  MPI_Status status;
  check(MPI_Iprobe(kCollectorRank, kTagStop, MPI_COMM_WORLD, &flag, &status), "probing for stop");
  if (!flag) return false;
  int word = 0;
  check(MPI_Recv(&word, 1, MPI_INT, kCollectorRank, kTagStop, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
        "receiving stop");
  return true;
}

// After its final report a rank still answers control requests (a re-run over its kept frames)
// until the collector's end; a stop that came late is simply taken. Returns false when an apply
// started a new run meanwhile (the rank runs again), true at the end.
bool wait_for_end(RankEngines& engines, RankControl& control) {
  const std::uint64_t generation = engines.generation();
  for (;;) {
    control.poll(engines);
    if (engines.generation() != generation) return false;
    int flag = 0;
    MPI_Message message;
    MPI_Status status;
    for (const int tag : {kTagStop, kTagEnd}) {
      check(MPI_Improbe(kCollectorRank, tag, MPI_COMM_WORLD, &flag, &message, &status),
            "waiting for the collector's end");
      if (!flag) continue;
      int word = 0;
      check(MPI_Mrecv(&word, 1, MPI_INT, &message, MPI_STATUS_IGNORE),
            "receiving the collector's stop or end");
      if (tag == kTagEnd) return true;
    }
    std::this_thread::sleep_for(kPollPeriod);
  }
}

// A processing rank: its engine runs; reports go to the collector without ever waiting on it.
// An apply replaces the engine (rank_engines.hpp): the new run is reported from then on.
RunSummary run_processing_rank(const Session& session, RankEngines& engines,
                               const EngineConfig& config, const std::atomic<bool>& stop) {
  MPI_Request send = MPI_REQUEST_NULL;
  std::vector<std::uint8_t> buffer;  // the report under way: MPI reads it until the send is done
  const auto send_report = [&](bool final) {
    buffer = encode_report(make_report(session, engines, final));
    check(MPI_Isend(buffer.data(), int(buffer.size()), MPI_BYTE, kCollectorRank, kTagReport,
                    MPI_COMM_WORLD, &send),
          "sending a report to the collector");
  };
  const auto interval = period_of(config.stats_interval_s);
  auto next_report = Clock::now() + interval;
  RankControl control(session.rank());
  engines.engine().start();
  for (;;) {
    while (!engines.engine().finished()) {
      if (stop || stop_arrived()) engines.engine().request_stop();
      control.poll(engines);
      if (Clock::now() >= next_report) {
        next_report = Clock::now() + interval;
        int done = 1;
        if (send != MPI_REQUEST_NULL)
          check(MPI_Test(&send, &done, MPI_STATUS_IGNORE), "testing a report's send");
        // The previous report still under way: this one is skipped (the next carries its
        // counts).
        if (done) send_report(false);
      }
      std::this_thread::sleep_for(kPollPeriod);
    }
    engines.engine().wait();
    // The run is over here: waiting for the collector no longer holds an event up.
    check(MPI_Wait(&send, MPI_STATUS_IGNORE), "completing a report's send");
    send_report(true);
    check(MPI_Wait(&send, MPI_STATUS_IGNORE), "sending the final report");
    if (wait_for_end(engines, control)) break;
  }
  control.finish();
  return engines.engine().summary();
}

protocol::StatusPayload collector_status(const EngineConfig& config, const Collector& merge,
                                         const protocol::StatsPayload& stats, bool ended,
                                         int size) {
  protocol::StatusPayload status;
  const std::string failures = merge.failures();
  status.state = ended ? (failures.empty() ? "finished" : "error") : "running";
  status.message =
      failures.empty() ? "MPI run over " + std::to_string(size) + " ranks" : "MPI run: " + failures;
  status.source = config.source;
  // Each rank its own input: the status names them all, in rank order.
  for (std::size_t k = 0; k < config.mpi.inputs.size(); ++k)
    status.source = (k == 0 ? "mpi.inputs: " : status.source + ", ") + config.mpi.inputs[k];
  const std::string sim = "sim:";
  const std::string& first = config.mpi.inputs.empty() ? config.source : config.mpi.inputs.front();
  if (first.rfind(sim, 0) == 0) status.detector = first.substr(sim.size());
  status.backend = stats.backend;
  status.device = stats.device;
  status.config = config.to_json();
  return status;
}

// Rank 0: merges the reports, publishes, and (mpi.collector "processing") runs a share itself.
// The collector's control socket, when --control asked for one: the socket, what it drives, and
// whether it asked the process to shut down.
struct CollectorSocket {
  std::unique_ptr<ControlFanOut> fanout;
  std::unique_ptr<ControlServer> server;
  bool shutdown_requested() const { return server && server->shutdown_requested(); }
  // A request still waiting is answered before the server's thread is joined.
  ~CollectorSocket() {
    if (fanout) fanout->close("the MPI run has ended");
    server.reset();
  }
};

RunSummary run_collector(const Session& session, RankEngines* own, const EngineConfig& first,
                         const std::vector<int>& all_processing, Publisher* publisher,
                         CollectorSocket& socket, const std::atomic<bool>& stop) {
  const auto start = Clock::now();
  // An apply starts a new run: its configuration, its ranks (those lost before it take no part)
  // and a new merge.
  EngineConfig config = first;
  std::vector<int> processing = all_processing;
  Collector merge(session.size(), kCollectorRank, own != nullptr, processing, start);
  // Ranks out of the run (lost in an earlier run): no stop or end goes to them.
  std::set<int> gone;
  const auto out_of_run = [&](int rank) { return gone.count(rank) > 0 || merge.lost(rank); };
  ControlSends control;
  const auto silent_limit = period_of(config.mpi.silent_after_s);
  const auto publish = [&](protocol::Message message) {
    message.run = config.run;
    if (publisher) publisher->publish(message);
  };
  auto stats_period = period_of(config.stats_interval_s);
  auto profile_period = period_of(1.0 / config.integration.publish_hz);
  auto peaks_period = period_of(1.0 / config.peak_finding.peaks_hz);
  auto next_stats = start + stats_period, next_own = start + stats_period;
  auto next_profile = start, next_peaks = start, next_status = start, next_progress = start;
  bool own_final = false;
  bool stopping = false;
  // Every rank's engine stops (SIGINT, SIGTERM, a "stop" or "shutdown" request): each drains its
  // events and sends its final report.
  const auto stop_all = [&] {
    if (stopping) return;
    stopping = true;
    for (int rank : processing)
      if (rank != kCollectorRank && !out_of_run(rank)) control.send(rank, kTagStop);
    if (own) own->engine().request_stop();
  };
  // What `status` and `stop` answer: the run's state and its merged whole-run counts.
  const auto merged_state = [&](Clock::time_point now) {
    const RunSummary summary = merge.summary(now);
    const std::string state =
        merge.all_final() ? (summary.error.empty() ? "finished" : "error") : "running";
    nlohmann::json stats = protocol::to_json(summary.stats);
    if (socket.fanout) socket.fanout->set_merged(state, summary.error, stats);
    return stats;
  };
  std::unique_ptr<CollectorControl> requests;
  if (socket.fanout) {
    CollectorControl::Hooks hooks;
    hooks.stop_run = stop_all;
    hooks.stop_result = [&] {
      nlohmann::json stats = merged_state(Clock::now());
      nlohmann::json result = socket.fanout->shutdown_result();
      result["stats"] = std::move(stats);
      return result;
    };
    hooks.publish_peaks = [&](const protocol::EventPeaks& hit) {
      publish(protocol::make_peaks_message(hit));
    };
    hooks.new_run = [&](const EngineConfig& next, const std::vector<int>& ranks) {
      for (int rank : processing)
        if (std::find(ranks.begin(), ranks.end(), rank) == ranks.end()) gone.insert(rank);
      config = next;
      processing = ranks;
      const auto now = Clock::now();
      merge = Collector(session.size(), kCollectorRank, own != nullptr, processing, now);
      stats_period = period_of(config.stats_interval_s);
      profile_period = period_of(1.0 / config.integration.publish_hz);
      peaks_period = period_of(1.0 / config.peak_finding.peaks_hz);
      next_stats = next_own = now + stats_period;
      own_final = false;
      stopping = false;
      spdlog::info("MPI collector: run {} started on {} ranks with the new configuration",
                   config.run, ranks.size());
    };
    requests = std::make_unique<CollectorControl>(*socket.fanout, processing, own,
                                                  period_of(config.mpi.silent_after_s), hooks);
  }
  if (own) own->engine().start();
  // Publishes what is due (everything when `last`).
  const auto publish_due = [&](Clock::time_point now, bool last) {
    if (last || now >= next_profile) {
      try {
        if (auto profile = merge.take_profile()) {
          publish(protocol::make_profile_message(*profile));
          next_profile = now + profile_period;
        }
      } catch (const std::exception& e) {
        spdlog::error("MPI collector: profile not merged: {}", e.what());
      }
    }
    if (last || now >= next_peaks)
      if (auto hit = merge.take_newest_hit()) {
        publish(protocol::make_peaks_message(*hit));
        merge.count_peaks_message();
        next_peaks = now + peaks_period;
      }
    for (protocol::Message& message : merge.take_forwarded()) {
      try {
        publish(message);
      } catch (const std::exception& e) {
        spdlog::warn("MPI collector: a rank's {} message not published: {}", message.topic,
                     e.what());
      }
    }
    // The ranks keep images at image.publish_hz and send them with their reports.
    if (auto image = merge.take_newest_image()) {
      try {
        publish(protocol::make_image_message(*image));
      } catch (const std::exception& e) {
        spdlog::warn("MPI collector: image of event {} not published: {}", image->sequence,
                     e.what());
      }
    }
    if (last || now >= next_stats) {
      const protocol::StatsPayload stats = merge.take_stats(now);
      protocol::Message message = protocol::make_stats_message(stats);
      publish(message);
      next_stats = now + stats_period;
      if (socket.fanout) merged_state(now);
      if (last || now >= next_status) {
        publish(protocol::make_status_message(
            collector_status(config, merge, stats, last || merge.all_final(), session.size())));
        next_status = now + kStatusPeriod;
      }
      if (!last && now >= next_progress && merge.any_report()) {
        std::fprintf(stderr, "  %.1f s: %llu processed, %llu dropped, %.1f events/s, %d ranks\n",
                     stats.elapsed_s, (unsigned long long)stats.events_processed,
                     (unsigned long long)stats.events_dropped, stats.event_rate_hz, session.size());
        next_progress = now + kProgressPeriod;
      }
    }
  };
  // With a control socket the collector serves on after the ranks' runs have ended (a re-run over
  // their kept frames, status), until interrupted or asked to shut down, as one engine does.
  const auto ending = [&] { return stop || socket.shutdown_requested(); };
  while (!merge.all_final() || (socket.fanout && !ending())) {
    bool received = false;
    for (;;) {
      int flag = 0;
      MPI_Message message;
      MPI_Status status;
      check(MPI_Improbe(MPI_ANY_SOURCE, kTagReport, MPI_COMM_WORLD, &flag, &message, &status),
            "probing for reports");
      if (!flag) break;
      int count = 0;
      check(MPI_Get_count(&status, MPI_BYTE, &count), "sizing a report");
      std::vector<std::uint8_t> bytes(std::size_t(std::max(count, 0)));
      check(MPI_Mrecv(bytes.data(), count, MPI_BYTE, &message, &status), "receiving a report");
      RankReport report = decode_report(bytes, status.MPI_SOURCE);
      // A report of the run an apply replaced (sent before the rank took the new one): dropped.
      if (report.run != config.run || out_of_run(report.rank)) continue;
      merge.take(std::move(report), Clock::now());
      received = true;
    }
    const auto now = Clock::now();
    if (own && !own_final) {
      if (own->engine().finished()) {
        own->engine().wait();
        merge.take(make_report(session, *own, true), now);
        own_final = true;
      } else if (now >= next_own) {
        merge.take(make_report(session, *own, false), now);
        next_own = now + stats_period;
      }
    }
    for (int rank : merge.mark_silent(now, silent_limit))
      spdlog::error(
          "MPI collector: rank {} is lost (no report for {} s); the run goes on without it", rank,
          config.mpi.silent_after_s);
    if (ending()) stop_all();
    if (requests) requests->poll(merge, now);
    publish_due(now, false);
    if (!received) std::this_thread::sleep_for(kPollPeriod);
  }
  publish_due(Clock::now(), true);
  // Every answer a rank owes is taken before its end goes out (a rank answers in order).
  if (requests) requests->finish(merge, "the MPI run is ending");
  for (int rank : all_processing)
    if (rank != kCollectorRank && !out_of_run(rank)) control.send(rank, kTagEnd);
  control.finish(out_of_run);
  return merge.summary(Clock::now());
}

}  // namespace

RankOutcome run_rank(Session& session, const EngineConfig& config, const std::atomic<bool>& stop,
                     const ControlOptions& control) {
  const int size = session.size(), rank = session.rank();
  const bool dedicated = config.mpi.collector == "dedicated";
  RankOutcome outcome;
  outcome.collector = rank == kCollectorRank;
  std::vector<int> processing;
  for (int r = dedicated ? 1 : 0; r < size; ++r) processing.push_back(r);
  const bool processes = rank != kCollectorRank || !dedicated;

  // One GPU per rank: set before the engine (and so CUDA) starts.
  if (!config.mpi.devices.empty()) {
    try {
      if (const int index = node_index(processes); index >= 0) {
        const int device = config.mpi.devices[std::size_t(index) % config.mpi.devices.size()];
        setenv("CUDA_VISIBLE_DEVICES", std::to_string(device).c_str(), 1);
        spdlog::info(
            "rank {}: CUDA_VISIBLE_DEVICES={} (mpi.devices, processing rank {} of its node)", rank,
            device, index);
      }
    } catch (const RuntimeFault& e) {
      abort_run(rank, e.what());
    }
  }

  // Start-up: the same checks on every rank, then one agreement, so that no rank waits for
  // another that never started.
  std::string error;
  std::unique_ptr<RankEngines> engines;
  std::shared_ptr<Publisher> publisher;
  CollectorSocket socket;
  try {
    if (processing.empty())
      throw InputError(
          "mpi.collector \"dedicated\" needs at least 2 ranks (the collector and one that "
          "processes), got 1; start more ranks or set mpi.collector to \"processing\"");
    if (const std::string mismatch = inputs_mismatch(config, processing); !mismatch.empty()) {
      // Said once, by the collector (whose failure ends the start-up of every rank); the other
      // ranks build nothing.
      if (outcome.collector) throw InputError(mismatch);
    } else if (processes) {
      const auto share = std::find(processing.begin(), processing.end(), rank) - processing.begin();
      engines = std::make_unique<RankEngines>(
          config, share_of(config, std::size_t(share), processing.size()), rank);
    }
    if (outcome.collector && !config.publish.empty()) {
      publisher = std::make_shared<Publisher>(config.publish);
      // The collector's own warnings and errors; the other ranks' stay in their own output.
      publisher->forward_log();
      outcome.publish_endpoint = publisher->endpoint();
    }
    if (outcome.collector && !control.endpoint.empty()) {
      EngineConfig in_force = config;
      in_force.publish = outcome.publish_endpoint;
      socket.fanout = std::make_unique<ControlFanOut>(std::move(in_force), size, config.publish);
      ControlRoots roots(control.roots);
      if (!roots.confined() && control.access == ControlAccess::Full &&
          !is_loopback_endpoint(control.endpoint))
        spdlog::warn(
            "control requests from other machines may name any file; --control-root DIR "
            "confines them, --control-read-only lets them only look");
      socket.server = std::make_unique<ControlServer>(*socket.fanout, control.endpoint,
                                                      control.access, std::move(roots));
      outcome.control_endpoint = socket.server->endpoint();
    }
  } catch (const std::exception& e) {
    error = e.what();
  }
  try {
    if (const std::string all = agree_on_startup(session, error); !all.empty()) {
      outcome.exit_code = 2;
      if (outcome.collector) outcome.startup_error = all;
      return outcome;
    }
  } catch (const RuntimeFault& e) {
    abort_run(rank, e.what());
  }
  if (outcome.collector)
    std::fprintf(
        stderr, "livedrp-engine: MPI run: %d ranks, rank 0 collects%s, %s; publishing on %s\n",
        size, dedicated ? "" : " and processes", shares_text(config, processing.size()).c_str(),
        outcome.publish_endpoint.empty() ? "nothing" : outcome.publish_endpoint.c_str());
  if (!outcome.control_endpoint.empty())
    std::fprintf(stderr, "livedrp-engine: control socket on %s\n",
                 outcome.control_endpoint.c_str());
  try {
    outcome.summary = outcome.collector ? run_collector(session, engines.get(), config, processing,
                                                        publisher.get(), socket, stop)
                                        : run_processing_rank(session, *engines, config, stop);
  } catch (const std::exception& e) {
    abort_run(rank, e.what());
  }
  return outcome;
}

}  // namespace livedrp::mpi
