// livedrp-sls-publisher: streams detector events as the slsDetectorPackage receivers of a Jungfrau
// do (one ZeroMQ port per UDP port, JSON header + pixels per frame, an end-of-acquisition header),
// so that the engine's sls source can be tried without a detector (docs/formats.md, "Live detector
// streams").
//
//   livedrp-sls-publisher [--source sim:jungfrau4m | replay:PATH[:/dataset]] [--bind
//   tcp://HOST:PORT]
//                         [--ports-per-module 1|2] [--rate HZ] [--events N] [--loop]
//                         [--frames-per-acquisition N] [--first-frame N] [--epoch-timestamps]
//                         [--wait-for-subscribers SECONDS] [--replay-detector NAME]
//
// It prints the source string to give the engine (sls:tcp://...,...) and then streams; progress
// goes to stderr once a second. Ctrl-C ends the acquisition (end-of-acquisition headers) and exits.
// Exit status: 0 done, 2 bad input (the message names the option, file or value).
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <memory>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>

#include "core/detector.hpp"
#include "core/error.hpp"
#include "core/thread_pool.hpp"
#include "replay/replay_source.hpp"
#include "sim/simulator.hpp"
#include "tools/sls_publisher.hpp"

using namespace livedrp;

namespace {

constexpr int kExitBadInput = 2;
using Clock = std::chrono::steady_clock;

std::atomic<bool> interrupted{false};
extern "C" void on_interrupt(int) {
  interrupted = true;
}

struct Options {
  std::string source = "sim:jungfrau4m";
  std::string bind = "tcp://127.0.0.1:30001";
  int ports_per_module = 1;
  double rate_hz = 10;
  std::uint64_t events = 0;
  bool loop = false;
  std::uint64_t frames_per_acquisition = 0;
  std::uint64_t first_frame = 1;
  bool epoch_timestamps = false;
  double wait_for_subscribers_s = 0;
  std::string replay_detector;
  std::uint64_t seed = SimulatorConfig{}.seed;
  std::size_t pool_events = 8;
};

// One event to send: its bytes and time.
struct NextEvent {
  const std::byte* data = nullptr;
  std::int64_t timestamp_ns = 0;
};

// Where events come from: the simulator (a pool of events generated ahead, sent round and round)
// or a replayed file.
class EventFeed {
 public:
  virtual ~EventFeed() = default;
  virtual const DetectorDescription& detector() const = 0;
  // False at the end of the input (never for the simulator).
  virtual bool next(std::uint64_t index, NextEvent& event) = 0;
};

class SimulatorFeed final : public EventFeed {
 public:
  SimulatorFeed(const DetectorDescription& detector, std::uint64_t seed, std::size_t pool_events) {
    SimulatorConfig config;
    config.seed = seed;
    ThreadPool pool;
    std::cerr << "generating " << pool_events << " simulated events of " << detector.name
              << "...\n";
    simulator_ = std::make_unique<DetectorSimulator>(detector, config, &pool);
    for (std::size_t i = 0; i < std::max<std::size_t>(pool_events, 1); ++i) {
      events_.emplace_back(simulator_->detector().raw_event_bytes());
      simulator_->generate(i, events_.back().data(), nullptr, &pool);
    }
  }
  const DetectorDescription& detector() const override { return simulator_->detector(); }
  bool next(std::uint64_t index, NextEvent& event) override {
    event.data = events_[index % events_.size()].data();
    event.timestamp_ns = simulator_->header_for(index).timestamp_ns;
    return true;
  }

 private:
  std::unique_ptr<DetectorSimulator> simulator_;
  std::vector<std::vector<std::byte>> events_;
};

class ReplayFeed final : public EventFeed {
 public:
  ReplayFeed(const std::string& source, const std::string& detector, bool loop) {
    const replay::ReplaySpec spec = replay::parse_replay_source(source);
    replay::ReplayOptions options;
    options.files = spec.files;
    options.dataset = spec.dataset;
    options.detector = detector;
    options.loop = loop;
    replay_ = std::make_unique<replay::ReplaySource>(std::move(options));
  }
  const DetectorDescription& detector() const override { return replay_->detector(); }
  bool next(std::uint64_t, NextEvent& event) override {
    if (held_) replay_->release();
    held_ = false;
    if (!replay_->acquire(current_)) return false;
    held_ = true;
    if (!current_.data) throw InputError(current_.error);
    event.data = current_.data;
    event.timestamp_ns = current_.timestamp_ns;
    return true;
  }

 private:
  std::unique_ptr<replay::ReplaySource> replay_;
  replay::ReplayEvent current_;
  bool held_ = false;
};

int run(const Options& options) {
  const bool simulate = options.source.rfind("sim:", 0) == 0;
  if (!simulate && options.source.rfind("replay:", 0) != 0)
    throw InputError("--source '" + options.source +
                     "' is neither sim:DETECTOR nor replay:PATH[:/dataset]");
  // The replay's files are opened (and checked) first; the simulator's events are generated only
  // once the ports are bound, so that a detector or address the stream cannot take is refused at
  // once.
  std::unique_ptr<EventFeed> feed;
  if (!simulate)
    feed = std::make_unique<ReplayFeed>(options.source, options.replay_detector, options.loop);
  const DetectorDescription detector =
      simulate ? find_detector(options.source.substr(4)) : feed->detector();

  tools::SlsPublisherOptions publisher_options;
  publisher_options.ports_per_module = options.ports_per_module;
  publisher_options.bind = options.bind;
  publisher_options.epoch_timestamps = options.epoch_timestamps;
  // The simulator's pool lives as long as the publisher; replayed events do not.
  publisher_options.events_outlive_publisher = simulate;
  tools::SlsPublisher publisher(detector, publisher_options);
  if (simulate) feed = std::make_unique<SimulatorFeed>(detector, options.seed, options.pool_events);
  std::cout << "sls publisher: " << detector.name << ", " << publisher.ports() << " ports ("
            << options.ports_per_module << " per module)\n"
            << "receive with: livedrp-engine run --source " << publisher.source_string() << "\n"
            << std::flush;

  if (options.wait_for_subscribers_s > 0) {
    std::cerr << "waiting for a subscriber on every port...\n";
    const auto timeout =
        std::chrono::milliseconds(std::int64_t(options.wait_for_subscribers_s * 1e3));
    if (!publisher.wait_for_subscribers(timeout))
      std::cerr << "not every port has a subscriber after " << options.wait_for_subscribers_s
                << " s; streaming anyway\n";
  }

  const auto start = Clock::now();
  auto last_report = start;
  std::uint64_t sent = 0, in_acquisition = 0;
  NextEvent event;
  while (!interrupted && (options.events == 0 || sent < options.events)) {
    if (!feed->next(sent, event)) break;
    if (options.rate_hz > 0) {
      std::this_thread::sleep_until(start +
                                    std::chrono::duration_cast<Clock::duration>(
                                        std::chrono::duration<double>(sent / options.rate_hz)));
    }
    publisher.send_event(options.first_frame + sent, event.data, event.timestamp_ns);
    ++sent;
    if (options.frames_per_acquisition > 0 && ++in_acquisition == options.frames_per_acquisition) {
      publisher.send_end_of_acquisition();
      in_acquisition = 0;
    }
    const auto now = Clock::now();
    if (now - last_report >= std::chrono::seconds(1)) {
      const double seconds = std::chrono::duration<double>(now - start).count();
      std::cerr << "sent " << sent << " events (" << sent / seconds << " Hz)\n";
      last_report = now;
    }
  }
  if (options.frames_per_acquisition == 0 || in_acquisition > 0)
    publisher.send_end_of_acquisition();
  std::cerr << "sent " << sent << " events; end of acquisition sent\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Streams detector events as the slsDetectorPackage receivers of a Jungfrau do"};
  app.set_version_flag("--version", std::string("livedrp-sls-publisher ") + LIVEDRP_VERSION);
  Options options;
  app.add_option("--source", options.source, "sim:DETECTOR or replay:PATH[:/dataset]");
  app.add_option("--bind", options.bind,
                 "first port's endpoint; the others follow (tcp://HOST:PORT, PORT+1, ...)");
  app.add_option("--ports-per-module", options.ports_per_module, "UDP ports per module")
      ->check(CLI::IsMember({1, 2}));
  app.add_option("--rate", options.rate_hz, "events per second (0: as fast as possible)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--events", options.events, "events to send (0: all, or forever for sim:)");
  app.add_flag("--loop", options.loop, "replay: start again after the last event");
  app.add_option("--frames-per-acquisition", options.frames_per_acquisition,
                 "end the acquisition after every N frames (0: one acquisition)");
  app.add_option("--first-frame", options.first_frame, "frame number of the first event");
  app.add_flag("--epoch-timestamps", options.epoch_timestamps,
               "put ns since the Unix epoch in 'timestamp' (default: Jungfrau's 10 MHz ticks)");
  app.add_option("--wait-for-subscribers", options.wait_for_subscribers_s,
                 "wait up to SECONDS for a subscriber on every port before streaming")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--replay-detector", options.replay_detector,
                 "replay: the detector when the file does not name it");
  app.add_option("--seed", options.seed, "sim: simulator seed");
  app.add_option("--pool-events", options.pool_events, "sim: distinct events generated ahead");
  CLI11_PARSE(app, argc, argv);

  std::signal(SIGINT, on_interrupt);
  std::signal(SIGTERM, on_interrupt);
  try {
    return run(options);
  } catch (const InputError& error) {
    std::cerr << "livedrp-sls-publisher: " << error.what() << "\n";
    return kExitBadInput;
  } catch (const std::exception& error) {
    std::cerr << "livedrp-sls-publisher: " << error.what() << "\n";
    return 1;
  }
}
