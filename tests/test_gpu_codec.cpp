// The GPU codec (cuda/codec/device_codec.hpp) against the CPU codec, which is the reference: for
// every edge case of test_codec.cpp and for simulated ePix10ka2M events (raw uint16, calibrated
// float32), lossless and lossy at 0.25, 0.5 and 1, over several chunk sizes, the GPU's stream is
// byte for byte the CPU's, its decoding equals the CPU's decoding, and it decodes CPU streams.
// One DeviceCodec compresses over 100 events back to back, its size words read only every few
// events. Damaged streams are rejected by the GPU decoder too.
//
// Without a usable CUDA device the suite skips, unless LIVEDRP_REQUIRE_GPU=1, where it fails.
#include <QtTest>

#include "gpu_test_support.hpp"

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "calib/calibrate_cpu.hpp"
#include "codec/chunk_cpu.hpp"
#include "codec/codec.hpp"
#include "codec/codec_math.hpp"
#include "core/detector.hpp"
#include "core/error.hpp"
#include "core/thread_pool.hpp"
#include "exec/backend.hpp"
#include "sim/simulator.hpp"

#ifdef LIVEDRP_HAVE_CUDA
#include "cuda/codec/device_codec.hpp"
#include "cuda/device.hpp"
#endif

using namespace livedrp;
using namespace livedrp::codec;

namespace {

using Bytes = std::vector<std::uint8_t>;

struct Dataset {
  std::string name;
  DType dtype;
  std::vector<std::uint64_t> shape;  // empty: flat
  std::uint64_t count;
  Bytes data;
};

template <typename T>
Dataset make(const std::string& name, DType dtype, const std::vector<T>& v,
             std::vector<std::uint64_t> shape = {}) {
  Bytes bytes(v.size() * sizeof(T));
  if (!bytes.empty()) std::memcpy(bytes.data(), v.data(), bytes.size());
  return {name, dtype, std::move(shape), v.size(), std::move(bytes)};
}

float float_of(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

long first_difference(const Bytes& a, const Bytes& b) {
  const std::size_t n = std::min(a.size(), b.size());
  for (std::size_t i = 0; i < n; ++i)
    if (a[i] != b[i]) return long(i);
  return a.size() == b.size() ? -1 : long(n);
}

std::vector<CodecParams> params_for(DType dtype, std::vector<std::uint32_t> chunk_sizes) {
  std::vector<CodecParams> out;
  for (std::uint32_t chunk : chunk_sizes) {
    out.push_back({Codec::Lossless, 0, chunk});
    if (dtype == DType::Float32)
      for (double eb : {0.25, 0.5, 1.0}) out.push_back({Codec::Lossy, eb, chunk});
  }
  return out;
}

std::string describe(const Dataset& d, const CodecParams& p) {
  return d.name + ", " + to_string(p.codec) +
         (p.codec == Codec::Lossy ? " eb " + std::to_string(p.error_bound) : std::string()) +
         ", chunk " + std::to_string(p.chunk_bytes);
}

}  // namespace

class TestGpuCodec : public QObject {
  Q_OBJECT

  std::mt19937_64 rng_{20260202};

  std::vector<Dataset> edge_cases() {
    std::vector<Dataset> out;
    const std::size_t n = 3 * 8192 + 77;  // not a multiple of any chunk size used
    std::vector<std::uint16_t> u16(n);
    out.push_back(make("u16 zeros", DType::UInt16, u16));
    std::fill(u16.begin(), u16.end(), std::uint16_t(1234));
    out.push_back(make("u16 constant", DType::UInt16, u16));
    for (auto& x : u16) x = std::uint16_t(rng_());
    out.push_back(make("u16 random", DType::UInt16, u16));
    std::normal_distribution<double> noise(3000, 3);
    for (auto& x : u16) x = std::uint16_t(std::lround(noise(rng_)));
    out.push_back(make("u16 pedestal+noise", DType::UInt16, u16, {1, n}));
    for (std::size_t i = 0; i < n; ++i) u16[i] = i % 2 ? 0xFFFF : 0;
    out.push_back(make("u16 alternating 0/65535", DType::UInt16, u16));
    out.push_back(make("u16 one element", DType::UInt16, std::vector<std::uint16_t>{42}));
    out.push_back(make("u16 empty", DType::UInt16, std::vector<std::uint16_t>{}));
    out.push_back(make("u16 empty 2-d", DType::UInt16, std::vector<std::uint16_t>{}, {0, 16}));

    std::vector<float> f(n);
    out.push_back(make("f32 zeros", DType::Float32, f));
    std::fill(f.begin(), f.end(), -0.0f);
    out.push_back(make("f32 negative zeros", DType::Float32, f));
    std::fill(f.begin(), f.end(), 3.25f);
    out.push_back(make("f32 constant", DType::Float32, f));
    for (std::size_t i = 0; i < n; ++i)
      f[i] = float_of(0x7F800001u + std::uint32_t(i % 1000) * 4099u);
    out.push_back(make("f32 NaN payloads", DType::Float32, f));
    for (std::size_t i = 0; i < n; ++i) f[i] = i % 3 ? INFINITY : -INFINITY;
    out.push_back(make("f32 +-inf", DType::Float32, f));
    for (std::size_t i = 0; i < n; ++i) f[i] = float_of(std::uint32_t(i * 131) & 0x807FFFFFu);
    out.push_back(make("f32 denormals", DType::Float32, f));
    for (auto& x : f) x = float_of(std::uint32_t(rng_()));
    out.push_back(make("f32 random bits", DType::Float32, f));
    std::uniform_real_distribution<double> near(-50.0, 50.0);
    for (auto& x : f) x = float(near(rng_));
    out.push_back(make("f32 random values", DType::Float32, f));
    for (std::size_t i = 0; i < n; ++i) f[i] = (i % 2 ? -1.0f : 1.0f) * FLT_MAX / float(1 + i % 5);
    out.push_back(make("f32 huge", DType::Float32, f));
    std::vector<float> mixed;
    for (int k = -300; k <= 300; ++k)
      for (double c : {k * 1.0, k * 1.0 + 0.5, k * 1.0 - 0.25}) {
        mixed.push_back(float(c));
        mixed.push_back(std::nextafter(float(c), INFINITY));
        mixed.push_back(std::nextafter(float(c), -INFINITY));
      }
    out.push_back(make("f32 bin edges", DType::Float32, mixed));
    out.push_back(make("f32 one element", DType::Float32, std::vector<float>{-0.0f}));
    out.push_back(make("f32 empty", DType::Float32, std::vector<float>{}));
    std::vector<float> cube(4 * 6 * 8);
    for (std::size_t i = 0; i < cube.size(); ++i) cube[i] = float(i) * 0.5f - 3.0f;
    out.push_back(make("f32 3-d", DType::Float32, cube, {4, 6, 8}));
    return out;
  }

  // Photon-sparse float32 (most lossy chunks stored sparse): photons on 3 % of pixels, a few
  // bright peaks (bins far above 2^15), NaN outliers, and a stretch with photons far apart (gaps
  // of 255 and more, escaped).
  // Photons at a given density on 0.15-wide noise, in units where the lossy tests' bounds are
  // 0.25 and 0.5. kind 1: some photons are huge (up to 10^6: many bit planes) or negative;
  // kind 2: some are NaN or beyond the bins' range (outliers); kind 3: no noise at all.
  static std::vector<float> photons_at(std::uint64_t n, double density, int kind,
                                       std::uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> noise(0.f, 0.15f);
    std::uniform_real_distribution<double> u(0, 1);
    std::vector<float> v(n);
    for (float& x : v) {
      x = kind == 3 ? 0.f : noise(rng);
      if (u(rng) >= density) continue;
      double amount = 1 + 30 * u(rng);
      if (kind == 1 && u(rng) < 0.1) amount = 1e6 * u(rng);
      if (kind == 1 && u(rng) < 0.05) amount = -amount;
      x += float(amount);
      if (kind == 2 && u(rng) < 0.1) x = std::nanf("");
      if (kind == 2 && u(rng) < 0.05) x = 3e9f;
    }
    return v;
  }

  Dataset photon_sparse_frame() {
    const std::size_t n = 4 * 65536 + 77;
    std::vector<float> f(n);
    std::normal_distribution<double> noise(0, 0.05);
    for (std::size_t i = 0; i < n; ++i) {
      f[i] = float(noise(rng_));
      if (i < n / 2 ? rng_() % 33 == 0 : rng_() % 700 == 0)
        f[i] += float(1 + rng_() % 3) * (rng_() % 4 == 0 ? 0.6f : 1.0f);
    }
    for (std::size_t at : {std::size_t(17), std::size_t(5000), n - 1}) f[at] = NAN;
    for (std::size_t at : {std::size_t(100), std::size_t(70000)}) f[at] = 5.0e5f;
    return make("f32 photon-sparse", DType::Float32, f);
  }

#ifdef LIVEDRP_HAVE_CUDA
  std::unique_ptr<gpu::DeviceCodec> codec_;
  std::unique_ptr<gpu::Stream> stream_;
  static constexpr std::uint64_t kMaxElements = 16 * 352 * 384;

  Bytes compress_cpu_of(const Dataset& d, const CodecParams& p) {
    return d.shape.empty() ? compress_flat_cpu(d.data.data(), d.dtype, d.count, p)
                           : compress_cpu(d.data.data(), d.dtype, d.shape, p);
  }

  Bytes compress_gpu_of(const Dataset& d, const CodecParams& p) {
    const std::size_t bound = compressed_bound(d.dtype, d.count, unsigned(d.shape.size()), p);
    gpu::DeviceBuffer in(std::max<std::size_t>(d.data.size(), 4)), out(bound);
    gpu::copy_async(in.get(), d.data.data(), d.data.size(), *stream_, "test input");
    codec_->compress(in.get(), d.dtype, d.count, d.shape, p, out.get(), bound, *stream_);
    Bytes bytes(codec_->compressed_size(*stream_));
    gpu::copy_async(bytes.data(), out.get(), bytes.size(), *stream_, "test output");
    stream_->synchronize();
    return bytes;
  }

  // Throws InputError as finish_decompress does. With `kind` (dtype, codec), the decoder for that
  // pair alone; without, the one for any stream.
  Bytes decompress_gpu_of(const Bytes& stream, std::size_t raw_bytes,
                          std::optional<std::pair<DType, Codec>> kind = std::nullopt) {
    gpu::DeviceBuffer in(std::max<std::size_t>(stream.size(), 4)),
        out(std::max<std::size_t>(raw_bytes, 4));
    gpu::copy_async(in.get(), stream.data(), stream.size(), *stream_, "test stream");
    if (kind)
      codec_->decompress(in.get(), stream.size(), out.get(), raw_bytes, *stream_, kind->first,
                         kind->second);
    else
      codec_->decompress(in.get(), stream.size(), out.get(), raw_bytes, *stream_);
    const std::uint64_t decoded = codec_->finish_decompress(*stream_);
    Bytes bytes(decoded);
    gpu::copy_async(bytes.data(), out.get(), bytes.size(), *stream_, "test decoded");
    stream_->synchronize();
    return bytes;
  }

  // Recomputes a stream's payload and header checksums (docs/formats.md), so that damage inside a
  // chunk reaches the chunk decoder instead of being caught by a checksum.
  static void reseal_checksums(Bytes& s, std::size_t payload_at) {
    const auto sum = [&](std::size_t from, std::size_t bytes) {
      std::uint64_t total = checksum_count_term(bytes / 4);
      for (std::size_t w = 0; w < bytes / 4; ++w) {
        std::uint32_t word = 0;
        std::memcpy(&word, s.data() + from + 4 * w, 4);
        total += checksum_word_term(word, w);
      }
      return total;
    };
    const std::uint64_t payload = sum(payload_at, s.size() - payload_at);
    std::memcpy(s.data() + payload_at - 16, &payload, 8);
    const std::uint64_t header = sum(0, payload_at - 8);
    std::memcpy(s.data() + payload_at - 8, &header, 8);
  }

  // The GPU decoder's refusal of `bad`, or "accepted".
  QString gpu_refusal(const Bytes& bad, std::size_t raw_bytes) {
    try {
      decompress_gpu_of(bad, raw_bytes);
    } catch (const InputError& e) {
      return QString(e.what());
    }
    return QString("accepted");
  }

  void check_same_as_cpu(const Dataset& d, const CodecParams& p) {
    const std::string what = describe(d, p);
    const Bytes cpu = compress_cpu_of(d, p);
    const Bytes gpu = compress_gpu_of(d, p);
    const long at = first_difference(cpu, gpu);
    QVERIFY2(at == -1, qPrintable(QString::fromStdString(what) +
                                  QString(": GPU stream differs from the CPU's at byte %1 "
                                          "(sizes %2 CPU, %3 GPU)")
                                      .arg(at)
                                      .arg(cpu.size())
                                      .arg(gpu.size())));
    const DecodedArray reference = decompress_cpu(cpu.data(), cpu.size());
    const Bytes decoded = decompress_gpu_of(cpu, reference.bytes.size());
    QVERIFY2(first_difference(decoded, reference.bytes) == -1,
             qPrintable(QString::fromStdString(what) + ": GPU decoding differs from the CPU's"));
    // The decoder for this dtype and codec alone gives the same bytes.
    const Bytes decoded_by_kind =
        decompress_gpu_of(cpu, reference.bytes.size(), std::pair{d.dtype, p.codec});
    QVERIFY2(first_difference(decoded_by_kind, reference.bytes) == -1,
             qPrintable(QString::fromStdString(what) +
                        ": the dtype and codec's own GPU decoder differs from the CPU's"));
    if (p.codec == Codec::Lossless)
      QVERIFY2(first_difference(decoded, d.data) == -1,
               qPrintable(QString::fromStdString(what) + ": lossless round trip not exact"));
  }
#endif

 private slots:
  void initTestCase() {
    LIVEDRP_SKIP_WITHOUT_GPU();
#ifdef LIVEDRP_HAVE_CUDA
    codec_ = std::make_unique<gpu::DeviceCodec>(kMaxElements);
    stream_ = std::make_unique<gpu::Stream>();
#endif
  }

#ifdef LIVEDRP_HAVE_CUDA
  void edge_cases_give_the_cpu_bytes() {
    for (const Dataset& d : edge_cases())
      for (const CodecParams& p : params_for(d.dtype, {1024, 4096, 16384, 65536}))
        check_same_as_cpu(d, p);
  }

  void simulated_events_give_the_cpu_bytes() {
    const DetectorDescription detector = find_detector("epix10ka2m");
    ThreadPool pool;
    SimulatorConfig config;
    config.seed = 4242;
    config.hit_fraction = 0.5;
    DetectorSimulator simulator(detector, config, &pool);
    const std::vector<std::uint64_t> shape = {16, 352, 384};
    for (std::uint64_t e = 0; e < 2; ++e) {
      std::vector<std::uint16_t> raw(detector.pixels());
      simulator.generate(e, raw.data(), nullptr, &pool);
      Dataset r = make("epix10ka2m raw event " + std::to_string(e), DType::UInt16, raw, shape);
      for (const CodecParams& p : params_for(DType::UInt16, {4096, 16384})) check_same_as_cpu(r, p);
      std::vector<float> image(detector.pixels());
      calibrate_event_cpu(detector, simulator.constants(), calib::CalibrationParams{}, raw.data(),
                          image.data(), &pool);
      Dataset c = make("epix10ka2m calibrated " + std::to_string(e), DType::Float32, image, shape);
      for (const CodecParams& p : params_for(DType::Float32, {16384})) check_same_as_cpu(c, p);
      // One segment, as the single-segment benchmark compresses it.
      const std::vector<float> segment(image.begin(), image.begin() + 352 * 384);
      Dataset s =
          make("epix10ka2m segment " + std::to_string(e), DType::Float32, segment, {352, 384});
      for (const CodecParams& p : params_for(DType::Float32, {16384})) check_same_as_cpu(s, p);
    }
  }

  // 128 events through one DeviceCodec without a host wait between them: each stream goes to
  // its own output slot and its size word is copied behind it on the device; the host checks
  // every 8.
  void back_to_back_events_through_one_codec() {
    const DetectorDescription detector = find_detector("epix10ka2m");
    ThreadPool pool;
    SimulatorConfig config;
    config.seed = 99;
    DetectorSimulator simulator(detector, config, &pool);
    constexpr int kDistinct = 4, kEvents = 128, kSlots = 8;
    const CodecParams params{Codec::Lossy, 0.5, kDefaultChunkBytes};
    const std::vector<std::uint64_t> shape = {16, 352, 384};
    std::vector<std::vector<float>> images(kDistinct, std::vector<float>(detector.pixels()));
    std::vector<Bytes> want(kDistinct);
    gpu::DeviceBuffer inputs(kDistinct * detector.pixels() * 4);
    std::vector<std::uint16_t> raw(detector.pixels());
    for (int e = 0; e < kDistinct; ++e) {
      simulator.generate(std::uint64_t(e), raw.data(), nullptr, &pool);
      calibrate_event_cpu(detector, simulator.constants(), calib::CalibrationParams{}, raw.data(),
                          images[e].data(), &pool);
      want[e] = compress_cpu(images[e].data(), DType::Float32, shape, params, &pool);
      gpu::copy_async(inputs.as<float>() + e * detector.pixels(), images[e].data(),
                      detector.pixels() * 4, *stream_, "pool event");
    }
    const std::size_t bound = compressed_bound(DType::Float32, detector.pixels(), 3, params);
    gpu::DeviceBuffer outputs(kSlots * bound), sizes(kSlots * 8);
    gpu::PinnedBuffer host_sizes(kSlots * 8);
    for (int e = 0; e < kEvents; e += kSlots) {
      for (int k = 0; k < kSlots; ++k) {
        const int which = (e + k) % kDistinct;
        codec_->compress(inputs.as<float>() + which * detector.pixels(), DType::Float32,
                         detector.pixels(), shape, params, outputs.as<std::uint8_t>() + k * bound,
                         bound, *stream_);
        gpu::copy_async(sizes.as<std::uint64_t>() + k, codec_->device_size_word(), 8, *stream_,
                        "size word");
      }
      gpu::copy_async(host_sizes.get(), sizes.get(), kSlots * 8, *stream_, "sizes");
      stream_->synchronize();
      for (int k = 0; k < kSlots; ++k) {
        const int which = (e + k) % kDistinct;
        const std::uint64_t size = host_sizes.as<std::uint64_t>()[k];
        QCOMPARE(size, std::uint64_t(want[which].size()));
        Bytes got(size);
        gpu::copy_async(got.data(), outputs.as<std::uint8_t>() + k * bound, size, *stream_,
                        "stream");
        stream_->synchronize();
        QVERIFY2(first_difference(got, want[which]) == -1,
                 qPrintable(QString("event %1 differs from the CPU's stream").arg(e + k)));
      }
    }
  }

  void photon_sparse_frames_give_the_cpu_bytes() {
    const Dataset d = photon_sparse_frame();
    for (const std::uint32_t chunk : {1024u, 4096u, 16384u, 65536u, 1u << 20}) {
      for (const double eb : {0.25, 0.5, 1.0}) {
        const CodecParams p{Codec::Lossy, eb, chunk};
        check_same_as_cpu(d, p);
        // The case is there: sparse chunks are compared. (At 1 KiB a chunk of this frame holds a
        // photon or none, and Plain stores that in a few bytes: few chunks, if any, are sparse.)
        if (eb == 0.5 && chunk >= 4096u && chunk <= 65536u) {
          const Bytes s = compress_cpu_of(d, p);
          QVERIFY2(read_header(s.data(), s.size()).sparse_chunks > 0,
                   qPrintable(QString::fromStdString(describe(d, p))));
        }
      }
    }
  }

  // The choice between Plain and Sparse across what the photon-sparse frame does not reach:
  // chunks from 1 KiB to 1 MiB (some not a power of two), photon densities from none to 60%
  // (sparse wins below about a quarter), many planes, outliers, escaped gaps; several chunks and a
  // short one, whole chunks, 7 elements, a chunk and one element. Each stream is compared byte
  // for byte and decoded by both GPU decoders.
  void photon_density_sweep_gives_the_cpu_bytes() {
    std::uint32_t seed = 1;
    std::uint64_t sparse = 0, chunks = 0;
    for (const std::uint32_t chunk :
         {1024u, 1152u, 4096u, 16384u, 16512u, 24576u, 32768u, 65536u, 262144u, 1048576u}) {
      for (const double density : {0.0, 0.0003, 0.002, 0.01, 0.05, 0.2, 0.6}) {
        for (int kind = 0; kind < 4; ++kind) {
          if (kind == 3 && density != 0.01) continue;
          const std::uint64_t per = chunk / 4;
          for (const std::uint64_t count : {per * 5 + 37, per * 3, std::uint64_t(7), per + 1}) {
            const Dataset d =
                make("f32 photons at " + std::to_string(density) + ", kind " +
                         std::to_string(kind) + ", " + std::to_string(count) + " elements",
                     DType::Float32, photons_at(count, density, kind, seed++));
            for (const double eb : {0.5, 0.25}) {
              const CodecParams p{Codec::Lossy, eb, chunk};
              check_same_as_cpu(d, p);
              if (QTest::currentTestFailed()) return;
              const Bytes s = compress_cpu_of(d, p);
              const StreamInfo info = read_header(s.data(), s.size());
              sparse += info.sparse_chunks;
              chunks += info.chunk_count;
            }
          }
        }
      }
    }
    // The sweep reaches both forms (about a third of its chunks are sparse).
    QVERIFY2(sparse > chunks / 5 && sparse < chunks - chunks / 5,
             qPrintable(QString("%1 of %2 chunks sparse").arg(sparse).arg(chunks)));
  }

  // Damage inside a sparse chunk, behind valid checksums, is rejected by name.
  void damaged_sparse_chunks_are_rejected() {
    const Dataset d = photon_sparse_frame();
    const CodecParams p{Codec::Lossy, 0.5, kDefaultChunkBytes};
    const Bytes good = compress_cpu_of(d, p);
    const StreamInfo info = read_header(good.data(), good.size());
    const std::size_t table_at = 56, payload_at = table_at + 4 * info.chunk_count + 16;
    // The first sparse chunk without outliers.
    std::size_t at = payload_at, body = 0;
    std::uint32_t size = 0;
    for (std::uint64_t c = 0; c < info.chunk_count; ++c) {
      std::uint32_t entry = 0;
      std::memcpy(&entry, good.data() + table_at + 4 * c, 4);
      size = entry_size(entry);
      std::uint32_t outliers = 0;
      std::memcpy(&outliers, good.data() + at, 4);
      if (entry_mode_bits(entry) == unsigned(ChunkMode::Sparse) && outliers == 0) {
        body = at + 4;
        break;
      }
      at += padded_size(size);
    }
    QVERIFY(body != 0);
    const auto reseal = [&](Bytes& s) { reseal_checksums(s, payload_at); };
    const auto message = [&](const Bytes& bad) { return gpu_refusal(bad, d.data.size()); };
    Bytes resealed = good;
    reseal(resealed);
    QCOMPARE(first_difference(resealed, good), -1L);  // the helper recomputes the same sums

    std::uint32_t listed = 0;
    std::memcpy(&listed, good.data() + body, 4);
    Bytes count = good;
    const std::uint32_t too_many = 4097;
    std::memcpy(count.data() + body, &too_many, 4);
    reseal(count);
    QVERIFY2(message(count).contains(describe(ChunkError::SparseCount)),
             qPrintable(message(count)));
    Bytes word = good;
    std::memset(word.data() + at + size - 4, 0, 4);  // the chunk's last plane word
    reseal(word);
    QVERIFY2(message(word).contains(describe(ChunkError::SparseValues)), qPrintable(message(word)));
    Bytes far = good;
    far[body + 4] = far[body + 4] == 254
                        ? 253
                        : 254;  // the first gap: the last position moves past the chunk or the data
    reseal(far);                // changes; either way the decode differs or is refused
    const QString far_message = message(far);
    if (far_message == "accepted")
      QVERIFY(first_difference(decompress_gpu_of(far, d.data.size()),
                               decompress_cpu(good.data(), good.size()).bytes) != -1);
    if (listed % 4 != 0) {
      Bytes pad = good;
      pad[body + 4 + listed] = 1;
      reseal(pad);
      QVERIFY2(message(pad).contains(describe(ChunkError::SparsePadding)),
               qPrintable(message(pad)));
    }
  }

  void damaged_streams_are_rejected() {
    std::vector<float> v(20000);
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = float(std::sin(0.01 * double(i)) * 100);
    const Bytes good = compress_flat_cpu(v.data(), DType::Float32, v.size(),
                                         {Codec::Lossy, 0.5, kDefaultChunkBytes});
    const std::size_t raw_bytes = v.size() * 4;
    QCOMPARE(first_difference(decompress_gpu_of(good, raw_bytes),
                              decompress_cpu(good.data(), good.size()).bytes),
             -1L);
    const auto rejected = [&](Bytes bad, const char* expect) {
      try {
        decompress_gpu_of(bad, raw_bytes);
      } catch (const InputError& e) {
        return QString(e.what()).contains(expect);
      }
      return false;
    };
    Bytes flipped = good;
    flipped.at(good.size() - 3) ^= 0x10;
    QVERIFY(rejected(flipped, "payload checksum"));
    Bytes header = good;
    header[30] ^= 1;
    QVERIFY(rejected(header, "header checksum"));
    QVERIFY(rejected(Bytes(good.begin(), good.begin() + long(good.size() / 2)), "compressed"));
    QVERIFY(rejected(Bytes(good.begin(), good.begin() + 20), "truncated"));
    Bytes foreign(64, 0x42);
    QVERIFY(rejected(foreign, "not a livedrp"));
    // Damage inside a chunk behind valid checksums is named by the chunk decoder, as on the CPU:
    // the first chunk's outlier count past its element count, then its first outlier index (with
    // a count of 1) past the chunk.
    {
      const StreamInfo info = read_header(good.data(), good.size());
      const std::size_t payload_at = 56 + 4 * info.chunk_count + 16;
      const std::uint32_t elements = kDefaultChunkBytes / 4;
      std::uint32_t first_entry = 0;
      std::memcpy(&first_entry, good.data() + 56, 4);
      QCOMPARE(entry_mode_bits(first_entry) == unsigned(ChunkMode::Raw), false);
      Bytes count = good;
      const std::uint32_t too_many = elements + 1;
      std::memcpy(count.data() + payload_at, &too_many, 4);
      reseal_checksums(count, payload_at);
      QVERIFY2(gpu_refusal(count, raw_bytes).contains(describe(ChunkError::OutlierCount)),
               qPrintable(gpu_refusal(count, raw_bytes)));
      QVERIFY_THROWS_EXCEPTION(InputError, decompress_cpu(count.data(), count.size()));
    }
    // A decoder for one dtype and codec refuses a stream of another, naming both.
    for (const auto& [dtype, codec] :
         {std::pair{DType::UInt16, Codec::Lossless}, std::pair{DType::Float32, Codec::Lossless}}) {
      QString message;
      try {
        decompress_gpu_of(good, raw_bytes, std::pair{dtype, codec});
      } catch (const InputError& e) {
        message = e.what();
      }
      QVERIFY2(
          message.contains("not the ones the decode was asked for") &&
              message.contains("the header says float32, lossy") &&
              message.contains(QString("asked for ") + to_string(dtype) + ", " + to_string(codec)),
          qPrintable(message));
    }
    // uint16 has no lossy decoder: refused before anything is enqueued.
    QVERIFY_THROWS_EXCEPTION(
        InputError, decompress_gpu_of(good, raw_bytes, std::pair{DType::UInt16, Codec::Lossy}));
    // After a refusal the codec decodes a good stream again, with its own decoder.
    QCOMPARE(first_difference(
                 decompress_gpu_of(good, raw_bytes, std::pair{DType::Float32, Codec::Lossy}),
                 decompress_cpu(good.data(), good.size()).bytes),
             -1L);
  }
#endif
};

QTEST_GUILESS_MAIN(TestGpuCodec)
#include "test_gpu_codec.moc"
