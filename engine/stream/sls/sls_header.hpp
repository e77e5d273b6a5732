#pragma once
// The JSON header of one message of the slsDetectorPackage receiver's ZeroMQ stream (release 9.x;
// the fields are the same since 7.x), read without sockets so that it can be tested on literal
// headers.
//
// What the receiver sends, per UDP port of a module (facts from the package's documentation,
// "ZMQ: Json Header Format", and its DataStreamer):
//   a frame:                 [JSON header with "data": 1][the port's pixels, little-endian words]
//   end of an acquisition:   [JSON header with "data": 0] (one part; the other fields are zero)
// Header fields used here:
//   bitmode        bits per pixel (4, 8, 16 or 32; Jungfrau sends 16)
//   detshape       [x, y]: the whole detector counted in UDP ports, x across columns, y across rows
//   shape          [x, y]: this port's pixels, columns then rows (Jungfrau: [1024, 512] with one
//                  port per module, [1024, 256] with two)
//   size           bytes of this port's pixels
//   frameNumber    the detector's frame number (from the UDP header); the same on every port
//   row, column    this port's position in the detector, in ports (see docs/formats.md, "Live
//                  detector streams")
//   completeImage  0 when the receiver missed packets of this frame on this port
//   timestamp      the UDP header's timestamp: a 10 MHz clock since power-on on Jungfrau
//   detType        the detector type enum (3 = Jungfrau), flipRows and quad (Eiger only)
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace livedrp::stream::sls {

// The detector type enum of slsDetectorDefs as the header carries it.
inline constexpr std::uint64_t kJungfrauDetType = 3;

struct SlsHeader {
  bool data = true;  // false: the end-of-acquisition header
  std::uint64_t json_version = 0;
  std::uint64_t bit_mode = 0;
  std::uint64_t detector_port_columns = 0;  // detshape[0]
  std::uint64_t detector_port_rows = 0;     // detshape[1]
  std::uint64_t part_columns = 0;           // shape[0]
  std::uint64_t part_rows = 0;              // shape[1]
  std::uint64_t size = 0;
  std::uint64_t frame_number = 0;
  std::uint64_t row = 0;
  std::uint64_t column = 0;
  bool complete_image = true;
  std::uint64_t timestamp = 0;
  std::optional<std::uint64_t> detector_type;  // detType, when present
  std::uint64_t packets = 0;                   // packetNumber (packets caught), 0 when absent
};

// Either a header or why the message is refused: `reason` is a StreamCounts::rejected key
// ("foreign": not a JSON object at all; "malformed": JSON without a field this source needs, or
// a field of the wrong type; "unsupported": a bit mode other than 16, or rows the receiver asks to
// flip) and `problem` says what is wrong, naming the field.
struct SlsHeaderResult {
  std::optional<SlsHeader> header;
  std::string reason;
  std::string problem;
};

// `bytes`: the message's first part. Never throws on any input.
SlsHeaderResult parse_sls_header(std::string_view bytes);

// The header's timestamp as ns since the Unix epoch when it is one (2000-01-01 to 2200-01-01),
// else 0 (unknown). Jungfrau puts a 10 MHz counter since power-on there, which stays far below
// that range (it would take some 3000 years to reach it), so a real Jungfrau gives 0; a sender
// that stamps epoch nanoseconds keeps its stamps.
std::int64_t epoch_timestamp_ns(const SlsHeader& header);

}  // namespace livedrp::stream::sls
