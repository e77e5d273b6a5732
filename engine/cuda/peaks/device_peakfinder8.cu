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
// statistics depend on its own pixels only, so one warp per bin (kRadialLanes = 32 lanes) runs all
// the iterations with no block barrier: lane l sums the bin's entries l, l + 32, ... (loaded
// kStatisticsBatch at a time, so their loads overlap; the bin's pixels stay in L1 between
// iterations), then the shuffle tree lane l += lane l + s of radial_threshold.hpp, as the CPU
// does. Last, every pixel of the bin above the final upper threshold sets its bit in the
// candidate bitmap (zeroed before): the seed test that does not depend on earlier peaks, so the
// search reads one bit per pixel.
static_assert(peaks::kRadialLanes == 32, "the statistics kernel runs a bin's lanes as one warp");
constexpr int kBinsPerBlock = 8;
constexpr int kStatisticsBatch = 8;

__global__ void __launch_bounds__(32 * kBinsPerBlock)
    radial_statistics_kernel(const float* __restrict__ data,
                             const std::uint32_t* __restrict__ bin_offsets,
                             const std::uint32_t* __restrict__ bin_pixels, RadialBinStats* stats,
                             int bins, int iterations, float minimum_snr, float adc_threshold,
                             std::uint32_t* bitmap) {
  const int lane = int(threadIdx.x % 32);
  const int b = int(blockIdx.x) * kBinsPerBlock + int(threadIdx.x / 32);
  if (b >= bins) return;  // the whole warp: nothing below synchronises across warps
  const std::uint32_t first = bin_offsets[b], n = bin_offsets[b + 1] - first;
  RadialBinStats bin{};
  for (int iteration = 0; iteration < iterations; ++iteration) {
    double sum = 0, squares = 0;
    unsigned count = 0;
    for (std::uint32_t base = std::uint32_t(lane); base < n; base += 32 * kStatisticsBatch) {
      float value[kStatisticsBatch];
#pragma unroll
      for (int j = 0; j < kStatisticsBatch; ++j) {
        const std::uint32_t k = base + std::uint32_t(j) * 32;
        value[j] = k < n ? __ldg(data + __ldg(bin_pixels + first + k)) : 0.0f;
      }
#pragma unroll
      for (int j = 0; j < kStatisticsBatch; ++j) {
        const std::uint32_t k = base + std::uint32_t(j) * 32;
        if (k >= n || !peaks::enters_radial_statistics(value[j], bin)) continue;
        sum += double(value[j]);
        squares += double(value[j]) * double(value[j]);
        ++count;
      }
    }
    for (int stride = 16; stride > 0; stride /= 2) {
      sum += __shfl_down_sync(0xffffffffu, sum, stride);
      squares += __shfl_down_sync(0xffffffffu, squares, stride);
      count += __shfl_down_sync(0xffffffffu, count, stride);
    }
    RadialBinStats next{};
    if (lane == 0) next = peaks::finish_radial_bin(sum, squares, count, minimum_snr, adc_threshold);
    bin.mean = __shfl_sync(0xffffffffu, next.mean, 0);
    bin.sigma = __shfl_sync(0xffffffffu, next.sigma, 0);
    bin.upper = __shfl_sync(0xffffffffu, next.upper, 0);
    bin.lower = __shfl_sync(0xffffffffu, next.lower, 0);
  }
  if (lane == 0) stats[b] = bin;
  for (std::uint32_t k = std::uint32_t(lane); k < n; k += 32) {
    const std::uint32_t p = bin_pixels[first + k];
    if (peaks::above_threshold(__ldg(data + p), bin)) atomicOr(bitmap + p / 32, 1u << (p % 32));
  }
}

// peaks::grow_peak with the warp: members are taken one at a time in the CPU's order, and lanes
// 0..8 test the member's 3 x 3 neighbourhood at once (lane 3 * (dss + 1) + dfs + 1, the CPU's
// loop order); the ballot appends the new members in lane order, so the member list, the claims
// and the centroid sums (lane 0 adds them in member order) are the CPU's.
__device__ peaks::GrownPeak grow_peak_warp(const SearchView& v, const Asic& asic, std::size_t seed,
                                           int lane) {
  const std::size_t width = std::size_t(v.width);
  const int ss_end = asic.first_ss + asic.height, fs_end = asic.first_fs + asic.width;
  peaks::GrownPeak g;
  if (lane == 0) {
    v.members[0] = std::int32_t(seed);
    v.in_peak[seed] = 1;
  }
  int count = 1;
  double sum_i = 0, sum_fs = 0, sum_ss = 0;
  for (int next = 0; next < count; ++next) {
    __syncwarp();  // the last member appended and its claims are visible
    const std::size_t p = std::size_t(v.members[next]);
    const int ss = int(p / width), fs = int(p % width);
    if (lane == 0) {
      const double above = double(v.data[p]) - double(v.stats[v.bin[p]].mean);
      sum_i += above;
      sum_fs += above * double(fs);
      sum_ss += above * double(ss);
    }
    bool joins = false;
    std::size_t n = 0;
    if (lane < 9) {
      const int nss = ss + lane / 3 - 1, nfs = fs + lane % 3 - 1;
      if (nss >= asic.first_ss && nss < ss_end && nfs >= asic.first_fs && nfs < fs_end) {
        n = std::size_t(nss) * width + std::size_t(nfs);
        joins = v.in_peak[n] == 0 && peaks::above_its_threshold(v, n);
      }
    }
    const unsigned joining = __ballot_sync(0xffffffffu, joins);
    if (joins) {
      v.in_peak[n] = 1;
      v.members[count + __popc(joining & ((1u << lane) - 1u))] = std::int32_t(n);
    }
    count += __popc(joining);
  }
  __syncwarp();
  g.count = count;
  if (count < v.min_pixel_count || count > v.max_pixel_count) return g;
  sum_i = __shfl_sync(0xffffffffu, sum_i, 0);
  sum_fs = __shfl_sync(0xffffffffu, sum_fs, 0);
  sum_ss = __shfl_sync(0xffffffffu, sum_ss, 0);
  if (fabs(sum_i) < 1e-10) return g;
  g.centre_ss = int(rint(sum_ss / fabs(sum_i)));
  g.centre_fs = int(rint(sum_fs / fabs(sum_i)));
  g.usable = true;
  return g;
}

// A warp per ASIC. The candidate words of a run of rows' seed ranges (off the ASIC's border) are
// staged in shared memory by the whole warp at once, so their loads overlap; then a ballot marks
// the words holding candidates, and the warp takes their bits in raster order and runs the shared
// search from each one no earlier peak has claimed (the CPU's order exactly): the warp grows the
// peak (grow_peak_warp), and the 32 lanes measure its background ring and re-integrate it, a
// share each, added in the butterfly order the CPU reproduces (peaks/peak_search.hpp).
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
          const int i = i0 + source;
          std::size_t begin, end;
          range_of(chunk + i / row_words, begin, end);
          const std::size_t word = begin / 32 + std::size_t(i % row_words);
          // Every lane walks the same seeds (word_bits is the same in all).
          while (word_bits != 0) {
            const int bit = __ffs(word_bits) - 1;
            word_bits &= word_bits - 1;
            const std::size_t seed = word * 32 + std::size_t(bit);
            __syncwarp();  // lane 0's claims of the last search are visible to every lane
            if (view.in_peak[seed] != 0) continue;
            __syncwarp();  // all lanes read the seed's flag before lane 0 claims pixels
            // Every lane returns the same result; the claims are visible to all lanes after it.
            const peaks::GrownPeak grown = grow_peak_warp(view, asic, seed, lane);
            if (!grown.usable) continue;
            peaks::RingSums ring = peaks::ring_lane(view, asic, grown, lane);
            for (int d = peaks::kRingLanes / 2; d > 0; d /= 2) {
              peaks::RingSums other;
              other.sum = __shfl_xor_sync(0xffffffffu, ring.sum, d);
              other.squares = __shfl_xor_sync(0xffffffffu, ring.squares, d);
              other.max = __shfl_xor_sync(0xffffffffu, ring.max, d);
              other.count = __shfl_xor_sync(0xffffffffu, ring.count, d);
              ring = peaks::combine_ring(ring, other);
            }
            const peaks::LocalBackground bg = peaks::local_background(view, asic, grown, ring);
            peaks::MemberSums sums = peaks::member_lane(view, grown, bg.mean, lane);
            for (int d = peaks::kRingLanes / 2; d > 0; d /= 2) {
              peaks::MemberSums other;
              other.intensity = __shfl_xor_sync(0xffffffffu, sums.intensity, d);
              other.raw_sum = __shfl_xor_sync(0xffffffffu, sums.raw_sum, d);
              other.raw_fs = __shfl_xor_sync(0xffffffffu, sums.raw_fs, d);
              other.raw_ss = __shfl_xor_sync(0xffffffffu, sums.raw_ss, d);
              other.peak_max = __shfl_xor_sync(0xffffffffu, sums.peak_max, d);
              sums = peaks::combine_members(sums, other);
            }
            // Every lane holds the same sums, so every lane takes the same decision.
            Peak peak;
            const int passed = peaks::finish_peak(view, asic, grown, ring, bg, sums, peak) ? 1 : 0;
            if (passed) {
              if (lane == 0 && found < capacity)
                per_asic_peaks[std::size_t(a) * std::size_t(capacity) + found] = peak;
              for (int k = lane; k < grown.count; k += 32) view.in_peak[view.members[k]] = 2;
            }
            found += passed;
          }
        }
      }
      __syncwarp();
    }
  }
  if (lane == 0) per_asic_found[a] = found;
}

// The ASICs' lists in ASIC order, cut at max_num_peaks, as the CPU appends them.
struct Summary {
  int found;
  int stored;
};
__global__ void gather_kernel(const Peak* per_asic_peaks, const int* per_asic_found, int asics,
                              int capacity, int max_num_peaks, Peak* out, Summary* summary) {
  // One warp, 32 ASICs at a time: lane a's list goes after the lists of the ASICs before it (a
  // prefix over the lanes), each lane copying its own ASIC's peaks.
  const int lane = int(threadIdx.x);
  int found = 0, stored = 0;
  for (int a0 = 0; a0 < asics; a0 += 32) {
    const int a = a0 + lane;
    const int n = a < asics ? per_asic_found[a] : 0;
    const int listed = n < capacity ? n : capacity;
    int before = listed;  // inclusive prefix, then made exclusive
    for (int d = 1; d < 32; d *= 2) {
      const int y = __shfl_up_sync(0xffffffffu, before, d);
      if (lane >= d) before += y;
    }
    const int total_listed = __shfl_sync(0xffffffffu, before, 31);
    before -= listed;
    for (int k = 0; k < listed && stored + before + k < max_num_peaks; ++k)
      out[stored + before + k] = per_asic_peaks[std::size_t(a) * std::size_t(capacity) + k];
    int found_here = n;
    for (int d = 16; d > 0; d /= 2) found_here += __shfl_xor_sync(0xffffffffu, found_here, d);
    found += found_here;
    stored = stored + total_listed < max_num_peaks ? stored + total_listed : max_num_peaks;
  }
  if (lane == 0) {
    summary->found = found;
    summary->stored = stored;
  }
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
  radial_statistics_kernel<<<(s.bins + kBinsPerBlock - 1) / kBinsPerBlock, 32 * kBinsPerBlock, 0,
                             st>>>(
      device_data, s.bin_offsets.as<const std::uint32_t>(), s.bin_pixels.as<const std::uint32_t>(),
      s.stats.as<RadialBinStats>(), s.bins, s.params.iterations, s.params.minimum_snr,
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
