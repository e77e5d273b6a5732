#pragma once
// The two middle order statistics of a bank row's quiet pixels, for the CPU backend's common mode.
//
// std::nth_element spent half of an ePix10ka2M event's calibration on rows of at most 64 values:
// its partition loop branches on every comparison, and random offsets mispredict about half of
// them. This quickselect partitions without branches: every value is stored at both ends of a
// scratch row and the two ends advance by the comparison results, so the only branches left are
// the loop's. A pass keeps the side that holds the wanted rank, about half of the row with a
// median-of-three pivot, and values equal to the pivot end the search at once (no pass is wasted
// on runs of equal offsets).
//
// Order statistics are values: every algorithm that finds them, this one, std::nth_element and the
// GPU's, returns the same two numbers.
#include <algorithm>
#include <array>

#include "calib/calibration_math.hpp"

namespace livedrp::calib {

struct MiddleOrderStatistics {
  float lower;  // the ((count - 1) / 2)-th smallest value, counting from 0
  float upper;  // the (count / 2)-th smallest: the same as lower for an odd count
};

// `values` holds `count` values (1 <= count <= kMaxBankColumns, none NaN); the search uses it as
// scratch, so it holds no useful values afterwards.
inline MiddleOrderStatistics middle_order_statistics(float* values, int count) {
  std::array<float, kMaxBankColumns> scratch;
  float* const buffers[2] = {values, scratch.data()};
  const float* row = values;  // the values still in play, `m` of them
  int m = count;
  int rank = count / 2;  // the upper statistic's rank among them
  int into = 1;          // the buffer the next pass writes
  // The largest value already set aside below the wanted rank: lower when the upper statistic
  // turns out to be the smallest value still in play (set before it can be needed: the even
  // count's rank >= 1 puts some value below it).
  float below = 0.0f;
  for (;;) {
    const float first = row[0], middle = row[m / 2], last = row[m - 1];
    const float pivot = std::max(std::min(first, middle), std::min(std::max(first, middle), last));
    float* const out = buffers[into];
    int less = 0, greater_from = m - 1;  // [0, less) below the pivot, (greater_from, m) above
    for (int i = 0; i < m; ++i) {
      const float v = row[i];
      out[less] = v;
      out[greater_from] = v;
      less += v < pivot;
      greater_from -= v > pivot;
    }
    // Ranks [less, greater_from] are the values equal to the pivot (the pivot itself at least);
    // their slots may hold stray copies of other values, which are never read.
    if (rank < less) {
      m = less;
      row = out;
    } else if (rank > greater_from) {
      below = pivot;
      rank -= greater_from + 1;
      m -= greater_from + 1;
      row = out + greater_from + 1;
    } else {
      if (count % 2 != 0 || rank > less) return {pivot, pivot};
      const float lower = less > 0 ? *std::max_element(out, out + less) : below;
      return {lower, pivot};
    }
    into ^= 1;
  }
}

}  // namespace livedrp::calib
