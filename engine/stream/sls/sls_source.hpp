#pragma once
// The PSI slsDetectorPackage receiver's ZeroMQ stream (release 9.x) as a live source (issue 33):
// one SUB socket per receiver port (a Jungfrau module streams over one or two), read by one
// receiving thread that assembles the ports' parts into events (sls_assembler.hpp, convention in
// docs/formats.md, "Live detector streams"). A PUB/SUB stream never waits for its reader, so the
// thread only has to keep reading; what the engine does not take in time is dropped and counted.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "stream/stream_source.hpp"

namespace livedrp::stream {

// `endpoints`: one per receiver port, e.g. tcp://HOST:30001 ... (their number, one or two per
// module, gives the ports per module). options.detector names the engine's detector (empty:
// jungfrau4m); its segments are the modules. Throws InputError naming the detector, the endpoint or
// the option that is wrong. Connects at once; reads from start().
std::unique_ptr<StreamSource> open_sls_source(const std::vector<std::string>& endpoints,
                                              const StreamOptions& options);

// The detector open_sls_source would feed, checked as it checks it, without connecting.
DetectorDescription sls_source_detector(const std::vector<std::string>& endpoints,
                                        const StreamOptions& options);

// The endpoints of "tcp://HOST:PORT[,tcp://HOST:PORT...]" (ipc://PATH and inproc://NAME too).
// Throws InputError naming the list and the endpoint that is empty, malformed or repeated.
std::vector<std::string> parse_sls_endpoint_list(std::string_view list);

}  // namespace livedrp::stream
