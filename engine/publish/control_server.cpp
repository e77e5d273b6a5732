#include "publish/control_server.hpp"

#include <cerrno>
#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <thread>

#include <spdlog/spdlog.h>
#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "core/error.hpp"
#include "protocol/control.hpp"
#include "protocol/subscriber.hpp"
#include "protocol/topics.hpp"
#include "publish/bind_endpoint.hpp"
#include "publish/curve_server.hpp"
#include "publish/engine_control_target.hpp"
#include "publish/replay_candidates.hpp"

namespace livedrp {

namespace {

using nlohmann::json;

// How often the server thread looks at its stop flag between requests: the bound on how long
// destruction waits when no request is being handled.
constexpr std::chrono::milliseconds kPollPeriod{50};

// A message larger than this is not even read: ZeroMQ drops the connection of the peer that sent
// it (that client times out). Between kControlMaxRequestBytes and this, the request is read and
// answered with an error, which is what a confused client needs to see.
constexpr std::int64_t kHardMessageLimitBytes = std::int64_t(64) << 20;

// Time ZeroMQ may take to deliver the last reply after the socket closes (the answer to
// "shutdown" goes out just before the host destroys the server). The shared context is never
// terminated, so closing never blocks on this.
constexpr int kLingerMs = 1000;

// What the socket drops without an answer (messages that are no request, answers nobody can take)
// is logged at most once per period, with the count, so that a scan or a flood cannot fill the log.
constexpr std::chrono::seconds kDropLogPeriod{10};

std::string shorten(std::string_view text) {
  constexpr std::size_t kMaxShown = 60;
  return text.size() <= kMaxShown ? std::string(text)
                                  : std::string(text.substr(0, kMaxShown)) + "...";
}

std::string shown(const json& value) {
  return shorten(value.dump(-1, ' ', false, json::error_handler_t::replace));
}

// A request that carries something wrong: the text is the reply's "error".
struct BadRequest : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The fields a request may carry besides the envelope, and whether each is a required object.
struct RequestShape {
  std::set<std::string> object_fields;  // each required, each a JSON object
  // Allowed besides those; their presence and types depend on other fields, so the request's own
  // handler checks them ("replay": "action" always, "delta" only with step, "index" with seek).
  std::set<std::string> other_fields = {};
};

const std::map<std::string, RequestShape, std::less<>>& request_shapes() {
  static const std::map<std::string, RequestShape, std::less<>> shapes = {
      {"status", {}},
      {"get_config", {}},
      {"apply", {{"config"}}},
      {"check", {{"config"}}},
      {"set_runtime", {{"runtime"}}},
      {"set_calibration", {{"calibration"}}},
      {"start", {}},
      {"stop", {}},
      {"shutdown", {}},
      {"replay", {{}, {"action", "delta", "index"}}},
      {"replay_candidates", {{}, {"path"}}},
      {"get_peak_params", {}},
      {"set_peak_params", {{"params"}}},
      {"rerun_peaks", {{}, {"frames"}}},
  };
  return shapes;
}

std::string known_requests() {
  std::string names;
  for (const auto name : protocol::kControlRequests)
    names += (names.empty() ? "" : ", ") + std::string(name);
  return names;
}

// Checks the request's own fields against its shape: each required object present and an object,
// nothing else besides the envelope.
void check_fields(const std::string& name, const json& body, const RequestShape& shape) {
  for (const std::string& field : shape.object_fields) {
    const auto value = body.find(field);
    if (value == body.end())
      throw BadRequest("request '" + name + "' lacks field '" + field + "' (a JSON object)");
    if (!value->is_object())
      throw BadRequest("request '" + name + "': field '" + field + "' must be a JSON object, got " +
                       shown(*value));
  }
  for (auto it = body.begin(); it != body.end(); ++it) {
    const std::string& key = it.key();
    if (key == "schema" || key == "schema_version" || key == "request") continue;
    if (!shape.object_fields.count(key) && !shape.other_fields.count(key))
      throw BadRequest("request '" + name + "': unknown field '" + shorten(key) + "'");
  }
}

// The "replay" request's action and its argument (ReplayAction), checked before anything is done:
// a step needs a non-zero integer "delta" (default 1), a seek a non-negative integer "index";
// neither field is accepted with an action that would ignore it, so a typo cannot pass silently.
ReplayAction read_replay_action(const json& body) {
  static const std::set<std::string, std::less<>> kActions = {"status", "pause", "resume", "step",
                                                              "seek"};
  const auto action = body.find("action");
  if (action == body.end())
    throw BadRequest(
        "request 'replay' lacks field 'action' (one of status, pause, resume, step, seek)");
  if (!action->is_string() || !kActions.count(action->get_ref<const std::string&>()))
    throw BadRequest(
        "request 'replay': field 'action' must be one of status, pause, resume, step, seek, got " +
        shown(*action));
  ReplayAction result;
  result.action = action->get<std::string>();
  const auto delta = body.find("delta");
  const auto index = body.find("index");
  if (delta != body.end()) {
    if (result.action != "step")
      throw BadRequest("request 'replay': field 'delta' goes only with action 'step'");
    if (!delta->is_number_integer() || delta->get<std::int64_t>() == 0)
      throw BadRequest("request 'replay': field 'delta' must be a non-zero integer, got " +
                       shown(*delta));
    result.delta = delta->get<std::int64_t>();
  }
  if (result.action == "seek") {
    if (index == body.end())
      throw BadRequest("request 'replay' with action 'seek' lacks field 'index' (an event index)");
    if (!index->is_number_unsigned())
      throw BadRequest("request 'replay': field 'index' must be a non-negative integer, got " +
                       shown(*index));
    result.index = index->get<std::uint64_t>();
  } else if (index != body.end()) {
    throw BadRequest("request 'replay': field 'index' goes only with action 'seek'");
  }
  return result;
}

// "rerun_peaks": "frames" optional, a positive integer (the engine checks it against
// peak_finding.recent_frames).
std::optional<std::uint64_t> read_rerun_frames(const json& body) {
  const auto frames = body.find("frames");
  if (frames == body.end()) return std::nullopt;
  if (!frames->is_number_unsigned() || frames->get<std::uint64_t>() == 0)
    throw BadRequest("request 'rerun_peaks': field 'frames' must be a positive integer, got " +
                     shown(*frames));
  return frames->get<std::uint64_t>();
}

// "replay_candidates": "path" required, a non-empty string (a file on the engine's machine).
std::string read_candidates_path(const json& body) {
  const auto path = body.find("path");
  if (path == body.end())
    throw BadRequest(
        "request 'replay_candidates' lacks field 'path' (the HDF5 file, on the engine's machine)");
  if (!path->is_string() || path->get_ref<const std::string&>().empty())
    throw BadRequest(
        "request 'replay_candidates': field 'path' must be a non-empty string (a file), got " +
        shown(*path));
  return path->get<std::string>();
}

// The requests a read-only socket answers: they change nothing and read no file.
bool read_only_request(std::string_view name) {
  return name == "status" || name == "get_config" || name == "get_peak_params";
}

// Rate-limited warnings about dropped messages: the first at once, then at most one per
// kDropLogPeriod, each with how many were dropped since the last.
class DropLog {
 public:
  void note(const std::string& endpoint, const std::string& what) {
    ++total_;
    ++unlogged_;
    const auto now = std::chrono::steady_clock::now();
    if (total_ > 1 && now - last_ < kDropLogPeriod) return;
    const std::string more =
        unlogged_ > 1 ? ", and " + std::to_string(unlogged_ - 1) + " more since the last warning"
                      : std::string();
    spdlog::warn("control socket {}: dropped {}{} ({} dropped so far)", endpoint, what, more,
                 total_);
    last_ = now;
    unlogged_ = 0;
  }

 private:
  std::uint64_t total_ = 0;
  std::uint64_t unlogged_ = 0;
  std::chrono::steady_clock::time_point last_{};
};

}  // namespace

struct ControlServer::Impl {
  std::unique_ptr<ControlTarget> owned_target;  // the one engine's, when made for a controller
  ControlTarget& target;
  ControlAccess access = ControlAccess::Full;
  ControlRoots roots;
  // A ROUTER, not a REP: the server keeps each request's envelope and sends it back with the
  // answer itself. libzmq's REP drops a message that lacks the envelope's empty delimiter, but
  // when its sender is already gone the drop leaves the reply routing mid-message, and the next
  // client's answer goes nowhere (that client times out).
  zmq::socket_t socket;
  std::string bound_endpoint;
  std::atomic<bool> stopping{false};
  std::atomic<bool> shutdown{false};
  std::atomic<std::uint64_t> answered{0};
  DropLog dropped;  // used by the server thread only
  std::thread thread;

  Impl(ControlTarget& target_, const std::string& endpoint)
      : target(target_), socket(protocol::shared_zmq_context(), zmq::socket_type::router) {
    socket.set(zmq::sockopt::linger, kLingerMs);
    socket.set(zmq::sockopt::maxmsgsize, kHardMessageLimitBytes);
    // An answer whose client is gone, or whose queue is full, is refused at its first part
    // (EHOSTUNREACH, EAGAIN) instead of vanishing: the server logs it and goes on.
    socket.set(zmq::sockopt::router_mandatory, 1);
    // CURVE when the process has a CurveServer (curve_server.hpp); otherwise plain, refusing
    // peers that speak no ZMTP 3, which random bytes then are.
    if (!apply_curve_server(socket)) refuse_pre_zmtp3_peers(socket);
    if (const std::string problem = bind_endpoint_problem(endpoint, "control"); !problem.empty())
      throw InputError("cannot bind control socket to '" + endpoint + "': " + problem);
    try {
      socket.bind(endpoint);
    } catch (const zmq::error_t& error) {
      throw InputError("cannot bind control socket to '" + endpoint + "': " + error.what());
    }
    bound_endpoint = socket.get(zmq::sockopt::last_endpoint);
  }

  json dispatch(const std::string& name, const json& body) {
    if (name == "status") return target.status();
    if (name == "get_config") return target.get_config();
    if (name == "apply") {
      roots.check_configuration(body.at("config"));
      return target.apply(body.at("config"));
    }
    if (name == "check") {
      roots.check_configuration(body.at("config"));
      return target.check(body.at("config"));
    }
    if (name == "set_runtime") return target.apply({{"runtime", body.at("runtime")}});
    if (name == "set_calibration") return target.apply({{"calibration", body.at("calibration")}});
    if (name == "start") return target.start();
    if (name == "stop") return target.stop();
    if (name == "replay") return target.replay(read_replay_action(body));
    if (name == "replay_candidates") {
      const std::string path = read_candidates_path(body);
      roots.check("path", path);
      return replay_candidates_result(path);
    }
    if (name == "get_peak_params") return target.get_peak_params();
    if (name == "set_peak_params") return target.set_peak_params(body.at("params"));
    if (name == "rerun_peaks") return target.rerun_peaks(read_rerun_frames(body));
    if (name == "shutdown") {
      shutdown = true;
      return target.shutdown_result();
    }
    // request_shapes() and this function list the same names; reaching here is a bug, answered.
    throw BadRequest("request '" + name + "' is known but not handled");
  }

  json handle(const std::vector<std::string_view>& parts) {
    try {
      if (parts.size() != 1)
        throw BadRequest("a request is one message part holding one JSON object, got " +
                         std::to_string(parts.size()) + " parts");
      if (parts.front().size() > protocol::kControlMaxRequestBytes)
        throw BadRequest("request of " + std::to_string(parts.front().size()) +
                         " bytes is larger than the limit of " +
                         std::to_string(protocol::kControlMaxRequestBytes) + " bytes");
      const protocol::ControlRequest request = protocol::parse_control_request(parts.front());
      const auto shape = request_shapes().find(request.name);
      if (shape == request_shapes().end())
        throw BadRequest("unknown request '" + shorten(request.name) +
                         "' (known: " + known_requests() + ")");
      check_fields(request.name, request.body, shape->second);
      if (access == ControlAccess::ReadOnly && !read_only_request(request.name))
        throw BadRequest("request '" + request.name +
                         "' refused: this control socket is read-only (--control-read-only); it "
                         "answers status, get_config and get_peak_params");
      try {
        return protocol::make_control_ok(dispatch(request.name, request.body));
      } catch (const InputError& error) {
        throw BadRequest("request '" + request.name + "' refused: " + error.what());
      } catch (const RuntimeFault& error) {
        throw BadRequest("request '" + request.name + "' failed: " + error.what());
      }
    } catch (const BadRequest& error) {
      return protocol::make_control_error(error.what());
    } catch (const protocol::ProtocolError& error) {
      return protocol::make_control_error(error.what());
    } catch (const std::exception& error) {
      // Anything else (out of memory, a library's surprise) is still this request's answer.
      return protocol::make_control_error(std::string("request failed: ") + error.what());
    }
  }

  // Sends `answer` behind `envelope` (the routing id and what the client put before the empty
  // delimiter, the delimiter included). Never blocks and never leaves the socket mid-message:
  // ROUTER refuses a message only at its first part, and an envelope refused there is dropped
  // whole.
  void reply(std::vector<zmq::message_t>& envelope, const json& answer) {
    std::string text;
    try {
      text = answer.dump(-1, ' ', false, json::error_handler_t::replace);
    } catch (const std::exception& error) {
      text =
          protocol::make_control_error(std::string("reply could not be encoded: ") + error.what())
              .dump(-1, ' ', false, json::error_handler_t::replace);
    }
    // Counted before the send: a client that has its reply must find it counted already.
    answered.fetch_add(1, std::memory_order_relaxed);
    std::size_t sent = 0;
    std::string problem;
    try {
      for (zmq::message_t& part : envelope) {
        if (!socket.send(part, zmq::send_flags::sndmore | zmq::send_flags::dontwait)) break;
        ++sent;
      }
      if (sent == envelope.size()) {
        if (socket.send(zmq::buffer(text), zmq::send_flags::dontwait)) return;
      }
      problem = "its client's queue is full";
    } catch (const zmq::error_t& error) {
      problem = error.num() == EHOSTUNREACH ? "its client is gone" : error.what();
    }
    answered.fetch_sub(1, std::memory_order_relaxed);
    // Past the first part ROUTER takes every part; should one be refused all the same, an empty
    // last part ends the message, so that the next answer starts with its own routing id.
    if (sent > 0) {
      try {
        (void)socket.send(zmq::message_t(), zmq::send_flags::dontwait);
      } catch (const zmq::error_t&) {
      }
    }
    dropped.note(bound_endpoint, "an answer: " + problem);
  }

  void serve() {
    while (!stopping) {
      zmq::pollitem_t item{socket.handle(), 0, ZMQ_POLLIN, 0};
      try {
        zmq::poll(&item, 1, kPollPeriod);
      } catch (const zmq::error_t& error) {
        if (error.num() == EINTR) continue;
        spdlog::error("control socket {}: cannot wait for requests: {}", bound_endpoint,
                      error.what());
        break;
      }
      if (!(item.revents & ZMQ_POLLIN)) continue;
      std::vector<zmq::message_t> parts;
      try {
        if (!zmq::recv_multipart(socket, std::back_inserter(parts), zmq::recv_flags::dontwait))
          continue;
      } catch (const zmq::error_t& error) {
        dropped.note(bound_endpoint,
                     std::string("a message that could not be read: ") + error.what());
        continue;
      }
      // The routing id ROUTER put first, what a REQ socket (and any proxy on the way) put before
      // the empty delimiter, the delimiter, then the request. A message without a delimiter, or
      // with nothing after it, comes from no request-reply client: it gets no answer.
      std::size_t delimiter = 1;
      while (delimiter < parts.size() && parts[delimiter].size() != 0) ++delimiter;
      if (delimiter + 1 >= parts.size()) {
        dropped.note(bound_endpoint,
                     "a message without a request (no empty delimiter, or nothing after it)");
        continue;
      }
      std::vector<std::string_view> views;
      views.reserve(parts.size() - delimiter - 1);
      for (std::size_t i = delimiter + 1; i < parts.size(); ++i)
        views.push_back(parts[i].to_string_view());
      const json answer = handle(views);
      parts.resize(delimiter + 1);
      reply(parts, answer);
    }
    socket.close();  // in the thread that used it
  }
};

ControlServer::ControlServer(EngineController& controller, const std::string& endpoint,
                             ControlAccess access, ControlRoots roots)
    : ControlServer(std::make_unique<EngineControlTarget>(controller), endpoint, access,
                    std::move(roots)) {}

ControlServer::ControlServer(ControlTarget& target, const std::string& endpoint,
                             ControlAccess access, ControlRoots roots)
    : impl_(std::make_unique<Impl>(target, endpoint)) {
  impl_->access = access;
  impl_->roots = std::move(roots);
  // Starting the thread is a full memory barrier, as ZeroMQ asks when a socket changes threads.
  impl_->thread = std::thread([impl = impl_.get()] { impl->serve(); });
}

ControlServer::ControlServer(std::unique_ptr<ControlTarget> target, const std::string& endpoint,
                             ControlAccess access, ControlRoots roots)
    : ControlServer(*target, endpoint, access, std::move(roots)) {
  impl_->owned_target = std::move(target);
}

ControlServer::~ControlServer() {
  impl_->stopping = true;
  if (impl_->thread.joinable()) impl_->thread.join();
}

std::string ControlServer::endpoint() const {
  return impl_->bound_endpoint;
}

bool ControlServer::shutdown_requested() const {
  return impl_->shutdown;
}

std::uint64_t ControlServer::requests_answered() const {
  return impl_->answered.load(std::memory_order_relaxed);
}

}  // namespace livedrp
