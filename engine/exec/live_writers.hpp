#pragma once
// The engine's side of the live writers (JSON "write"): which events go to which writer, and the
// calibrated image of hit events read back from the backend, all on the engine thread; the files
// are written by each writer's own thread (io/writer_queue.hpp), so the engine thread's share per
// event is a copy into a queued buffer, and nothing for an event no writer wants.
//
// The image of an event is readable from the backend only while its output buffer is not reused
// (Backend::read_output): the event released by the reorder stage at once is read when accounted;
// a hit held back by the reorder stage (several CUDA lanes finishing out of order) is read when it
// returns from the backend, into a spare buffer, and queued when released.
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "core/detector.hpp"
#include "core/image_assembly.hpp"
#include "exec/backend.hpp"
#include "exec/engine.hpp"
#include "io/average_image_writer.hpp"
#include "io/cxi_hit_writer.hpp"
#include "io/profile_series_writer.hpp"
#include "io/writer_queue.hpp"
#include "stages/stage.hpp"

namespace livedrp {

class LiveWriters {
 public:
  // Copies event `done`'s calibrated image (detector.pixels() floats) to `out`.
  using ReadImage = std::function<void(const CompletedEvent& done, float* out)>;

  // `stages` is the run's list; the peak stage and the integrate stage are found in it. Throws
  // InputError naming the option: hit files without peak finding, profiles without integration,
  // an average of a detector that cannot be assembled in a PONI's frame, a folder or file that
  // cannot be written (one that exists included). A refused set-up removes the files it had
  // created. config.write.segment names the files (io/segment_names.hpp): 1, the configured names.
  LiveWriters(const EngineConfig& config, const DetectorDescription& detector,
              const stages::StageList& stages, bool wait_when_full);
  // What the constructor refuses before it creates a file (a writer's stage missing, an average
  // of a detector that cannot be assembled in a PONI's frame), in its words; creates nothing.
  static void check(const EngineConfig& config, const DetectorDescription& detector,
                    const stages::StageList& stages);
  // write.when_full resolved for a source: "auto" waits unless the source is live (a stream, or
  // a simulator or replay paced at a rate), which must not stall for the disk.
  static bool waits_when_full(const WriteConfig& write, bool streaming, bool replaying,
                              double rate_hz, const std::string& replay_pace);
  ~LiveWriters();

  // Engine thread, when the backend returns `done` and the reorder stage holds it back.
  void keep_held(const CompletedEvent& done, const ReadImage& read);
  // Engine thread, every event in admission order; `readable`: the backend's output is still the
  // event's.
  void add(const CompletedEvent& done, bool readable, const ReadImage& read);
  // Writes what is queued, closes the files; throws RuntimeFault naming what failed.
  void close();
  WriteStatus status() const;

 private:
  struct HitItem {
    EventHeader header;
    std::vector<float> image;
    std::vector<peaks::Peak> peaks;
  };
  struct ProfileItem {
    EventHeader header;
    std::vector<double> intensity;
  };
  struct ImageItem {
    EventHeader header;
    std::vector<float> image;
  };
  // The average's sums, on its writer thread: per pixel the finite values and their count.
  struct AverageSums {
    std::vector<double> sum;
    std::vector<std::uint32_t> count;
    std::uint64_t events = 0, first_pulse_id = 0, last_pulse_id = 0;
  };
  void open(const EngineConfig& config, const DetectorDescription& detector,
            const stages::StageList& stages, bool wait_when_full);
  // A refused set-up: the writers go, and the files they created (empty) with them.
  void remove_created_files();
  bool is_hit(const CompletedEvent& done) const;
  // Fills `image` with the event's calibrated pixels: the copy kept when it was held back, or
  // read now; false when neither is possible.
  bool fill_image(const CompletedEvent& done, bool readable, const ReadImage& read,
                  const std::optional<std::vector<float>>& kept, std::vector<float>& image);
  void add_hit(const CompletedEvent& done, bool readable, const ReadImage& read,
               const std::optional<std::vector<float>>& kept);
  void add_to_average(const CompletedEvent& done, bool readable, const ReadImage& read,
                      const std::optional<std::vector<float>>& kept);
  void write_average();  // at close, on the closing thread
  void add_profile(const CompletedEvent& done);

  std::size_t pixels_ = 0;
  std::optional<std::size_t> peak_index_, integrate_index_;  // in the stage list
  std::unique_ptr<io::CxiHitWriter> hit_files_;
  std::unique_ptr<io::ProfileSeriesWriter> profile_file_;
  std::unique_ptr<io::WriterQueue<HitItem>> hits_;
  std::unique_ptr<io::WriterQueue<ProfileItem>> profiles_;
  std::unique_ptr<io::AverageImageWriter> average_file_;
  std::unique_ptr<ImageAssembly> assembly_;
  AverageSums average_;  // the average queue's thread, then close()
  std::unique_ptr<io::WriterQueue<ImageItem>> averages_;
  // Images of hits held back by the reorder stage, by admission, and spare buffers for them.
  std::map<std::uint64_t, std::vector<float>> held_;
  std::vector<std::vector<float>> spare_;
  bool closed_ = false;      // close() ran (the engine thread's, then the destructor's)
  std::string close_error_;  // closing a file failed; guarded by files_mutex() (live_writers.cpp)
  std::atomic<std::uint64_t> peaks_left_out_{0};
};

}  // namespace livedrp
