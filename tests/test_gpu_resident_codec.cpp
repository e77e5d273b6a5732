// The resident codec kernels (cuda/codec/resident_compressor.hpp, resident_decompressor.hpp)
// against the CPU codec, the reference: every compression job's stream is compress_cpu's bytes for
// its array and every decoding job's output is decompress_cpu's, through many turns of a small
// ring, from one and from several host threads, for simulated ePix10ka2M segments (raw uint16,
// calibrated float32 lossless and lossy), whole raw events and arrays that end inside a chunk. Jobs
// collected out of order keep their work slots. stop() finishes every job submitted; damaged
// streams are rejected with DeviceCodec's words while the jobs around them still decode; bad
// parameters and buffers are refused with an error naming them; a ring nobody collects fails after
// the timeout instead of hanging.
//
// Without a usable CUDA device the suite skips, unless LIVEDRP_REQUIRE_GPU=1, where it fails.
#include <QtTest>

#include "gpu_test_support.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "calib/calibrate_cpu.hpp"
#include "codec/codec.hpp"
#include "core/detector.hpp"
#include "core/error.hpp"
#include "core/thread_pool.hpp"
#include "sim/simulator.hpp"

#ifdef LIVEDRP_HAVE_CUDA
#include "cuda/codec/resident_compressor.hpp"
#include "cuda/codec/resident_decompressor.hpp"
#include "cuda/device.hpp"
#endif

using namespace livedrp;
using namespace livedrp::codec;

namespace {

using Bytes = std::vector<std::uint8_t>;

constexpr std::uint64_t kRows = 352, kColumns = 384;

// Arrays of one shape and dtype, with the CPU's stream of each under `params`.
struct Workload {
  std::string name;
  DType dtype;
  std::vector<std::uint64_t> shape;
  CodecParams params;
  std::vector<Bytes> arrays, expected;
};

// Four distinct segments of simulated ePix10ka2M events (segment k of event k), raw and
// calibrated, and the first two whole raw events.
void simulated_segments(std::vector<Bytes>& raw, std::vector<Bytes>& calibrated,
                        std::vector<Bytes>& raw_events) {
  const DetectorDescription detector = find_detector("epix10ka2m");
  ThreadPool pool;
  SimulatorConfig config;
  config.seed = 777;
  config.hit_fraction = 0.5;
  DetectorSimulator simulator(detector, config, &pool);
  std::vector<std::uint16_t> event(detector.pixels());
  std::vector<float> image(detector.pixels());
  const std::size_t segment = kRows * kColumns;
  for (std::uint64_t e = 0; e < 4; ++e) {
    simulator.generate(e, event.data(), nullptr, &pool);
    calibrate_event_cpu(detector, simulator.constants(), calib::CalibrationParams{}, event.data(),
                        image.data(), &pool);
    const std::size_t first = std::size_t(e) * segment;
    raw.emplace_back(segment * 2);
    std::memcpy(raw.back().data(), event.data() + first, segment * 2);
    calibrated.emplace_back(segment * 4);
    std::memcpy(calibrated.back().data(), image.data() + first, segment * 4);
    if (e < 2) {
      raw_events.emplace_back(event.size() * 2);
      std::memcpy(raw_events.back().data(), event.data(), event.size() * 2);
    }
  }
}

Workload workload(std::string name, DType dtype, std::vector<std::uint64_t> shape,
                  CodecParams params, std::vector<Bytes> arrays) {
  Workload w{std::move(name), dtype, std::move(shape), params, std::move(arrays), {}};
  for (const Bytes& a : w.arrays)
    w.expected.push_back(compress_cpu(a.data(), dtype, w.shape, params));
  return w;
}

}  // namespace

class TestGpuResidentCodec : public QObject {
  Q_OBJECT

#ifdef LIVEDRP_HAVE_CUDA
  std::vector<Workload> workloads_;

  // Device copies of a workload's arrays, one after another (each 256-byte aligned).
  struct DeviceArrays {
    gpu::DeviceBuffer buffer;
    std::size_t stride = 0;
    const std::uint8_t* at(std::size_t i) const { return buffer.as<std::uint8_t>() + i * stride; }
  };
  static DeviceArrays upload(const std::vector<Bytes>& items, const gpu::Stream& stream) {
    DeviceArrays d;
    for (const Bytes& b : items)
      d.stride = std::max(d.stride, (b.size() + 255) & ~std::size_t(255));
    d.buffer = gpu::DeviceBuffer(items.size() * d.stride);
    for (std::size_t i = 0; i < items.size(); ++i)
      gpu::copy_async(d.buffer.as<std::uint8_t>() + i * d.stride, items[i].data(), items[i].size(),
                      stream, "test array");
    stream.synchronize();
    return d;
  }
  static std::size_t bound_of(const Workload& w) {
    const std::uint64_t count = w.arrays[0].size() / element_bytes(w.dtype);
    return (compressed_bound(w.dtype, count, unsigned(w.shape.size()), w.params) + 255) &
           ~std::size_t(255);
  }
  // The CPU's decoding of a stream.
  static Bytes decoded(const Bytes& stream) {
    return decompress_cpu(stream.data(), stream.size()).bytes;
  }
  static gpu::ResidentDecompressor decompressor_for(const Workload& w, int ring_slots) {
    return gpu::ResidentDecompressor(w.dtype, w.params.codec,
                                     w.arrays[0].size() / element_bytes(w.dtype),
                                     w.params.chunk_bytes, ring_slots);
  }
  static Bytes download(const std::uint8_t* device, std::uint64_t size, const gpu::Stream& stream) {
    Bytes bytes(size);
    gpu::copy_async(bytes.data(), device, size, stream, "test stream");
    stream.synchronize();
    return bytes;
  }
#endif

 private slots:
  void initTestCase() {
    LIVEDRP_SKIP_WITHOUT_GPU();
#ifdef LIVEDRP_HAVE_CUDA
    std::vector<Bytes> raw, calibrated, raw_events;
    simulated_segments(raw, calibrated, raw_events);
    const std::vector<std::uint64_t> segment = {kRows, kColumns};
    workloads_.push_back(workload("raw uint16 segment, lossless", DType::UInt16, segment,
                                  {Codec::Lossless, 0, kDefaultChunkBytes}, raw));
    workloads_.push_back(workload("calibrated segment, lossless", DType::Float32, segment,
                                  {Codec::Lossless, 0, kDefaultChunkBytes}, calibrated));
    workloads_.push_back(workload("calibrated segment, lossy 4.75 keV", DType::Float32, segment,
                                  {Codec::Lossy, 4.75, kDefaultChunkBytes}, calibrated));
    workloads_.push_back(workload("calibrated segment, lossy 2 keV, 4 KiB chunks", DType::Float32,
                                  segment, {Codec::Lossy, 2.0, 4096}, calibrated));
    // 3001 elements: the last 4 KiB chunk is partial (uint16: half a word at the end).
    std::mt19937 rng(5);
    std::vector<Bytes> odd_u16, odd_f32;
    for (int k = 0; k < 3; ++k) {
      std::vector<std::uint16_t> u(3001);
      std::vector<float> f(3001);
      std::normal_distribution<float> noise(1000.f + 100.f * float(k), 5.f);
      for (std::size_t i = 0; i < u.size(); ++i) {
        f[i] = noise(rng);
        u[i] = std::uint16_t(f[i]);
      }
      f[7] = std::nanf("");
      odd_u16.emplace_back(u.size() * 2);
      std::memcpy(odd_u16.back().data(), u.data(), odd_u16.back().size());
      odd_f32.emplace_back(f.size() * 4);
      std::memcpy(odd_f32.back().data(), f.data(), odd_f32.back().size());
    }
    workloads_.push_back(workload("3001 uint16, 1 KiB chunks", DType::UInt16, {3001},
                                  {Codec::Lossless, 0, 1024}, odd_u16));
    workloads_.push_back(workload("3001 float32, lossy 0.5, 4 KiB chunks", DType::Float32, {3001},
                                  {Codec::Lossy, 0.5, 4096}, odd_f32));
    // Whole events: 264 chunks a job.
    workloads_.push_back(workload("raw uint16 event, lossless", DType::UInt16,
                                  {16, kRows, kColumns}, {Codec::Lossless, 0, kDefaultChunkBytes},
                                  raw_events));
#endif
  }

#ifdef LIVEDRP_HAVE_CUDA
  // 200 jobs through a 32-slot ring, one thread, up to 32 in flight, for each workload: each
  // compression job's output is the CPU's stream, checked before its output is reused; then the
  // CPU's streams through the resident decoder the same way, each output the CPU's decoding.
  void every_job_gives_the_cpu_bytes() {
    constexpr int kSlots = 32, kJobs = 200;
    for (const Workload& w : workloads_) {
      const QString name = QString::fromStdString(w.name);
      const gpu::Stream stream;
      const DeviceArrays in = upload(w.arrays, stream), streams = upload(w.expected, stream);
      const std::size_t bound = bound_of(w), raw = w.arrays[0].size();
      gpu::DeviceBuffer outputs(kSlots * std::max(bound, raw));
      const auto out_at = [&](int i) {
        return outputs.as<std::uint8_t>() + std::size_t(i % kSlots) * std::max(bound, raw);
      };
      std::vector<gpu::ResidentTicket> tickets;
      {
        gpu::ResidentCompressor resident(w.dtype, w.shape, w.params, kSlots);
        QVERIFY(resident.blocks() >= 2);
        QVERIFY(resident.output_capacity() <= bound);
        QCOMPARE(resident.raw_bytes(), raw);
        const auto check = [&](int i) {
          const Bytes& want = w.expected[std::size_t(i) % w.arrays.size()];
          const std::uint64_t size = resident.wait(tickets[std::size_t(i)]);
          QVERIFY2(size == want.size() && download(out_at(i), size, stream) == want,
                   qPrintable(name + QString(": compression job %1 (%2 bytes, CPU %3) differs "
                                             "from the CPU's stream")
                                         .arg(i)
                                         .arg(size)
                                         .arg(want.size())));
        };
        for (int i = 0; i < kJobs; ++i) {
          if (i >= kSlots) check(i - kSlots);
          if (QTest::currentTestFailed()) return;
          tickets.push_back(
              resident.submit(in.at(std::size_t(i) % w.arrays.size()), out_at(i), bound));
          QCOMPARE(tickets.back().sequence, std::uint64_t(i));
        }
        for (int i = kJobs - kSlots; i < kJobs; ++i) {
          check(i);
          if (QTest::currentTestFailed()) return;
        }
      }
      tickets.clear();
      gpu::ResidentDecompressor resident = decompressor_for(w, kSlots);
      const auto check = [&](int i) {
        const std::size_t which = std::size_t(i) % w.arrays.size();
        const std::uint64_t size = resident.wait(tickets[std::size_t(i)]);
        QVERIFY2(size == raw && download(out_at(i), size, stream) == decoded(w.expected[which]),
                 qPrintable(name + QString(": decoding job %1 differs from the CPU's").arg(i)));
      };
      for (int i = 0; i < kJobs; ++i) {
        if (i >= kSlots) check(i - kSlots);
        if (QTest::currentTestFailed()) return;
        const std::size_t which = std::size_t(i) % w.arrays.size();
        tickets.push_back(
            resident.submit(streams.at(which), w.expected[which].size(), out_at(i), raw));
      }
      for (int i = kJobs - kSlots; i < kJobs; ++i) {
        check(i);
        if (QTest::currentTestFailed()) return;
      }
    }
  }

  // Four threads, 300 jobs each, 16 in flight each, on a 64-slot ring, compressing then
  // decoding: every size is the CPU's, and each thread's last outputs are the CPU's bytes.
  void several_threads_share_one_kernel() {
    const Workload& w = workloads_[0];
    const gpu::Stream stream;
    const DeviceArrays in = upload(w.arrays, stream), streams = upload(w.expected, stream);
    constexpr int kThreads = 4, kJobs = 300, kInFlight = 16;
    const std::size_t bound = bound_of(w), raw = w.arrays[0].size();
    gpu::DeviceBuffer outputs(kThreads * kInFlight * bound);
    const auto out_at = [&](int t, int i) {
      return outputs.as<std::uint8_t>() + std::size_t(t * kInFlight + i % kInFlight) * bound;
    };
    const auto which_of = [&](int t, int i) { return std::size_t(i + t) % w.arrays.size(); };
    // Runs kJobs jobs on each thread; submit(t, i) posts, wait(ticket, t, i) says if it was right.
    const auto run = [&](auto submit, auto wait) {
      std::vector<int> wrong(kThreads, 0);
      std::vector<std::string> errors(kThreads);
      {
        std::vector<std::jthread> threads;
        for (int t = 0; t < kThreads; ++t)
          threads.emplace_back([&, t] {
            try {
              std::vector<gpu::ResidentTicket> pending;
              for (int i = 0; i < kJobs; ++i) {
                if (i >= kInFlight)
                  wrong[t] += !wait(pending[std::size_t(i - kInFlight)], t, i - kInFlight);
                pending.push_back(submit(t, i));
              }
              for (int i = kJobs - kInFlight; i < kJobs; ++i)
                wrong[t] += !wait(pending[std::size_t(i)], t, i);
            } catch (const std::exception& e) {
              errors[t] = e.what();
            }
          });
      }
      for (int t = 0; t < kThreads; ++t) {
        QVERIFY2(errors[t].empty(), errors[t].c_str());
        QCOMPARE(wrong[t], 0);
      }
    };
    {
      gpu::ResidentCompressor resident(w.dtype, w.shape, w.params, 64);
      run([&](int t, int i) { return resident.submit(in.at(which_of(t, i)), out_at(t, i), bound); },
          [&](const gpu::ResidentTicket& ticket, int t, int i) {
            return resident.wait(ticket) == w.expected[which_of(t, i)].size();
          });
      if (QTest::currentTestFailed()) return;
      for (int t = 0; t < kThreads; ++t)
        for (int i = kJobs - kInFlight; i < kJobs; ++i) {
          const Bytes& want = w.expected[which_of(t, i)];
          QVERIFY2(
              download(out_at(t, i), want.size(), stream) == want,
              qPrintable(QString("thread %1, job %2 differs from the CPU's stream").arg(t).arg(i)));
        }
    }
    gpu::ResidentDecompressor resident = decompressor_for(w, 64);
    run(
        [&](int t, int i) {
          const std::size_t which = which_of(t, i);
          return resident.submit(streams.at(which), w.expected[which].size(), out_at(t, i), raw);
        },
        [&](const gpu::ResidentTicket& ticket, int, int) { return resident.wait(ticket) == raw; });
    if (QTest::currentTestFailed()) return;
    for (int t = 0; t < kThreads; ++t)
      for (int i = kJobs - kInFlight; i < kJobs; ++i)
        QVERIFY2(download(out_at(t, i), raw, stream) == w.arrays[which_of(t, i)],
                 qPrintable(QString("thread %1, decoding %2 is not the array").arg(t).arg(i)));
  }

  // Jobs collected in another order than submitted: each ticket still gives its own job's result
  // (a job holds its work slot until collected, however many jobs come after it).
  void results_collected_out_of_order() {
    const Workload& w = workloads_[4];  // small arrays, 3 distinct
    const gpu::Stream stream;
    const DeviceArrays in = upload(w.arrays, stream);
    constexpr int kSlots = 32, kHeld = 5, kJobs = 150;
    const std::size_t bound = bound_of(w);
    gpu::DeviceBuffer outputs(kJobs * bound);
    gpu::ResidentCompressor resident(w.dtype, w.shape, w.params, kSlots);
    // The first kHeld jobs stay uncollected while the rest pass through the ring.
    std::vector<gpu::ResidentTicket> held;
    for (int i = 0; i < kJobs; ++i) {
      const gpu::ResidentTicket ticket = resident.submit(
          in.at(std::size_t(i) % 3), outputs.as<std::uint8_t>() + std::size_t(i) * bound, bound);
      if (i < kHeld) {
        held.push_back(ticket);
      } else {
        QCOMPARE(resident.wait(ticket), std::uint64_t(w.expected[std::size_t(i) % 3].size()));
      }
    }
    for (int i = kHeld - 1; i >= 0; --i) {
      const Bytes& want = w.expected[std::size_t(i) % 3];
      QCOMPARE(resident.wait(held[std::size_t(i)]), std::uint64_t(want.size()));
      QVERIFY(download(outputs.as<std::uint8_t>() + std::size_t(i) * bound, want.size(), stream) ==
              want);
    }
    QVERIFY_THROWS_EXCEPTION(InputError, resident.wait(held[0]));  // collected already
  }

  // stop() right after 100 submissions: all of them are done and can be collected; later
  // submissions are refused.
  void stop_finishes_every_submitted_job() {
    const Workload& w = workloads_[2];
    const gpu::Stream stream;
    const DeviceArrays in = upload(w.arrays, stream);
    constexpr int kJobs = 100;
    const std::size_t bound = bound_of(w);
    gpu::DeviceBuffer outputs(kJobs * bound);
    gpu::ResidentCompressor resident(w.dtype, w.shape, w.params, 128);
    std::vector<gpu::ResidentTicket> tickets;
    for (int i = 0; i < kJobs; ++i)
      tickets.push_back(resident.submit(in.at(std::size_t(i) % w.arrays.size()),
                                        outputs.as<std::uint8_t>() + std::size_t(i) * bound,
                                        bound));
    resident.stop();
    for (int i = 0; i < kJobs; ++i)
      QCOMPARE(resident.wait(tickets[std::size_t(i)]),
               std::uint64_t(w.expected[std::size_t(i) % w.arrays.size()].size()));
    const Bytes& last = w.expected[(kJobs - 1) % w.arrays.size()];
    QVERIFY(download(outputs.as<std::uint8_t>() + (kJobs - 1) * bound, last.size(), stream) ==
            last);
    QVERIFY_THROWS_EXCEPTION(RuntimeFault, resident.submit(in.at(0), outputs.get(), bound));
  }

  // Damaged streams between good ones: each is refused with DeviceCodec's words (as the CPU
  // decoder refuses it), and the good streams around them still decode to the CPU's bytes (the
  // failed jobs leave their work slots clean).
  void damaged_streams_are_rejected_between_good_ones() {
    const Workload& w = workloads_[2];  // calibrated segment, lossy
    const Bytes& good = w.expected[0];
    const std::size_t raw = w.arrays[0].size();
    Bytes payload_flip = good;
    payload_flip.at(good.size() - 3) ^= 0x10;
    Bytes header_flip = good;
    header_flip[30] ^= 1;
    Bytes not_livedrp(64, 0x42);
    // The same array in 4 KiB chunks: four times the chunks the decoder was set up for.
    const Bytes small_chunks = compress_cpu(w.arrays[0].data(), w.dtype, w.shape,
                                            {Codec::Lossy, w.params.error_bound, 4096});
    const Bytes lossless = compress_cpu(w.arrays[0].data(), w.dtype, w.shape,
                                        {Codec::Lossless, 0, kDefaultChunkBytes});
    struct Bad {
      const Bytes* stream;
      std::size_t size;  // bytes given to the decoder (a prefix for truncation)
      std::size_t capacity;
      const char* expect;
    };
    const std::vector<Bad> bad = {
        {&payload_flip, good.size(), raw, "payload checksum mismatch"},
        {&header_flip, good.size(), raw, "header checksum mismatch"},
        {&good, good.size() / 2, raw, "the payload is truncated"},
        {&good, 20, raw, "truncated: the buffer ends inside the header"},
        {&not_livedrp, not_livedrp.size(), raw, "not a livedrp compressed stream"},
        {&good, good.size(), raw - 4, "the output buffer is smaller than the decoded array"},
        {&small_chunks, small_chunks.size(), raw, "than the resident decoder was set up for"},
        {&lossless, lossless.size(), raw,
         "the header says float32, lossless; asked for float32, lossy"},
    };
    std::vector<Bytes> items = {good};
    for (const Bad& b : bad) items.push_back(*b.stream);
    const gpu::Stream stream;
    const DeviceArrays streams = upload(items, stream);
    gpu::DeviceBuffer outputs((bad.size() + 1) * raw);
    gpu::ResidentDecompressor resident = decompressor_for(w, 32);
    const Bytes want = decoded(good);
    for (int round = 0; round < 3; ++round)
      for (std::size_t k = 0; k < bad.size(); ++k) {
        const gpu::ResidentTicket failing =
            resident.submit(streams.at(k + 1), bad[k].size,
                            outputs.as<std::uint8_t>() + (k + 1) * raw, bad[k].capacity);
        const gpu::ResidentTicket fine =
            resident.submit(streams.at(0), good.size(), outputs.get(), raw);
        QString message = "accepted";
        try {
          resident.wait(failing);
        } catch (const InputError& e) {
          message = e.what();
        }
        QVERIFY2(message.contains(bad[k].expect), qPrintable(message));
        QCOMPARE(resident.wait(fine), std::uint64_t(raw));
        QVERIFY2(download(outputs.as<std::uint8_t>(), raw, stream) == want,
                 qPrintable(QString("the good stream after \"%1\"").arg(bad[k].expect)));
      }
  }

  void bad_parameters_and_buffers_are_refused() {
    const std::vector<std::uint64_t> segment = {kRows, kColumns};
    const CodecParams lossless{Codec::Lossless, 0, kDefaultChunkBytes};
    const auto refusal = [](auto make) -> QString {
      try {
        make();
      } catch (const InputError& e) {
        return QString(e.what());
      }
      return "accepted";
    };
    QVERIFY(refusal([&] {
              gpu::ResidentCompressor r(DType::UInt16, {}, lossless);
            }).contains("at least one element"));
    QVERIFY(refusal([&] {
              gpu::ResidentCompressor r(DType::UInt16, {0, 4}, lossless);
            }).contains("at least one element"));
    QVERIFY(refusal([&] {
              gpu::ResidentCompressor r(DType::UInt16, segment, lossless, 8);
            }).contains("ring_slots must be in [32, 4096], got 8"));
    QVERIFY(refusal([&] {
              gpu::ResidentCompressor r(DType::Float32, segment, {Codec::Lossless, 0, 1u << 20});
            }).contains("more than shared memory holds"));
    QVERIFY(refusal([&] {
              gpu::ResidentCompressor r(DType::UInt16, segment, {Codec::Lossy, 0.5, 16384});
            }).contains("the lossy codec takes float32 data"));
    QVERIFY(refusal([&] {
              gpu::ResidentCompressor r(DType::Float32, segment, {Codec::Lossy, -1, 16384});
            }) != "accepted");
    QVERIFY(refusal([&] {
              gpu::ResidentDecompressor r(DType::UInt16, Codec::Lossy, 1000);
            }).contains("no decoder for uint16 under the lossy codec"));
    QVERIFY(refusal([&] {
              gpu::ResidentDecompressor r(DType::Float32, Codec::Lossless, 1000, 32768);
            }).contains("chunk_bytes must be a multiple of 128 in [1024, 16384]"));
    QVERIFY(refusal([&] {
              gpu::ResidentDecompressor r(DType::Float32, Codec::Lossless, 0);
            }).contains("max_elements must be in [1, 2^38], got 0"));

    const Workload& w = workloads_[0];
    const std::size_t bound = compressed_bound(w.dtype, kRows * kColumns, 2, w.params);
    gpu::DeviceBuffer in(w.arrays[0].size() + 16), out(bound + 16);
    {
      gpu::ResidentCompressor resident(w.dtype, w.shape, w.params, 32);
      QCOMPARE(resident.output_capacity(), bound);
      QVERIFY(refusal([&] {
                resident.submit(in.as<std::uint8_t>() + 4, out.get(), bound);
              }).contains("16-byte"));
      QVERIFY(refusal([&] {
                resident.submit(in.get(), out.as<std::uint8_t>() + 2, bound);
              }).contains("4-byte"));
      QVERIFY(refusal([&] { resident.submit(nullptr, out.get(), bound); }).contains("aligned"));
      QVERIFY(refusal([&] {
                resident.submit(in.get(), out.get(), bound - 1);
              }).contains("may be too small"));
      QVERIFY(refusal([&] { resident.wait({0, 0}); }).contains("was not submitted here"));
      QVERIFY(refusal([&] { resident.wait({0, 99}); }).contains("was not submitted here"));
      resident.stop();  // nothing was posted: the kernel leaves at once
    }
    gpu::ResidentDecompressor resident = decompressor_for(w, 32);
    QVERIFY(refusal([&] {
              resident.submit(in.as<std::uint8_t>() + 2, 100, out.get(), bound);
            }).contains("4-byte aligned"));
    QVERIFY(refusal([&] {
              resident.submit(nullptr, 100, out.get(), bound);
            }).contains("4-byte aligned"));
  }

  // One thread holds every work slot with uncollected jobs and submits once more: only it could
  // free one, so submit fails after its timeout instead of hanging (nothing was posted, so the
  // kernel is not harmed); the jobs held still complete, and the next submit after a collection
  // works.
  void a_ring_nobody_collects_fails_instead_of_hanging() {
    const Workload& w = workloads_[4];  // small arrays
    const gpu::Stream stream;
    const DeviceArrays in = upload(w.arrays, stream);
    constexpr int kSlots = 32;
    const std::size_t bound = bound_of(w);
    gpu::DeviceBuffer outputs((kSlots + 1) * bound);
    gpu::ResidentCompressor resident(w.dtype, w.shape, w.params, kSlots);
    std::vector<gpu::ResidentTicket> tickets;
    for (int i = 0; i < kSlots; ++i)
      tickets.push_back(
          resident.submit(in.at(0), outputs.as<std::uint8_t>() + std::size_t(i) * bound, bound));
    QString error;
    try {
      resident.submit(in.at(0), outputs.as<std::uint8_t>() + kSlots * bound, bound, 0.3);
    } catch (const RuntimeFault& e) {
      error = e.what();
    }
    QVERIFY2(error.contains("no work slot came free within"), qPrintable(error));
    for (const gpu::ResidentTicket& t : tickets)
      QCOMPARE(resident.wait(t), std::uint64_t(w.expected[0].size()));
    const gpu::ResidentTicket next =
        resident.submit(in.at(1), outputs.as<std::uint8_t>() + kSlots * bound, bound);
    QCOMPARE(next.sequence, std::uint64_t(kSlots));
    QCOMPARE(resident.wait(next), std::uint64_t(w.expected[1].size()));
  }
#endif
};

QTEST_GUILESS_MAIN(TestGpuResidentCodec)
#include "test_gpu_resident_codec.moc"
