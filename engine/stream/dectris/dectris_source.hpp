#pragma once
// The Dectris SIMPLON stream (version 2) as a live source: `--source dectris:tcp://HOST:PORT`.
// The detector (an Eiger2 or Pilatus4 DCU, or Jungfraujoch) binds a ZeroMQ PUSH socket (port
// 31001 on a DCU); this source connects a PULL socket and one thread receives every message,
// decodes the images (raw, bslz4 or lz4) into the event queue and counts what it refuses
// (simplon_receiver.hpp). Events are the images' pixels, decompressed, little-endian, as sent.
#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include <zmq.hpp>

#include "stream/dectris/event_queue.hpp"
#include "stream/dectris/simplon_receiver.hpp"
#include "stream/stream_source.hpp"

namespace livedrp::stream::dectris {

class DectrisSource : public StreamSource {
 public:
  // Connects to `endpoint` ("tcp://HOST:PORT"). With options.detector empty, waits up to
  // options.wait_for_start for a start message (and, when it does not say the element type, the
  // series' first image) and describes the detector from them; throws InputError naming the
  // endpoint and what came instead when nothing usable came in time.
  DectrisSource(const std::string& endpoint, const StreamOptions& options);
  ~DectrisSource() override;
  DectrisSource(const DectrisSource&) = delete;
  DectrisSource& operator=(const DectrisSource&) = delete;

  const DetectorDescription& detector() const override { return detector_; }
  void start() override;
  std::optional<StreamEvent> next(std::chrono::milliseconds timeout) override;
  void stop() override;
  StreamCounts counts() const override { return receiver_.counts(); }
  void set_buffer_allocator(BufferAllocator allocator) override {
    queue_.set_buffer_allocator(std::move(allocator));
  }
  void* exchange_event_buffer(void* replacement) override {
    return queue_.exchange_held_buffer(replacement);
  }
  std::string describe() const override;
  // The pixel mask of the start message received so far (nonzero bits: bad), when it covers the
  // detector's pixels.
  std::vector<std::uint8_t> detector_bad_pixels() const override;

  // What the stream said about the current acquisition: the start message (beam centre,
  // distance, energy, count-rate correction, ...) and its pixel mask (Dectris bits per pixel,
  // nonzero = masked), for the engine to apply. nullptr when none came (the mask needs
  // header_detail "all" on a DCU).
  std::shared_ptr<const StartMessage> start_message() const { return receiver_.start_message(); }
  std::shared_ptr<const PixelMask> pixel_mask() const { return receiver_.pixel_mask(); }
  std::optional<AcquisitionSummary> acquisition() const { return receiver_.acquisition(); }

 private:
  // Receives and handles one message if one comes within the socket's receive timeout.
  void receive_one();
  void receive_loop();

  const std::string endpoint_;
  EventQueue queue_;
  SimplonReceiver receiver_;
  zmq::socket_t socket_;
  DetectorDescription detector_;
  std::thread thread_;
  std::atomic<bool> stopping_{false};
  bool started_ = false, stopped_ = false;
};

}  // namespace livedrp::stream::dectris

namespace livedrp::stream {

// A DectrisSource on `endpoint`, "tcp://HOST:PORT" (InputError naming it when malformed).
std::unique_ptr<StreamSource> open_dectris_source(const std::string& endpoint,
                                                  const StreamOptions& options);

}  // namespace livedrp::stream
