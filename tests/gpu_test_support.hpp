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
