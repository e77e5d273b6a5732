#pragma once
// Hosts the embedded Engine for the GUI. Every Engine call (construct, start, request_stop, wait,
// destroy) runs on the host's own worker thread, so the GUI thread only posts commands and never
// waits for the engine; results come back as queued signals.
//
// States the host reports itself (the `status` topic's vocabulary): starting (while the engine is
// constructed: detector, simulator, backend, publisher), stopping, and the end: finished, or error
// with the InputError / RuntimeFault text. In between, the engine's own `status` messages speak.
// The Engine of a finished run is kept until the next start (or the host's end), so its publisher
// still serves the final values to subscribers.
//
// The host owns the publisher and keeps it across runs while the endpoint stays the same, so
// subscribers stay connected when a new configuration is applied. apply() replaces the running
// engine: the new one is built first (with the old one still running), so a configuration the
// engine rejects leaves the old run untouched; then the old run is stopped and drained and the new
// one starts with the next run number.
//
// Live writers (config.write) are given segments exactly as `livedrp-engine run --control` gives
// them (exec/write_segments.hpp; docs/formats.md, "Segments of a controlled run"): a restart with
// the same write paths (start after stop, apply) writes profiles.seg002.h5 and so on instead of
// being refused because the previous run of this host wrote the configured names.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <QObject>
#include <QString>

#include "exec/engine.hpp"
#include "exec/write_segments.hpp"
#include "widgets/protocol_metatypes.hpp"

namespace livedrp::app {

class EngineHost : public QObject {
  Q_OBJECT

 public:
  // How often the worker looks whether a run ended by itself (event count reached, fault).
  static constexpr std::chrono::milliseconds kFinishPoll{50};

  explicit EngineHost(QObject* parent = nullptr);
  // Stops a run in progress, destroys the engine and joins the worker. This is the one place that
  // waits for the engine; it runs when the window closes.
  ~EngineHost() override;

  // Returns false (and does nothing) while a run is active. Never blocks.
  bool start(const EngineConfig& config);
  // Asks the run to stop; events in flight are drained. Never blocks. No-op when idle.
  void stop();
  // Replaces the running engine with one built from `config` (its run number and publish endpoint
  // are the host's: the current run + 1, the current endpoint). Answers with applied() or
  // applyFailed(). Returns false (and does nothing) while no run is active. Never blocks.
  bool apply(const EngineConfig& config);
  // Replay controls on the running engine (Engine::pause, resume, step, seek), run on the worker
  // like every other engine call. A refusal (no replay source, a seek past the end, no run)
  // comes back as replayControlFailed(). Never block.
  void pauseReplay();
  void resumeReplay();
  void stepReplay(qint64 delta);
  void seekReplay(quint64 index);
  // Peak finding on the running engine (Engine::peak_params, set_peak_params, rerun_peaks), on
  // the worker like the replay controls; the replies are the control socket's JSON
  // (docs/protocol.md): get_peak_params' and set_peak_params' come back as peakParamsReceived,
  // rerun_peaks' as peakRerunDone, a refusal (no run, peak finding off, a bad value) as
  // peakRequestFailed. A change is kept in the configuration the next run starts with. Never
  // block.
  void requestPeakParams();
  void setPeakParams(const nlohmann::json& partial);  // {"params": {...}} or the names
  void rerunPeaks(std::optional<std::uint64_t> frames);

  // When on, every stats interval of the engine is also sent as statsReported() (no subscriber
  // needed: the comparison runner records runs this way). Takes effect at the next start.
  void setStatsForwarding(bool on) { forward_stats_ = on; }
  // The configuration of the current (or last) run as the engine took it; the GUI thread's copy.
  const EngineConfig& currentConfig() const { return current_config_; }

  // Between start() and the run's end (finished or error), as seen from the GUI thread.
  bool isActive() const { return active_; }
  QString state() const { return state_; }
  QString endpoint() const { return endpoint_; }  // as bound by the current/last engine
  // The live writers of every run this host started, oldest first (runs without writers are not
  // listed); the current run's as last reported by writersReported().
  const std::vector<WriteSegment>& writeSegments() const { return write_segments_; }

 signals:
  // Every state change as a status payload (state, message, source, backend, device, config),
  // stamped with the time it happened (Unix ns) so it can be ordered with status from the wire.
  void statusChanged(livedrp::protocol::StatusPayload status, qint64 time_ns);
  // The engine is constructed and started; `endpoint` is where it publishes (port filled in).
  void started(QString endpoint, QString backend, QString device);
  // The run ended: the summary's cumulative stats, and its error text (empty when it finished).
  void runFinished(livedrp::protocol::StatsPayload summary, QString error);
  // Bad configuration or a fault (the exception's text).
  void errorOccurred(QString error);
  // apply() took effect: the new engine runs `config` (run number included).
  void applied(QString config_json, qint64 run);
  // apply() was refused (the engine's error text); the previous run goes on unchanged.
  void applyFailed(QString error);
  // Where the replay and the recording stand: sent every kFinishPoll while a run goes, after each
  // replay control, and once when the run ends (so the last position shows).
  void replayStatusChanged(livedrp::ReplayStatus replay, livedrp::RecordStatus record);
  // A replay control was refused (the engine's error text).
  void replayControlFailed(QString error);
  // {"params": {...}, "params_version": N, "enabled": b}
  void peakParamsReceived(const nlohmann::json& reply);
  // {"frames", "hits", "peaks_per_frame", "sequences", "params_version"}
  void peakRerunDone(const nlohmann::json& result);
  void peakRequestFailed(QString error);
  // A run with live writers started (`ended` false: its files are created, nothing written yet)
  // or ended (`ended` true: what its writers wrote, to which files).
  void writersReported(livedrp::WriteSegment segment, bool ended);
  // A stats interval of the running engine (only with setStatsForwarding(true)).
  void statsReported(livedrp::protocol::StatsPayload stats, qint64 run);

 private:
  struct Command {
    enum class Kind {
      Start,
      Stop,
      Apply,
      Pause,
      Resume,
      Step,
      Seek,
      PeakParams,
      SetPeakParams,
      RerunPeaks,
      Quit
    } kind;
    EngineConfig config;
    std::int64_t delta = 0;               // Step
    std::uint64_t index = 0;              // Seek
    nlohmann::json peak_params;           // SetPeakParams
    std::optional<std::uint64_t> frames;  // RerunPeaks
  };
  void post(Command command);
  void workerLoop();
  // Worker-side helpers; each posts its results to the GUI thread.
  void workerStart(const EngineConfig& config);
  void workerStop();
  void workerApply(EngineConfig config);
  // Builds an engine publishing through the host's publisher (made or replaced as needed).
  std::unique_ptr<Engine> makeEngine(const EngineConfig& config);
  void announceStarted(const EngineConfig& config);
  void workerFinish();
  void workerReplayControl(const Command& command);
  void workerPeakRequest(const Command& command);
  void reportReplayStatus();
  void reportWriters(const Engine& engine, bool ended);
  void reportStatus(const QString& state, const QString& message);
  void reportError(const QString& error);

  // Shared between GUI and worker.
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Command> commands_;

  // Worker only.
  std::shared_ptr<Publisher> publisher_;
  std::string publisher_requested_;  // the endpoint publisher_ was bound for (before * is filled)
  std::unique_ptr<Engine> engine_;
  WriteSegments segments_;  // the write segments of every engine this host built
  bool running_ = false;
  EngineConfig config_;
  QString backend_;
  QString device_;

  // Set on the GUI thread before a start; read by the worker when it builds an engine.
  std::atomic<bool> forward_stats_{false};

  // GUI thread only.
  EngineConfig current_config_;
  bool active_ = false;
  QString state_ = QStringLiteral("idle");
  QString endpoint_;
  std::vector<WriteSegment> write_segments_;

  std::thread worker_;  // last member: starts after everything above exists
};

}  // namespace livedrp::app

Q_DECLARE_METATYPE(livedrp::WriteSegment)
