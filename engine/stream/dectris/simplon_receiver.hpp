#pragma once
// What the Dectris source does with each message, without sockets: follows acquisitions (start,
// images, end), checks every image against the engine's detector, decodes it into a buffer of
// the event queue, and counts every message that does not become an event with its reason.
//
// The detector is the one named in the options, or, when none is, built from the first start
// message (one segment of image_size_y x image_size_x, the pixel size) and the element type:
// the start message's image_dtype when it has one (Jungfraujoch), else the first image's typed
// array tag (Eiger and Pilatus say it nowhere else). Fixed from then on: later acquisitions of
// another shape or element type are refused as wrong_detector, their images too.
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>

#include "core/detector.hpp"
#include "core/thread_pool.hpp"
#include "stream/dectris/event_queue.hpp"
#include "stream/dectris/simplon_messages.hpp"
#include "stream/stream_source.hpp"

namespace livedrp::stream::dectris {

// One acquisition (series) as it went: how many images were announced and how many came.
struct AcquisitionSummary {
  std::uint64_t series_id = 0;
  std::string series_unique_id;
  std::uint64_t images_announced = 0;  // number_of_images (0: not said)
  std::uint64_t images_received = 0;   // handed to the queue or dropped as engine_busy
  std::uint64_t images_rejected = 0;
  // Counted when the acquisition ends (its end message, or the next start message when its end
  // never came), from the image ids below images_announced that came (as events, refused or
  // dropped): images_missing, the ids below the highest one that came which never came (lost on
  // the way: dropped as "missing_image"; images may come out of order, so only the end tells);
  // images_cut_by_end, the announced ids above the highest one that came (the end came in the
  // middle of the series: a detector stopped early, or the series' last images were lost).
  std::uint64_t images_missing = 0;
  std::uint64_t images_cut_by_end = 0;
  bool refused = false;  // the whole acquisition (wrong_detector)
  bool ended = false;    // its end message came
};

class SimplonReceiver {
 public:
  // `endpoint` names the stream in problems; `detector` is the engine's, or nullopt to take it
  // from the stream.
  SimplonReceiver(std::string endpoint, std::optional<DetectorDescription> detector,
                  std::size_t max_message_bytes, EventQueue& queue);

  // One ZeroMQ message. Never throws for anything in the bytes.
  void handle(std::span<const std::byte> message);

  // Whether the detector is known (always with a named one; else after the stream said it).
  bool has_detector() const;
  const DetectorDescription& detector() const;  // only when has_detector()

  StreamCounts counts() const;
  // The last accepted start message (nullptr before one), and its pixel mask for the channel
  // the images are taken from (nullptr when it carried none: header_detail "basic").
  std::shared_ptr<const StartMessage> start_message() const;
  std::shared_ptr<const PixelMask> pixel_mask() const;
  // The current or last acquisition.
  std::optional<AcquisitionSummary> acquisition() const;
  // Keeps a problem that is not a refused message (the receiving thread's own end).
  void note(const std::string& what);

 private:
  struct Acquisition {
    AcquisitionSummary summary;
    std::shared_ptr<const StartMessage> start;
    std::string refusal;  // why the acquisition is refused (wrong_detector)
    // The image ids below images_announced that came, as runs [first, end) merged as they come
    // (an ordered series is one run). Past kMaxIdRuns runs the oldest gap is counted missing.
    std::map<std::uint64_t, std::uint64_t> ids_came;
  };
  static constexpr std::size_t kMaxIdRuns = 4096;

  void handle_decoded(Message& message);
  void handle_start(StartMessage&& start);
  void handle_image(const ImageMessage& image);
  void handle_end(const EndMessage& end);
  // Notes that an image id of the current acquisition came (mutex_ held).
  void note_image_id(std::uint64_t image_id);
  // Counts the current acquisition's missing and cut-off images as it ends; `how` says how it
  // ended, for last_problem (mutex_ held).
  void count_unreceived_images(const std::string& how);
  // Counts a refused message under `reason` and keeps `what` (prefixed with the endpoint).
  void reject(const std::string& reason, const std::string& what);
  // The same for an image of the current acquisition, counted in its summary too.
  void reject_image(const std::string& reason, const std::string& what);

  // The detector this start message describes, or the reason it does not.
  std::optional<DetectorDescription> detector_from(const StartMessage& start,
                                                   const ElementType& type, Problem& problem) const;
  std::string expected_shape() const;
  std::int64_t timestamp_ns(const ImageMessage& image) const;

  const std::string endpoint_;
  const bool detector_named_;
  const std::size_t max_message_bytes_;
  EventQueue& queue_;
  // Decompresses an image's blocks on several cores: one thread decodes an Eiger2 4M's
  // bitshuffle-LZ4 image (18 MB) at about 1 GB/s, far below the detector's rate.
  std::unique_ptr<ThreadPool> decode_pool_;

  mutable std::mutex mutex_;  // guards what other threads read: counts, start, acquisition
  std::optional<DetectorDescription> detector_;
  StreamCounts counts_;
  std::optional<Acquisition> acquisition_;
  std::shared_ptr<const StartMessage> last_start_;
  std::shared_ptr<const PixelMask> pixel_mask_;
};

}  // namespace livedrp::stream::dectris
