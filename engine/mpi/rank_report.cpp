#include "mpi/rank_report.hpp"

#include "mpi/rank_messages.hpp"

#include <cstring>

#include "core/error.hpp"
#include "protocol/message.hpp"

namespace livedrp::mpi {
namespace {

using json = nlohmann::json;

template <typename T>
json blob(const std::vector<T>& values) {
  std::vector<std::uint8_t> bytes(values.size() * sizeof(T));
  if (!bytes.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
  return json::binary(std::move(bytes));
}

template <typename T>
std::vector<T> from_blob(const json& value, const std::string& field) {
  if (!value.is_binary()) throw std::runtime_error(field + " is not a binary array");
  const auto& bytes = value.get_binary();
  if (bytes.size() % sizeof(T) != 0)
    throw std::runtime_error(field + " has " + std::to_string(bytes.size()) +
                             " bytes, not a whole number of values");
  std::vector<T> values(bytes.size() / sizeof(T));
  if (!bytes.empty()) std::memcpy(values.data(), bytes.data(), bytes.size());
  return values;
}

json profile_json(const ProfileSums& p) {
  return {{"unit", std::string(protocol::to_string(p.unit))},
          {"window", p.window},
          {"events", p.events},
          {"latest_sequence", p.latest_sequence},
          {"latest_pulse_id", p.latest_pulse_id},
          {"centres", blob(p.centres)},
          {"sum", blob(p.sum)},
          {"finite", blob(p.finite)},
          {"latest", blob(p.latest)}};
}

ProfileSums profile_from_json(const json& j) {
  ProfileSums p;
  p.unit = protocol::radial_unit_from_string(j.at("unit").get<std::string>());
  p.window = j.at("window").get<std::uint64_t>();
  p.events = j.at("events").get<std::uint64_t>();
  p.latest_sequence = j.at("latest_sequence").get<std::uint64_t>();
  p.latest_pulse_id = j.at("latest_pulse_id").get<std::uint64_t>();
  p.centres = from_blob<double>(j.at("centres"), "profile.centres");
  p.sum = from_blob<double>(j.at("sum"), "profile.sum");
  p.finite = from_blob<std::uint64_t>(j.at("finite"), "profile.finite");
  p.latest = from_blob<double>(j.at("latest"), "profile.latest");
  const std::size_t bins = p.centres.size();
  if (bins == 0 || p.sum.size() != bins || p.finite.size() != bins || p.latest.size() != bins)
    throw std::runtime_error("profile arrays of unequal length (centres " + std::to_string(bins) +
                             ", sum " + std::to_string(p.sum.size()) + ", finite " +
                             std::to_string(p.finite.size()) + ", latest " +
                             std::to_string(p.latest.size()) + ")");
  if (p.window == 0 || p.events > p.window)
    throw std::runtime_error("profile window of " + std::to_string(p.events) + " events of " +
                             std::to_string(p.window));
  return p;
}

}  // namespace

namespace {

// A protocol message as CBOR binary parts, and back (validated by the topic's reader).
json message_parts(const protocol::Message& message) {
  json parts = json::array();
  for (const std::string& part : protocol::encode(message))
    parts.push_back(json::binary(std::vector<std::uint8_t>(part.begin(), part.end())));
  return parts;
}

protocol::Message message_of(const json& parts, const char* what) {
  if (!parts.is_array())
    throw std::runtime_error(std::string("a ") + what + " message is not an array of parts");
  std::vector<std::string> bytes;
  for (const json& part : parts) {
    const auto& b = part.get_binary();
    bytes.emplace_back(b.begin(), b.end());
  }
  const std::vector<std::string_view> views(bytes.begin(), bytes.end());
  return protocol::decode(views);
}

}  // namespace

json encode_peaks(const protocol::EventPeaks& peaks) {
  return message_parts(protocol::make_peaks_message(peaks));
}

protocol::EventPeaks decode_peaks(const json& parts) {
  return protocol::peaks_from_message(message_of(parts, "peaks"));
}

json encode_image(const protocol::ImageFrame& image) {
  return message_parts(protocol::make_image_message(image));
}

protocol::ImageFrame decode_image(const json& parts) {
  return protocol::image_from_message(message_of(parts, "image"));
}

std::vector<std::uint8_t> encode_report(const RankReport& report) {
  json j = {{"rank", report.rank},
            {"run", report.run},
            {"final", report.final},
            {"error", report.error},
            {"host", report.host},
            {"pid", report.pid},
            {"stats", protocol::to_json(report.stats)}};
  // Only the non-empty bins: a run's latencies fill a few dozen of the histogram's 1852.
  std::vector<std::uint32_t> bins;
  std::vector<std::uint64_t> counts;
  for (std::size_t b = 0; b < LatencyHistogram::kBins; ++b)
    if (const std::uint64_t n = report.latency.bins()[b]) {
      bins.push_back(std::uint32_t(b));
      counts.push_back(n);
    }
  j["latency"] = {{"bins", blob(bins)}, {"counts", blob(counts)}};
  if (report.latency.count() > 0) j["latency"]["max_us"] = report.latency.max_us();
  if (report.profile) j["profile"] = profile_json(*report.profile);
  if (report.hit) j["hit"] = encode_peaks(*report.hit);
  if (report.image) j["image"] = encode_image(*report.image);
  if (!report.messages.empty()) {
    json messages = json::array();
    for (const protocol::Message& message : report.messages)
      messages.push_back(message_parts(message));
    j["messages"] = std::move(messages);
  }
  return json::to_cbor(j);
}

RankReport decode_report(const std::vector<std::uint8_t>& bytes, int from_rank) {
  try {
    const json j = json::from_cbor(bytes);
    RankReport report;
    report.rank = j.at("rank").get<int>();
    if (report.rank != from_rank)
      throw std::runtime_error("it says it is rank " + std::to_string(report.rank));
    report.run = j.at("run").get<std::int64_t>();
    report.final = j.at("final").get<bool>();
    report.error = j.at("error").get<std::string>();
    report.host = j.at("host").get<std::string>();
    report.pid = j.at("pid").get<std::uint64_t>();
    report.stats = protocol::stats_from_json(j.at("stats"));
    const json& latency = j.at("latency");
    const auto bins = from_blob<std::uint32_t>(latency.at("bins"), "latency.bins");
    const auto counts = from_blob<std::uint64_t>(latency.at("counts"), "latency.counts");
    if (bins.size() != counts.size())
      throw std::runtime_error("latency: " + std::to_string(bins.size()) + " bins, " +
                               std::to_string(counts.size()) + " counts");
    for (std::size_t k = 0; k < bins.size(); ++k) {
      if (bins[k] >= LatencyHistogram::kBins)
        throw std::runtime_error("latency bin " + std::to_string(bins[k]) + " past the last");
      report.latency.add_to_bin(bins[k], counts[k]);
    }
    if (const auto max = latency.find("max_us"); max != latency.end())
      report.latency.raise_max(max->get<double>());
    if (const auto p = j.find("profile"); p != j.end()) report.profile = profile_from_json(*p);
    if (const auto hit = j.find("hit"); hit != j.end()) report.hit = decode_peaks(*hit);
    if (const auto image = j.find("image"); image != j.end()) report.image = decode_image(*image);
    if (const auto messages = j.find("messages"); messages != j.end()) {
      if (!messages->is_array()) throw std::runtime_error("messages is not an array");
      for (const json& parts : *messages) {
        protocol::Message message = message_of(parts, "stage");
        if (!forwarded_topic(message.topic))
          throw std::runtime_error("a forwarded message on topic '" + message.topic + "'");
        report.messages.push_back(std::move(message));
      }
    }
    return report;
  } catch (const std::exception& e) {
    throw RuntimeFault("MPI: the report of rank " + std::to_string(from_rank) +
                       " cannot be read: " + e.what());
  }
}

}  // namespace livedrp::mpi
