#pragma once
// The rule every GPU suite follows: without a usable CUDA device it skips, unless
// LIVEDRP_REQUIRE_GPU=1 (set by .gpu/run on the GPU machine), where a missing device is a failure.
// A macro, because QSKIP and QFAIL return from the test function that uses them.
#include <QtTest>

#include "exec/backend.hpp"

#define LIVEDRP_SKIP_WITHOUT_GPU()                                                                 \
  do {                                                                                             \
    if (const auto reason_ = livedrp::cuda_unavailable_reason()) {                                 \
      const QByteArray message_ = "no usable CUDA device: " + QByteArray::fromStdString(*reason_); \
      if (qEnvironmentVariable("LIVEDRP_REQUIRE_GPU") == "1")                                      \
        QFAIL((message_ + " (LIVEDRP_REQUIRE_GPU=1)").constData());                                \
      QSKIP(message_.constData());                                                                 \
    }                                                                                              \
  } while (false)

// The CUDA backend's lane configurations a GPU engine suite runs over: a _data function adds
// these columns and its rows (streams, slots per stream, batch, graph launches, a host thread per
// stream); the test function applies its row's with apply_lane_row.
inline void add_lane_columns() {
  QTest::addColumn<int>("streams");
  QTest::addColumn<int>("slots_per_stream");
  QTest::addColumn<int>("batch");
  QTest::addColumn<bool>("graph");
  QTest::addColumn<bool>("per_stream");
}

inline void apply_lane_row(livedrp::StreamConfig& runtime) {
  QFETCH(int, streams);
  QFETCH(int, slots_per_stream);
  QFETCH(int, batch);
  QFETCH(bool, graph);
  QFETCH(bool, per_stream);
  runtime.streams = streams;
  runtime.slots_per_stream = slots_per_stream;
  runtime.batch = batch;
  runtime.launch = graph ? livedrp::LaunchMode::Graph : livedrp::LaunchMode::Plain;
  runtime.host_threads =
      per_stream ? livedrp::HostThreadModel::PerStream : livedrp::HostThreadModel::OneForAll;
}
