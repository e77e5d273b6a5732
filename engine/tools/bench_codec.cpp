// livedrp-bench codec: the GPU codecs on simulated ePix10ka2M data, against a device-to-device
// copy of the same bytes measured in the same run, and zstd, lz4 and bitshuffle-LZ4 on the CPU on
// the same data.
//
//   livedrp-bench codec [--events N] [--distinct M] [--cpu-events K] [--cpu-only]
//                       [--chunk-bytes B] [--hit-densities D,...] [--only TEXT]
//                       [--event-streams S,...] [--scopes event,segment]
//                       [--seed S] [--json FILE] [--markdown FILE]
//
// Cases: raw uint16 lossless; calibrated float32 lossless and lossy at 0.25, 0.5 and 1 photon
// (the bound in keV = photons x the simulator's photon energy, 9.5 keV); and a photon-sparse
// calibrated image (photon_sparse_image: 96% of pixels under half a photon, as the LC
// reference frame), lossless and lossy at 0.5 photon; with --hit-densities, the same kind of
// image at other photon hit densities, lossy at 0.5 photon (how the encoder's choice between
// zero-byte elimination and a list of nonzero bins fares as photons get denser). Scopes: the whole
// event (16 x 352 x 384), and one 352x384 segment. GPU rows: one array per launch, launches
// round-robin over 1 and 4 streams (whole events: the counts of --event-streams; segments also 16,
// and 4 and 16 with a host thread per stream; one DeviceCodec per stream), rotating over M distinct
// events so that the L2 cache holds none of them; N timed launches between CUDA events after a
// warm-up (16 N for segments). Both scopes also go through the resident kernels
// (cuda/codec/resident_compressor.hpp and resident_decompressor.hpp: one persistent kernel each, no
// launch per array): segments fed by 1, 4 and 16 host threads (64 N each way), whole events by one
// (16 N), timed on the host clock (every job's size checked; each distinct array's stream against
// DeviceCodec's, its decoding against the CPU's). GB/s = input (raw) bytes / time, for compression
// and decompression alike. Decoding is timed with the decoder for the row's dtype and codec (the
// caller knows them); after the timing, event 0's stream must decode on the GPU to the CPU
// decoder's bytes (and, lossless, to the input), or the bench fails.
//   copy     a device-to-device copy of the raw array measured here, as input bytes per second
//            (half its read + write bandwidth): "x copy" is the codec's GB/s over it
//   floor    the bytes the codec must move (raw in + compressed out) at the copy's read + write
//            bandwidth, as input bytes per second: "of floor" is the codec's GB/s over it
// CPU rows (single thread, the first K events): zstd level 1 and lz4 (default,
// LZ4_compress_default) from Debian's libraries, bitshuffle-LZ4 through Debian's bitshuffle HDF5
// plugin (libh5bshuf.so, its filter function called as HDF5 calls it, the input copied into the
// filter's buffer as HDF5 does; left out when not installed), and livedrp's own CPU codec on one
// thread for its ratio and speed; each compressor reuses its contexts and buffers, after one
// untimed round.
// --cpu-only runs the CPU rows alone, without a device.
#include "bench_codec.hpp"

#include <lz4.h>
#include <zstd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <memory>
#include <random>
#include <span>
#include <sstream>
#include <thread>
#include <type_traits>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "bench_common.hpp"
#include "bench_plugin_filter.hpp"
#include "calib/calibrate_cpu.hpp"
#include "codec/codec.hpp"
#include "core/error.hpp"
#include "core/thread_pool.hpp"
#include "sim/simulator.hpp"

#ifdef LIVEDRP_HAVE_CUDA
#include "cuda/codec/device_codec.hpp"
#include "cuda/codec/resident_compressor.hpp"
#include "cuda/codec/resident_decompressor.hpp"
#include "cuda/device.hpp"
#endif

namespace livedrp::bench {
namespace {

using Clock = std::chrono::steady_clock;
using Bytes = std::vector<std::uint8_t>;
constexpr std::uint64_t kSegmentPixels = 352 * 384;

std::string fixed(double v, int digits) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(digits) << v;
  return s.str();
}

// Which simulated arrays a case compresses.
enum class Source { Raw, Calibrated, PhotonSparse, PhotonHits };

struct Case {
  std::string name;
  Source source;
  codec::DType dtype;
  codec::CodecParams params;
  std::size_t hits = 0;  // PhotonHits: the index of its density in --hit-densities
};

// Lossy bounds are given in photons, as the issue states them, and applied in the calibrated
// image's unit (keV): k photons = k x the simulator's photon energy.
std::vector<Case> cases(std::uint32_t chunk_bytes, const std::vector<double>& hit_densities) {
  using codec::Codec;
  using codec::DType;
  const double photon_kev = SimulatorConfig{}.photon_energy_kev;
  std::vector<Case> list = {
      {"raw uint16 lossless", Source::Raw, DType::UInt16, {Codec::Lossless, 0, chunk_bytes}},
      {"calibrated float32 lossless",
       Source::Calibrated,
       DType::Float32,
       {Codec::Lossless, 0, chunk_bytes}}};
  const auto lossy = [&](const char* data, Source source, double photons) {
    std::ostringstream name;
    name << data << " float32 lossy " << photons << " photon (" << photons * photon_kev << " keV)";
    list.push_back(
        {name.str(), source, DType::Float32, {Codec::Lossy, photons * photon_kev, chunk_bytes}});
  };
  for (const double photons : {0.25, 0.5, 1.0}) lossy("calibrated", Source::Calibrated, photons);
  list.push_back({"photon-sparse float32 lossless",
                  Source::PhotonSparse,
                  DType::Float32,
                  {Codec::Lossless, 0, chunk_bytes}});
  lossy("photon-sparse", Source::PhotonSparse, 0.5);
  for (std::size_t k = 0; k < hit_densities.size(); ++k) {
    std::ostringstream data;
    data << "photon hits " << 100 * hit_densities[k] << "%";
    lossy(data.str().c_str(), Source::PhotonHits, 0.5);
    list.back().hits = k;
  }
  return list;
}

// The cases whose name contains `only` (all of them when it is empty); none is an input error
// that lists the names.
std::vector<Case> selected_cases(std::uint32_t chunk_bytes,
                                 const std::vector<double>& hit_densities,
                                 const std::string& only) {
  std::vector<Case> all = cases(chunk_bytes, hit_densities), kept;
  for (const Case& c : all)
    if (c.name.find(only) != std::string::npos) kept.push_back(c);
  if (kept.empty()) {
    std::string names;
    for (const Case& c : all) names += (names.empty() ? "" : ", ") + c.name;
    throw InputError("--only \"" + only + "\" matches no case; the cases are: " + names);
  }
  return kept;
}

// The arrays of one case and scope, each `bytes` long: raw events or calibrated images, whole or
// their first segment.
struct Arrays {
  std::vector<std::uint64_t> shape;
  std::size_t bytes = 0;
  std::vector<Bytes> items;
};

struct Data {
  std::vector<Bytes> raw, calibrated, sparse;  // whole events
  std::vector<std::vector<Bytes>> hits;        // whole events, one list per --hit-densities entry
  double sparse_under_half_photon = 0;         // fraction of the sparse images' pixels
};

// A photon-sparse calibrated ePix10ka2M image in keV, like a weakly scattering sample's frame
// with every pixel in high gain: electronic noise of 0.1 photon rms around zero, 3% of pixels hit
// (`hit_density`) by 1 + Poisson(0.4) photons, a quarter of those sharing part of their charge
// with the next pixel, and 50 Bragg spots of 3x3 pixels with tens to hundreds of photons. About
// 96% of the pixels stay under half a photon at 3%, as in the LC reference frame.
Bytes photon_sparse_image(std::uint64_t pixels, double photon_kev, std::uint64_t seed,
                          double hit_density = 0.03) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> noise(0.0f, float(0.1 * photon_kev));
  std::bernoulli_distribution hit(hit_density), shared(0.25);
  std::poisson_distribution<int> extra(0.4);
  std::uniform_real_distribution<float> share(0.1f, 0.5f);
  std::vector<float> image(pixels);
  for (float& v : image) v = noise(rng);
  for (std::uint64_t i = 0; i + 1 < pixels; ++i) {
    if (!hit(rng)) continue;
    const float charge = float(photon_kev) * float(1 + extra(rng));
    const float moved = shared(rng) ? charge * share(rng) : 0.0f;
    image[i] += charge - moved;
    image[i + 1] += moved;
  }
  std::uniform_int_distribution<std::uint64_t> spot(0, pixels - 1);
  std::uniform_real_distribution<float> photons(20.0f, 400.0f);
  for (int s = 0; s < 50; ++s) {
    const std::uint64_t centre = spot(rng), width = 384;
    const float peak = photons(rng) * float(photon_kev);
    for (int dy = -1; dy <= 1; ++dy)
      for (int dx = -1; dx <= 1; ++dx) {
        const std::int64_t at = std::int64_t(centre) + dy * std::int64_t(width) + dx;
        if (at >= 0 && at < std::int64_t(pixels))
          image[std::uint64_t(at)] += peak / float(1 + 2 * (std::abs(dx) + std::abs(dy)));
      }
  }
  Bytes bytes(pixels * 4);
  std::memcpy(bytes.data(), image.data(), bytes.size());
  return bytes;
}

Data simulate(int distinct, std::uint64_t seed, const std::vector<double>& hit_densities) {
  const DetectorDescription d = find_detector("epix10ka2m");
  ThreadPool pool;
  SimulatorConfig config;
  config.seed = seed;
  DetectorSimulator simulator(d, config, &pool);
  Data data;
  for (int e = 0; e < distinct; ++e) {
    data.raw.emplace_back(d.raw_event_bytes());
    simulator.generate(std::uint64_t(e), data.raw.back().data(), nullptr, &pool);
    data.calibrated.emplace_back(d.pixels() * 4);
    calibrate_event_cpu(d, simulator.constants(), calib::CalibrationParams{},
                        data.raw.back().data(),
                        reinterpret_cast<float*>(data.calibrated.back().data()), &pool);
    data.sparse.push_back(
        photon_sparse_image(d.pixels(), config.photon_energy_kev, seed + std::uint64_t(e)));
  }
  for (const double density : hit_densities) {
    data.hits.emplace_back();
    for (int e = 0; e < distinct; ++e)
      data.hits.back().push_back(photon_sparse_image(d.pixels(), config.photon_energy_kev,
                                                     seed + std::uint64_t(e), density));
  }
  std::uint64_t under = 0, total = 0;
  const float half = float(0.5 * config.photon_energy_kev);
  for (const Bytes& b : data.sparse) {
    const auto* v = reinterpret_cast<const float*>(b.data());
    for (std::uint64_t i = 0; i < b.size() / 4; ++i) under += v[i] < half;
    total += b.size() / 4;
  }
  data.sparse_under_half_photon = total ? double(under) / double(total) : 0;
  std::cerr << "photon-sparse images: " << fixed(100 * data.sparse_under_half_photon, 1)
            << "% of pixels under half a photon\n";
  return data;
}

Arrays arrays_of(const Data& data, const Case& c, bool segment) {
  const auto& source = c.source == Source::Raw          ? data.raw
                       : c.source == Source::Calibrated ? data.calibrated
                       : c.source == Source::PhotonHits ? data.hits.at(c.hits)
                                                        : data.sparse;
  const std::size_t esize = codec::element_bytes(c.dtype);
  Arrays a;
  a.shape =
      segment ? std::vector<std::uint64_t>{352, 384} : std::vector<std::uint64_t>{16, 352, 384};
  a.bytes = (segment ? kSegmentPixels : 16 * kSegmentPixels) * esize;
  for (const Bytes& b : source) a.items.emplace_back(b.begin(), b.begin() + long(a.bytes));
  return a;
}

struct CpuRow {
  std::string compressor, data;
  double ratio = 0, compress_gbps = 0, decompress_gbps = 0;
};

template <class Run>
double seconds_of(Run&& run) {
  const auto start = Clock::now();
  run();
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// One single-threaded CPU compressor over the first `events` arrays: ratio and GB/s. Each
// compressor writes into memory it keeps (`compress` returns its stream there) and decodes into
// one output buffer, after one untimed round: the rows time the steady state of a pipeline that
// compresses event after event, not the first touch of fresh pages (which in a VM cost more
// than a float32 event's encoding).
template <class Compress, class Decompress>
CpuRow cpu_row(const std::string& name, const std::string& data_name, const Arrays& a, int events,
               Compress compress, Decompress decompress) {
  CpuRow row{name, data_name};
  std::uint64_t in = 0, out = 0;
  double ct = 0, dt = 0;
  Bytes back(a.bytes);
  // A decompressor writes into `back`, or (a filter plugin, which allocates its output) returns
  // where its output is, so that no copy is timed with it.
  constexpr bool returns_output =
      !std::is_void_v<std::invoke_result_t<Decompress&, std::span<const std::uint8_t>, Bytes&>>;
  if (!a.items.empty()) decompress(compress(a.items[0]), back);
  for (int e = 0; e < events && e < int(a.items.size()); ++e) {
    std::span<const std::uint8_t> stream, output(back);
    ct += seconds_of([&] { stream = compress(a.items[e]); });
    dt += seconds_of([&] {
      if constexpr (returns_output)
        output = decompress(stream, back);
      else
        decompress(stream, back);
    });
    if (!std::equal(output.begin(), output.end(), a.items[e].begin(), a.items[e].end()) &&
        name != "livedrp lossy")
      throw RuntimeFault(name + " did not round-trip " + data_name);
    in += a.bytes;
    out += stream.size();
  }
  row.ratio = double(in) / double(out);
  row.compress_gbps = double(in) / ct * 1e-9;
  row.decompress_gbps = double(in) / dt * 1e-9;
  return row;
}

// zstd's compression and decompression contexts, kept for the whole row as a pipeline would.
struct ZstdContexts {
  std::unique_ptr<ZSTD_CCtx, std::size_t (*)(ZSTD_CCtx*)> compress{ZSTD_createCCtx(),
                                                                   ZSTD_freeCCtx};
  std::unique_ptr<ZSTD_DCtx, std::size_t (*)(ZSTD_DCtx*)> decompress{ZSTD_createDCtx(),
                                                                     ZSTD_freeDCtx};
};

// bitshuffle's HDF5 filter id and its LZ4 setting (bitshuffle's bshuf_h5filter.h).
constexpr int kBitshuffleFilterId = 32008;
constexpr unsigned kBitshuffleLz4 = 2;

// Debian's bitshuffle plugin, or null (and why, on stderr) when it is not installed.
std::unique_ptr<PluginFilter> load_bitshuffle() {
  std::string why;
  std::unique_ptr<PluginFilter> plugin = PluginFilter::load("libh5bshuf.so", &why);
  if (plugin && plugin->id() != kBitshuffleFilterId) {
    why = plugin->path() + " is filter " + std::to_string(plugin->id()) + ", not bitshuffle";
    plugin.reset();
  }
  if (!plugin) std::cerr << "cpu | bitshuffle-lz4 rows left out: " << why << "\n";
  return plugin;
}

std::vector<CpuRow> cpu_rows(const Data& data, int events, const std::vector<Case>& selected) {
  std::vector<CpuRow> rows;
  const std::unique_ptr<PluginFilter> bitshuffle = load_bitshuffle();
  for (const Case& c : selected) {
    const Arrays a = arrays_of(data, c, false);
    const bool lossy = c.params.codec == codec::Codec::Lossy;
    codec::CpuCompressor compressor;
    rows.push_back(cpu_row(
        lossy ? "livedrp lossy" : "livedrp", c.name, a, events,
        [&](const Bytes& in) { return compressor.compress(in.data(), c.dtype, a.shape, c.params); },
        [&](std::span<const std::uint8_t> s, Bytes& out) {
          codec::decompress_cpu_into(s.data(), s.size(), out.data(), out.size());
        }));
    std::cerr << "cpu | " << c.name << " | livedrp ratio " << fixed(rows.back().ratio, 2) << "\n";
    if (lossy) continue;  // zstd and lz4 are lossless: once per dtype
    ZstdContexts zstd;
    if (!zstd.compress || !zstd.decompress) throw RuntimeFault("zstd: no context");
    Bytes zstd_out(ZSTD_compressBound(a.bytes));
    rows.push_back(cpu_row(
        "zstd -1", c.name, a, events,
        [&](const Bytes& in) {
          const std::size_t n = ZSTD_compressCCtx(zstd.compress.get(), zstd_out.data(),
                                                  zstd_out.size(), in.data(), in.size(), 1);
          if (ZSTD_isError(n)) throw RuntimeFault(std::string("zstd: ") + ZSTD_getErrorName(n));
          return std::span<const std::uint8_t>(zstd_out.data(), n);
        },
        [&](std::span<const std::uint8_t> s, Bytes& out) {
          const std::size_t n = ZSTD_decompressDCtx(zstd.decompress.get(), out.data(), out.size(),
                                                    s.data(), s.size());
          if (ZSTD_isError(n)) throw RuntimeFault(std::string("zstd: ") + ZSTD_getErrorName(n));
        }));
    Bytes lz4_out(std::size_t(LZ4_compressBound(int(a.bytes))));
    rows.push_back(cpu_row(
        "lz4", c.name, a, events,
        [&](const Bytes& in) {
          const int n = LZ4_compress_default(reinterpret_cast<const char*>(in.data()),
                                             reinterpret_cast<char*>(lz4_out.data()),
                                             int(in.size()), int(lz4_out.size()));
          if (n <= 0) throw RuntimeFault("lz4 compression failed");
          return std::span<const std::uint8_t>(lz4_out.data(), std::size_t(n));
        },
        [&](std::span<const std::uint8_t> s, Bytes& out) {
          const int n = LZ4_decompress_safe(reinterpret_cast<const char*>(s.data()),
                                            reinterpret_cast<char*>(out.data()), int(s.size()),
                                            int(out.size()));
          if (n < 0) throw RuntimeFault("lz4 decompression failed");
        }));
    std::cerr << "cpu | " << c.name << " | zstd ratio " << fixed(rows[rows.size() - 2].ratio, 2)
              << ", lz4 ratio " << fixed(rows.back().ratio, 2) << "\n";
    if (!bitshuffle) continue;
    // bitshuffle's client data: version (unused), element size, block size (0: the library's
    // default), compression (2: LZ4), as its HDF5 filter reads them.
    const std::vector<unsigned> cd = {0, 0, codec::element_bytes(c.dtype), 0, kBitshuffleLz4};
    rows.push_back(cpu_row(
        "bitshuffle-lz4", c.name, a, events,
        [&](const Bytes& in) { return bitshuffle->run(false, cd, in); },
        [&](std::span<const std::uint8_t> s, Bytes&) { return bitshuffle->run(true, cd, s); }));
    std::cerr << "cpu | " << c.name << " | bitshuffle-lz4 ratio " << fixed(rows.back().ratio, 2)
              << "\n";
  }
  return rows;
}

struct GpuRow {
  std::string data, scope;
  int streams = 0;
  bool thread_per_stream = false;  // each stream's launches from a host thread of its own
  int resident_threads = 0;        // > 0: the resident kernels fed by this many host threads
  std::size_t raw_bytes = 0;
  double ratio = 0, compress_gbps = 0, decompress_gbps = 0, copy_gbps = 0, floor_gbps = 0;
};

#ifdef LIVEDRP_HAVE_CUDA
// Enqueues `launches` calls of enqueue(stream index, launch index) round-robin over the streams
// between CUDA events after `warmup` untimed ones; returns seconds. With thread_per_stream, stream
// s's launches (i = s, s + streams, ...) come from a host thread of its own, all threads at once
// (their start is inside the timed span), as the lanes of an engine would enqueue.
template <class Enqueue>
double timed_launches(std::vector<std::unique_ptr<gpu::Stream>>& streams, int warmup, int launches,
                      bool thread_per_stream, Enqueue enqueue) {
  const int n = int(streams.size());
  for (int i = 0; i < warmup; ++i) enqueue(i % n, i);
  for (auto& s : streams) s->synchronize();
  gpu::Event start;
  start.record(*streams[0]);
  for (int s = 1; s < n; ++s) streams[s]->wait(start.get());
  if (thread_per_stream) {
    std::vector<std::jthread> threads;
    for (int s = 0; s < n; ++s)
      threads.emplace_back([&, s] {
        for (int i = s; i < launches; i += n) enqueue(s, i);
      });
  } else {
    for (int i = 0; i < launches; ++i) enqueue(i % n, i);
  }
  std::vector<std::unique_ptr<gpu::Event>> done;
  for (int s = 1; s < n; ++s) {
    done.push_back(std::make_unique<gpu::Event>(false));
    done.back()->record(*streams[s]);
    streams[0]->wait(done.back()->get());
  }
  gpu::Event stop;
  stop.record(*streams[0]);
  stop.synchronize();
  return stop.elapsed_ms_since(start) * 1e-3;
}

// A row's speeds count only if its streams decode right: event 0's stream, decoded on the GPU by
// the kernel the row timed, must give what the CPU decoder gives for the same bytes, and for the
// lossless codec the input itself. Throws RuntimeFault naming the row otherwise.
void check_round_trip(const Case& c, const Arrays& a, const std::string& scope,
                      gpu::DeviceCodec& codec, const gpu::Stream& stream,
                      const std::uint8_t* device_stream, std::uint64_t size,
                      const gpu::DeviceBuffer& device_decoded) {
  std::vector<std::uint8_t> bytes(size), gpu_decoded(a.bytes);
  codec.decompress(device_stream, size, device_decoded.get(), a.bytes, stream, c.dtype,
                   c.params.codec);
  codec.finish_decompress(stream);
  gpu::copy_async(bytes.data(), device_stream, size, stream, "bench stream to the host");
  gpu::copy_async(gpu_decoded.data(), device_decoded.get(), a.bytes, stream,
                  "bench decoded array to the host");
  stream.synchronize();
  const codec::DecodedArray cpu = codec::decompress_cpu(bytes.data(), bytes.size());
  const bool same_as_cpu = cpu.bytes == gpu_decoded;
  const bool exact = c.params.codec != codec::Codec::Lossless ||
                     std::memcmp(a.items[0].data(), gpu_decoded.data(), a.bytes) == 0;
  if (!same_as_cpu || !exact)
    throw RuntimeFault("codec bench: " + c.name + " (" + scope + "): event 0 " +
                       (same_as_cpu ? "does not decode to its input"
                                    : "decodes on the GPU to other bytes than on the CPU"));
}

GpuRow gpu_row(const Case& c, const Arrays& a, const std::string& scope, int stream_count,
               bool thread_per_stream, int events, double copy_rw_gbps) {
  const std::uint64_t count = a.bytes / codec::element_bytes(c.dtype);
  // Rounded so that every stream slot starts 256-byte aligned, as the codec wants 4.
  const std::size_t bound =
      (codec::compressed_bound(c.dtype, count, unsigned(a.shape.size()), c.params) + 255) & ~255ul;
  const int distinct = int(a.items.size());
  gpu::DeviceBuffer inputs(distinct * a.bytes), streams_out(distinct * bound);
  std::vector<std::unique_ptr<gpu::Stream>> streams;
  std::vector<std::unique_ptr<gpu::DeviceCodec>> codecs;
  std::vector<gpu::DeviceBuffer> outputs, decoded;
  for (int s = 0; s < stream_count; ++s) {
    streams.push_back(std::make_unique<gpu::Stream>());
    codecs.push_back(std::make_unique<gpu::DeviceCodec>(count));
    outputs.emplace_back(bound);
    decoded.emplace_back(a.bytes);
  }
  auto in_at = [&](int i) {
    return inputs.as<std::uint8_t>() + std::size_t(i % distinct) * a.bytes;
  };
  for (int e = 0; e < distinct; ++e)
    gpu::copy_async(in_at(e), a.items[e].data(), a.bytes, *streams[0], "bench input");
  // The streams that decompression reads: each distinct array compressed once, its size kept.
  std::vector<std::uint64_t> sizes(distinct);
  std::uint64_t compressed = 0;
  for (int e = 0; e < distinct; ++e) {
    codecs[0]->compress(in_at(e), c.dtype, count, a.shape, c.params,
                        streams_out.as<std::uint8_t>() + e * bound, bound, *streams[0]);
    sizes[e] = codecs[0]->compressed_size(*streams[0]);
    compressed += sizes[e];
  }
  GpuRow row{c.name, scope, stream_count, thread_per_stream, 0, a.bytes};
  row.ratio = double(distinct) * double(a.bytes) / double(compressed);
  const int warmup = std::max(8, 2 * stream_count);
  const double compress_s =
      timed_launches(streams, warmup, events, thread_per_stream, [&](int s, int i) {
        codecs[s]->compress(in_at(i), c.dtype, count, a.shape, c.params, outputs[s].get(), bound,
                            *streams[s]);
      });
  const double decompress_s =
      timed_launches(streams, warmup, events, thread_per_stream, [&](int s, int i) {
        const int e = i % distinct;
        codecs[s]->decompress(streams_out.as<std::uint8_t>() + e * bound, sizes[e],
                              decoded[s].get(), a.bytes, *streams[s], c.dtype, c.params.codec);
      });
  for (int s = 0; s < stream_count; ++s) codecs[s]->finish_decompress(*streams[s]);
  check_round_trip(c, a, scope, *codecs[0], *streams[0], streams_out.as<std::uint8_t>(), sizes[0],
                   decoded[0]);
  const double moved_per_input =
      (double(a.bytes) + double(compressed) / distinct) / double(a.bytes);
  row.compress_gbps = double(events) * double(a.bytes) / compress_s * 1e-9;
  row.decompress_gbps = double(events) * double(a.bytes) / decompress_s * 1e-9;
  row.copy_gbps = copy_rw_gbps / 2;
  row.floor_gbps = copy_rw_gbps / moved_per_input;
  return row;
}

// `jobs` jobs over `threads` host threads through a resident codec (submit(i, output) posts job
// i into `output`, wait(ticket, i) collects it and says whether it gave the expected result):
// thread t takes jobs t, t + threads, ..., keeps up to `in_flight` of its own uncollected, each
// with an output of its own (t x in_flight + k % in_flight of `outputs`), and collects the oldest
// when at that limit. Returns the jobs that did not give the expected result.
template <class Submit, class Wait>
int resident_jobs(int threads, int jobs, int in_flight, std::uint8_t* outputs, std::size_t stride,
                  Submit submit, Wait wait) {
  std::atomic<int> wrong = 0;
  std::vector<std::jthread> workers;
  for (int t = 0; t < threads; ++t)
    workers.emplace_back([&, t] {
      std::vector<std::pair<gpu::ResidentTicket, int>> pending;  // (ticket, job)
      std::size_t oldest = 0;
      int k = 0;
      for (int i = t; i < jobs; i += threads, ++k) {
        if (pending.size() - oldest == std::size_t(in_flight)) {
          const auto [ticket, job] = pending[oldest++];
          wrong += !wait(ticket, job);
        }
        std::uint8_t* out = outputs + (std::size_t(t) * in_flight + k % in_flight) * stride;
        pending.emplace_back(submit(i, out), i);
      }
      for (; oldest < pending.size(); ++oldest)
        wrong += !wait(pending[oldest].first, pending[oldest].second);
    });
  workers.clear();  // joins
  return wrong.load();
}

// Arrays (segments or whole events) through the resident codec kernels (no launch per array):
// `threads` host threads
// share `jobs` compressions (resident_jobs), then as many decompressions of the streams
// DeviceCodec made of the distinct segments (whose decoding gpu_row checks), each timed on the
// host clock from the threads' start to the last result collected, after a warm-up of twice the
// ring. Every job must give DeviceCodec's size (compression) or the raw size (decompression);
// afterwards one job per distinct segment must give DeviceCodec's stream byte for byte, and the
// decoding of its stream the CPU decoder's bytes, or the bench fails.
GpuRow resident_row(const Case& c, const Arrays& a, bool segment, int threads, int jobs,
                    double copy_rw_gbps) {
  const std::uint64_t count = a.bytes / codec::element_bytes(c.dtype);
  const int distinct = int(a.items.size());
  constexpr int kRingSlots = 256;
  const int in_flight = kRingSlots / threads;
  const std::size_t bound =
      (codec::compressed_bound(c.dtype, count, unsigned(a.shape.size()), c.params) + 255) &
      ~std::size_t(255);
  const std::size_t raw_stride = (a.bytes + 255) & ~std::size_t(255);
  const std::size_t stride = std::max(bound, raw_stride);
  gpu::DeviceBuffer inputs(distinct * raw_stride), references(distinct * bound),
      outputs(std::size_t(kRingSlots) * stride);
  const gpu::Stream stream;
  const auto in_at = [&](int i) {
    return inputs.as<std::uint8_t>() + std::size_t(i % distinct) * raw_stride;
  };
  const auto reference_at = [&](int i) {
    return references.as<std::uint8_t>() + std::size_t(i % distinct) * bound;
  };
  std::vector<std::uint64_t> sizes(distinct);
  std::uint64_t compressed = 0;
  {
    gpu::DeviceCodec reference_codec(count);
    for (int e = 0; e < distinct; ++e) {
      gpu::copy_async(in_at(e), a.items[e].data(), a.bytes, stream, "bench input");
      reference_codec.compress(in_at(e), c.dtype, count, a.shape, c.params, reference_at(e), bound,
                               stream);
      sizes[e] = reference_codec.compressed_size(stream);
      compressed += sizes[e];
    }
  }
  const auto to_host = [&](const std::uint8_t* device, std::size_t bytes) {
    Bytes host(bytes);
    gpu::copy_async(host.data(), device, bytes, stream, "resident result to the host");
    stream.synchronize();
    return host;
  };
  const auto fail = [&](const std::string& what) {
    throw RuntimeFault("codec bench: " + c.name + " (" + (segment ? "segment" : "event") +
                       ", resident): " + what);
  };
  const auto timed = [&](auto submit, auto wait) {
    if (resident_jobs(threads, 2 * kRingSlots, in_flight, outputs.as<std::uint8_t>(), stride,
                      submit, wait) != 0)
      fail("a warm-up job gave a wrong result");
    const auto start = Clock::now();
    const int wrong =
        resident_jobs(threads, jobs, in_flight, outputs.as<std::uint8_t>(), stride, submit, wait);
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    if (wrong != 0) fail(std::to_string(wrong) + " jobs gave a wrong size");
    return seconds;
  };
  // The kernels come after the references, one at a time: each holds the device's blocks until
  // it stops, so a launch made while it runs would wait for it.
  double compress_s = 0, decompress_s = 0;
  {
    gpu::ResidentCompressor resident(c.dtype, a.shape, c.params, kRingSlots);
    compress_s =
        timed([&](int i, std::uint8_t* out) { return resident.submit(in_at(i), out, stride); },
              [&](const gpu::ResidentTicket& t, int i) {
                return resident.wait(t) == sizes[i % distinct];
              });
    for (int e = 0; e < distinct; ++e) {
      std::uint8_t* out = outputs.as<std::uint8_t>() + std::size_t(e) * stride;
      resident.wait(resident.submit(in_at(e), out, stride));
      if (to_host(out, sizes[e]) != to_host(reference_at(e), sizes[e]))
        fail("a stream differs from DeviceCodec's");
    }
  }
  {
    const codec::CodecParams& p = c.params;
    gpu::ResidentDecompressor resident(c.dtype, p.codec, count, p.chunk_bytes, kRingSlots);
    decompress_s = timed(
        [&](int i, std::uint8_t* out) {
          return resident.submit(reference_at(i), sizes[i % distinct], out, stride);
        },
        [&](const gpu::ResidentTicket& t, int) { return resident.wait(t) == a.bytes; });
    for (int e = 0; e < distinct; ++e) {
      std::uint8_t* out = outputs.as<std::uint8_t>() + std::size_t(e) * stride;
      resident.wait(resident.submit(reference_at(e), sizes[e], out, stride));
      const Bytes stream_bytes = to_host(reference_at(e), sizes[e]);
      if (to_host(out, a.bytes) !=
          codec::decompress_cpu(stream_bytes.data(), stream_bytes.size()).bytes)
        fail("a stream decodes to other bytes than on the CPU");
    }
  }
  GpuRow row{c.name, segment ? "segment" : "event", 0, false, threads, a.bytes};
  row.ratio = double(distinct) * double(a.bytes) / double(compressed);
  row.compress_gbps = double(jobs) * double(a.bytes) / compress_s * 1e-9;
  row.decompress_gbps = double(jobs) * double(a.bytes) / decompress_s * 1e-9;
  row.copy_gbps = copy_rw_gbps / 2;
  row.floor_gbps =
      copy_rw_gbps / ((double(a.bytes) + double(compressed) / distinct) / double(a.bytes));
  return row;
}
#endif

void write_results(const CodecBenchOptions& o, const std::vector<GpuRow>& gpu_rows,
                   const std::vector<CpuRow>& cpu, const std::string& device,
                   double sparse_under_half_photon) {
  nlohmann::json j;
  j["benchmark"] = "livedrp-bench codec";
  j["detector"] = "epix10ka2m";
  j["device"] = device;
  j["events_per_row"] = o.events;
  j["distinct_events"] = o.distinct;
  j["cpu_events"] = o.cpu_events;
  j["chunk_bytes"] = o.chunk_bytes;
  j["photon_sparse_fraction_under_half_photon"] = sparse_under_half_photon;
  j["gpu"] = nlohmann::json::array();
  j["cpu"] = nlohmann::json::array();
  std::ostringstream m;
  m << "## livedrp-bench codec: epix10ka2m\n\n";
  m << "- device: " << device;
  if (!gpu_rows.empty())
    m << "; " << o.events << " timed launches per row over " << o.distinct
      << " distinct simulated events";
  m << "; chunks of " << o.chunk_bytes << " bytes\n";
  m << "- GB/s = raw (input) bytes / time; copy = device-to-device copy of the same array, as "
       "input bytes/s; floor = (raw + compressed) bytes at the copy's read + write bandwidth\n";
  m << "- CPU: one thread, the first " << o.cpu_events << " events\n";
  m << "- photon-sparse images: " << fixed(100 * sparse_under_half_photon, 1)
    << "% of pixels under half a photon\n\n";
  if (!gpu_rows.empty()) {
    m << "| data | scope | streams | ratio | compress GB/s | x copy | of floor | decompress GB/s "
         "| x copy | copy GB/s |\n|---|---|---|---|---|---|---|---|---|---|\n";
    for (const GpuRow& r : gpu_rows) {
      const bool resident = r.resident_threads > 0;
      j["gpu"].push_back({{"data", r.data},
                          {"scope", r.scope},
                          {"launch", resident ? "resident" : "per array"},
                          {"streams", r.streams},
                          {"host_threads", resident              ? r.resident_threads
                                           : r.thread_per_stream ? r.streams
                                                                 : 1},
                          {"raw_bytes", r.raw_bytes},
                          {"ratio", r.ratio},
                          {"compress_gbps", r.compress_gbps},
                          {"decompress_gbps", r.decompress_gbps},
                          {"copy_gbps", r.copy_gbps},
                          {"floor_gbps", r.floor_gbps},
                          {"compress_x_copy", r.compress_gbps / r.copy_gbps},
                          {"compress_of_floor", r.compress_gbps / r.floor_gbps},
                          {"decompress_x_copy", r.decompress_gbps / r.copy_gbps}});
      m << "| " << r.data << " | " << r.scope << " | ";
      if (resident)
        m << "resident, " << r.resident_threads << " host thread"
          << (r.resident_threads > 1 ? "s" : "");
      else
        m << r.streams << (r.thread_per_stream ? ", a host thread each" : "");
      m << " | " << fixed(r.ratio, 2) << " | " << fixed(r.compress_gbps, 1) << " | "
        << fixed(r.compress_gbps / r.copy_gbps, 2) << " | "
        << fixed(r.compress_gbps / r.floor_gbps, 2) << " | " << fixed(r.decompress_gbps, 1) << " | "
        << fixed(r.decompress_gbps / r.copy_gbps, 2) << " | " << fixed(r.copy_gbps, 0) << " |\n";
    }
    m << "\n";
  }
  m << "| CPU compressor | data | ratio | compress GB/s | decompress GB/s "
       "|\n|---|---|---|---|---|\n";
  for (const CpuRow& r : cpu) {
    j["cpu"].push_back({{"compressor", r.compressor},
                        {"data", r.data},
                        {"threads", 1},
                        {"ratio", r.ratio},
                        {"compress_gbps", r.compress_gbps},
                        {"decompress_gbps", r.decompress_gbps}});
    m << "| " << r.compressor << " | " << r.data << " | " << fixed(r.ratio, 2) << " | "
      << fixed(r.compress_gbps, 2) << " | " << fixed(r.decompress_gbps, 2) << " |\n";
  }
  std::cout << m.str();
  if (!o.json_path.empty()) std::ofstream(o.json_path) << j.dump(2) << "\n";
  if (!o.markdown_path.empty()) std::ofstream(o.markdown_path) << m.str();
}

}  // namespace

void add_codec_options(CLI::App& command, CodecBenchOptions& o) {
  command.add_option("--events", o.events, "timed launches per GPU row")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  command.add_option("--distinct", o.distinct, "distinct simulated events")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  command.add_option("--cpu-events", o.cpu_events, "events per CPU row")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  command.add_flag("--cpu-only", o.cpu_only, "CPU rows only (no device needed)");
  command
      .add_option("--chunk-bytes", o.chunk_bytes,
                  "input bytes per chunk: a multiple of 128 in [1024, 1048576]")
      ->check(CLI::Range(codec::kMinChunkBytes, codec::kMaxChunkBytes))
      ->check([](const std::string& text) {
        return std::stoul(text) % codec::kChunkBytesMultiple == 0
                   ? std::string()
                   : std::string("--chunk-bytes must be a multiple of 128, got ") + text;
      })
      ->capture_default_str();
  command
      .add_option("--hit-densities", o.hit_densities,
                  "also photon-sparse images at these photon hit densities (fractions of the "
                  "pixels, e.g. 0.002,0.01,0.05,0.2), lossy at 0.5 photon")
      ->delimiter(',')
      ->check(CLI::Range(1e-6, 1.0));
  command
      .add_option("--event-streams", o.event_streams,
                  "stream counts of the whole-event rows with a launch per event (e.g. 1,4,8,16)")
      ->delimiter(',')
      ->check(CLI::Range(1, 32))
      ->capture_default_str();
  command
      .add_option("--scopes", o.scopes,
                  "the array scopes of the GPU rows: event (16 x 352 x 384), segment (352 x 384) "
                  "or both")
      ->delimiter(',')
      ->check(CLI::IsMember({"event", "segment"}))
      ->capture_default_str();
  command.add_option("--only", o.only,
                     "only the cases whose name contains this text (e.g. \"lossy 0.5\"), for "
                     "profiling one kind of data");
  add_common_options(command, o.seed, o.json_path, o.markdown_path);
}

int run_codec(const CodecBenchOptions& o) {
  const std::vector<Case> selected = selected_cases(o.chunk_bytes, o.hit_densities, o.only);
  const Data data = simulate(std::max(o.distinct, o.cpu_events), o.seed, o.hit_densities);
  std::vector<GpuRow> gpu_rows;
  std::string device = "none (CPU only)";
  if (!o.cpu_only) {
#ifdef LIVEDRP_HAVE_CUDA
    if (!cuda_ready("codec")) return 1;
    device = gpu::device_properties().name;
    Data gpu_data = data;
    gpu_data.raw.resize(std::size_t(o.distinct));
    gpu_data.calibrated.resize(std::size_t(o.distinct));
    gpu_data.sparse.resize(std::size_t(o.distinct));
    for (auto& images : gpu_data.hits) images.resize(std::size_t(o.distinct));
    for (bool segment : {false, true}) {
      if (std::find(o.scopes.begin(), o.scopes.end(), segment ? "segment" : "event") ==
          o.scopes.end())
        continue;
      for (const Case& c : selected) {
        const Arrays a = arrays_of(gpu_data, c, segment);
        const double copy_rw = device_copy_gbps(a.bytes, 20);
        // A segment is 17-33 chunks, too few to fill the device alone: it gets more streams,
        // and rows with a host thread per stream (one thread's launches limit it otherwise). Its
        // rows launch 16 times as often, so that each moves the bytes of an event row.
        struct Setting {
          int streams;
          bool thread_per_stream;
        };
        std::vector<Setting> settings{{1, false}, {4, false}, {16, false}, {4, true}, {16, true}};
        if (!segment) {
          settings.clear();
          for (const int streams : o.event_streams) settings.push_back({streams, false});
        }
        for (const Setting& setting : settings) {
          gpu_rows.push_back(gpu_row(c, a, segment ? "segment" : "event", setting.streams,
                                     setting.thread_per_stream, segment ? 16 * o.events : o.events,
                                     copy_rw));
          const GpuRow& r = gpu_rows.back();
          std::cerr << r.data << " | " << r.scope << " x" << r.streams
                    << (r.thread_per_stream ? " threads" : "") << " | ratio " << fixed(r.ratio, 2)
                    << " | " << fixed(r.compress_gbps, 1) << " / " << fixed(r.decompress_gbps, 1)
                    << " GB/s\n";
        }
        // Without a launch each: the resident kernels, segments fed by 1, 4 and 16 host threads
        // (64 N of them), whole events by one (16 N).
        for (const int threads : segment ? std::vector<int>{1, 4, 16} : std::vector<int>{1}) {
          gpu_rows.push_back(
              resident_row(c, a, segment, threads, (segment ? 64 : 16) * o.events, copy_rw));
          const GpuRow& r = gpu_rows.back();
          std::cerr << r.data << " | " << r.scope << " resident, " << threads << " threads | ratio "
                    << fixed(r.ratio, 2) << " | " << fixed(r.compress_gbps, 1) << " / "
                    << fixed(r.decompress_gbps, 1) << " GB/s\n";
        }
      }
    }
#else
    std::cerr << "livedrp-bench codec: this build has no CUDA; use --cpu-only\n";
    return 1;
#endif
  }
  write_results(o, gpu_rows, cpu_rows(data, o.cpu_events, selected), device,
                data.sparse_under_half_photon);
  return 0;
}

}  // namespace livedrp::bench
