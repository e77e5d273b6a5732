// livedrp-codec: compress, decompress and verify detector arrays with livedrp's codecs
// (engine/codec/, container in docs/formats.md).
//
//   livedrp-codec compress --codec lossless|lossy [--error-bound E] [--backend cpu|cuda]
//                          [--chunk-bytes N] [--dtype T --shape S] INPUT OUTPUT
//   livedrp-codec decompress [--backend cpu|cuda] INPUT OUTPUT
//   livedrp-codec verify [--codec ...] [--error-bound E] [--backend cpu|cuda] [--dtype T --shape S]
//                        INPUT
//
// INPUT is a NumPy .npy file, an HDF5 dataset (FILE.h5:/path/to/dataset) or raw binary (then
// --dtype and --shape say what it holds). decompress writes the format OUTPUT names: .npy, an HDF5
// file (FILE.h5:/dataset; /data when no dataset is given), or raw binary for any other name. Each
// command reports the ratio and its speed on stderr. verify compresses and decompresses INPUT and
// checks the round trip (bit for bit, or every element within the bound, non-finite values bit for
// bit); it exits 1 when the check fails. With --backend cuda the codec runs on the GPU (same
// bytes); the speed reported is then the kernels' alone, without the copies to and from the host.
//
// Exit status: 0 done, 1 a verify that failed or a run failure, 2 bad input (the message names the
// file, dataset, field or value).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>

#include <CLI/CLI.hpp>

#include "codec/codec.hpp"
#include "core/error.hpp"
#include "core/memory_limit.hpp"
#include "core/thread_pool.hpp"
#include "exec/backend.hpp"
#include "io/array_file.hpp"

#ifdef LIVEDRP_HAVE_CUDA
#include "cuda/codec/device_codec.hpp"
#include "cuda/device.hpp"
#endif

using namespace livedrp;

namespace {

constexpr int kExitFailed = 1;
constexpr int kExitBadInput = 2;

using Clock = std::chrono::steady_clock;

struct Options {
  std::string codec = "lossless";
  double error_bound = 0;
  std::string backend = "cpu";
  std::uint32_t chunk_bytes = codec::kDefaultChunkBytes;
  std::string dtype, shape;
  unsigned threads = 0;
  std::string input, output;
};

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::string gbps(std::uint64_t bytes, double seconds) {
  std::ostringstream text;
  text << std::fixed << std::setprecision(2) << (seconds > 0 ? double(bytes) / seconds * 1e-9 : 0)
       << " GB/s";
  return text.str();
}

codec::DType dtype_of(const io::Array& array, const std::string& input) {
  if (array.type == io::ElementType::UInt16) return codec::DType::UInt16;
  if (array.type == io::ElementType::Float32) return codec::DType::Float32;
  throw InputError("input " + input + " holds " + std::string(io::to_string(array.type)) +
                   "; livedrp-codec compresses uint16 and float32 arrays");
}

io::ElementType element_type_of(codec::DType dtype) {
  return dtype == codec::DType::UInt16 ? io::ElementType::UInt16 : io::ElementType::Float32;
}

std::optional<io::RawLayout> raw_layout(const Options& o) {
  if (o.dtype.empty() && o.shape.empty()) return std::nullopt;
  if (o.dtype.empty() || o.shape.empty())
    throw InputError("raw input needs both --dtype and --shape");
  const auto type = io::element_type_from_name(o.dtype);
  if (!type) throw InputError("--dtype '" + o.dtype + "': expected uint16 or float32");
  return io::RawLayout{*type, io::parse_shape_text(o.shape)};
}

void require_cuda(const Options& o) {
  if (o.backend != "cuda") return;
  if (const auto reason = cuda_unavailable_reason())
    throw InputError("--backend cuda: no usable CUDA device (" + *reason +
                     "); use --backend cpu, which writes the same bytes");
}

codec::CodecParams params_of(const Options& o) {
  require_cuda(o);
  codec::CodecParams params;
  params.codec = o.codec == "lossy" ? codec::Codec::Lossy : codec::Codec::Lossless;
  params.error_bound = params.codec == codec::Codec::Lossy ? o.error_bound : 0.0;
  params.chunk_bytes = o.chunk_bytes;
  if (params.codec == codec::Codec::Lossy && !(o.error_bound > 0 && std::isfinite(o.error_bound)))
    throw InputError("--codec lossy needs --error-bound E, finite and > 0 (in the data's unit)");
  return params;
}

std::vector<std::uint8_t> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError("cannot open " + path);
  return std::vector<std::uint8_t>((std::istreambuf_iterator<char>(in)),
                                   std::istreambuf_iterator<char>());
}

void write_file(const std::string& path, const std::vector<std::uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
  if (!out) throw InputError("cannot write " + path);
}

io::ArrayFormat output_format(const io::ArrayLocation& where) {
  if (!where.dataset.empty()) return io::ArrayFormat::Hdf5;
  const std::string ext = where.file.extension().string();
  if (ext == ".npy") return io::ArrayFormat::Npy;
  if (ext == ".h5" || ext == ".hdf5" || ext == ".cxi" || ext == ".nxs")
    return io::ArrayFormat::Hdf5;
  return io::ArrayFormat::Raw;
}

void report(const char* what, const codec::StreamInfo& info, double seconds,
            const std::string& backend) {
  std::cerr << what << ": " << codec::to_string(info.codec) << " " << codec::to_string(info.dtype)
            << ", " << info.element_count << " elements, " << info.raw_bytes << " -> "
            << info.stream_bytes << " bytes, ratio " << std::fixed << std::setprecision(3)
            << info.ratio() << ", " << info.raw_chunks << " of " << info.chunk_count
            << " chunks stored raw, " << info.sparse_chunks << " sparse, "
            << gbps(info.raw_bytes, seconds) << (backend == "cuda" ? " (GPU kernels)" : " (CPU)")
            << "\n";
}

#ifdef LIVEDRP_HAVE_CUDA
// The GPU codec on a host array: upload, compress (timed on the device), download. The object is
// sized for this one array; a live pipeline keeps one per stream instead.
std::vector<std::uint8_t> compress_on_gpu(const io::Array& array, codec::DType dtype,
                                          const codec::CodecParams& params, double* seconds) {
  const std::uint64_t count = array.elements();
  const std::size_t bound =
      codec::compressed_bound(dtype, count, unsigned(array.shape.size()), params);
  gpu::DeviceCodec codec(count);
  gpu::Stream stream;
  gpu::DeviceBuffer in(std::max<std::size_t>(array.bytes.size(), 4)), out(bound);
  gpu::copy_async(in.get(), array.bytes.data(), array.bytes.size(), stream, "array to the GPU");
  gpu::Event start, stop;
  start.record(stream);
  codec.compress(in.get(), dtype, count, array.shape, params, out.get(), bound, stream);
  stop.record(stream);
  const std::uint64_t size = codec.compressed_size(stream);
  *seconds = stop.elapsed_ms_since(start) * 1e-3;
  std::vector<std::uint8_t> bytes(size);
  gpu::copy_async(bytes.data(), out.get(), size, stream, "stream to the host");
  stream.synchronize();
  return bytes;
}

codec::DecodedArray decompress_on_gpu(const std::vector<std::uint8_t>& bytes, double* seconds) {
  codec::DecodedArray decoded;
  decoded.info = codec::read_header(bytes.data(), bytes.size());
  const codec::StreamInfo& info = decoded.info;
  check_input_allocation(info.raw_bytes,
                         "a codec stream of " + std::to_string(info.element_count) + " elements");
  gpu::DeviceCodec codec(std::max<std::uint64_t>(info.element_count, 1));
  gpu::Stream stream;
  gpu::DeviceBuffer in(std::max<std::size_t>(bytes.size(), 4)),
      out(std::max<std::size_t>(info.raw_bytes, 4));
  gpu::copy_async(in.get(), bytes.data(), bytes.size(), stream, "stream to the GPU");
  gpu::Event start, stop;
  start.record(stream);
  codec.decompress(in.get(), bytes.size(), out.get(), info.raw_bytes, stream, info.dtype,
                   info.codec);
  stop.record(stream);
  codec.finish_decompress(stream);
  *seconds = stop.elapsed_ms_since(start) * 1e-3;
  decoded.bytes.resize(info.raw_bytes);
  gpu::copy_async(decoded.bytes.data(), out.get(), info.raw_bytes, stream, "array to the host");
  stream.synchronize();
  return decoded;
}
#else
std::vector<std::uint8_t> compress_on_gpu(const io::Array&, codec::DType, const codec::CodecParams&,
                                          double*) {
  throw InputError("--backend cuda: this build has no CUDA");
}
codec::DecodedArray decompress_on_gpu(const std::vector<std::uint8_t>&, double*) {
  throw InputError("--backend cuda: this build has no CUDA");
}
#endif

std::vector<std::uint8_t> compress_array(const Options& o, const io::Array& array,
                                         codec::DType dtype, const codec::CodecParams& params,
                                         ThreadPool& pool, double* seconds) {
  if (o.backend == "cuda") return compress_on_gpu(array, dtype, params, seconds);
  const auto start = Clock::now();
  auto bytes = codec::compress_cpu(array.bytes.data(), dtype, array.shape, params, &pool);
  *seconds = seconds_since(start);
  return bytes;
}

codec::DecodedArray decompress_stream(const Options& o, const std::vector<std::uint8_t>& bytes,
                                      ThreadPool& pool, double* seconds) {
  require_cuda(o);
  if (o.backend == "cuda") return decompress_on_gpu(bytes, seconds);
  const auto start = Clock::now();
  auto decoded = codec::decompress_cpu(bytes.data(), bytes.size(), &pool);
  *seconds = seconds_since(start);
  return decoded;
}

int compress(const Options& o, ThreadPool& pool) {
  const io::Array array = io::read_array(io::parse_array_location(o.input), raw_layout(o));
  const codec::CodecParams params = params_of(o);
  double seconds = 0;
  const auto bytes = compress_array(o, array, dtype_of(array, o.input), params, pool, &seconds);
  write_file(o.output, bytes);
  report("compressed", codec::read_header(bytes.data(), bytes.size()), seconds, o.backend);
  return 0;
}

int decompress(const Options& o, ThreadPool& pool) {
  const auto bytes = read_file(o.input);
  double seconds = 0;
  const codec::DecodedArray decoded = decompress_stream(o, bytes, pool, &seconds);
  io::Array array;
  array.type = element_type_of(decoded.info.dtype);
  array.shape = decoded.info.shape.empty() ? std::vector<std::uint64_t>{decoded.info.element_count}
                                           : decoded.info.shape;
  array.bytes = decoded.bytes;
  const io::ArrayLocation where = io::parse_array_location(o.output);
  io::write_array(where, output_format(where), array);
  report("decompressed", decoded.info, seconds, o.backend);
  return 0;
}

// Both NaN, or the same bits: a non-finite value must come back exactly.
bool same_bits(float a, float b) {
  std::uint32_t x, y;
  std::memcpy(&x, &a, 4);
  std::memcpy(&y, &b, 4);
  return x == y;
}

int verify(const Options& o, ThreadPool& pool) {
  const io::Array array = io::read_array(io::parse_array_location(o.input), raw_layout(o));
  const codec::CodecParams params = params_of(o);
  const codec::DType dtype = dtype_of(array, o.input);
  double compress_s = 0, decompress_s = 0;
  const auto bytes = compress_array(o, array, dtype, params, pool, &compress_s);
  const codec::DecodedArray decoded = decompress_stream(o, bytes, pool, &decompress_s);
  report("compressed", decoded.info, compress_s, o.backend);
  report("decompressed", decoded.info, decompress_s, o.backend);
  if (decoded.bytes.size() != array.bytes.size()) {
    std::cerr << "verify FAILED: " << decoded.bytes.size() << " bytes back for "
              << array.bytes.size() << "\n";
    return kExitFailed;
  }
  if (params.codec == codec::Codec::Lossless) {
    const auto mismatch =
        std::mismatch(array.bytes.begin(), array.bytes.end(), decoded.bytes.begin());
    if (mismatch.first != array.bytes.end()) {
      std::cerr << "verify FAILED: byte " << (mismatch.first - array.bytes.begin())
                << " differs after the round trip\n";
      return kExitFailed;
    }
    std::cerr << "verify passed: bit-exact\n";
    return 0;
  }
  const float* original = array.as<float>();
  const float* back = reinterpret_cast<const float*>(decoded.bytes.data());
  double worst = 0;
  std::uint64_t failures = 0, first_failure = 0;
  for (std::uint64_t i = 0; i < array.elements(); ++i) {
    bool ok;
    if (!std::isfinite(original[i])) {
      ok = same_bits(original[i], back[i]);
    } else {
      const double error = std::fabs(double(back[i]) - double(original[i]));
      worst = std::max(worst, error);
      ok = error <= params.error_bound;
    }
    if (!ok && failures++ == 0) first_failure = i;
  }
  if (failures > 0) {
    std::cerr << "verify FAILED: " << failures << " elements outside the bound "
              << params.error_bound << " (first at index " << first_failure << ": "
              << original[first_failure] << " -> " << back[first_failure] << ")\n";
    return kExitFailed;
  }
  std::cerr << "verify passed: max |error| " << worst << " <= bound " << params.error_bound << "\n";
  return 0;
}

void add_codec_options(CLI::App& command, Options& o) {
  command.add_option("--codec", o.codec, "lossless or lossy")
      ->check(CLI::IsMember({"lossless", "lossy"}))
      ->capture_default_str();
  command.add_option("--error-bound", o.error_bound,
                     "lossy: absolute bound in the data's unit (e.g. 0.5 photon)");
  command.add_option("--backend", o.backend, "cpu or cuda")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  command.add_option("--chunk-bytes", o.chunk_bytes, "input bytes per chunk (multiple of 128)")
      ->capture_default_str();
  command.add_option("--dtype", o.dtype, "raw input: uint16 or float32");
  command.add_option("--shape", o.shape, "raw input: extents, e.g. 16x352x384");
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"livedrp-codec: compress, decompress and verify arrays with livedrp's codecs"};
  app.set_version_flag("--version", std::string("livedrp-codec ") + LIVEDRP_VERSION);
  app.require_subcommand(1);
  Options o;
  app.add_option("--threads", o.threads, "CPU threads; 0 = all cores")->capture_default_str();
  CLI::App* compress_command = app.add_subcommand("compress", "compress INPUT into OUTPUT");
  add_codec_options(*compress_command, o);
  compress_command->add_option("INPUT", o.input, ".npy, FILE.h5:/dataset or raw")->required();
  compress_command->add_option("OUTPUT", o.output, "compressed stream")->required();
  CLI::App* decompress_command = app.add_subcommand("decompress", "decompress INPUT into OUTPUT");
  decompress_command->add_option("--backend", o.backend, "cpu or cuda")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  decompress_command->add_option("INPUT", o.input, "compressed stream")->required();
  decompress_command->add_option("OUTPUT", o.output, ".npy, FILE.h5:/dataset or raw")->required();
  CLI::App* verify_command = app.add_subcommand("verify", "check a round trip of INPUT");
  add_codec_options(*verify_command, o);
  verify_command->add_option("INPUT", o.input, ".npy, FILE.h5:/dataset or raw")->required();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : kExitBadInput;
  }
  try {
    ThreadPool pool(o.threads == 0 ? std::max(1u, std::thread::hardware_concurrency()) : o.threads);
    if (compress_command->parsed()) return compress(o, pool);
    if (decompress_command->parsed()) return decompress(o, pool);
    return verify(o, pool);
  } catch (const InputError& e) {
    std::cerr << "livedrp-codec: error: " << e.what() << "\n";
    return kExitBadInput;
  } catch (const RuntimeFault& e) {
    std::cerr << "livedrp-codec: failed: " << e.what() << "\n";
    return kExitFailed;
  } catch (const std::exception& e) {
    std::cerr << "livedrp-codec: failed: " << e.what() << "\n";
    return kExitFailed;
  }
}
