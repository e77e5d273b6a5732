#include "exec/produced_share.hpp"

#include <numeric>

namespace livedrp {
namespace {

// x with a * x = 1 modulo m, for a and m coprime (m >= 1).
std::uint64_t inverse_modulo(std::uint64_t a, std::uint64_t m) {
  if (m == 1) return 0;
  // Extended Euclid on signed values: a and m are at most the share count's size.
  std::int64_t t = 0, next_t = 1, r = std::int64_t(m), next_r = std::int64_t(a % m);
  while (next_r != 0) {
    const std::int64_t q = r / next_r;
    t = t - q * next_t;
    std::swap(t, next_t);
    r = r - q * next_r;
    std::swap(r, next_r);
  }
  return std::uint64_t(t < 0 ? t + std::int64_t(m) : t);
}

}  // namespace

ProducedShare produced_share(const EventShare& share, std::uint64_t events, double rate_hz,
                             std::uint64_t first_pulse_id, std::uint64_t pulses_per_event,
                             std::size_t pool_size) {
  ProducedShare p;
  p.index = share.index;
  p.count = share.count;
  switch (share.by) {
    case EventShare::By::OwnInput:
      p.own_input = true;
      p.offset = 0;
      p.stride = 1;
      break;
    case EventShare::By::EventIndex:
      p.offset = share.index;
      p.stride = share.count;
      break;
    case EventShare::By::PulseId: {
      // first + step * i = index (mod count): with g = gcd(step, count), solvable only when g
      // divides index - first, and then i = c (mod count / g).
      const std::uint64_t count = share.count;
      const std::uint64_t step = pulses_per_event % count;
      const std::uint64_t target = (share.index + count - first_pulse_id % count) % count;
      const std::uint64_t g = std::gcd(step, count);  // gcd(0, count) = count
      if (target % g != 0) {
        p.none = true;
        return p;
      }
      const std::uint64_t modulus = count / g;
      p.offset = (target / g) % modulus * inverse_modulo((step / g) % modulus, modulus) % modulus;
      p.stride = modulus;
      break;
    }
  }
  if (events > 0) {
    if (p.offset >= events) {
      p.none = true;
      return p;
    }
    p.events = (events - p.offset + p.stride - 1) / p.stride;
  }
  p.first_pulse_id = first_pulse_id + pulses_per_event * p.offset;
  p.pulses_per_event = pulses_per_event * p.stride;
  // The share's events come every stride-th event of the source.
  p.rate_hz = rate_hz / double(p.stride);
  // (offset + stride * j) % pool depends only on j % pool: one pool slot per residue.
  p.pool_order.resize(pool_size);
  for (std::size_t m = 0; m < pool_size; ++m)
    p.pool_order[m] = std::size_t((p.offset + p.stride * m) % pool_size);
  return p;
}

}  // namespace livedrp
