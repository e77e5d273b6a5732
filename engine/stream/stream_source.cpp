#include "stream/stream_source.hpp"

#include <numeric>

#include "core/error.hpp"
#include "stream/dectris/dectris_source.hpp"
#include "stream/sls/sls_source.hpp"

namespace livedrp::stream {
namespace {

std::uint64_t sum_of(const std::map<std::string, std::uint64_t>& counts) {
  return std::accumulate(
      counts.begin(), counts.end(), std::uint64_t(0),
      [](std::uint64_t total, const auto& entry) { return total + entry.second; });
}

bool starts_with(const std::string& text, const char* prefix) {
  return text.rfind(prefix, 0) == 0;
}

}  // namespace

std::uint64_t StreamCounts::rejected_total() const {
  return sum_of(rejected);
}
std::uint64_t StreamCounts::dropped_total() const {
  return sum_of(dropped);
}

bool is_stream_source(const std::string& source) {
  return starts_with(source, "sls:") || starts_with(source, "dectris:");
}

namespace {

void require_stream_source(const std::string& source) {
  if (!is_stream_source(source))
    throw InputError("'" + source +
                     "' is not a stream source (expected sls:tcp://HOST:PORT[,...] "
                     "or dectris:tcp://HOST:PORT)");
}

}  // namespace

std::unique_ptr<StreamSource> open_stream_source(const std::string& source,
                                                 const StreamOptions& options) {
  require_stream_source(source);
  if (starts_with(source, "dectris:"))
    return open_dectris_source(source.substr(std::string("dectris:").size()), options);
  return open_sls_source(parse_sls_endpoint_list(std::string_view(source).substr(4)), options);
}

std::optional<DetectorDescription> stream_source_detector(const std::string& source,
                                                          const StreamOptions& options) {
  require_stream_source(source);
  if (starts_with(source, "dectris:")) {
    if (options.detector.empty()) return std::nullopt;
    return find_detector(options.detector);
  }
  return sls_source_detector(parse_sls_endpoint_list(std::string_view(source).substr(4)), options);
}

}  // namespace livedrp::stream
