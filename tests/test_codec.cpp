// The compression codecs on the CPU backend.
//
// What is checked against what:
// - Each stage against answers worked out by hand (zigzag, float ordering, bit shuffle, zero-byte
//   elimination, the quantiser on values at bin edges, a whole chunk, the header bytes).
// - Whole streams against an independent reference encoder written here from docs/formats.md
//   alone (naive bit loops, its own checksum, its own quantiser in long double), byte for byte.
// - Round trips: lossless bit-exact; lossy within the bound at every element, checked in double
//   here, with NaN, infinities and out-of-range values exact.
// - Determinism with and without a thread pool; compression ratios where data is compressible;
//   rejection of truncated, corrupted, foreign and absurd streams with InputError, never a crash.
#include <QtTest>

#include <algorithm>
#include <bit>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <span>
#include <vector>

#include "calib/calibrate_cpu.hpp"
#include "codec/chunk_cpu.hpp"
#include "codec/codec.hpp"
#include "codec/codec_math.hpp"
#include "core/detector.hpp"
#include "core/error.hpp"
#include "core/thread_pool.hpp"
#include "sim/simulator.hpp"

using namespace livedrp;
using namespace livedrp::codec;

namespace {

using Bytes = std::vector<std::uint8_t>;

std::uint32_t bits_of(float f) {
  return std::bit_cast<std::uint32_t>(f);
}
float float_of(std::uint32_t u) {
  return std::bit_cast<float>(u);
}

template <class T>
Bytes as_bytes(const std::vector<T>& v) {
  Bytes b(v.size() * sizeof(T));
  if (!b.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}

std::uint64_t get64(const Bytes& b, std::size_t at) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | b[at + std::size_t(i)];
  return v;
}
std::uint32_t get32(const Bytes& b, std::size_t at) {
  return std::uint32_t(b[at] | (b[at + 1] << 8) | (b[at + 2] << 16)) |
         (std::uint32_t(b[at + 3]) << 24);
}
void put64(Bytes& b, std::size_t at, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) b[at + std::size_t(i)] = std::uint8_t(v >> (8 * i));
}
void put32(Bytes& b, std::size_t at, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) b[at + std::size_t(i)] = std::uint8_t(v >> (8 * i));
}

long first_difference(const Bytes& a, const Bytes& b) {
  if (a.size() != b.size()) return -2;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i] != b[i]) return long(i);
  return -1;
}

// ---------------------------------------------------------------------------------------------
// Reference encoder, from docs/formats.md ("Compressed arrays"), sharing no code with the engine.
namespace ref {

std::uint64_t mix(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

std::uint64_t checksum(const std::uint8_t* p, std::size_t bytes) {
  const std::size_t words = bytes / 4;
  std::uint64_t sum = mix(std::uint64_t(words) ^ 0x6C69766564727021ull);
  for (std::size_t i = 0; i < words; ++i) {
    std::uint32_t w;
    std::memcpy(&w, p + 4 * i, 4);
    sum += std::uint64_t(w ^ 0x7F4A7C15u) * (2 * std::uint64_t(i) + 1);
  }
  return sum;
}

Bytes bitmap(const Bytes& v) {
  Bytes m((v.size() + 7) / 8, 0);
  for (std::size_t i = 0; i < v.size(); ++i)
    if (v[i]) m[i / 8] |= std::uint8_t(1u << (i % 8));
  return m;
}

void append_nonzero(Bytes& out, const Bytes& v) {
  for (std::uint8_t b : v)
    if (b) out.push_back(b);
}

Bytes eliminate(const Bytes& data) {
  const Bytes l0 = bitmap(data), l1 = bitmap(l0), l2 = bitmap(l1);
  Bytes out = l2;
  append_nonzero(out, l1);
  append_nonzero(out, l0);
  append_nonzero(out, data);
  return out;
}

// Residual words, one per element, zero-padded to whole blocks of 32.
Bytes shuffle(const std::vector<std::uint32_t>& residuals, unsigned bits) {
  const std::size_t blocks = (residuals.size() + 31) / 32;
  Bytes out(blocks * bits * 4, 0);
  for (std::size_t p = 0; p < bits; ++p)
    for (std::size_t b = 0; b < blocks; ++b) {
      std::uint32_t word = 0;
      for (std::size_t i = 0; i < 32; ++i) {
        const std::size_t e = 32 * b + i;
        if (e < residuals.size() && ((residuals[e] >> p) & 1u)) word |= 1u << i;
      }
      for (int k = 0; k < 4; ++k)
        out[4 * (p * blocks + b) + std::size_t(k)] = std::uint8_t(word >> (8 * k));
    }
  return out;
}

void append32(Bytes& out, std::uint32_t v) {
  for (int k = 0; k < 4; ++k) out.push_back(std::uint8_t(v >> (8 * k)));
}

// Sparse form (mode 3) of a chunk's plain residuals z: count, gap bytes, pad, escapes, plane masks
// of each group of 32 listed values, then the groups' plane words.
Bytes sparse(const std::vector<std::uint32_t>& z) {
  std::vector<std::size_t> listed;
  for (std::size_t i = 0; i < z.size(); ++i)
    if (z[i] != 0) listed.push_back(i);
  Bytes out;
  append32(out, std::uint32_t(listed.size()));
  std::vector<std::uint32_t> escaped;
  long long previous = -1;
  for (std::size_t k : listed) {
    const auto gap = std::uint32_t((long long)k - previous - 1);
    out.push_back(std::uint8_t(gap < 255 ? gap : 255));
    if (gap >= 255) escaped.push_back(gap);
    previous = (long long)k;
  }
  while (out.size() % 4 != 0) out.push_back(0);
  for (std::uint32_t g : escaped) append32(out, g);
  const std::size_t groups = (listed.size() + 31) / 32;
  const auto value = [&](std::size_t g, std::size_t t) {
    return 32 * g + t < listed.size() ? z[listed[32 * g + t]] : 0u;
  };
  std::vector<std::uint32_t> masks(groups, 0);
  for (std::size_t g = 0; g < groups; ++g) {
    for (std::size_t t = 0; t < 32; ++t) masks[g] |= value(g, t);
    append32(out, masks[g]);
  }
  for (std::size_t g = 0; g < groups; ++g)
    for (unsigned p = 0; p < 32; ++p) {
      if (!((masks[g] >> p) & 1u)) continue;
      std::uint32_t word = 0;
      for (std::size_t t = 0; t < 32; ++t)
        if ((value(g, t) >> p) & 1u) word |= 1u << t;
      append32(out, word);
    }
  return out;
}

std::uint32_t zigzag(std::uint32_t difference, unsigned bits) {
  const std::int64_t s =
      bits == 16 ? std::int64_t(std::int16_t(difference)) : std::int64_t(std::int32_t(difference));
  return std::uint32_t(s >= 0 ? 2 * s : -2 * s - 1);
}

// Quantiser as the format defines it, in long double.
bool quantize(float x, double eb, std::int32_t* q) {
  const double w = 2 * eb;
  const double t = double(x) / w;
  if (!(std::fabs(t) < 1073741824.0)) return false;
  const double rounded = std::round(t);  // halves away from zero
  const double p = rounded * w;
  if (!(std::fabs(p) <= double(FLT_MAX))) return false;
  const float r = float(p);
  if (!(std::fabs((long double)r - (long double)x) <= (long double)eb)) return false;
  *q = std::int32_t(rounded);
  return true;
}

Bytes encode_chunk(Codec codec, DType dtype, double eb, const std::uint8_t* in, std::size_t n,
                   unsigned* mode) {
  const unsigned bits = dtype == DType::UInt16 ? 16 : 32;
  const std::size_t raw = n * (bits / 8);
  std::vector<std::uint32_t> values(n);
  std::vector<std::uint32_t> outlier_index, outlier_bits;
  for (std::size_t i = 0; i < n; ++i) {
    if (dtype == DType::UInt16) {
      values[i] = std::uint32_t(in[2 * i] | (in[2 * i + 1] << 8));
      continue;
    }
    std::uint32_t u;
    std::memcpy(&u, in + 4 * i, 4);
    if (codec == Codec::Lossless) {
      values[i] = (u & 0x80000000u) ? (u ^ 0x7FFFFFFFu) : u;  // negative: invert magnitude bits
    } else {
      std::int32_t q;
      if (quantize(float_of(u), eb, &q)) {
        values[i] = std::uint32_t(q);
      } else {
        values[i] = 0;
        outlier_index.push_back(std::uint32_t(i));
        outlier_bits.push_back(u);
      }
    }
  }
  // Mode m (1 delta, 2 plain) through residuals, zigzag, shuffle and elimination.
  const auto residuals_of = [&](unsigned m) {
    std::vector<std::uint32_t> residuals(n);
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint32_t prediction = (m == 1 && i > 0) ? values[i - 1] : 0;
      residuals[i] = zigzag(values[i] - prediction, bits);
    }
    return residuals;
  };
  const auto pipeline = [&](unsigned m) { return eliminate(shuffle(residuals_of(m), bits)); };
  // The lossy codec tries plain first, the lossless one delta; the other mode only when the first
  // leaves the chunk (with the lossy prefix) at 7/8 of its raw bytes or more but below them (at
  // or above them the chunk is stored raw at once); the smaller wins, delta on a tie.
  const std::size_t prefix_bytes = codec == Codec::Lossy ? 4 + 8 * outlier_index.size() : 0;
  const unsigned first = codec == Codec::Lossy ? 2 : 1;
  Bytes best = pipeline(first);
  *mode = first;
  if (prefix_bytes + best.size() >= raw - raw / 8 && prefix_bytes + best.size() < raw) {
    Bytes other = pipeline(3 - first);
    const bool other_wins = first == 2 ? other.size() <= best.size() : other.size() < best.size();
    if (other_wins) {
      best = std::move(other);
      *mode = 3 - first;
    }
  } else if (codec == Codec::Lossy && prefix_bytes + best.size() < raw - raw / 8) {
    // Plain well below the raw size: the sparse form replaces it when strictly smaller.
    Bytes listed = sparse(residuals_of(2));
    if (listed.size() < best.size()) {
      best = std::move(listed);
      *mode = 3;
    }
  }
  Bytes out;
  if (codec == Codec::Lossy) {
    Bytes prefix(4 + 8 * outlier_index.size());
    put32(prefix, 0, std::uint32_t(outlier_index.size()));
    for (std::size_t k = 0; k < outlier_index.size(); ++k) {
      put32(prefix, 4 + 4 * k, outlier_index[k]);
      put32(prefix, 4 + 4 * (outlier_index.size() + k), outlier_bits[k]);
    }
    out = prefix;
  }
  out.insert(out.end(), best.begin(), best.end());
  if (out.size() >= raw) {
    *mode = 0;
    return Bytes(in, in + raw);
  }
  return out;
}

Bytes encode(const void* data, DType dtype, const std::vector<std::uint64_t>& shape,
             std::uint64_t count, const CodecParams& params) {
  const std::size_t esize = dtype == DType::UInt16 ? 2 : 4;
  const std::size_t per = params.chunk_bytes / esize;
  const std::size_t chunks = (count + per - 1) / per;
  const double eb = params.codec == Codec::Lossy ? params.error_bound : 0.0;
  Bytes header(56 + 8 * shape.size(), 0);
  const std::uint8_t magic[8] = {0x89, 'L', 'D', 'R', 'P', 'Z', '\r', '\n'};
  std::memcpy(header.data(), magic, 8);
  header[8] = 3;  // format version 3
  header[10] = std::uint8_t(params.codec);
  header[11] = std::uint8_t(dtype);
  header[12] = std::uint8_t(shape.size());
  put32(header, 16, params.chunk_bytes);
  put64(header, 24, count);
  put64(header, 32, std::bit_cast<std::uint64_t>(eb));
  put64(header, 40, chunks);
  for (std::size_t d = 0; d < shape.size(); ++d) put64(header, 56 + 8 * d, shape[d]);
  Bytes table(4 * chunks), payload;
  for (std::size_t c = 0; c < chunks; ++c) {
    const std::size_t n = std::min<std::size_t>(per, count - c * per);
    unsigned mode = 0;
    const Bytes chunk =
        encode_chunk(params.codec, dtype, eb,
                     static_cast<const std::uint8_t*>(data) + c * per * esize, n, &mode);
    put32(table, 4 * c, std::uint32_t(chunk.size()) | (mode << 30));
    payload.insert(payload.end(), chunk.begin(), chunk.end());
    payload.resize((payload.size() + 3) / 4 * 4, 0);
  }
  put64(header, 48, payload.size());
  Bytes out = header;
  out.insert(out.end(), table.begin(), table.end());
  Bytes sums(16, 0);
  put64(sums, 0, checksum(payload.data(), payload.size()));
  out.insert(out.end(), sums.begin(), sums.begin() + 8);
  const std::uint64_t header_sum = checksum(out.data(), out.size());
  put64(sums, 8, header_sum);
  out.insert(out.end(), sums.begin() + 8, sums.end());
  out.insert(out.end(), payload.begin(), payload.end());
  return out;
}

}  // namespace ref

// Whether out[p] holds bit p of every in[i], at bit i: the bit-by-bit definition of the transpose.
bool is_bit_transpose(const std::uint32_t (&in)[32], const std::uint32_t (&out)[32]) {
  for (int p = 0; p < 32; ++p) {
    std::uint32_t plane = 0;
    for (int i = 0; i < 32; ++i) plane |= ((in[i] >> p) & 1u) << i;
    if (plane != out[p]) return false;
  }
  return true;
}

// Recomputes both checksums of a (deliberately altered) stream, so that the field checks behind
// them are what is tested.
void reseal(Bytes& s) {
  if (s.size() < 56) return;
  const std::size_t ndim = s[12];
  const std::uint64_t chunks = get64(s, 40);
  if (ndim > 8 || chunks > s.size()) return;
  const std::size_t at = 56 + 8 * ndim + 4 * std::size_t(chunks);
  if (at + 16 > s.size()) return;
  put64(s, at, ref::checksum(s.data() + at + 16, s.size() - at - 16));
  put64(s, at + 8, ref::checksum(s.data(), at + 8));
}

// Lossy: every element within eb (in double), every NaN / infinity bit-exact, and every value the
// bins cannot hold (|x| / 2eb >= 2^30) bit-exact.
bool within_bound(const Bytes& original, const Bytes& decoded, double eb, QString* why) {
  if (original.size() != decoded.size()) {
    *why = "size differs";
    return false;
  }
  for (std::size_t i = 0; i < original.size() / 4; ++i) {
    float o, d;
    std::memcpy(&o, original.data() + 4 * i, 4);
    std::memcpy(&d, decoded.data() + 4 * i, 4);
    const bool must_be_exact = !std::isfinite(o) || std::fabs(double(o)) / (2 * eb) >= 1073741824.0;
    if (must_be_exact ? bits_of(o) != bits_of(d)
                      : !(std::isfinite(d) && std::fabs(double(d) - double(o)) <= eb)) {
      *why = QString("element %1: original %2 (0x%3), decoded %4 (0x%5), bound %6")
                 .arg(i)
                 .arg(double(o), 0, 'g', 9)
                 .arg(bits_of(o), 8, 16, QChar('0'))
                 .arg(double(d), 0, 'g', 9)
                 .arg(bits_of(d), 8, 16, QChar('0'))
                 .arg(eb, 0, 'g', 17);
      return false;
    }
  }
  return true;
}

// double to float, out-of-range values to infinities (a plain conversion would be undefined).
float to_float(double v) {
  if (v > double(FLT_MAX)) return INFINITY;
  if (v < -double(FLT_MAX)) return -INFINITY;
  return float(v);
}

struct Dataset {
  QString name;
  DType dtype;
  std::vector<std::uint64_t> shape;  // empty: flat
  std::uint64_t count;
  Bytes data;
};

Dataset make_u16(const QString& name, std::vector<std::uint16_t> v,
                 std::vector<std::uint64_t> shape = {}) {
  const std::uint64_t n = v.size();
  return {name, DType::UInt16, std::move(shape), n, as_bytes(v)};
}
Dataset make_f32(const QString& name, std::vector<float> v, std::vector<std::uint64_t> shape = {}) {
  const std::uint64_t n = v.size();
  return {name, DType::Float32, std::move(shape), n, as_bytes(v)};
}

}  // namespace

class TestCodec : public QObject {
  Q_OBJECT

  ThreadPool pool_{4};
  std::mt19937_64 rng_{20260104};

  Bytes compress(const Dataset& d, const CodecParams& p, ThreadPool* pool = nullptr) {
    return d.shape.empty() ? compress_flat_cpu(d.data.data(), d.dtype, d.count, p, pool)
                           : compress_cpu(d.data.data(), d.dtype, d.shape, p, pool);
  }

  // Compresses with and without the pool (identical bytes, equal to the reference encoder's),
  // decompresses both ways and checks the round trip. Returns the stream.
  Bytes round_trip(const Dataset& d, const CodecParams& p, bool check_reference = true) {
    const Bytes serial = compress(d, p);
    const Bytes parallel = compress(d, p, &pool_);
    if (first_difference(serial, parallel) != -1)
      qWarning() << d.name << "pool changes byte" << first_difference(serial, parallel);
    [&] { QCOMPARE(first_difference(serial, parallel), -1L); }();
    if (check_reference) {
      const Bytes reference = ref::encode(d.data.data(), d.dtype, d.shape, d.count, p);
      if (first_difference(serial, reference) != -1)
        qWarning() << d.name << "differs from the reference at byte"
                   << first_difference(serial, reference) << "sizes" << serial.size()
                   << reference.size();
      [&] { QCOMPARE(first_difference(serial, reference), -1L); }();
    }
    const StreamInfo info = read_header(serial.data(), serial.size());
    [&] {
      QCOMPARE(info.element_count, d.count);
      QVERIFY(info.shape == d.shape);
      QCOMPARE(info.dtype, d.dtype);
      QCOMPARE(info.codec, p.codec);
      QCOMPARE(info.stream_bytes, std::uint64_t(serial.size()));
      QCOMPARE(info.raw_bytes, std::uint64_t(d.data.size()));
      QVERIFY(serial.size() <= compressed_bound(d.dtype, d.count, unsigned(d.shape.size()), p));
    }();
    const DecodedArray a = decompress_cpu(serial.data(), serial.size());
    const DecodedArray b = decompress_cpu(serial.data(), serial.size(), &pool_);
    [&] { QCOMPARE(first_difference(a.bytes, b.bytes), -1L); }();
    if (p.codec == Codec::Lossless) {
      [&] { QCOMPARE(first_difference(a.bytes, d.data), -1L); }();
    } else {
      QString why;
      const bool ok = within_bound(d.data, a.bytes, p.error_bound, &why);
      [&] { QVERIFY2(ok, qPrintable(d.name + ": " + why)); }();
    }
    return serial;
  }

  std::vector<std::uint16_t> random_u16(std::size_t n) {
    std::vector<std::uint16_t> v(n);
    for (auto& x : v) x = std::uint16_t(rng_());
    return v;
  }
  std::vector<std::uint16_t> pedestal_noise(std::size_t n, double pedestal, double sigma) {
    std::normal_distribution<double> noise(0, sigma);
    std::vector<std::uint16_t> v(n);
    for (auto& x : v) x = std::uint16_t(std::lround(pedestal + noise(rng_)));
    return v;
  }

  // Edge cases for both lossless dtypes: every dataset is a list of (name, data).
  std::vector<Dataset> lossless_datasets() {
    std::vector<Dataset> out;
    const std::size_t n = 3 * 8192 + 77;  // not a multiple of any chunk size used
    out.push_back(make_u16("u16 zeros", std::vector<std::uint16_t>(n, 0)));
    out.push_back(make_u16("u16 constant", std::vector<std::uint16_t>(n, 1234)));
    out.push_back(make_u16("u16 max", std::vector<std::uint16_t>(n, 0xFFFF)));
    out.push_back(make_u16("u16 random", random_u16(n)));
    out.push_back(make_u16("u16 pedestal+noise", pedestal_noise(n, 3000, 3)));
    std::vector<std::uint16_t> ramp(n);
    for (std::size_t i = 0; i < n; ++i) ramp[i] = std::uint16_t(i * 7);
    out.push_back(make_u16("u16 ramp (wrapping)", ramp));
    std::vector<std::uint16_t> sawtooth(n);  // jumps of +-65535: residuals modulo 2^16
    for (std::size_t i = 0; i < n; ++i) sawtooth[i] = i % 2 ? 0xFFFF : 0;
    out.push_back(make_u16("u16 alternating 0/65535", sawtooth));
    out.push_back(make_u16("u16 one element", {42}));
    out.push_back(make_u16("u16 empty", {}));
    out.push_back(make_u16("u16 3-d", pedestal_noise(3 * 5 * 7, 100, 1), {3, 5, 7}));
    out.push_back(make_u16("u16 2-d 352x384", pedestal_noise(352 * 384, 2000, 4), {352, 384}));
    out.push_back(make_u16("u16 empty 2-d", {}, {0, 16}));

    std::vector<float> special;
    for (std::uint32_t bits :
         {0x7FC00000u, 0x7F800001u, 0xFFC00001u, 0x7FFFFFFFu, 0xFF800001u, 0x7FA5A5A5u, 0x7F800000u,
          0xFF800000u, 0x80000000u, 0x00000000u, 0x00000001u, 0x80000001u, 0x007FFFFFu, 0x807FFFFFu,
          0x00800000u, 0x7F7FFFFFu, 0xFF7FFFFFu, 0x3F800000u, 0xBF800000u})
      special.push_back(float_of(bits));
    std::vector<float> specials_repeated;
    for (std::size_t i = 0; i < 5000; ++i) specials_repeated.push_back(special[i % special.size()]);
    out.push_back(make_f32("f32 specials", specials_repeated));
    out.push_back(make_f32("f32 zeros", std::vector<float>(n, 0.0f)));
    out.push_back(make_f32("f32 negative zeros", std::vector<float>(n, -0.0f)));
    out.push_back(make_f32("f32 constant", std::vector<float>(n, 3.25f)));
    std::vector<float> nans(n);
    for (std::size_t i = 0; i < n; ++i)
      nans[i] = float_of(0x7F800001u + std::uint32_t(i % 1000) * 4099u);
    out.push_back(make_f32("f32 NaN payloads", nans));
    std::vector<float> infs(n);
    for (std::size_t i = 0; i < n; ++i) infs[i] = i % 3 ? INFINITY : -INFINITY;
    out.push_back(make_f32("f32 +-inf", infs));
    std::vector<float> denormals(n);
    for (std::size_t i = 0; i < n; ++i)
      denormals[i] = float_of(std::uint32_t(i * 131) & 0x807FFFFFu);
    out.push_back(make_f32("f32 denormals", denormals));
    std::vector<float> random_bits(n);
    for (auto& x : random_bits) x = float_of(std::uint32_t(rng_()));
    out.push_back(make_f32("f32 random bits", random_bits));
    std::vector<float> smooth(n);
    for (std::size_t i = 0; i < n; ++i) smooth[i] = float(1000.0 + 0.001 * double(i));
    out.push_back(make_f32("f32 smooth ramp", smooth));
    std::vector<float> huge(n);
    for (std::size_t i = 0; i < n; ++i)
      huge[i] = (i % 2 ? -1.0f : 1.0f) * FLT_MAX / float(1 + i % 5);
    out.push_back(make_f32("f32 huge", huge));
    out.push_back(make_f32("f32 one element", {-0.0f}));
    out.push_back(make_f32("f32 empty", {}));
    std::vector<float> cube(4 * 6 * 8);
    for (std::size_t i = 0; i < cube.size(); ++i) cube[i] = float(i) * 0.5f - 3.0f;
    out.push_back(make_f32("f32 3-d", cube, {4, 6, 8}));
    return out;
  }

  // Values chosen to sit on, next to and beyond bin edges for bound eb.
  std::vector<float> adversarial(double eb) {
    std::vector<float> v;
    const double w = 2 * eb;
    for (int k = -300; k <= 300; ++k) {
      for (double c : {k * w, k * w + eb, k * w - eb, k * w + 0.5 * eb}) {
        const float f = to_float(c);
        v.push_back(f);
        v.push_back(std::nextafter(f, INFINITY));
        v.push_back(std::nextafter(f, -INFINITY));
      }
    }
    for (double scale : {1e3, 1e6, 1e8, 1073741823.0, 1073741824.0, 1073741825.0, 4e9}) {
      for (double offset : {0.0, eb, -eb, 0.5 * eb}) {
        const float f = to_float(scale * w + offset);
        v.push_back(f);
        v.push_back(-f);
        v.push_back(std::nextafter(f, INFINITY));
        v.push_back(std::nextafter(f, -INFINITY));
      }
    }
    for (std::uint32_t bits : {0x00000000u, 0x80000000u, 0x00000001u, 0x80000001u, 0x007FFFFFu,
                               0x807FFFFFu, 0x00800000u, 0x7F7FFFFFu, 0xFF7FFFFFu, 0x7F800000u,
                               0xFF800000u, 0x7FC00000u, 0x7F800001u, 0xFFFFFFFFu, 0x7FABCDEFu})
      v.push_back(float_of(bits));
    for (int i = 0; i < 2000; ++i) v.push_back(float_of(std::uint32_t(rng_())));
    std::uniform_real_distribution<double> near(-50 * w, 50 * w);
    for (int i = 0; i < 4000; ++i) v.push_back(to_float(near(rng_)));
    return v;
  }

 private slots:
  // --- Stages, by hand -----------------------------------------------------------------------

  void zigzag_maps_small_residuals_of_either_sign_to_small_words() {
    QCOMPARE(zigzag16(0), std::uint16_t(0));
    QCOMPARE(zigzag16(0xFFFF), std::uint16_t(1));  // -1
    QCOMPARE(zigzag16(1), std::uint16_t(2));
    QCOMPARE(zigzag16(0xFFFE), std::uint16_t(3));  // -2
    QCOMPARE(zigzag16(0x7FFF), std::uint16_t(0xFFFE));
    QCOMPARE(zigzag16(0x8000), std::uint16_t(0xFFFF));  // -32768
    QCOMPARE(zigzag32(0xFFFFFFFFu), 1u);
    QCOMPARE(zigzag32(2), 4u);
    QCOMPARE(zigzag32(0x80000000u), 0xFFFFFFFFu);
    QCOMPARE(zigzag32(0x7FFFFFFFu), 0xFFFFFFFEu);
    for (std::uint32_t v = 0; v < 65536; ++v) {
      const auto z = zigzag16(std::uint16_t(v));
      if (unzigzag16(z) != v) QFAIL(qPrintable(QString("unzigzag16(zigzag16(%1))").arg(v)));
    }
    for (int i = 0; i < 100000; ++i) {
      const auto v = std::uint32_t(rng_());
      if (unzigzag32(zigzag32(v)) != v) QFAIL("unzigzag32");
    }
    // Delta residuals wrap modulo 2^bits: 0 after 65535 is +1, 65535 after 0 is -1.
    QCOMPARE(residual_word(0, 0xFFFF, 16), 2u);
    QCOMPARE(residual_word(0xFFFF, 0, 16), 1u);
    QCOMPARE(restore_word(1, 0, 16), 0xFFFFu);
    QCOMPARE(residual_word(5, 7, 32), 3u);
    QCOMPARE(restore_word(3, 7, 32), 5u);
  }

  void float_ordering_keeps_order_and_every_pattern() {
    QCOMPARE(order_float_bits(bits_of(0.0f)), 0u);
    QCOMPARE(order_float_bits(bits_of(-0.0f)), 0xFFFFFFFFu);  // -1, next to +0
    QCOMPARE(order_float_bits(bits_of(1.0f)), 0x3F800000u);
    QCOMPARE(order_float_bits(bits_of(-1.0f)), 0xC07FFFFFu);
    QCOMPARE(order_float_bits(0x00000001u), 1u);           // smallest denormal
    QCOMPARE(order_float_bits(0x80000001u), 0xFFFFFFFEu);  // its negative: -2
    std::vector<float> sorted;
    for (int i = 0; i < 20000; ++i) {
      const float f = float_of(std::uint32_t(rng_()));
      if (!std::isnan(f)) sorted.push_back(f);
    }
    sorted.push_back(-0.0f);
    std::sort(sorted.begin(), sorted.end());
    for (std::size_t i = 1; i < sorted.size(); ++i) {
      const auto a = std::int32_t(order_float_bits(bits_of(sorted[i - 1])));
      const auto b = std::int32_t(order_float_bits(bits_of(sorted[i])));
      if (sorted[i - 1] < sorted[i] && !(a < b)) QFAIL("order not kept");
    }
    for (int i = 0; i < 100000; ++i) {
      const auto u = std::uint32_t(rng_());
      if (order_float_bits(order_float_bits(u)) != u) QFAIL("not an involution");
    }
  }

  void bit_shuffle_gives_the_plane_layout() {
    std::uint32_t a[32];
    for (std::uint32_t i = 0; i < 32; ++i) a[i] = i;  // value i: plane p holds bit p of 0..31
    transpose32(a);
    const std::uint32_t expected[5] = {0xAAAAAAAAu, 0xCCCCCCCCu, 0xF0F0F0F0u, 0xFF00FF00u,
                                       0xFFFF0000u};
    for (int p = 0; p < 5; ++p) QCOMPARE(a[p], expected[p]);
    for (int p = 5; p < 32; ++p) QCOMPARE(a[p], 0u);

    for (std::uint32_t i = 0; i < 32; ++i) a[i] = i == 3 ? 0xFFFFFFFFu : 0;  // one full value
    transpose32(a);
    for (int p = 0; p < 32; ++p) QCOMPARE(a[p], 8u);

    for (std::uint32_t i = 0; i < 32; ++i) a[i] = 1u << i;  // the identity is its own transpose
    transpose32(a);
    for (std::uint32_t i = 0; i < 32; ++i) QCOMPARE(a[i], 1u << i);

    for (int round = 0; round < 1000; ++round) {
      std::uint32_t in[32], out[32];
      for (auto& x : in) x = std::uint32_t(rng_());
      std::memcpy(out, in, sizeof in);
      transpose32(out);
      if (!is_bit_transpose(in, out)) QFAIL("transpose32 differs from the bit-by-bit definition");
      transpose32(out);
      if (std::memcmp(in, out, sizeof in) != 0) QFAIL("transpose32 is not an involution");
    }
  }

  void bit_shuffle_of_16_bit_values_matches_the_definition() {
    for (int round = 0; round < 1000; ++round) {
      std::uint32_t in[32], out[32];
      for (auto& x : in) x = std::uint32_t(rng_()) & 0xFFFFu;
      if (round == 0) std::fill(in, in + 32, 0xFFFFu);
      std::memcpy(out, in, sizeof in);
      transpose32_values16(out);
      if (!is_bit_transpose(in, out))
        QFAIL("transpose32_values16 differs from the bit-by-bit definition");
      transpose32_planes16(out);
      if (std::memcmp(in, out, sizeof in) != 0)
        QFAIL("transpose32_planes16 does not invert transpose32_values16");
    }
  }

  void bit_shuffle_of_8_bit_values_matches_the_definition() {
    for (int round = 0; round < 1000; ++round) {
      std::uint32_t in[32], out[32], full[32];
      for (auto& x : in) x = std::uint32_t(rng_()) & 0xFFu;
      if (round == 0) std::fill(in, in + 32, 0xFFu);
      if (round == 1) std::fill(in, in + 32, 0u);
      std::memcpy(out, in, sizeof in);
      std::memcpy(full, in, sizeof in);
      transpose32_values8(out);
      transpose32(full);
      if (!is_bit_transpose(in, out))
        QFAIL("transpose32_values8 differs from the bit-by-bit definition");
      if (std::memcmp(out, full, sizeof out) != 0) QFAIL("transpose32_values8 != transpose32");
      // The decoder's inverse takes the 8 planes back to the values.
      transpose32_planes8(out);
      if (std::memcmp(out, in, sizeof out) != 0) QFAIL("transpose32_planes8 does not invert");
    }
  }

  void nonzero_byte_mask_flags_each_byte() {
    QCOMPARE(nonzero_byte_mask(0), 0u);
    QCOMPARE(nonzero_byte_mask(0x0100000000000080ull), 0x81u);
    QCOMPARE(nonzero_byte_mask(0xFFFFFFFFFFFFFFFFull), 0xFFu);
    QCOMPARE(nonzero_byte_mask(0x0000000000010000ull), 0x04u);
    QCOMPARE(nonzero_byte_mask(0x8000800080008000ull), 0xAAu);
    for (int round = 0; round < 100000; ++round) {
      std::uint64_t v = rng_();
      v &= rng_() | rng_();  // some zero bytes
      for (int j = 0; j < 8; ++j)
        if (rng_() % 3 == 0) v &= ~(0xFFull << (8 * j));
      std::uint32_t expected = 0;
      for (int j = 0; j < 8; ++j) expected |= ((v >> (8 * j)) & 0xFF ? 1u : 0u) << j;
      if (nonzero_byte_mask(v) != expected) QFAIL("nonzero_byte_mask");
    }
  }

  void zero_elimination_of_a_known_buffer() {
    Bytes data(64, 0);
    data[0] = 5;
    data[9] = 7;
    data[63] = 1;
    // Level 0: bytes 0, 9, 63 -> L0[0] bit 0, L0[1] bit 1, L0[7] bit 7. Level 1: L0 bytes 0, 1, 7
    // nonzero -> 0x83. Level 2: L1 byte 0 nonzero -> 0x01.
    const Bytes expected = {0x01, 0x83, 0x01, 0x02, 0x80, 5, 7, 1};
    const Bytes encoded = zero_elimination_encode(data.data(), 64);
    QCOMPARE(first_difference(encoded, expected), -1L);
    Bytes decoded(64, 0xEE);
    std::uint32_t consumed = 0;
    QCOMPARE(int(zero_elimination_decode(encoded.data(), std::uint32_t(encoded.size()), 64,
                                         decoded.data(), &consumed)),
             int(ChunkError::None));
    QCOMPARE(consumed, std::uint32_t(encoded.size()));
    QCOMPARE(first_difference(decoded, data), -1L);
    for (std::size_t cut = 0; cut < encoded.size(); ++cut)
      QCOMPARE(int(zero_elimination_decode(encoded.data(), std::uint32_t(cut), 64, decoded.data(),
                                           &consumed)),
               int(ChunkError::Truncated));
    Bytes zero_flagged = expected;
    zero_flagged[6] = 0;
    QCOMPARE(int(zero_elimination_decode(zero_flagged.data(), 8, 64, decoded.data(), &consumed)),
             int(ChunkError::FlaggedByteIsZero));
    Bytes padding = expected;
    padding[0] = 0x03;  // flags a level-1 byte that does not exist (64 bytes have one)
    QCOMPARE(int(zero_elimination_decode(padding.data(), 8, 64, decoded.data(), &consumed)),
             int(ChunkError::BitmapPadding));

    // All zeros: only the level-2 bitmap remains (16384 bytes -> 32).
    const Bytes zeros(16384, 0);
    QCOMPARE(zero_elimination_encode(zeros.data(), 16384).size(), std::size_t(32));
    for (int round = 0; round < 50; ++round) {
      Bytes sparse(64 * (1 + rng_() % 300), 0);
      for (auto& b : sparse)
        if (rng_() % 17 == 0) b = std::uint8_t(rng_());
      const Bytes e = zero_elimination_encode(sparse.data(), std::uint32_t(sparse.size()));
      QCOMPARE(first_difference(e, ref::eliminate(sparse)), -1L);
      Bytes back(sparse.size());
      QCOMPARE(int(zero_elimination_decode(e.data(), std::uint32_t(e.size()),
                                           std::uint32_t(sparse.size()), back.data(), &consumed)),
               int(ChunkError::None));
      QCOMPARE(first_difference(back, sparse), -1L);
      // Every byte after the level-2 bitmap is a stored (flagged) byte of some level: zeroing
      // any one of them is found, wherever it lies (groups decoded with eight bytes ahead and
      // the last ones, full groups and partial ones).
      if (round >= 8) continue;
      const std::size_t level2 = (sparse.size() / 64 + 7) / 8;
      for (std::size_t i = level2; i < e.size(); ++i) {
        Bytes damaged = e;
        damaged[i] = 0;
        const ChunkError error =
            zero_elimination_decode(damaged.data(), std::uint32_t(damaged.size()),
                                    std::uint32_t(sparse.size()), back.data(), &consumed);
        if (error != ChunkError::FlaggedByteIsZero)
          QFAIL(qPrintable(QString("stored byte %1 of %2 zeroed: error %3")
                               .arg(i)
                               .arg(e.size())
                               .arg(int(error))));
      }
    }
  }

  void sparse_body_known_answer() {
    // 1024 words, nonzero z = 2 at 3, 4 at 4 and 1 at 700 (bins 1, 2 and -1). Gaps 3, 0 and
    // 700 - 4 - 1 = 695, escaped (>= 255). Body: count 3; gap bytes 03 00 FF and one pad byte;
    // escape 695 = 0x2B7; one group, mask 2 | 4 | 1 = 7; plane 0 holds value 2 (z = 1) -> 0x4,
    // plane 1 value 0 (z = 2) -> 0x1, plane 2 value 1 (z = 4) -> 0x2. 28 bytes.
    std::vector<std::uint32_t> z(1024, 0);
    z[3] = 2;
    z[4] = 4;
    z[700] = 1;
    const Bytes expected = {3, 0, 0, 0, 3, 0, 0xFF, 0, 0xB7, 0x02, 0, 0, 7, 0,
                            0, 0, 4, 0, 0, 0, 1,    0, 0,    0,    2, 0, 0, 0};
    const Bytes body = sparse_encode(z.data(), 1024);
    QCOMPARE(first_difference(body, expected), -1L);
    QCOMPARE(first_difference(body, ref::sparse(z)), -1L);
    const auto decode = [&](const Bytes& b, std::uint32_t elements = 1024) {
      std::vector<std::uint32_t> back(elements, 0xDEADBEEF);
      const ChunkError e = sparse_decode(b.data(), std::uint32_t(b.size()), elements, back.data());
      if (e == ChunkError::None && !std::equal(back.begin(), back.end(), z.begin()))
        return -1;  // decoded, but to other words
      return int(e);
    };
    QCOMPARE(decode(expected), int(ChunkError::None));
    // Every damage has its error.
    for (std::size_t cut = 0; cut < expected.size(); ++cut)
      QCOMPARE(decode(Bytes(expected.begin(), expected.begin() + long(cut))),
               int(ChunkError::Truncated));
    Bytes longer = expected;
    longer.insert(longer.end(), {0, 0, 0, 0});
    QCOMPARE(decode(longer), int(ChunkError::TrailingBytes));
    QCOMPARE(decode(expected, 700), int(ChunkError::SparseGap));  // position 700 of 700 elements
    Bytes count = expected;
    count[0] = 0x01;
    count[1] = 0x04;  // 1025 listed values in 1024 elements
    QCOMPARE(decode(count), int(ChunkError::SparseCount));
    Bytes pad = expected;
    pad[7] = 1;
    QCOMPARE(decode(pad), int(ChunkError::SparsePadding));
    Bytes small_escape = expected;
    small_escape[8] = 254;
    small_escape[9] = 0;
    QCOMPARE(decode(small_escape), int(ChunkError::SparseGap));
    Bytes zero_word = expected;
    zero_word[20] = 0;  // plane 1's word: value 0 becomes zero
    QCOMPARE(decode(zero_word), int(ChunkError::SparseValues));
    Bytes padding_value = expected;
    padding_value[16] = 0x0C;  // plane 0 also sets value 3, past the 3 listed
    QCOMPARE(decode(padding_value), int(ChunkError::SparseValues));

    // No values: the count alone. Random sparse words against the reference, and back.
    const std::vector<std::uint32_t> none(77, 0);
    QCOMPARE(first_difference(sparse_encode(none.data(), 77), Bytes{0, 0, 0, 0}), -1L);
    for (int round = 0; round < 50; ++round) {
      std::vector<std::uint32_t> words(1 + rng_() % 5000, 0);
      const unsigned spacing = 1 + unsigned(rng_() % 600);
      for (auto& w : words)
        if (rng_() % spacing == 0) w = std::uint32_t(rng_()) >> (rng_() % 32);
      const Bytes e = sparse_encode(words.data(), std::uint32_t(words.size()));
      QCOMPARE(first_difference(e, ref::sparse(words)), -1L);
      std::vector<std::uint32_t> back(words.size());
      QCOMPARE(int(sparse_decode(e.data(), std::uint32_t(e.size()), std::uint32_t(words.size()),
                                 back.data())),
               int(ChunkError::None));
      QVERIFY(back == words);
    }
  }

  void constant_uint16_chunk_known_answer() {
    // 8192 x 1000 is one 16 KiB chunk. Delta residuals: 1000 then zeros; zigzag(1000) = 2000 =
    // bits 4, 6, 7, 8, 9, 10. With 256 blocks, plane p of block 0 is word p * 256, byte 1024 p,
    // holding 0x01 (value 0 is bit 0). Level 0: byte 128 p = 0x01. Level 1: byte 16 p = 0x01.
    // Level 2 (32 bytes): byte 2 p = 0x01. Stream: 32 + 6 + 6 + 6 = 50 bytes, mode delta.
    const std::vector<std::uint16_t> v(8192, 1000);
    const Bytes s = compress_flat_cpu(v.data(), DType::UInt16, v.size(), CodecParams{});
    Bytes chunk(32, 0);
    for (int p : {4, 6, 7, 8, 9, 10}) chunk[std::size_t(2 * p)] = 0x01;
    for (int level = 0; level < 3; ++level)
      for (int p = 0; p < 6; ++p) chunk.push_back(0x01);
    const std::size_t table_at = 56, payload_at = 56 + 4 + 16;
    QCOMPARE(s.size(), payload_at + 52);  // 50 bytes padded to 52
    QCOMPARE(get32(s, table_at), (1u << 30) | 50u);
    QCOMPARE(first_difference(Bytes(s.begin() + payload_at, s.begin() + payload_at + 50), chunk),
             -1L);
    QCOMPARE(s[payload_at + 50], std::uint8_t(0));
    QCOMPARE(s[payload_at + 51], std::uint8_t(0));
    QCOMPARE(get64(s, 48), std::uint64_t(52));
    QCOMPARE(get64(s, 60), ref::checksum(s.data() + payload_at, 52));
    QCOMPARE(get64(s, 68), ref::checksum(s.data(), 68));
  }

  void header_bytes_known_answer() {
    const std::vector<float> v(6, 1.5f);
    CodecParams p;
    p.codec = Codec::Lossy;
    p.error_bound = 0.125;
    p.chunk_bytes = 2048;
    const Bytes s = compress_cpu(v.data(), DType::Float32, {2, 3}, p);
    const std::uint8_t magic[8] = {0x89, 0x4C, 0x44, 0x52, 0x50, 0x5A, 0x0D, 0x0A};
    QVERIFY(std::memcmp(s.data(), magic, 8) == 0);
    QCOMPARE(s[8], std::uint8_t(3));  // version, little-endian u16
    QCOMPARE(s[9], std::uint8_t(0));
    QCOMPARE(s[10], std::uint8_t(2));  // lossy
    QCOMPARE(s[11], std::uint8_t(2));  // float32
    QCOMPARE(s[12], std::uint8_t(2));  // ndim
    QCOMPARE(get32(s, 16), 2048u);
    QCOMPARE(get64(s, 24), std::uint64_t(6));
    QCOMPARE(get64(s, 32), std::bit_cast<std::uint64_t>(0.125));
    QCOMPARE(get64(s, 40), std::uint64_t(1));
    QCOMPARE(get64(s, 56), std::uint64_t(2));
    QCOMPARE(get64(s, 64), std::uint64_t(3));
    // 6 values of 1.5 with eb 0.125: bins of 0.25, q = 6 each. The lossy codec tries plain
    // first: residuals six 12s (zigzag of 6, bits 2, 3), so planes 2 and 3 of the single block
    // are 0x0000003F, at shuffled bytes 8 and 12 (32 planes x 4 bytes = 128 bytes). Level 0
    // (16 bytes): byte 1 = 0x11. Level 1 (2 bytes): byte 0 = 0x02. Level 2 (1 byte): 0x01.
    // 5 bytes; with the outlier count 9, under 7/8 of the 24 raw bytes (21), so delta is not
    // tried: mode 2, padded to 12.
    QCOMPARE(get32(s, 72), (2u << 30) | 9u);
    const std::size_t payload_at = 72 + 4 + 16;
    const Bytes expected = {0, 0, 0, 0, 0x01, 0x02, 0x11, 0x3F, 0x3F, 0, 0, 0};
    QCOMPARE(s.size(), payload_at + 12);
    QCOMPARE(first_difference(Bytes(s.begin() + payload_at, s.end()), expected), -1L);

    const Bytes empty = compress_flat_cpu(nullptr, DType::UInt16, 0, CodecParams{});
    QCOMPARE(empty.size(), std::size_t(72));
    QCOMPARE(get64(empty, 40), std::uint64_t(0));
    QCOMPARE(get64(empty, 56), ref::checksum(nullptr, 0));
    const StreamInfo info = read_header(empty.data(), empty.size());
    QCOMPARE(info.element_count, std::uint64_t(0));
    QVERIFY(info.shape.empty());
    QVERIFY(decompress_cpu(empty.data(), empty.size()).bytes.empty());
  }

  void quantiser_known_answers() {
    const double eb = 0.25, w = lossy_bin_width(eb);
    auto bin = [&](float x) {
      std::int32_t q = 12345;
      return lossy_quantize(x, lossy_scale(eb), &q) ? q : std::numeric_limits<std::int32_t>::min();
    };
    constexpr std::int32_t kOutlier = std::numeric_limits<std::int32_t>::min();
    QCOMPARE(bin(0.0f), 0);
    QCOMPARE(bin(-0.0f), 0);
    QCOMPARE(bin(0.2f), 0);
    QCOMPARE(bin(0.25f), 1);  // exactly half a bin: away from zero, |0.5 - 0.25| = eb
    QCOMPARE(bin(-0.25f), -1);
    QCOMPARE(bin(0.75f), 2);  // 1.5 bins -> 2, error exactly eb
    QCOMPARE(bin(1.0f), 2);
    QCOMPARE(bin(-1.26f), -3);      // -2.52 bins
    QCOMPARE(bin(float_of(1)), 0);  // smallest denormal
    QCOMPARE(bin(NAN), kOutlier);
    QCOMPARE(bin(INFINITY), kOutlier);
    QCOMPARE(bin(-INFINITY), kOutlier);
    QCOMPARE(bin(1e30f), kOutlier);                // 2e30 bins: beyond 2^30
    QCOMPARE(bin(float(536870912.0)), kOutlier);   // 2^29 / 0.5 = 2^30 bins
    QCOMPARE(bin(float(268435456.0)), 536870912);  // 2^28: 2^29 bins
    float r = 0;
    QVERIFY(lossy_reconstruct(3, w, &r));
    QCOMPARE(r, 1.5f);
    QVERIFY(!lossy_reconstruct(1, 1e39, &r));  // not a finite float
    // An error bound so large that 0 and the largest floats are within it except beyond it.
    std::int32_t q;
    QVERIFY(lossy_quantize(1e38f, lossy_scale(3e38), &q));
    QCOMPARE(q, 0);
    QVERIFY(!lossy_quantize(FLT_MAX, lossy_scale(3e38), &q));  // bin 1 is 6e38: no float
    // The exact check: 1 + 2^-24 is no float; 1 (as r) against x = 1 + 2^-23 with eb = 2^-24.
    QVERIFY(within_bound(1.0f, std::nextafter(1.0f, 2.0f), std::ldexp(1.0, -23)));
    QVERIFY(!within_bound(1.0f, std::nextafter(1.0f, 2.0f), std::ldexp(1.0, -24)));
    QVERIFY(within_bound(FLT_MAX, -FLT_MAX, 2.0 * double(FLT_MAX)));
    // Differences a double cannot hold: FLT_MAX -+ 2^-149 rounds to FLT_MAX == eb, and only the
    // two-sum error term tells inside from outside.
    QVERIFY(within_bound(FLT_MAX, float_of(1), double(FLT_MAX)));
    QVERIFY(!within_bound(FLT_MAX, float_of(0x80000001u), double(FLT_MAX)));
    QVERIFY(within_bound(float_of(1), FLT_MAX, double(FLT_MAX)));
    QVERIFY(!within_bound(float_of(0x80000001u), FLT_MAX, double(FLT_MAX)));
  }

  // The decoders' one-multiply reconstruction of small bins must give lossy_reconstruct's float
  // bit for bit, for every bin it is used for, whatever the width's exponent (subnormal results
  // included) and right up to the widths where it stops being used.
  void small_bins_reconstruct_as_the_definition() {
    std::vector<double> widths = {0.5, 2.375, 4.75, 9.5, 19.0, 0.1875, 1.0, 3.0};
    std::mt19937_64 rng(20261204);
    std::uniform_int_distribution<std::uint32_t> float_pattern(1, 0x77800000u);  // up to 2^112
    for (int k = 0; k < 24; ++k) widths.push_back(double(float_of(float_pattern(rng))));
    widths.push_back(double(float_of(1)));            // the smallest subnormal
    widths.push_back(double(float_of(0x00800000u)));  // the smallest normal
    widths.push_back(std::ldexp(1.0, 112));           // 2^15 width = 2^127: still finite
    widths.push_back(double(FLT_MAX) / 32768.0);      // 2^15 width just below FLT_MAX
    long compared = 0;
    for (const double width : widths) {
      const SmallBins small = small_bins(width);
      QVERIFY2(small.fit && small.float_width, qPrintable(QString::number(width, 'g', 17)));
      for (std::int32_t q = -kSmallBinMax; q <= kSmallBinMax; ++q) {
        float expected = 0;
        QVERIFY(lossy_reconstruct(q, width, &expected));
        const float r = reconstruct_small_bin(q, small.width_float);
        if (float_bits(r) != float_bits(expected))
          QFAIL(qPrintable(QString("width %1, bin %2: %3 instead of %4")
                               .arg(width, 0, 'g', 17)
                               .arg(q)
                               .arg(double(r), 0, 'g', 9)
                               .arg(double(expected), 0, 'g', 9)));
        ++compared;
      }
    }
    QCOMPARE(compared, long(widths.size()) * (2 * kSmallBinMax + 1));
    // Where the path does not apply: a width that is no float, one whose bins overflow.
    QVERIFY(small_bins(0.2).fit);
    QVERIFY(!small_bins(0.2).float_width);
    QVERIFY(!small_bins(std::ldexp(1.0, 113)).fit);  // 2^15 width = 2^128 > FLT_MAX
    QVERIFY(!small_bins(std::ldexp(1.0, 113)).float_width);
    QVERIFY(!small_bins(1e300).fit);
  }

  // The quantiser forms t with the reciprocal of the bin width and divides only near a tie; its
  // bins must be the definition's (a division) everywhere, above all next to half-integers.
  void quantiser_equals_the_division_near_ties_and_at_random() {
    std::mt19937_64 rng(20261203);
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    long compared = 0;
    // x's bin (or outlier verdict) for bound eb against the definition's (a division).
    const auto check_bin = [&](float x, const LossyScale& scale, double eb) {
      std::int32_t q = 0, expected = 0, full = 0;
      const bool binned = lossy_quantize(x, scale, &q);
      const bool expected_binned = ref::quantize(x, eb, &expected);
      // The short path must not change the full function's answer either.
      const bool full_binned = lossy_quantize_full(x, scale, &full);
      ++compared;
      if (binned != expected_binned || (binned && q != expected) || binned != full_binned ||
          (binned && q != full)) {
        QFAIL(qPrintable(QString("eb %1, x %2 (bits %3): bin %4 (%5), the division %6 (%7)")
                             .arg(eb, 0, 'g', 17)
                             .arg(double(x), 0, 'g', 9)
                             .arg(std::bit_cast<std::uint32_t>(x), 8, 16, QChar('0'))
                             .arg(q)
                             .arg(binned)
                             .arg(expected)
                             .arg(expected_binned)));
      }
    };
    // `count` floats upward from `below` floats under x, each checked with both signs; false once
    // a check has failed.
    const auto check_floats_around = [](float x, int below, int count, const auto& check) {
      for (int step = 0; step < below; ++step) x = std::nextafter(x, -FLT_MAX);
      for (int step = 0; step < count; ++step, x = std::nextafter(x, FLT_MAX)) {
        check(x);
        check(-x);
        if (QTest::currentTestFailed()) return false;
      }
      return true;
    };
    for (const double eb : {0.05, 1.0 / 3.0, 0.35, 0.375, 4.75, 1.5, 1e-3, 0.25, 7e-20, 3e30}) {
      const LossyScale scale = lossy_scale(eb);
      const auto check = [&](float x) { check_bin(x, scale, eb); };
      // Floats next to (k + 1/2) bins, for bin numbers from 0 to past 2^30, of both signs.
      for (int i = 0; i < 20000; ++i) {
        const double k = std::floor(std::ldexp(unit(rng), int(unit(rng) * 31)));
        if (!check_floats_around(float((k + 0.5) * 2.0 * eb), 4, 9, check)) return;
      }
      // Any bit pattern: NaNs, infinities, denormals, every exponent.
      for (int i = 0; i < 200000; ++i) {
        check(std::bit_cast<float>(std::uint32_t(rng())));
        if (QTest::currentTestFailed()) return;
      }
    }
    // Floats next to where the test without reconstruction stops applying, half a bin less
    // 2^-22 (|q| + 1) from bin q's centre, for bins 2^j: on both sides of that line the bin and
    // the verdict must be the full test's.
    for (const double eb : {0.5, 0.05, 1.0 / 3.0, 3e-9, 7e20}) {
      const LossyScale scale = lossy_scale(eb);
      const auto check = [&](float x) { check_bin(x, scale, eb); };
      for (int j = 0; j <= 29; ++j) {
        const double q = std::ldexp(1.0, j);
        const double line = 0.5 - std::ldexp(q + 1.0, -22);
        for (const double side : {-1.0, 1.0}) {
          if (!check_floats_around(float((q + side * line) * 2.0 * eb), 3, 7, check)) return;
        }
      }
    }
    // Floats next to the line of lossy_quantize's short path, half a bin less
    // 2^-22 max(8, |q| + 1) from bin q's centre (2^-19 for the bins up to 7).
    for (const double eb : {0.5, 0.05, 1.0 / 3.0, 4.75, 3e-9}) {
      const LossyScale scale = lossy_scale(eb);
      const auto check = [&](float x) { check_bin(x, scale, eb); };
      for (int q = 0; q <= 40; ++q) {
        const double line = 0.5 - std::ldexp(std::max(8.0, q + 1.0), -22);
        for (const double side : {-1.0, 1.0}) {
          if (!check_floats_around(float((q + side * line) * 2.0 * eb), 3, 7, check)) return;
        }
      }
    }
    // Floats next to the lines of the single-precision path: 1/2 - 2^-9 from bin q's centre
    // (q up to past 2^12, where the path stops) and next to |t| = 2^12, for bounds down to and up
    // to the ends of the range where the path applies (widths 2^-100 and 2^98) and just past them.
    for (const double eb : {0.5, 0.05, 1.0 / 3.0, 4.75, 3e-9, 0x1p-101, 0x1p97, 0x1p-102, 0x1p98}) {
      const LossyScale scale = lossy_scale(eb);
      const auto check = [&](float x) { check_bin(x, scale, eb); };
      for (int q = 0; q <= 4100; q += q < 64 ? 1 : 61) {
        const double line = 0.5 - 0x1p-9;
        for (const double side : {-1.0, 1.0}) {
          if (!check_floats_around(float((q + side * line) * 2.0 * eb), 3, 7, check)) return;
        }
      }
      if (!check_floats_around(float(4096.0 * 2.0 * eb), 5, 11, check)) return;
      if (!check_floats_around(float(4095.5 * 2.0 * eb), 5, 11, check)) return;
    }
    // Exact ties: widths m / 64 (m odd) and x = (k + 1/2) width, a float; for some of these
    // (m = 49, k = 1 among them) x times the rounded reciprocal falls just below the tie.
    for (int m = 3; m < 400; m += 2) {
      const double eb = m / 128.0;
      const LossyScale scale = lossy_scale(eb);
      for (int k = 0; k < 300; ++k) {
        const float x = float((k + 0.5) * (m / 64.0));
        for (const float v : {x, -x}) {
          std::int32_t q = 0, expected = 0;
          QVERIFY(lossy_quantize(v, scale, &q) && ref::quantize(v, eb, &expected));
          ++compared;
          QVERIFY2(q == expected, qPrintable(QString("eb %1, x %2: bin %3, the division %4")
                                                 .arg(eb)
                                                 .arg(double(v))
                                                 .arg(q)
                                                 .arg(expected)));
        }
      }
    }
    qInfo("%ld values: every bin equal to the division's", compared);
  }

  // --- Round trips -----------------------------------------------------------------------------

  void lossless_round_trips_are_bit_exact_and_match_the_reference() {
    for (const Dataset& d : lossless_datasets()) {
      for (std::uint32_t chunk_bytes : {1024u, 4224u, 16384u, 1u << 20}) {
        CodecParams p;
        p.chunk_bytes = chunk_bytes;
        const Bytes s = round_trip(d, p);
        if (QTest::currentTestFailed()) {
          qWarning() << "dataset" << d.name << "chunk bytes" << chunk_bytes;
          return;
        }
        // Never much bigger than raw: header, table, checksums, at most 3 pad bytes per chunk.
        const std::size_t chunks = (d.data.size() + chunk_bytes - 1) / chunk_bytes;
        QVERIFY(s.size() <= d.data.size() + 56 + 8 * d.shape.size() + 7 * chunks + 16);
      }
    }
  }

  void lossy_round_trips_hold_the_bound_at_every_element() {
    for (double eb : {0.5, 0.25, 0.1, 1e-3, 4.75, 1e-30, 1e-40, 3e38, 1e300}) {
      const std::vector<float> values = adversarial(eb);
      const Dataset d = make_f32(QString("adversarial, eb %1").arg(eb), values);
      for (std::uint32_t chunk_bytes : {1024u, 16384u}) {
        CodecParams p;
        p.codec = Codec::Lossy;
        p.error_bound = eb;
        p.chunk_bytes = chunk_bytes;
        round_trip(d, p);
        if (QTest::currentTestFailed()) return;
      }
    }
    // The lossless edge cases (float32) through the lossy codec too.
    for (const Dataset& d : lossless_datasets()) {
      if (d.dtype != DType::Float32) continue;
      CodecParams p;
      p.codec = Codec::Lossy;
      p.error_bound = 0.5;
      round_trip(d, p);
      if (QTest::currentTestFailed()) return;
    }
  }

  void lossy_keeps_outliers_bit_exact_and_counts_them() {
    std::vector<float> v(5000, 1.0f);
    const std::vector<std::uint32_t> specials = {0x7FC00000u, 0x7F800001u, 0xFFC00123u,
                                                 0x7F800000u, 0xFF800000u, 0x7F7FFFFFu};
    for (std::size_t k = 0; k < specials.size(); ++k) v[100 * k + 7] = float_of(specials[k]);
    v[4999] = 3e9f;  // 3e9 bins of width 1: beyond 2^30
    CodecParams p;
    p.codec = Codec::Lossy;
    p.error_bound = 0.5;
    const Bytes s = compress_flat_cpu(v.data(), DType::Float32, v.size(), p);
    const DecodedArray a = decompress_cpu(s.data(), s.size());
    const auto* out = reinterpret_cast<const float*>(a.bytes.data());
    for (std::size_t k = 0; k < specials.size(); ++k)
      QCOMPARE(bits_of(out[100 * k + 7]), specials[k]);
    QCOMPARE(bits_of(out[4999]), bits_of(3e9f));
    QCOMPARE(out[0], 1.0f);
    // Chunk 1 (elements 4096..4999) holds one outlier: its count then index 903 then its bits.
    const std::size_t payload_at = 56 + 8 + 16;
    const std::size_t chunk1 = payload_at + ((get32(s, 56) & 0x3FFFFFFFu) + 3) / 4 * 4;
    QCOMPARE(get32(s, chunk1), 1u);
    QCOMPARE(get32(s, chunk1 + 4), 903u);
    QCOMPARE(get32(s, chunk1 + 8), bits_of(3e9f));
    QCOMPARE(get32(s, payload_at), std::uint32_t(specials.size()));
    QCOMPARE(get32(s, payload_at + 4), 7u);
    QCOMPARE(get32(s, payload_at + 4 + 4 * specials.size()), specials[0]);
  }

  // --- Ratios ----------------------------------------------------------------------------------

  void compresses_where_the_data_allows() {
    const std::size_t n = 16 * 8192;
    CodecParams p;
    auto ratio_of = [&](const Dataset& d, const CodecParams& params) {
      const Bytes s = compress(d, params);
      const double r = double(d.data.size()) / double(s.size());
      qInfo("%-32s %-8s %8zu -> %8zu bytes, ratio %.2f", qPrintable(d.name),
            to_string(params.codec), d.data.size(), s.size(), r);
      return r;
    };
    QVERIFY(ratio_of(make_u16("u16 zeros", std::vector<std::uint16_t>(n, 0)), p) > 300);
    std::vector<std::uint16_t> ramp(n);
    for (std::size_t i = 0; i < n; ++i) ramp[i] = std::uint16_t(i / 4);
    QVERIFY(ratio_of(make_u16("u16 ramp", ramp), p) > 2);
    QVERIFY(ratio_of(make_u16("u16 pedestal 3000 + noise 2", pedestal_noise(n, 3000, 2)), p) > 2);
    QVERIFY(ratio_of(make_u16("u16 pedestal 3000 + noise 4", pedestal_noise(n, 3000, 4)), p) > 1.5);
    const Dataset random = make_u16("u16 random", random_u16(n));
    const Bytes rs = compress(random, p);
    QCOMPARE(read_header(rs.data(), rs.size()).raw_chunks, std::uint64_t(16));
    QVERIFY(rs.size() <= random.data.size() + 56 + 4 * 16 + 16);
    ratio_of(random, p);

    // Photon-sparse float32: 4 % of pixels hold 1-3 photons of 9.5 keV, noise 0.8 keV.
    std::vector<float> sparse(n);
    std::normal_distribution<double> noise(0, 0.8);
    for (auto& x : sparse)
      x = float(noise(rng_) + (rng_() % 25 == 0 ? 9.5 * double(1 + rng_() % 3) : 0.0));
    const Dataset sparse_set = make_f32("f32 photon-sparse", sparse);
    CodecParams lossy;
    lossy.codec = Codec::Lossy;
    lossy.error_bound = 4.75;  // half a photon
    QVERIFY(ratio_of(sparse_set, lossy) > 8);
    // Most chunks list their photons (sparse chunks) rather than eliminate zero plane bytes.
    const Bytes listed = compress(sparse_set, lossy);
    QVERIFY(read_header(listed.data(), listed.size()).sparse_chunks >= 8);
    lossy.error_bound = 9.5;
    ratio_of(sparse_set, lossy);
    ratio_of(sparse_set, p);
  }

  void simulated_epix10ka_segments() {
    const DetectorDescription detector = find_detector("epix10ka2m");
    DetectorSimulator sim(detector, SimulatorConfig{}, &pool_);
    std::uint64_t index = 0;
    while (!sim.is_hit(index)) ++index;
    Bytes raw(detector.raw_event_bytes());
    sim.generate(index, raw.data(), nullptr, &pool_);
    std::vector<float> calibrated(detector.pixels());
    calibrate_event_cpu(detector, sim.constants(), calib::CalibrationParams{}, raw.data(),
                        calibrated.data(), &pool_);
    const std::size_t segment = detector.pixels_per_segment();
    const std::uint64_t rows = std::uint64_t(detector.rows), cols = std::uint64_t(detector.cols);

    Dataset raw_segments{"epix10ka raw, 2 segments",
                         DType::UInt16,
                         {2, rows, cols},
                         2 * segment,
                         Bytes(raw.begin(), raw.begin() + std::ptrdiff_t(4 * segment))};
    const Bytes rs = round_trip(raw_segments, CodecParams{});
    if (QTest::currentTestFailed()) return;
    qInfo("epix10ka raw uint16, 2 segments: lossless ratio %.3f",
          double(raw_segments.data.size()) / double(rs.size()));
    QVERIFY(rs.size() < raw_segments.data.size());

    Dataset cal{"epix10ka calibrated, 2 segments",
                DType::Float32,
                {2, rows, cols},
                2 * segment,
                Bytes(reinterpret_cast<const std::uint8_t*>(calibrated.data()),
                      reinterpret_cast<const std::uint8_t*>(calibrated.data() + 2 * segment))};
    const Bytes ls = round_trip(cal, CodecParams{});
    if (QTest::currentTestFailed()) return;
    qInfo("epix10ka calibrated float32 (keV), 2 segments: lossless ratio %.3f",
          double(cal.data.size()) / double(ls.size()));
    const double photon_kev = sim.config().photon_energy_kev;
    for (double photons : {0.25, 0.5, 1.0}) {
      CodecParams p;
      p.codec = Codec::Lossy;
      p.error_bound = photons * photon_kev;
      const Bytes s = round_trip(cal, p);
      if (QTest::currentTestFailed()) return;
      qInfo("epix10ka calibrated float32, 2 segments: lossy eb %.2f photon ratio %.2f", photons,
            double(cal.data.size()) / double(s.size()));
      QVERIFY(s.size() * 4 < cal.data.size());
    }
  }

  void thread_pool_does_not_change_the_bytes() {
    // round_trip compares pooled and serial streams for every dataset; here a larger array with
    // many chunks and several pool sizes.
    std::vector<std::uint16_t> v = pedestal_noise(40 * 8192 + 5, 1500, 5);
    for (std::size_t i = 0; i < v.size(); i += 9000) v[i] = std::uint16_t(rng_());
    const Bytes serial = compress_flat_cpu(v.data(), DType::UInt16, v.size(), CodecParams{});
    for (unsigned threads : {1u, 2u, 3u, 7u}) {
      ThreadPool pool(threads);
      const Bytes pooled =
          compress_flat_cpu(v.data(), DType::UInt16, v.size(), CodecParams{}, &pool);
      QCOMPARE(first_difference(serial, pooled), -1L);
      std::vector<std::uint16_t> back(v.size());
      decompress_cpu_into(serial.data(), serial.size(), back.data(), back.size() * 2, &pool);
      QVERIFY(back == v);
    }
  }

  void a_reused_compressor_writes_the_reference_bytes() {
    // One CpuCompressor, serial and pooled, keeps its output and staging between calls without
    // clearing them: every stream after the first lands on bytes an earlier, larger or
    // different one left. Random data first (raw chunks fill the buffers with nonzero bytes),
    // then smaller arrays whose chunks have pad bytes, fewer dimensions and other codecs; each
    // must be the independent reference encoder's stream, byte for byte.
    std::vector<Dataset> sequence;
    sequence.push_back(make_u16("u16 random 3-D", random_u16(4 * 8192), {4, 64, 128}));
    for (const Dataset& d : lossless_datasets()) sequence.push_back(d);
    std::vector<float> photons(9000, 0.0f);
    for (std::size_t i = 0; i < photons.size(); i += 29) photons[i] = 9.5f;
    sequence.push_back(make_f32("f32 photon-sparse", photons));
    CpuCompressor serial, pooled;
    for (int pass = 0; pass < 2; ++pass) {
      for (const Dataset& d : sequence) {
        const bool lossy = d.dtype == DType::Float32 && pass == 1;
        CodecParams p;
        p.codec = lossy ? Codec::Lossy : Codec::Lossless;
        p.error_bound = lossy ? 0.5 : 0.0;
        p.chunk_bytes = pass == 0 ? 1024 : 4224;
        const Bytes reference = ref::encode(d.data.data(), d.dtype, d.shape, d.count, p);
        for (CpuCompressor* compressor : {&serial, &pooled}) {
          ThreadPool* pool = compressor == &pooled ? &pool_ : nullptr;
          const std::span<const std::uint8_t> s =
              d.shape.empty() ? compressor->compress_flat(d.data.data(), d.dtype, d.count, p, pool)
                              : compressor->compress(d.data.data(), d.dtype, d.shape, p, pool);
          const Bytes stream(s.begin(), s.end());
          if (first_difference(stream, reference) != -1)
            qWarning() << d.name << "pass" << pass << (pool ? "pooled" : "serial")
                       << "differs at byte" << first_difference(stream, reference);
          QCOMPARE(first_difference(stream, reference), -1L);
        }
      }
    }
  }

  // --- Rejection -------------------------------------------------------------------------------

  std::vector<Bytes> small_streams() {
    std::vector<Bytes> out;
    CodecParams p;
    p.chunk_bytes = 1024;
    std::vector<std::uint16_t> u(1400);
    for (std::size_t i = 0; i < 512; ++i) u[i] = std::uint16_t(100 + i % 3);  // compressible
    for (std::size_t i = 512; i < 1024; ++i) u[i] = std::uint16_t(rng_());    // raw
    out.push_back(compress_cpu(u.data(), DType::UInt16, {2, 700}, p));        // 376 zeros last
    std::vector<float> f(700);
    for (std::size_t i = 0; i < f.size(); ++i) f[i] = float(i % 50) * 0.3f;
    f[3] = NAN;
    f[300] = INFINITY;
    f[600] = 1e20f;
    CodecParams lossy = p;
    lossy.codec = Codec::Lossy;
    lossy.error_bound = 0.05;
    out.push_back(compress_flat_cpu(f.data(), DType::Float32, f.size(), lossy));
    out.push_back(compress_flat_cpu(f.data(), DType::Float32, f.size(), p));
    // Photon-sparse with an outlier: sparse chunks (checked in sparse_chunks_in_small_streams).
    std::vector<float> photons(2500, 0.0f);
    for (std::size_t i = 0; i < photons.size(); ++i)
      if (i % 37 == 0 || i % 41 == 0) photons[i] = 9.5f * float(1 + (i % 5 == 0));
    photons[20] = NAN;
    lossy.error_bound = 4.75;
    lossy.chunk_bytes = 4096;  // 1024, 1024 and 452 elements
    out.push_back(compress_flat_cpu(photons.data(), DType::Float32, photons.size(), lossy));
    return out;
  }

  void sparse_chunks_in_small_streams() {
    const Bytes s = small_streams().back();
    QVERIFY(read_header(s.data(), s.size()).sparse_chunks >= 2);
    // A version 2 stream is read as version 3; version 4 is refused by name.
    const Bytes current = small_streams()[0];
    Bytes old = current;
    old[8] = 2;
    reseal(old);
    QVERIFY(decompress_cpu(old.data(), old.size()).bytes ==
            decompress_cpu(current.data(), current.size()).bytes);
    Bytes future = s;
    future[8] = 4;
    reseal(future);
    QVERIFY_THROWS_EXCEPTION(InputError, decompress_cpu(future.data(), future.size()));
  }

  void truncated_streams_are_rejected_at_every_length() {
    for (const Bytes& s : small_streams()) {
      QVERIFY(s.size() > 150);
      for (std::size_t length = 0; length < s.size(); ++length) {
        const Bytes cut(s.begin(), s.begin() + std::ptrdiff_t(length));
        QVERIFY_THROWS_EXCEPTION(InputError, decompress_cpu(cut.data(), cut.size()));
        QVERIFY_THROWS_EXCEPTION(InputError, read_header(cut.data(), cut.size()));
      }
      Bytes longer = s;
      longer.push_back(0);
      QVERIFY_THROWS_EXCEPTION(InputError, decompress_cpu(longer.data(), longer.size()));
      QVERIFY_THROWS_EXCEPTION(InputError, decompress_cpu(nullptr, 0));
    }
  }

  void every_flipped_bit_is_detected() {
    for (const Bytes& s : small_streams()) {
      for (std::size_t at = 0; at < s.size(); ++at) {
        for (int bit = 0; bit < 8; ++bit) {
          Bytes damaged = s;
          damaged[at] ^= std::uint8_t(1u << bit);
          try {
            decompress_cpu(damaged.data(), damaged.size());
            QFAIL(qPrintable(
                QString("a flip of bit %1 of byte %2 was not noticed").arg(bit).arg(at)));
          } catch (const InputError&) {
          }
        }
      }
    }
  }

  void messages_name_what_is_wrong() {
    const Bytes s = small_streams()[0];
    auto message = [](const Bytes& b) {
      try {
        decompress_cpu(b.data(), b.size());
      } catch (const InputError& e) {
        return QString(e.what());
      }
      return QString("accepted");
    };
    auto expect = [&](const Bytes& b, const char* text) {
      const QString m = message(b);
      QVERIFY2(m.contains(text), qPrintable(m));
    };
    Bytes foreign = s;
    foreign[1] = 'X';
    expect(foreign, "not a livedrp compressed stream");
    const Bytes npy = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, 0x76, 0};
    expect(npy, "not a livedrp compressed stream");
    expect(Bytes(s.begin(), s.begin() + 30), "truncated");
    expect(Bytes(s.begin(), s.end() - 1), "truncated");
    Bytes version = s;
    version[8] = 1;
    expect(version, "format version 1 is not supported");
    Bytes header = s;
    header[24] ^= 1;
    expect(header, "header checksum mismatch");
    Bytes payload = s;
    payload.back() ^= 0x40;
    expect(payload, "payload checksum mismatch");

    // Absurd fields behind valid checksums: the field checks must catch them.
    auto resealed = [&](auto change) {
      Bytes b = s;
      change(b);
      reseal(b);
      return b;
    };
    expect(resealed([](Bytes& b) { b[10] = 3; }), "codec id 3");
    expect(resealed([](Bytes& b) { b[11] = 9; }), "dtype id 9");
    expect(resealed([](Bytes& b) { b[10] = 2; }), "lossy codec is defined for float32 only");
    expect(resealed([](Bytes& b) { b[12] = 9; }), "ndim 9 exceeds 8");
    expect(resealed([](Bytes& b) { b[14] = 1; }), "reserved header bytes");
    expect(resealed([](Bytes& b) { put32(b, 16, 1000); }), "chunk size 1000");
    expect(resealed([](Bytes& b) { put32(b, 16, 2u << 20); }), "chunk size 2097152");
    expect(resealed([](Bytes& b) { put64(b, 32, std::bit_cast<std::uint64_t>(0.5)); }),
           "must be 0 for the lossless codec");
    expect(resealed([](Bytes& b) { put64(b, 24, 1401); }), "does not hold the 1401 elements");
    expect(resealed([](Bytes& b) {
             put64(b, 56, 1ull << 62);
             put64(b, 64, 1ull << 62);
           }),
           "does not hold");
    expect(resealed([](Bytes& b) {
             put64(b, 56, 0);
             put64(b, 24, 0);
           }),
           "chunk count 3");
    expect(resealed([](Bytes& b) { put64(b, 24, ~0ull >> 1); }), "absurd");
    expect(resealed([](Bytes& b) { put64(b, 40, 1ull << 40); }), "does not fit");
    expect(resealed([](Bytes& b) { put64(b, 48, get64(b, 48) + 4); }), "payload size");
    expect(resealed([](Bytes& b) { put32(b, 72, get32(b, 72) | (3u << 30)); }), "mode 3");
    expect(resealed([](Bytes& b) { put32(b, 76, 100); }), "raw chunk of 1024 bytes");
    expect(resealed([](Bytes& b) { put32(b, 72, (1u << 30) | 1024); }), "compressed size 1024");

    // Corrupt chunk contents behind valid checksums.
    const std::size_t payload_at = 56 + 16 + 12 + 16;
    expect(resealed([&](Bytes& b) { b[payload_at] ^= 0x80; }), "cannot be decoded");
    Bytes lossy = small_streams()[1];
    const std::size_t lossy_payload = 56 + 12 + 16;
    Bytes big_count = lossy;
    put32(big_count, lossy_payload, 1u << 31);
    reseal(big_count);
    expect(big_count, "outlier count");
    Bytes unordered = lossy;
    put32(unordered, lossy_payload + 4, 500);  // the NaN's index, beyond the 256-element chunk
    reseal(unordered);
    expect(unordered, "outlier indices");

    Bytes out(10);
    QVERIFY_THROWS_EXCEPTION(InputError, decompress_cpu_into(s.data(), s.size(), out.data(), 10));
  }

  void random_damage_behind_valid_checksums_never_crashes() {
    // Mutations of table and payload bytes with resealed checksums: decoding may succeed (the
    // damage can leave a valid stream) but must otherwise throw InputError.
    const std::vector<Bytes> streams = small_streams();
    int rejected = 0, accepted = 0;
    for (int round = 0; round < 6000; ++round) {
      Bytes b = streams[std::size_t(round) % streams.size()];
      const int changes = 1 + int(rng_() % 4);
      for (int k = 0; k < changes; ++k) {
        const std::size_t at = 56 + rng_() % (b.size() - 56);
        b[at] = rng_() % 2 ? std::uint8_t(rng_()) : std::uint8_t(b[at] ^ (1u << (rng_() % 8)));
      }
      reseal(b);
      try {
        decompress_cpu(b.data(), b.size(), round % 2 ? &pool_ : nullptr);
        ++accepted;
      } catch (const InputError&) {
        ++rejected;
      }
    }
    qInfo("random damage: %d rejected, %d still valid", rejected, accepted);
    QVERIFY(rejected > 1000);
  }

  void unusable_parameters_are_rejected() {
    const std::vector<float> f(10, 1.0f);
    const std::vector<std::uint16_t> u(10, 1);
    CodecParams p;
    p.codec = Codec::Lossy;
    p.error_bound = 0.5;
    QVERIFY_THROWS_EXCEPTION(InputError, compress_flat_cpu(u.data(), DType::UInt16, 10, p));
    for (double eb : {0.0, -1.0, double(NAN), double(INFINITY), DBL_MAX}) {
      p.error_bound = eb;
      QVERIFY_THROWS_EXCEPTION(InputError, compress_flat_cpu(f.data(), DType::Float32, 10, p));
    }
    CodecParams q;
    for (std::uint32_t chunk_bytes : {0u, 512u, 1000u, 2048u + 64u, 2u << 20}) {
      q.chunk_bytes = chunk_bytes;
      QVERIFY_THROWS_EXCEPTION(InputError, compress_flat_cpu(u.data(), DType::UInt16, 10, q));
    }
    QVERIFY_THROWS_EXCEPTION(InputError, compress_cpu(u.data(), DType::UInt16, {}, CodecParams{}));
    QVERIFY_THROWS_EXCEPTION(InputError, compress_cpu(u.data(), DType::UInt16,
                                                      {1, 1, 1, 1, 1, 1, 1, 1, 10}, CodecParams{}));
    QVERIFY_THROWS_EXCEPTION(InputError,
                             compress_flat_cpu(nullptr, DType::UInt16, 10, CodecParams{}));
    CodecParams bad_codec;
    bad_codec.codec = Codec(7);
    QVERIFY_THROWS_EXCEPTION(InputError, compress_flat_cpu(u.data(), DType::UInt16, 10, bad_codec));
    // The lossless codec ignores the bound.
    CodecParams lossless;
    lossless.error_bound = 3;
    const Bytes s = compress_flat_cpu(u.data(), DType::UInt16, 10, lossless);
    QCOMPARE(read_header(s.data(), s.size()).error_bound, 0.0);
  }
};

QTEST_GUILESS_MAIN(TestCodec)
#include "test_codec.moc"
