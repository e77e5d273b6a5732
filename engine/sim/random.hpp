#pragma once
// Counter-based random numbers for the simulator: every draw is a pure function of
// (seed, purpose, event, item, draw), so any pixel range of any event can be generated on any
// thread, in any order, and gives the same bytes.
//
// The mixer is splitmix64's finaliser (Steele, Lea, Flood, "Fast splittable pseudorandom number
// generators", OOPSLA 2014): a bijection on 64 bits; fed a counter times the golden gamma it is
// SplitMix64, whose output passes BigCrush.
// Chaining it over the fields of a key gives independent streams for distinct keys.
#include <cmath>
#include <cstdint>
#include <numbers>

namespace livedrp::sim {

// Odd constant of splitmix64 (2^64 / golden ratio): successive counters land far apart.
inline constexpr std::uint64_t kGoldenGamma = 0x9E3779B97F4A7C15ull;

constexpr std::uint64_t mix64(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// A key for one family of draws; extend it field by field (seed, purpose, event, ...).
constexpr std::uint64_t hash_key(std::uint64_t key, std::uint64_t field) {
  return mix64(key + kGoldenGamma * (field + 1));
}

// Float uniforms from 24-bit fields (a float's mantissa holds 24 bits exactly, so the results are
// exact and stay inside their intervals): (0, 1] from bits 63..40, [0, 1) from bits 31..8.
inline float unit_open_low_f(std::uint64_t bits) {
  return float((bits >> 40) + 1) * (1.0f / 16777216.0f);
}
inline float unit_f(std::uint64_t bits) {
  return float((bits >> 8) & 0xFFFFFFull) * (1.0f / 16777216.0f);
}
// Double uniforms in [0, 1): 32 bits from the high or the low half (two draws from one hash), and
// 53 bits for event-level draws where resolution matters more than speed.
inline double unit_high32(std::uint64_t bits) { return double(bits >> 32) * 0x1.0p-32; }
inline double unit_low32(std::uint64_t bits) { return double(bits & 0xFFFFFFFFull) * 0x1.0p-32; }
inline double unit_double(std::uint64_t bits) { return double(bits >> 11) * 0x1.0p-53; }

// Standard normals from 64 random bits (Box-Muller). Float precision is ample: the values become
// noise on an ADC count or a few-percent spread. The tails end at sqrt(2 ln 2^24) = 5.8 sigma.
// Both branches (cosine and sine) are independent normals: the pair serves two pixels at the cost
// of one logarithm, root and sincos.
struct NormalPair {
  float first;
  float second;
};
inline NormalPair standard_normal_pair(std::uint64_t bits) {
  const float radius = std::sqrt(-2.0f * std::log(unit_open_low_f(bits)));
  const float angle = 2.0f * std::numbers::pi_v<float> * unit_f(bits);
  return {radius * std::cos(angle), radius * std::sin(angle)};
}
inline float standard_normal(std::uint64_t bits) {
  const float radius = std::sqrt(-2.0f * std::log(unit_open_low_f(bits)));
  return radius * std::cos(2.0f * std::numbers::pi_v<float> * unit_f(bits));
}

// Above this mean a Poisson count is drawn from its normal approximation: the inversion loop
// would take ~mean steps, and the approximation's skewness error (1/sqrt(mean) < 0.18) is far
// below the detector noise on such a bright pixel.
inline constexpr double kPoissonInversionLimit = 30.0;

// A Poisson count with mean `mean`. `exp_minus_mean` = exp(-mean) (callers cache it per pixel),
// `uniform` in [0, 1) drives the inversion; `draw_normal()` gives a standard normal for the normal
// approximation and is called only above kPoissonInversionLimit, so dim pixels do not pay for it.
template <class DrawNormal>
std::uint32_t poisson_count(double mean, double exp_minus_mean, double uniform,
                            const DrawNormal& draw_normal) {
  if (mean <= 0.0) return 0;
  if (mean > kPoissonInversionLimit) {
    const double count = std::round(mean + std::sqrt(mean) * double(draw_normal()));
    return count > 0.0 ? std::uint32_t(count) : 0u;
  }
  // Inversion: the smallest k with P(X <= k) > uniform. Rounding can leave the summed CDF a hair
  // below 1; the step bound ends the loop there (mean 30 has P(X > 200) < 1e-80).
  constexpr std::uint32_t kMaxSteps = 200;
  std::uint32_t count = 0;
  double term = exp_minus_mean, cumulative = term;
  while (uniform >= cumulative && count < kMaxSteps) {
    ++count;
    term *= mean / double(count);
    cumulative += term;
  }
  return count;
}

// A sequential stream on one key, for the handful of event-level draws (peaks, bright spots).
class CounterStream {
 public:
  explicit CounterStream(std::uint64_t key) : key_(key) {}
  std::uint64_t next() { return hash_key(key_, counter_++); }
  double uniform() { return unit_double(next()); }
  double uniform(double low, double high) { return low + (high - low) * uniform(); }
  // Integer in [low, high], both included.
  std::int64_t uniform_int(std::int64_t low, std::int64_t high) {
    return low + std::int64_t(uniform() * double(high - low + 1));
  }
  // Log-uniform in [low, high]: equal counts per decade, as Bragg intensities roughly are.
  double log_uniform(double low, double high) {
    return low * std::exp(std::log(high / low) * uniform());
  }

 private:
  std::uint64_t key_;
  std::uint64_t counter_ = 0;
};

}  // namespace livedrp::sim
