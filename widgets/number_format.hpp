#pragma once
// How numbers read in the widgets: one place, so that labels, tooltips and tests agree.
#include <cstdint>

#include <QString>

namespace livedrp::widgets {

// 1234567 -> "1,234,567" (English grouping whatever the system locale, so the text is predictable).
QString formatCount(std::uint64_t count);
// Event rates: one decimal below 100 Hz ("49.8 Hz"), whole hertz above ("33,012 Hz").
QString formatRateHz(double hz);
// Throughput in GB/s (1e9 bytes per second) with two decimals ("3.42 GB/s").
QString formatGbps(double gbps);
// Durations of a run: "42.0 s", "12 min 03 s", "2 h 05 min".
QString formatDuration(double seconds);

}  // namespace livedrp::widgets
