#include "publish/bind_endpoint.hpp"

#include <algorithm>
#include <cctype>
#include <optional>
#include <string_view>

#include <spdlog/spdlog.h>

#include "publish/curve_server.hpp"

namespace livedrp {
namespace {

constexpr std::string_view kTcp = "tcp://";

struct HostPort {
  std::string host, port;
};

std::optional<HostPort> split_tcp(const std::string& endpoint) {
  if (!endpoint.starts_with(kTcp)) return std::nullopt;
  const std::string rest = endpoint.substr(kTcp.size());
  const auto colon = rest.rfind(':');
  if (colon == std::string::npos) return HostPort{rest, ""};
  return HostPort{rest.substr(0, colon), rest.substr(colon + 1)};
}

}  // namespace

bool is_loopback_endpoint(const std::string& endpoint) {
  const auto parts = split_tcp(endpoint);
  if (!parts) return true;  // not TCP: not reachable from another machine
  const std::string& host = parts->host;
  return host.starts_with("127.") || host == "localhost" || host == "[::1]" || host == "::1";
}

std::string bind_endpoint_problem(const std::string& endpoint, const std::string& what) {
  const auto parts = split_tcp(endpoint);
  if (!parts) return {};
  if (parts->host.empty()) return "no host (e.g. tcp://127.0.0.1:5556)";
  const std::string& port = parts->port;
  if (port != "*") {
    if (port.empty() || port.size() > 5 ||
        !std::all_of(port.begin(), port.end(), [](unsigned char c) { return std::isdigit(c); }))
      return "the port must be a number from 1 to 65535 or * (any free port)";
    const int number = std::stoi(port);
    if (number < 1 || number > 65535)
      return "port " + port + " is outside 1..65535 (ZeroMQ would bind another port)";
  }
  if (!is_loopback_endpoint(endpoint)) {
    if (curve_server_active())
      spdlog::warn(
          "{} endpoint '{}' is reachable from other machines; CURVE admits only the listed "
          "client keys",
          what, endpoint);
    else
      spdlog::warn(
          "{} endpoint '{}' is reachable from other machines, and without CURVE keys "
          "(--curve-key, --curve-clients) livedrp does not authenticate who connects; bind "
          "tcp://127.0.0.1:PORT unless other machines must reach it",
          what, endpoint);
  }
  return {};
}

}  // namespace livedrp
