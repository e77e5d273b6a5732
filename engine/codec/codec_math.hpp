#pragma once
// The per-element and per-word math of both codecs, written once for the CPU and CUDA backends.
// Everything here is a small pure function: no allocation, no exceptions, no std containers, so
// a kernel running one thread block per chunk calls the same functions per element, per 32-value
// block or per 8-byte word that the CPU backend loops over, and both produce the same bytes.
//
// Stages, in encoding order:
//   uint16            value                         -> residual (delta or plain) -> zigzag
//   float32 lossless  float bits -> order_float_bits -> residual                 -> zigzag
//   float32 lossy     lossy_quantize (bin number)    -> residual                 -> zigzag
//   then transpose32 (bit shuffle) per 32-value block, then zero-byte elimination, whose bitmap
//   bytes come from nonzero_byte_mask.
//
// Floating point: only the lossy quantiser uses it, in double precision, with every product kept
// apart from any addition (see lossy_quantize), so contraction into fused multiply-adds cannot
// change a result. Fast-math modes could (flushing float denormals, reassociating), so they are
// refused at compile time (below).
#include <cmath>
#include <cstdint>
#include <cstring>

#include "core/host_device.hpp"

// -ffast-math may reassociate or flush denormals, which would change bins and bounds. nvcc's
// --use_fast_math / --ftz=true would too (float<->double conversions of denormals), but nvcc tells
// the preprocessor nothing about them: kernels that include this header must be built without
// them (livedrp's CUDA flags are), and the GPU suite compares their bytes with the CPU's.
#if defined(__FAST_MATH__)
#error "codec_math.hpp needs IEEE arithmetic: compile without -ffast-math"
#endif

namespace livedrp::codec {

// ---------------------------------------------------------------------------------------------
// Bit access. Byte-wise little-endian loads and stores are independent of host byte order and of
// alignment; compilers turn them into single moves.

LIVEDRP_HD std::uint32_t float_bits(float f) {
#ifdef __CUDA_ARCH__
  return __float_as_uint(f);
#else
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
#endif
}

LIVEDRP_HD float bits_float(std::uint32_t u) {
#ifdef __CUDA_ARCH__
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
#endif
}

LIVEDRP_HD std::uint16_t load_le16(const std::uint8_t* p) {
  return std::uint16_t(p[0] | (unsigned(p[1]) << 8));
}
LIVEDRP_HD std::uint32_t load_le32(const std::uint8_t* p) {
  return std::uint32_t(p[0]) | (std::uint32_t(p[1]) << 8) | (std::uint32_t(p[2]) << 16) |
         (std::uint32_t(p[3]) << 24);
}
LIVEDRP_HD std::uint64_t load_le64(const std::uint8_t* p) {
  return std::uint64_t(load_le32(p)) | (std::uint64_t(load_le32(p + 4)) << 32);
}
LIVEDRP_HD void store_le16(std::uint8_t* p, std::uint16_t v) {
  p[0] = std::uint8_t(v);
  p[1] = std::uint8_t(v >> 8);
}
LIVEDRP_HD void store_le32(std::uint8_t* p, std::uint32_t v) {
  p[0] = std::uint8_t(v);
  p[1] = std::uint8_t(v >> 8);
  p[2] = std::uint8_t(v >> 16);
  p[3] = std::uint8_t(v >> 24);
}
LIVEDRP_HD void store_le64(std::uint8_t* p, std::uint64_t v) {
  store_le32(p, std::uint32_t(v));
  store_le32(p + 4, std::uint32_t(v >> 32));
}

// Bit counts; the host versions avoid a library call on CPUs built for without POPCNT.
LIVEDRP_HD unsigned popcount64(std::uint64_t v) {
#ifdef __CUDA_ARCH__
  return unsigned(__popcll(v));
#else
  v -= (v >> 1) & 0x5555555555555555ull;
  v = (v & 0x3333333333333333ull) + ((v >> 2) & 0x3333333333333333ull);
  v = (v + (v >> 4)) & 0x0F0F0F0F0F0F0F0Full;
  return unsigned((v * 0x0101010101010101ull) >> 56);
#endif
}
LIVEDRP_HD unsigned popcount32(std::uint32_t v) {
  return popcount64(v);
}

// ---------------------------------------------------------------------------------------------
// Prediction and zigzag. Residuals are taken modulo 2^bits, so any input round-trips; zigzag then
// interleaves signs (0, -1, 1, -2, ... -> 0, 1, 2, 3, ...) so that small residuals of either sign
// leave the high bit planes empty.

LIVEDRP_HD std::uint16_t zigzag16(std::uint16_t d) {
  return std::uint16_t((std::uint32_t(d) << 1) ^ (0u - (std::uint32_t(d) >> 15)));
}
LIVEDRP_HD std::uint16_t unzigzag16(std::uint16_t z) {
  return std::uint16_t((std::uint32_t(z) >> 1) ^ (0u - (std::uint32_t(z) & 1u)));
}
LIVEDRP_HD std::uint32_t zigzag32(std::uint32_t d) {
  return (d << 1) ^ (0u - (d >> 31));
}
LIVEDRP_HD std::uint32_t unzigzag32(std::uint32_t z) {
  return (z >> 1) ^ (0u - (z & 1u));
}

// Residual word of `value` against `prediction` (the previous value for ChunkMode::Delta, 0 for
// Plain), for words of `bits` (16 or 32) bits.
LIVEDRP_HD std::uint32_t residual_word(std::uint32_t value, std::uint32_t prediction,
                                       std::uint32_t bits) {
  const std::uint32_t d = value - prediction;
  return bits == 16 ? zigzag16(std::uint16_t(d)) : zigzag32(d);
}
LIVEDRP_HD std::uint32_t restore_word(std::uint32_t residual, std::uint32_t prediction,
                                      std::uint32_t bits) {
  if (bits == 16) return std::uint16_t(unzigzag16(std::uint16_t(residual)) + prediction);
  return unzigzag32(residual) + prediction;
}

// Float bits to an integer whose two's-complement order is the order of the floats: positive
// floats keep their bits, negative ones get their magnitude bits inverted, so -0.0 maps to -1 next
// to +0.0 at 0 and neighbouring values get neighbouring integers whatever their sign. It is its
// own inverse and maps every bit pattern (NaN payloads included) one to one.
LIVEDRP_HD std::uint32_t order_float_bits(std::uint32_t u) {
  return u ^ ((0u - (u >> 31)) >> 1);
}

// ---------------------------------------------------------------------------------------------
// Bit shuffle: a 32 x 32 bit-matrix transpose in place. Before, a[i] is value i of the block;
// after, a[p] is bit plane p: its bit i is bit p of value i. This is the plane word a warp gets
// from __ballot_sync(~0u, (value >> p) & 1) with value i in lane i; on the CPU the transpose
// swaps ever smaller off-diagonal sub-blocks (5 rounds of masked shifts, not 1024 bit moves).

// One round over rows [0, rows): within every group of 2 width rows, columns [width, 2 width) of
// row k trade places with columns [0, width) of row k + width, in every 2 width-wide column group
// (mask selects the low half of each column group).
LIVEDRP_HD void transpose32_round(std::uint32_t a[32], unsigned width, std::uint32_t mask,
                                  unsigned rows = 32) {
  for (unsigned base = 0; base < rows; base += 2 * width) {
    for (unsigned k = base; k < base + width; ++k) {
      const std::uint32_t t = ((a[k] >> width) ^ a[k + width]) & mask;
      a[k] ^= t << width;
      a[k + width] ^= t;
    }
  }
}

LIVEDRP_HD void transpose32(std::uint32_t a[32]) {
  // Literal widths, so that after inlining every shift is by a constant.
  transpose32_round(a, 16, 0x0000FFFFu);
  transpose32_round(a, 8, 0x00FF00FFu);
  transpose32_round(a, 4, 0x0F0F0F0Fu);
  transpose32_round(a, 2, 0x33333333u);
  transpose32_round(a, 1, 0x55555555u);
}

// The same transpose for 16-bit values, in a third of the work. Each round swaps one bit of the
// row index with the same bit of the column index, so the rounds commute. With every a[i] below
// 2^16, the width-16 round only packs values i and i + 16 into word i (and zeroes the rest), and
// the four narrower rounds then only touch rows 0-15: transpose32_values16 gives the planes 0-15
// of transpose32 in a[0..15] (a[16..31] = 0). transpose32_planes16 is its inverse: planes 0-15 in
// a[0..15] and zeros above, to the 32 values (the narrow rounds first, the unpacking last).
LIVEDRP_HD void transpose16_rounds(std::uint32_t a[32]) {
  transpose32_round(a, 8, 0x00FF00FFu, 16);
  transpose32_round(a, 4, 0x0F0F0F0Fu, 16);
  transpose32_round(a, 2, 0x33333333u, 16);
  transpose32_round(a, 1, 0x55555555u, 16);
}
LIVEDRP_HD void transpose32_values16(std::uint32_t a[32]) {
  for (unsigned k = 0; k < 16; ++k) {
    a[k] |= a[k + 16] << 16;
    a[k + 16] = 0;
  }
  transpose16_rounds(a);
}
LIVEDRP_HD void transpose32_planes16(std::uint32_t a[32]) {
  transpose16_rounds(a);
  for (unsigned k = 0; k < 16; ++k) {
    a[k + 16] = a[k] >> 16;
    a[k] &= 0xFFFFu;
  }
}
// For values below 2^8 (the lossy codec's zigzagged bins nearly always are) the width-16 and
// width-8 rounds only pack values k, k + 8, k + 16 and k + 24 into the bytes of word k (k < 8)
// and zero the rest; the three narrower rounds then touch rows 0-7 only: planes 0-7 of
// transpose32 in a[0..7], a[8..31] = 0, in about half transpose32_values16's work.
LIVEDRP_HD void transpose32_values8(std::uint32_t a[32]) {
  for (unsigned k = 0; k < 8; ++k) {
    a[k] |= (a[k + 8] << 8) | (a[k + 16] << 16) | (a[k + 24] << 24);
    a[k + 8] = 0;
    a[k + 16] = 0;
    a[k + 24] = 0;
  }
  transpose32_round(a, 4, 0x0F0F0F0Fu, 8);
  transpose32_round(a, 2, 0x33333333u, 8);
  transpose32_round(a, 1, 0x55555555u, 8);
}

// Its inverse: planes 0-7 in a[0..7] and zeros above, to the 32 values (each below 2^8).
LIVEDRP_HD void transpose32_planes8(std::uint32_t a[32]) {
  transpose32_round(a, 4, 0x0F0F0F0Fu, 8);
  transpose32_round(a, 2, 0x33333333u, 8);
  transpose32_round(a, 1, 0x55555555u, 8);
  for (unsigned k = 0; k < 8; ++k) {
    a[k + 24] = a[k] >> 24;
    a[k + 16] = (a[k] >> 16) & 0xFFu;
    a[k + 8] = (a[k] >> 8) & 0xFFu;
    a[k] &= 0xFFu;
  }
}

// Word index of (plane, block) in a chunk's shuffled data: plane-major, so the empty high planes
// of a chunk form one long run of zero bytes for the bitmaps to skip.
LIVEDRP_HD std::uint32_t plane_word_index(std::uint32_t plane, std::uint32_t block,
                                          std::uint32_t blocks) {
  return plane * blocks + block;
}

// ---------------------------------------------------------------------------------------------
// Zero-byte elimination. Bit j of bitmap byte i says whether byte 8 i + j of the level below is
// nonzero; this builds that bitmap byte from the 8 bytes as one little-endian word.

LIVEDRP_HD std::uint32_t nonzero_byte_mask(std::uint64_t bytes) {
  constexpr std::uint64_t kLow7 = 0x7F7F7F7F7F7F7F7Full;
  constexpr std::uint64_t kHigh = 0x8080808080808080ull;
  // High bit of each byte set iff the byte is nonzero (the add cannot carry across bytes).
  const std::uint64_t flags = (((bytes & kLow7) + kLow7) | bytes) & kHigh;
  // Gather the 8 flags (bits 7, 15, ..., 63) into the top byte: the multiplier's terms place flag
  // j at bit 56 + j and leave every other product term below bit 56 or above bit 63.
  return std::uint32_t(((flags >> 7) * 0x0102040810204080ull) >> 56);
}

// ---------------------------------------------------------------------------------------------
// Error-bounded quantisation (lossy codec), in double precision on both backends.
//
//   width = 2 eb; t = x / width; q = t rounded to nearest, halves away from zero;
//   r = float(q * width) (the product rounded to double, then to float, both to nearest-even).
//
// A value becomes a bin only when |t| < 2^30 (so q fits int32 with margin), r is a finite float,
// and |r - x| <= eb holds exactly; otherwise (NaN, infinities, huge values, a reconstruction that
// misses) the encoder stores its bits. The check reconstructs with lossy_reconstruct, the very
// function the decoder uses, so what is checked is what is decoded.
//
// Why contraction cannot change anything: the only product, q * width, is converted to float
// before anything is added to it, which no contraction may skip; the division and the
// subtractions are not products. The device product uses __dmul_rn, which nvcc never fuses.

inline constexpr double kLossyMaxBin = 1073741824.0;        // 2^30
inline constexpr double kFloatMax = 3.4028234663852886e38;  // FLT_MAX, exactly

LIVEDRP_HD double lossy_bin_width(double error_bound) {
  return 2.0 * error_bound;
}

LIVEDRP_HD double multiply_rn(double a, double b) {
#ifdef __CUDA_ARCH__
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}
LIVEDRP_HD float multiply_rn(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
// The integer nearest to v, as a float (ties either way: callers exclude them).
LIVEDRP_HD float nearest_integer(float v) {
#ifdef __CUDA_ARCH__
  return rintf(v);
#else
  // Below 2^22 in magnitude, v + 1.5 * 2^23 lies in [2^23, 2^24), where floats are the integers:
  // the addition rounds v to its nearest integer as nearbyint would (both in the current mode)
  // and the subtraction is exact. On x86-64 without SSE4.1 nearbyint is a library call per
  // element. Larger values (and NaN) take the call.
  if (v > -4194304.0f && v < 4194304.0f) {
    const float shifted = v + 12582912.0f;
    return shifted - 12582912.0f;
  }
  return std::nearbyint(v);
#endif
}

// Reconstruction of bin q; false when it would not be a finite float (never written by the
// encoder, so a decoder treats it as corrupt data).
LIVEDRP_HD bool lossy_reconstruct(std::int32_t q, double width, float* r) {
  const double p = multiply_rn(double(q), width);
  if (!(p >= -kFloatMax && p <= kFloatMax)) return false;
  *r = float(p);
  return true;
}

// lossy_reconstruct for bins |q| <= 2^15 (zigzagged below 2^16: every block of a lossy chunk but
// those holding huge values), in one float multiply when the bin width is itself a float (it is
// for the usual bounds: 2.375, 4.75, 9.5 keV). Then q (16 bits) times the width (24) is exact in
// double, so lossy_reconstruct rounds only once, to float, and a float multiply rounds the same
// exact product once, to the same float; 2^15 width <= FLT_MAX keeps every such product finite.
// The decoders check these conditions once a stream and the plane words once a block.
inline constexpr std::int32_t kSmallBinMax = 32768;
struct SmallBins {
  bool fit;           // 2^15 width <= FLT_MAX: bins |q| <= 2^15 reconstruct to finite floats
  bool float_width;   // fit, and the width is exactly a float
  float width_float;  // the width as a float (exact when float_width)
};
LIVEDRP_HD SmallBins small_bins(double width) {
  const bool fit = multiply_rn(double(kSmallBinMax), width) <= kFloatMax;  // exact: a power of 2
  const float wf = fit ? float(width) : 0.0f;
  return {fit, fit && double(wf) == width, wf};
}
// float(q) for |q| < 2^22: q added to 1.5 * 2^23 lands in the mantissa of that float, whose
// subtraction is exact. On the device two full-rate instructions instead of a conversion.
LIVEDRP_HD float small_int_to_float(std::int32_t q) {
#ifdef __CUDA_ARCH__
  return __fsub_rn(__int_as_float(0x4B400000 + q), 12582912.0f);
#else
  return float(q);
#endif
}
// lossy_reconstruct(q, width) for |q| <= 2^15 when small_bins(width).float_width.
LIVEDRP_HD float reconstruct_small_bin(std::int32_t q, float width_float) {
  return multiply_rn(small_int_to_float(q), width_float);
}

// Exactly |r - x| <= eb, for finite r and x. The double difference s may be rounded; the
// two-sum error term e makes s + e the exact difference. When |s| differs from eb the rounded
// comparison already decides (rounding is monotonic and eb is a double); when |s| == eb the
// exact difference is within the bound iff e does not push it further out.
LIVEDRP_HD bool within_bound(float r, float x, double eb) {
  const double a = double(r);
  const double b = -double(x);
  const double s = a + b;
  const double b_virtual = s - a;
  const double a_virtual = s - b_virtual;
  const double e = (a - a_virtual) + (b - b_virtual);
  const double magnitude = s < 0 ? -s : s;
  if (magnitude < eb) return true;
  if (magnitude > eb) return false;
  return s > 0 ? e <= 0 : e >= 0;
}

// The quantiser's constants for one error bound, formed once per stream. `inside_test`: whether
// bin widths this size allow lossy_quantize's test without reconstruction (see there).
// `short_path_limit`: lossy_quantize's short path takes |t| below it, 2^30 - 1 when the inside
// test applies and 0 (never) when it does not.
struct LossyScale {
  double error_bound, width, inverse_width;  // eb, 2 eb, and 1 / (2 eb) rounded
  bool inside_test;
  double short_path_limit;
  // lossy_quantize's single-precision path: the reciprocal rounded to float, and the bound on |t|
  // below which the path applies (4096 when the inside test applies, else 0: never).
  float inverse_width_float, float_path_limit;
};
inline constexpr double kInsideTestMinWidth = 0x1p-100, kInsideTestMaxWidth = 0x1p98;
// lossy_quantize's single-precision path: |t| below 2^12, at most 1/2 - 2^-9 from its bin.
inline constexpr float kFloatPathMaxBin = 4096.0f, kFloatPathMaxDistance = 0.5f - 0x1p-9f;
LIVEDRP_HD LossyScale lossy_scale(double error_bound) {
  const double width = lossy_bin_width(error_bound);
  const bool inside_test = width >= kInsideTestMinWidth && width <= kInsideTestMaxWidth;
  return {error_bound,
          width,
          1.0 / width,
          inside_test,
          inside_test ? kLossyMaxBin - 1.0 : 0.0,
          float(1.0 / width),
          inside_test ? kFloatPathMaxBin : 0.0f};
}

// Within this distance of a half-integer, t from the reciprocal may round to another bin than t
// from the division (see lossy_quantize): 2^-20, more than twice the largest gap between the two.
inline constexpr double kTieMargin = 9.5367431640625e-7;

LIVEDRP_HD double absolute(double v) {
  return v < 0 ? -v : v;
}
// |v| and copysign as the hardware does them (a sign bit cleared or copied; a compare takes the
// magnitude as an operand modifier): for the short path, where absolute()'s select cost three
// instructions each time.
LIVEDRP_HD double magnitude(double v) {
#ifdef __CUDA_ARCH__
  return fabs(v);
#else
  return std::fabs(v);
#endif
}
LIVEDRP_HD float magnitude(float v) {
#ifdef __CUDA_ARCH__
  return fabsf(v);
#else
  return std::fabs(v);
#endif
}
LIVEDRP_HD double with_sign_of(double v, double sign) {
#ifdef __CUDA_ARCH__
  return copysign(v, sign);
#else
  return std::copysign(v, sign);
#endif
}

// Bin number of x, or false when x must be stored exactly (an outlier). The definition is
// t = double(x) / width (see the block above), but a division costs several times a product, so t
// is first formed as x * (1 / width): both are within 2^-53 |t| of x / width after their
// roundings (the product's two), so for |t| < 2^30 they differ by less than 2^-21. The bin of t
// changes only at half-integers; where the product lands farther than kTieMargin from one (and
// from the 2^30 limit) both give the same bin, and elsewhere the division is taken. The result is
// the definition's, bit for bit, at the price of a product almost always.
LIVEDRP_HD bool lossy_quantize_full(float x, const LossyScale& scale, std::int32_t* q_out) {
  const double value = double(x);
  double t = multiply_rn(value, scale.inverse_width);
  if (!(t > 1.0 - kLossyMaxBin && t < kLossyMaxBin - 1.0)) t = value / scale.width;
  if (!(t > -kLossyMaxBin && t < kLossyMaxBin)) return false;  // also NaN and infinities
  // Truncation and the fraction are exact (|t| < 2^30), so the rounding does not depend on any
  // rounding mode or library routine.
  double whole = double(std::int32_t(t));
  double fraction = t - whole;
  if (absolute(absolute(fraction) - 0.5) < kTieMargin) {  // near a tie: the division decides
    t = value / scale.width;
    if (!(t > -kLossyMaxBin && t < kLossyMaxBin)) return false;
    whole = double(std::int32_t(t));
    fraction = t - whole;
  }
  std::int32_t q = std::int32_t(whole);
  // distance: |t - q|, exact (1 - |fraction| by Sterbenz's lemma, |fraction| being >= 1/2 there).
  double distance = absolute(fraction);
  if (fraction >= 0.5) {
    ++q;
    distance = 1.0 - distance;
  } else if (fraction <= -0.5) {
    --q;
    distance = 1.0 - distance;
  }
  // Well inside its bin, a value is within the bound whatever the roundings, so the reconstruction
  // and the exact test would only confirm it. With w = 2 eb in [2^-100, 2^98] and |x| < 2^127:
  //   |x - q w| <= w (distance + 2^-51 |t|)        t within 2^-52 |t| of x / w (2 roundings)
  //   |p - q w| <= 2^-53 |q w|                     p = q w rounded to double
  //   |r - p|   <= 2^-24 |p| + 2^-150              r = p rounded to float (2^-150: subnormals)
  // and with |t| <= |q| + 1/2 and 2^-150 <= 2^-50 w, |r - x| < w (distance + 2^-23 |q| + 2^-49),
  // which is below w / 2 = eb when distance <= 1/2 - 2^-22 (|q| + 1) (computed exactly: a
  // multiple of 2^-22 below 2^9). |q w| <= |x| + eb < 2^127 + 2^97 also keeps p and r finite, so
  // lossy_reconstruct would succeed: the answer is the full test's, bit for bit.
  if (scale.inside_test && absolute(value) < 0x1p127 &&
      distance <= 0.5 - 0x1p-22 * (absolute(double(q)) + 1.0)) {
    *q_out = q;
    return true;
  }
  float r;
  if (!lossy_reconstruct(q, scale.width, &r)) return false;
  if (!within_bound(r, x, scale.error_bound)) return false;
  *q_out = q;
  return true;
}

// lossy_quantize_full's answer, bit for bit, in a fraction of its instructions for almost every
// value: the lossy encoder spent over half its instructions in the full function; with this
// path (and a leaner loop around it) it issues 11.0 M warp instructions an ePix10ka2M event
// instead of 14.7 M (Nsight Compute, H200).
//
// With t = x * (1 / w) (the full function's product; its range check passes), q is t + 1/2 (sign
// of t) truncated. That sum may round, but only next to a half-integer: when the exact distance
// |t - q| is at most 1/2 - 2^-19, q is the integer nearest to t, the full function's bin. Then
// the full function's fraction is t - trunc(t), exact, and it takes the division only within
// 2^-20 of a tie, which that distance excludes; and its test without reconstruction accepts when
// the distance is at most 1/2 - 2^-22 (|q| + 1). Both lines in one: the distance against
// 1/2 - 2^-22 max(8, |q| + 1), every operand and result exact (|q| < 2^30, multiples of 2^-22),
// so no rounding or contraction can move the comparison. |t - q| is exact: within 1 of t, a
// difference with an integer keeps t's precision. Anything else takes the full function.
//
// Before that, a single-precision path settles nearly every value of detector data (bins below
// 2^12) in a third of the double path's instructions, with no conversion to double: with
// w = 2 eb in [2^-100, 2^98] (the inside test's range) 1 / w is a normal float, so
// tf = x * float(1 / w) carries two float roundings and one double one, and
//   |tf - x / w| <= 2^-22.9 |x / w| + 2^-150 (a subnormal product) < 2^-10.9 for |tf| < 2^12.
// The difference d = tf - rint(tf) is exact (Sterbenz's lemma, or rint(tf) = 0), so when
// |d| <= 1/2 - 2^-9 the exact distance |x / w - q| is below 1/2 - 2^-10: q is the one nearest
// integer (no tie, whichever way rint or the rounding mode breaks them), the definition's bin.
// And |q| <= 2^12 keeps the reconstruction's roundings below w (2^-12 + 2^-40), so
// |r - x| < w (1/2 - 2^-10 + 2^-12 + 2^-40) < eb: the verdict is the definition's too. Only the
// product may not be fused with the subtraction (__fmul_rn on the device); were it fused on the
// host, d would be rounded once from x * float(1 / w) - q, and the margins above still hold.
//
// The single-precision path is lossy_quantize_settled; the rest is lossy_quantize_double, which a
// kernel may run only for the values the first leaves open.
// Written without branches (rint and the subtraction are harmless for any tf, NaN included) so
// that a kernel unrolling it over 32 values gets straight-line code; only a settled qf is
// converted. When not settled, *q_out is 0 and lossy_quantize_double decides.
LIVEDRP_HD bool lossy_quantize_settled(float x, const LossyScale& scale, std::int32_t* q_out) {
  const float tf = multiply_rn(x, scale.inverse_width_float);
  const float qf = nearest_integer(tf);
  const bool settled = (magnitude(tf) < scale.float_path_limit) &  // false for NaN
                       (magnitude(tf - qf) <= kFloatPathMaxDistance);
  *q_out = settled ? std::int32_t(qf) : 0;
  return settled;
}

// lossy_quantize without its single-precision path: the same answer for every x.
LIVEDRP_HD bool lossy_quantize_double(float x, const LossyScale& scale, std::int32_t* q_out) {
  const double t = multiply_rn(double(x), scale.inverse_width);
  // |x| < 2^127 compared as floats (exact), |t| against 2^30 - 1 (or 0: no short path).
  if (magnitude(x) < 0x1p127f && magnitude(t) < scale.short_path_limit) {
    const auto q = std::int32_t(t + with_sign_of(0.5, t));  // truncates toward zero
    const std::int32_t q_magnitude = q < 0 ? -q : q;
    const std::int32_t lines = q_magnitude + 1 > 8 ? q_magnitude + 1 : 8;  // max(8, |q| + 1)
    if (magnitude(t - double(q)) <= 0.5 - 0x1p-22 * double(lines)) {
      *q_out = q;
      return true;
    }
  }
  return lossy_quantize_full(x, scale, q_out);
}

LIVEDRP_HD bool lossy_quantize(float x, const LossyScale& scale, std::int32_t* q_out) {
  return lossy_quantize_settled(x, scale, q_out) || lossy_quantize_double(x, scale, q_out);
}

// ---------------------------------------------------------------------------------------------
// Checksum: a 64-bit sum, modulo 2^64, of one term per 32-bit little-endian word, plus a term
// for the word count. A word's term is the word (xor a key) times the odd number 2i + 1 of its
// index i: multiplication by an odd number is invertible modulo 2^64, so any change of a single
// word always changes the sum, and two words swapped change it by 2 (a - b)(i - j), never 0 in
// range. It costs one wide multiply and an add a word (format 1 mixed every word with SplitMix64's
// finaliser, about 40 instructions a word, which set the speed of raw chunks on the GPU). The sum
// is order-free, so thread blocks add their chunks' terms independently.
//
//   checksum(w[0..m)) = mix64(m ^ kChecksumCountKey) + sum_i (w[i] ^ kChecksumWordKey) (2 i + 1)

inline constexpr std::uint64_t kChecksumCountKey = 0x6C69766564727021ull;  // "livedrp!"
inline constexpr std::uint32_t kChecksumWordKey = 0x7F4A7C15u;

// The finaliser of SplitMix64: xor-shifts and odd multiplications, hence invertible.
LIVEDRP_HD std::uint64_t mix64(std::uint64_t z) {
  z ^= z >> 30;
  z *= 0xBF58476D1CE4E5B9ull;
  z ^= z >> 27;
  z *= 0x94D049BB133111EBull;
  z ^= z >> 31;
  return z;
}
LIVEDRP_HD std::uint64_t checksum_word_term(std::uint32_t word, std::uint64_t index) {
  return std::uint64_t(word ^ kChecksumWordKey) * (2 * index + 1);
}
LIVEDRP_HD std::uint64_t checksum_count_term(std::uint64_t words) {
  return mix64(words ^ kChecksumCountKey);
}

}  // namespace livedrp::codec
