#pragma once
// What a processing rank sends the collector at each stats interval (and once more, `final`, when
// its run has ended): its whole-run counts (the engine's summary, so a report that is skipped or
// arrives late loses nothing: the next one carries everything), its profile sums and its newest
// hit. Sent as one MPI message of bytes: CBOR, with the numeric arrays as binary blobs of
// little-endian values (every rank of a run runs the same build on the same architecture).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "exec/latency_histogram.hpp"
#include "mpi/rank_sums.hpp"
#include "protocol/topics.hpp"

namespace livedrp::mpi {

struct RankReport {
  int rank = 0;
  std::int64_t run = 0;  // the run number its engine runs (an apply starts the next one)
  bool final = false;    // the rank's run has ended: nothing follows
  std::string error;     // its run's fault; empty when none
  std::string host;      // MPI_Get_processor_name
  std::uint64_t pid = 0;
  protocol::StatsPayload stats;  // cumulative, as Engine::summary() gives it
  LatencyHistogram latency;      // the whole run's (sent as its non-empty bins)
  std::optional<ProfileSums> profile;
  std::optional<protocol::EventPeaks> hit;
  // The rank's newest `image` event since its previous report (image.publish_hz); none when no
  // new one was kept.
  std::optional<protocol::ImageFrame> image;
  // The newest message of each forwarded topic its stage books published since its previous
  // report (rank_messages.hpp).
  std::vector<protocol::Message> messages;
};

std::vector<std::uint8_t> encode_report(const RankReport& report);
// A `peaks` message (a hit in a report or a rank's answer) as CBOR binary parts, and back; the
// decoder validates the message and throws (ProtocolError, std::runtime_error) naming the fault.
nlohmann::json encode_peaks(const protocol::EventPeaks& peaks);
protocol::EventPeaks decode_peaks(const nlohmann::json& parts);
// An `image` message the same way.
nlohmann::json encode_image(const protocol::ImageFrame& image);
protocol::ImageFrame decode_image(const nlohmann::json& parts);
// Throws RuntimeFault naming `from_rank` and what is wrong with its bytes.
RankReport decode_report(const std::vector<std::uint8_t>& bytes, int from_rank);

}  // namespace livedrp::mpi
