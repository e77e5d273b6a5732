// livedrp-bench peaks: peakfinder8 on ePix10ka2M frames with about 50 peaks.
//
// Frames: simulated hits (every event a hit, --peaks-per-hit Bragg peaks), calibrated on the CPU
// once and uploaded; the finder masks the ASICs the simulator runs in medium or low gain (their
// noise is several keV, so one radius bin cannot hold one threshold for both) and looks at the
// FH and AHL ASICs, as tests/test_peakfinder8_simulated.cpp does.
//
// GPU rows: one DevicePeakFinder8 per stream (siblings sharing the read-only tables, as the
// engine's), one frame per launch sequence, frames rotated over
// --distinct inputs, timed with CUDA events over --events frames after a warm-up. Floor: the
// bytes peakfinder8 must read per frame at least once (the image and the per-pixel radius bin and
// use flag: 4 + 4 + 1 bytes a pixel) over the device-to-device copy bandwidth measured here. The
// radial statistics read the image once per iteration (5), but a 8.65 MB frame stays in the
// H200's 50 MB L2 between iterations. Baseline: the CPU finder on one thread, same frames.
#include "bench_peaks.hpp"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <memory>
#include <sstream>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "bench_common.hpp"
#include "calib/calibrate_cpu.hpp"
#include "calib/calibration_math.hpp"
#include "core/error.hpp"
#include "core/thread_pool.hpp"
#include "peaks/peakfinder8.hpp"
#include "sim/simulator.hpp"
#ifdef LIVEDRP_HAVE_CUDA
#include "cuda/device.hpp"
#include "cuda/peaks/device_peakfinder8.hpp"
#endif

namespace livedrp::bench {

void add_peaks_options(CLI::App& command, PeaksBenchOptions& o) {
  command.add_option("--events", o.events, "timed frames per GPU row")
      ->check(CLI::Range(10, 10000000))
      ->capture_default_str();
  command.add_option("--distinct", o.distinct, "distinct simulated frames, rotated")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  command.add_option("--cpu-events", o.cpu_events, "frames of the CPU baseline row")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  command.add_option("--streams", o.streams, "CUDA streams of the GPU rows")
      ->delimiter(',')
      ->check(CLI::Range(1, 32))
      ->capture_default_str();
  command.add_option("--peaks-per-hit", o.peaks_per_hit, "simulated Bragg peaks per frame")
      ->check(CLI::Range(0, 10000))
      ->capture_default_str();
  add_common_options(command, o.seed, o.json_path, o.markdown_path);
}

int run_peaks(const PeaksBenchOptions& o) {
  ThreadPool pool;
  const DetectorDescription detector = find_detector("epix10ka2m");
  SimulatorConfig config;
  config.seed = o.seed;
  config.hit_fraction = 1.0;
  config.peaks_per_hit_min = o.peaks_per_hit;
  config.peaks_per_hit_max = o.peaks_per_hit;
  const DetectorSimulator simulator(detector, config, &pool);
  std::vector<std::uint8_t> bad(detector.pixels());
  std::size_t looked_at = 0;
  for (std::size_t p = 0; p < bad.size(); ++p) {
    const int gain_config = simulator.constants().pixel_status[p] & calib::kStatusConfigBits;
    bad[p] = simulator.constants().masked(p) || !(gain_config == 0 || gain_config == 3) ? 1 : 0;
    looked_at += bad[p] ? 0 : 1;
  }
  peaks::PeakFinderParams params;
  params.adc_threshold = 20.0f;
  params.min_pixel_count = 3;
  peaks::PeakFinder8 cpu(peaks::slab_layout(detector),
                         peaks::radius_map(detector, simulator.powder_geometry().beam_x_px,
                                           simulator.powder_geometry().beam_y_px),
                         bad, params);

  std::vector<std::vector<float>> frames;
  std::vector<std::uint8_t> raw(detector.raw_event_bytes());
  for (int i = 0; i < o.distinct; ++i) {
    simulator.generate(std::uint64_t(i), raw.data(), nullptr, &pool);
    frames.emplace_back(detector.pixels());
    calibrate_event_cpu(detector, simulator.constants(), {}, raw.data(), frames.back().data(),
                        &pool);
  }
  const double pixels = double(detector.pixels());
  const double floor_bytes = pixels * (4 + 4 + 1);

  nlohmann::json rows = nlohmann::json::array();
  std::ostringstream table;
  table << "| backend | streams | events/s | Gpixel/s | of floor | peaks/frame | x CPU |\n"
        << "|---|---|---|---|---|---|---|\n";

  // CPU baseline: one thread.
  double peaks_per_frame = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < o.cpu_events; ++i)
    peaks_per_frame += cpu.find(frames[std::size_t(i % o.distinct)].data()).found;
  const double cpu_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double cpu_rate = o.cpu_events / cpu_seconds;
  peaks_per_frame /= o.cpu_events;
  std::cout << "cpu, 1 thread: " << cpu_rate << " frames/s, " << peaks_per_frame
            << " peaks/frame\n";
  table << "| cpu, 1 thread | - | " << std::fixed << std::setprecision(1) << cpu_rate << " | "
        << std::setprecision(3) << cpu_rate * pixels * 1e-9 << " | - | " << std::setprecision(1)
        << peaks_per_frame << " | 1.00 |\n";
  rows.push_back({{"backend", "cpu"},
                  {"threads", 1},
                  {"events_per_s", cpu_rate},
                  {"peaks_per_frame", peaks_per_frame}});

  // The CPU backend's way: the radial statistics' bins shared by the pool's threads (the seed
  // search stays on one). The same lists, or the row fails.
  const auto pooled_start = std::chrono::steady_clock::now();
  double pooled_peaks = 0;
  for (int i = 0; i < o.cpu_events; ++i)
    pooled_peaks += cpu.find(frames[std::size_t(i % o.distinct)].data(), &pool).found;
  const double pooled_rate =
      o.cpu_events /
      std::chrono::duration<double>(std::chrono::steady_clock::now() - pooled_start).count();
  if (pooled_peaks / o.cpu_events != peaks_per_frame)
    throw RuntimeFault("peakfinder8 on the thread pool found other peaks than on one thread");
  std::cout << "cpu, " << pool.size() << " threads: " << pooled_rate << " frames/s\n";
  table << "| cpu, " << pool.size() << " threads | - | " << std::fixed << std::setprecision(1)
        << pooled_rate << " | " << std::setprecision(3) << pooled_rate * pixels * 1e-9 << " | - | "
        << std::setprecision(1) << peaks_per_frame << " | " << std::setprecision(2)
        << pooled_rate / cpu_rate << " |\n";
  rows.push_back({{"backend", "cpu"},
                  {"threads", pool.size()},
                  {"events_per_s", pooled_rate},
                  {"peaks_per_frame", peaks_per_frame}});

  std::string device_line = "device: none (CPU row only)";
  std::ostringstream breakdown;
  double copy_gbps = 0;
#ifdef LIVEDRP_HAVE_CUDA
  if (cuda_ready("peaks")) {
    copy_gbps = device_copy_gbps(std::size_t(1) << 30, 9);
    device_line = "device: " + gpu::device_properties().name + ", device-to-device copy " +
                  std::to_string(int(copy_gbps)) + " GB/s";
    std::cout << device_line << "\n";
    std::vector<gpu::DeviceBuffer> device_frames;
    for (const auto& frame : frames) {
      device_frames.emplace_back(frame.size() * sizeof(float));
      gpu::Stream upload;
      gpu::copy_async(device_frames.back().get(), frame.data(), frame.size() * sizeof(float),
                      upload, "frame to the device");
      upload.synchronize();
    }
    for (const int stream_count : o.streams) {
      std::vector<std::unique_ptr<gpu::Stream>> streams;
      std::vector<std::unique_ptr<gpu::DevicePeakFinder8>> finders;
      for (int s = 0; s < stream_count; ++s) {
        streams.push_back(std::make_unique<gpu::Stream>());
        finders.push_back(s == 0 ? std::make_unique<gpu::DevicePeakFinder8>(cpu)
                                 : finders.front()->sibling());
      }
      // Warm-up, and a check that the GPU finds what the CPU finds on frame 0.
      finders[0]->enqueue(device_frames[0].as<const float>(), *streams[0]);
      const peaks::PeakList gpu_list = finders[0]->collect(*streams[0]);
      const peaks::PeakList cpu_list = cpu.find(frames[0].data());
      if (gpu_list.found != cpu_list.found)
        throw RuntimeFault("peaks bench: the GPU found " + std::to_string(gpu_list.found) +
                           " peaks on frame 0, the CPU " + std::to_string(cpu_list.found));
      gpu::Event begin, end;
      begin.record(*streams[0]);
      for (int s = 1; s < stream_count; ++s) streams[std::size_t(s)]->wait(begin.get());
      for (int i = 0; i < o.events; ++i) {
        const std::size_t s = std::size_t(i % stream_count);
        finders[s]->enqueue(device_frames[std::size_t(i % o.distinct)].as<const float>(),
                            *streams[s]);
      }
      std::vector<std::unique_ptr<gpu::Event>> done;
      for (int s = 1; s < stream_count; ++s) {
        done.push_back(std::make_unique<gpu::Event>(false));
        done.back()->record(*streams[std::size_t(s)]);
        streams[0]->wait(done.back()->get());
      }
      end.record(*streams[0]);
      end.synchronize();
      const double seconds = end.elapsed_ms_since(begin) * 1e-3;
      const double rate = o.events / seconds;
      const double of_floor = rate * floor_bytes / (copy_gbps * 1e9);
      std::cout << "gpu, " << stream_count << " streams: " << rate << " frames/s\n";
      table << "| gpu | " << stream_count << " | " << std::fixed << std::setprecision(1) << rate
            << " | " << std::setprecision(1) << rate * pixels * 1e-9 << " | "
            << std::setprecision(3) << of_floor << " | " << std::setprecision(1) << peaks_per_frame
            << " | " << std::setprecision(1) << rate / cpu_rate << " |\n";
      rows.push_back({{"backend", "cuda"},
                      {"streams", stream_count},
                      {"events_per_s", rate},
                      {"gpixel_per_s", rate * pixels * 1e-9},
                      {"of_floor", of_floor},
                      {"x_cpu", rate / cpu_rate}});
    }
    // Where a frame's GPU time goes: each kernel alone, one stream, frame 0.
    {
      gpu::Stream stream;
      gpu::DevicePeakFinder8 finder(cpu);
      const auto times = finder.time_kernels(device_frames[0].as<const float>(), stream, 200);
      const double total = times.statistics_us + times.search_us + times.gather_us;
      breakdown << "\n| kernel (1 stream, frame 0, 200 launches each) | us/frame | share |\n"
                << "|---|---:|---:|\n";
      const std::pair<const char*, double> kernels[] = {
          {"radial statistics and threshold flags", times.statistics_us},
          {"seed search (timed after a statistics launch, its time taken off)", times.search_us},
          {"gather", times.gather_us}};
      for (const auto& [name, us] : kernels)
        breakdown << "| " << name << " | " << std::fixed << std::setprecision(2) << us << " | "
                  << std::setprecision(3) << us / total << " |\n";
      breakdown << "| all three | " << std::setprecision(2) << total << " | 1.000 |\n";
      rows.push_back({{"kernel_breakdown_us",
                       {{"statistics", times.statistics_us},
                        {"search", times.search_us},
                        {"gather", times.gather_us}}}});
    }
  }
#endif

  std::ostringstream markdown;
  markdown << "## livedrp-bench peaks: epix10ka2m\n\n- " << device_line
           << "\n- frames: simulated hits with " << o.peaks_per_hit << " Bragg peaks each, "
           << o.distinct << " distinct, calibrated on the CPU; the finder looks at " << looked_at
           << " of " << detector.pixels()
           << " pixels (FH and AHL ASICs, not masked); adc_threshold 20 keV, minimum_snr 5, "
              "min_pixel_count 3, 5 iterations\n- floor: 9 bytes a pixel (image, radius bin, "
              "use flag) read once, at the copy bandwidth\n\n"
           << table.str() << breakdown.str();
  std::cout << "\n" << markdown.str();
  if (!o.markdown_path.empty()) std::ofstream(o.markdown_path) << markdown.str();
  if (!o.json_path.empty())
    std::ofstream(o.json_path) << nlohmann::json{
        {"benchmark", "peaks"},
        {"detector", "epix10ka2m"},
        {"copy_gbps", copy_gbps},
        {"rows", rows}}.dump(2);
  return 0;
}

}  // namespace livedrp::bench
