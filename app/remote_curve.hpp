#pragma once
// The CURVE keys the GUI uses towards a remote engine (livedrp --connect with --curve-server-key
// and --curve-key; protocol/curve_keys.hpp): set once from the command line, read by the
// subscriber thread and the remote control client when they make their sockets. Only a --connect
// GUI has them, so the embedded engine's sockets are never affected.
#include <optional>

#include "protocol/curve_keys.hpp"

namespace livedrp::app {

void setRemoteCurve(std::optional<protocol::CurveClient> curve);
std::optional<protocol::CurveClient> remoteCurve();

}  // namespace livedrp::app
