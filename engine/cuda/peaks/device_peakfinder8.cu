// Compiled with --fmad=false (engine/CMakeLists.txt): peaks/peak_search.hpp and
// peaks/radial_threshold.hpp must round exactly as the host, which compiles them without
// contraction.
#include "cuda/peaks/device_peakfinder8.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <string>

#include "core/error.hpp"
#include "peaks/peak_search.hpp"
#include "peaks/radial_threshold.hpp"

namespace livedrp::gpu {

using peaks::Asic;
using peaks::Peak;
using peaks::RadialBinStats;
using peaks::SearchView;

namespace {

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess)
    throw RuntimeFault(std::string(what) + ": " + cudaGetErrorString(status) + " (" +
                       cudaGetErrorName(status) + ")");
}

// The radial statistics, every iteration, and the candidate bitmap, in one launch: a bin's
// statistics depend on its own pixels only, so a block of kRadialLanes threads per bin runs all
// the iterations (its pixels stay in L1/L2 between them). Thread l sums the bin's entries l,
// l + kRadialLanes, ..., then the pairwise tree of radial_threshold.hpp, as the CPU does. Last,
// every pixel of the bin above the final upper threshold sets its bit in the candidate bitmap
// (zeroed before): the seed test that does not depend on earlier peaks, so the search reads one
// bit per pixel.
__global__ void __launch_bounds__(peaks::kRadialLanes)
    radial_statistics_kernel(const float* __restrict__ data,
                             const std::uint32_t* __restrict__ bin_offsets,
                             const std::uint32_t* __restrict__ bin_pixels, RadialBinStats* stats,
                             int iterations, float minimum_snr, float adc_threshold,
                             std::uint32_t* bitmap) {
  constexpr int kLanes = peaks::kRadialLanes;
  __shared__ double lane_sum[kLanes], lane_squares[kLanes];
  __shared__ unsigned lane_count[kLanes];
  __shared__ RadialBinStats current;
  const int b = blockIdx.x, lane = threadIdx.x;
  const std::uint32_t first = bin_offsets[b], n = bin_offsets[b + 1] - first;
  if (lane == 0) current = RadialBinStats{};
  __syncthreads();
  for (int iteration = 0; iteration < iterations; ++iteration) {
    const RadialBinStats bin = current;
    double sum = 0, squares = 0;
    unsigned count = 0;
    for (std::uint32_t k = lane; k < n; k += kLanes) {
      const float value = data[bin_pixels[first + k]];
      if (!peaks::enters_radial_statistics(value, bin)) continue;
      sum += double(value);
      squares += double(value) * double(value);
      ++count;
    }
    lane_sum[lane] = sum;
    lane_squares[lane] = squares;
    lane_count[lane] = count;
    __syncthreads();
    for (int stride = kLanes / 2; stride > 0; stride /= 2) {
      if (lane < stride) {
        lane_sum[lane] += lane_sum[lane + stride];
        lane_squares[lane] += lane_squares[lane + stride];
        lane_count[lane] += lane_count[lane + stride];
      }
      __syncthreads();
    }
    if (lane == 0)
      current = peaks::finish_radial_bin(lane_sum[0], lane_squares[0], lane_count[0], minimum_snr,
                                         adc_threshold);
    __syncthreads();
  }
  const RadialBinStats final_bin = current;
  if (lane == 0) stats[b] = final_bin;
  for (std::uint32_t k = lane; k < n; k += kLanes) {
    const std::uint32_t p = bin_pixels[first + k];
    if (peaks::above_threshold(data[p], final_bin)) atomicOr(bitmap + p / 32, 1u << (p % 32));
  }
}

// A warp per ASIC. The candidate words of a run of rows' seed ranges (off the ASIC's border) are
// staged in shared memory by the whole warp at once, so their loads overlap; then a ballot marks
// the words holding candidates, and lane 0 takes their bits in raster order and runs the shared
// search from each one no earlier peak has claimed: the CPU's order exactly.
constexpr int kStagedWords = 4096;
__global__ void search_kernel(SearchView view, const Asic* __restrict__ asics, int largest_asic,
                              const std::uint32_t* __restrict__ bitmap, Peak* per_asic_peaks,
                              int* per_asic_found, int capacity) {
  __shared__ std::uint32_t staged[kStagedWords];
  const int a = blockIdx.x, lane = threadIdx.x;
  const Asic asic = asics[a];
  view.members += std::size_t(a) * std::size_t(largest_asic);
  const std::size_t width = std::size_t(view.width);
  const int first_row = asic.first_ss + 1, seed_rows = asic.height - 2;
  // Words a row's seed range can touch, whatever its alignment.
  const int row_words = asic.width > 2 ? (asic.width - 2 + 31) / 32 + 1 : 0;
  int found = 0;
  if (seed_rows > 0 && row_words > 0) {
    const int chunk_rows = kStagedWords / row_words > 0 ? kStagedWords / row_words : 1;
    auto range_of = [&](int row, std::size_t& begin, std::size_t& end) {
      begin = std::size_t(first_row + row) * width + std::size_t(asic.first_fs + 1);
      end = std::size_t(first_row + row) * width + std::size_t(asic.first_fs + asic.width - 1);
    };
    for (int chunk = 0; chunk < seed_rows; chunk += chunk_rows) {
      const int rows = seed_rows - chunk < chunk_rows ? seed_rows - chunk : chunk_rows;
      const int words = rows * row_words;
      for (int i = lane; i < words; i += 32) {
        std::size_t begin, end;
        range_of(chunk + i / row_words, begin, end);
        const std::size_t word = begin / 32 + std::size_t(i % row_words);
        std::uint32_t bits = 0;
        if (word * 32 < end) {
          bits = bitmap[word];
          if (word * 32 < begin) bits &= ~0u << (begin - word * 32);
          if (end - word * 32 < 32) bits &= (1u << (end - word * 32)) - 1u;
        }
        staged[i] = bits;
      }
      __syncwarp();
      for (int i0 = 0; i0 < words; i0 += 32) {
        const std::uint32_t bits = i0 + lane < words ? staged[i0 + lane] : 0u;
        unsigned flagged = __ballot_sync(0xffffffffu, bits != 0);
        while (flagged != 0) {
          const int source = __ffs(flagged) - 1;
          flagged &= flagged - 1;
          std::uint32_t word_bits = __shfl_sync(0xffffffffu, bits, source);
          if (lane == 0) {
            const int i = i0 + source;
            std::size_t begin, end;
            range_of(chunk + i / row_words, begin, end);
            const std::size_t word = begin / 32 + std::size_t(i % row_words);
            while (word_bits != 0) {
              const int bit = __ffs(word_bits) - 1;
              word_bits &= word_bits - 1;
              const std::size_t seed = word * 32 + std::size_t(bit);
              if (view.in_peak[seed] != 0) continue;
              Peak peak;
              if (!peaks::search_from_seed(view, asic, seed, peak)) continue;
              if (found < capacity)
                per_asic_peaks[std::size_t(a) * std::size_t(capacity) + found] = peak;
              ++found;
            }
          }
        }
      }
      __syncwarp();
    }
  }
  if (lane == 0) per_asic_found[a] = found;
}

// The ASICs' lists in ASIC order, cut at max_num_peaks, as the CPU appends them. One thread.
struct Summary {
  int found;
  int stored;
};
__global__ void gather_kernel(const Peak* per_asic_peaks, const int* per_asic_found, int asics,
                              int capacity, int max_num_peaks, Peak* out, Summary* summary) {
  if (threadIdx.x != 0) return;
  int found = 0, stored = 0;
  for (int a = 0; a < asics; ++a) {
    const int n = per_asic_found[a];
    for (int k = 0; k < n && k < capacity && stored < max_num_peaks; ++k)
      out[stored++] = per_asic_peaks[std::size_t(a) * std::size_t(capacity) + k];
    found += n;
  }
  summary->found = found;
  summary->stored = stored;
}

}  // namespace

struct DevicePeakFinder8::State {
  peaks::PeakFinderParams params;
  SearchView settings;
  int bins = 0, asics = 0, largest_asic = 0, capacity = 0;
  std::size_t pixels = 0;
  DeviceBuffer bin, good, bin_offsets, bin_pixels, asic_table, stats, in_peak, members;
  DeviceBuffer per_asic_peaks, per_asic_found, out, bitmap;
  PinnedBuffer host_out;  // Summary, then max_num_peaks peaks
};

DevicePeakFinder8::DevicePeakFinder8(const peaks::PeakFinder8& reference)
    : state_(std::make_unique<State>()) {
  State& s = *state_;
  use_device();
  s.params = reference.params();
  s.settings = reference.search_settings();
  s.pixels = reference.layout().pixels();
  s.bins = int(reference.radial_stats().size());
  s.asics = int(reference.layout().asics.size());
  for (const Asic& a : reference.layout().asics)
    s.largest_asic = std::max(s.largest_asic, a.height * a.width);
  s.capacity = s.params.max_num_peaks;
  if (s.asics == 0) throw InputError("device peak finder: the slab has no ASICs");

  auto upload = [](DeviceBuffer& target, const void* source, std::size_t bytes, const char* what) {
    target = DeviceBuffer(std::max<std::size_t>(bytes, 4));
    if (bytes > 0) check(cudaMemcpy(target.get(), source, bytes, cudaMemcpyHostToDevice), what);
  };
  upload(s.bin, reference.pixel_bins().data(), s.pixels * sizeof(std::int32_t),
         "cudaMemcpy(radius bins)");
  upload(s.good, reference.good_pixels().data(), s.pixels, "cudaMemcpy(good pixels)");
  upload(s.bin_offsets, reference.bin_offsets().data(),
         reference.bin_offsets().size() * sizeof(std::uint32_t), "cudaMemcpy(bin offsets)");
  upload(s.bin_pixels, reference.bin_pixels().data(),
         reference.bin_pixels().size() * sizeof(std::uint32_t), "cudaMemcpy(bin pixel lists)");
  upload(s.asic_table, reference.layout().asics.data(), std::size_t(s.asics) * sizeof(Asic),
         "cudaMemcpy(ASIC table)");
  s.stats = DeviceBuffer(std::size_t(s.bins) * sizeof(RadialBinStats));
  s.in_peak = DeviceBuffer(s.pixels);
  s.members = DeviceBuffer(std::size_t(s.asics) * std::size_t(s.largest_asic) * sizeof(int));
  s.per_asic_peaks = DeviceBuffer(std::size_t(s.asics) * std::size_t(s.capacity) * sizeof(Peak));
  s.per_asic_found = DeviceBuffer(std::size_t(s.asics) * sizeof(int));
  s.out = DeviceBuffer(sizeof(Summary) + std::size_t(s.capacity) * sizeof(Peak));
  s.host_out = PinnedBuffer(s.out.bytes());
  s.bitmap = DeviceBuffer((s.pixels + 31) / 32 * sizeof(std::uint32_t));
  s.settings.bin = s.bin.as<const std::int32_t>();
  s.settings.good = s.good.as<const std::uint8_t>();
  s.settings.stats = s.stats.as<const RadialBinStats>();
  s.settings.in_peak = s.in_peak.as<std::uint8_t>();
  s.settings.members = s.members.as<std::int32_t>();
}

DevicePeakFinder8::~DevicePeakFinder8() = default;

void DevicePeakFinder8::enqueue(const float* device_data, const Stream& stream) {
  State& s = *state_;
  const cudaStream_t st = stream.get();
  check(cudaMemsetAsync(s.bitmap.get(), 0, s.bitmap.bytes(), st), "cudaMemsetAsync(seed bitmap)");
  radial_statistics_kernel<<<s.bins, peaks::kRadialLanes, 0, st>>>(
      device_data, s.bin_offsets.as<const std::uint32_t>(), s.bin_pixels.as<const std::uint32_t>(),
      s.stats.as<RadialBinStats>(), s.params.iterations, s.params.minimum_snr,
      s.params.adc_threshold, s.bitmap.as<std::uint32_t>());
  check_launch("radial_statistics_kernel");
  check(cudaMemsetAsync(s.in_peak.get(), 0, s.pixels, st), "cudaMemsetAsync(peak map)");
  SearchView view = s.settings;
  view.data = device_data;
  search_kernel<<<s.asics, 32, 0, st>>>(
      view, s.asic_table.as<const Asic>(), s.largest_asic, s.bitmap.as<const std::uint32_t>(),
      s.per_asic_peaks.as<Peak>(), s.per_asic_found.as<int>(), s.capacity);
  check_launch("search_kernel");
  Summary* summary = s.out.as<Summary>();
  Peak* out = reinterpret_cast<Peak*>(s.out.as<char>() + sizeof(Summary));
  gather_kernel<<<1, 32, 0, st>>>(s.per_asic_peaks.as<const Peak>(),
                                  s.per_asic_found.as<const int>(), s.asics, s.capacity,
                                  s.params.max_num_peaks, out, summary);
  check_launch("gather_kernel");
  copy_async(s.host_out.get(), s.out.get(), s.out.bytes(), stream, "peak list to the host");
}

peaks::PeakList DevicePeakFinder8::collect(const Stream& stream) {
  stream.synchronize();
  const State& s = *state_;
  const auto* summary = s.host_out.as<const Summary>();
  const auto* first = reinterpret_cast<const Peak*>(s.host_out.as<const char>() + sizeof(Summary));
  peaks::PeakList list;
  list.found = summary->found;
  list.peaks.assign(first, first + summary->stored);
  list.hit = list.found >= s.params.min_peaks_for_hit;
  return list;
}

std::vector<RadialBinStats> DevicePeakFinder8::radial_stats(const Stream& stream) const {
  std::vector<RadialBinStats> stats(std::size_t(state_->bins));
  copy_async(stats.data(), state_->stats.get(), stats.size() * sizeof(RadialBinStats), stream,
             "radial statistics to the host");
  stream.synchronize();
  return stats;
}

}  // namespace livedrp::gpu
