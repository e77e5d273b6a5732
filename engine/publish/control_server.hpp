#pragma once
// The engine's control socket (docs/protocol.md, "Control socket"): a ZeroMQ ROUTER socket that
// answers REQ clients' JSON requests on its own thread, against one engine's EngineController or
// any other ControlTarget (an MPI run's collector). It checks every request (envelope, fields,
// read-only access, roots) before the target sees it, so every target is validated the same way.
// Every request gets exactly one reply, ok or an error naming what is wrong; nothing a client sends
// can crash or stall it, and nothing another peer sends (garbage bytes, messages that are no
// request) can cost a client its reply.
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "publish/control_roots.hpp"
#include "publish/control_target.hpp"

namespace livedrp {

class EngineController;

// What a control socket lets its clients do: everything, or only look (status, get_config,
// get_peak_params), for a socket others can reach that must not change or stop the run.
enum class ControlAccess { Full, ReadOnly };

class ControlServer {
 public:
  // Binds `endpoint` (tcp://HOST:PORT, tcp://127.0.0.1:* for any free port, ipc://, inproc:// in
  // the shared context) and starts serving. Throws InputError naming the endpoint when it cannot
  // be bound. `controller` must outlive the server.
  // `roots`: the folders requests may name files in (publish/control_roots.hpp); none: any.
  ControlServer(EngineController& controller, const std::string& endpoint,
                ControlAccess access = ControlAccess::Full, ControlRoots roots = {});
  // The same over another target; `target` must outlive the server.
  ControlServer(ControlTarget& target, const std::string& endpoint,
                ControlAccess access = ControlAccess::Full, ControlRoots roots = {});
  ~ControlServer();  // stops serving within ~kPollPeriod; a request being handled finishes first
  ControlServer(const ControlServer&) = delete;
  ControlServer& operator=(const ControlServer&) = delete;

  std::string endpoint() const;  // as bound (the port filled in for tcp://...:*)
  // True once a "shutdown" request has been answered: the host (livedrp-engine) then stops the
  // run and exits. The server itself goes on answering until destroyed.
  bool shutdown_requested() const;
  std::uint64_t requests_answered() const;

 private:
  ControlServer(std::unique_ptr<ControlTarget> target, const std::string& endpoint,
                ControlAccess access, ControlRoots roots);

  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace livedrp
