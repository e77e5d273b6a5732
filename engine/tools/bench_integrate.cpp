// livedrp-bench integrate: azimuthal integration of ePix10ka2M frames (16 x 352 x 384 float32) to
// 1000 bins in q (nm^-1).
//
// Frames: simulated events (powder rings, Bragg peaks on some), calibrated on the CPU once and
// uploaded. Geometry: PONI at the simulator's beam centre (the middle of the detector), 100 mm,
// 100 um pixels, 9.5 keV; solid angle and polarisation (0.99) corrections, the simulator's bad
// pixels masked; Poisson error model.
//
// GPU rows, each timed with CUDA events over --events frames after a warm-up, frames rotated over
// --distinct inputs, one integrator per stream:
//   csr          DeviceIntegrator, no splitting, one frame per launch, over 1 and 4 streams
//                (a block per bin, the image gathered)
//   csr pixel-major  the same with the pixel-major kernels (the image read once, a tile per
//                block, then a warp per bin), one frame per launch; the same with a host thread
//                per stream enqueueing (the host's per-launch cost split over threads, as lanes
//                of an engine would); batched (--batch frames per launch); and in CUDA graphs of
//                8 single-frame launches
//   csr batched  the default kernel, --batch frames per launch
//   atomic histogram  the plain way: per-pixel bin + normalisation, atomics
//                (DeviceHistogramIntegrator)
//   csr bbox     bounding-box splitting (about 2 entries a pixel)
//   sigma clip   DeviceIntegrator::enqueue_sigma_clip, 5 iterations at 3 sigma
// Each GPU row first integrates frame 0 and is compared with the CPU's profile (worst relative
// difference over every bin and value, reported; above 1e-5 the run fails).
// Floor: the bytes a row must read per frame (the image and its per-entry or per-pixel tables:
// DeviceIntegrator::bytes_read_per_frame) over the device-to-device copy bandwidth measured in
// this run; "of floor" is the row's rate over that. Image GB/s counts the 4 bytes a pixel of the
// frame only, the figure to hold against the 50 GB/s the DRP asks for.
// CPU row: Integrator::integrate over every host thread, frames/s.
// --only TEXT runs only the GPU rows whose path contains TEXT (for profiling and A/B runs).
#include "bench_integrate.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <functional>
#include <iomanip>
#include <iostream>
#include <memory>
#include <span>
#include <sstream>
#include <thread>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "bench_common.hpp"
#include "calib/calibrate_cpu.hpp"
#include "core/error.hpp"
#include "core/thread_pool.hpp"
#include "integrate/integrator.hpp"
#include "sim/simulator.hpp"
#ifdef LIVEDRP_HAVE_CUDA
#include "cuda/device.hpp"
#include "cuda/integrate/device_histogram.hpp"
#include "cuda/integrate/device_integrator.hpp"
#include "cuda/launch_graph.hpp"
#endif

namespace livedrp::bench {

namespace {

using integrate::Integrator;
using integrate::Profile;

#ifdef LIVEDRP_HAVE_CUDA
// Worst relative difference over every bin and reported value (NaN agrees with NaN).
double worst_difference(const Profile& a, const Profile& b) {
  const std::vector<double> Profile::*fields[] = {
      &Profile::intensity, &Profile::sigma,         &Profile::std,  &Profile::signal,
      &Profile::variance,  &Profile::normalization, &Profile::count};
  double worst = 0.0;
  for (const auto field : fields) {
    const std::vector<double>& x = a.*field;
    const std::vector<double>& y = b.*field;
    if (x.size() != y.size()) return INFINITY;
    for (std::size_t k = 0; k < x.size(); ++k) {
      if (std::isnan(x[k]) && std::isnan(y[k])) continue;
      if (x[k] == y[k]) continue;
      const double e =
          std::fabs(x[k] - y[k]) / std::max({std::fabs(x[k]), std::fabs(y[k]), 1e-300});
      if (!(e <= worst)) worst = e;
    }
  }
  return worst;
}

// Seconds between two events on stream 0 that every other stream joins, around what `enqueue`
// puts on the streams.
double timed_between_events(std::vector<std::unique_ptr<gpu::Stream>>& streams,
                            const std::function<void()>& enqueue) {
  gpu::Event begin, end;
  begin.record(*streams[0]);
  for (std::size_t s = 1; s < streams.size(); ++s) streams[s]->wait(begin.get());
  enqueue();
  std::vector<std::unique_ptr<gpu::Event>> done;
  for (std::size_t s = 1; s < streams.size(); ++s) {
    done.push_back(std::make_unique<gpu::Event>(false));
    done.back()->record(*streams[s]);
    streams[0]->wait(done.back()->get());
  }
  end.record(*streams[0]);
  end.synchronize();
  return end.elapsed_ms_since(begin) * 1e-3;
}

// `launches` launches round-robin over `streams` (launch(i, s)), from this thread.
double timed(std::vector<std::unique_ptr<gpu::Stream>>& streams, int launches,
             const std::function<void(int, std::size_t)>& launch) {
  return timed_between_events(streams, [&] {
    for (int i = 0; i < launches; ++i) launch(i, std::size_t(i) % streams.size());
  });
}

// As timed(), but stream s's launches (i = s, s + streams, ...) are enqueued by a host thread of
// its own, all threads at once.
double timed_threaded(std::vector<std::unique_ptr<gpu::Stream>>& streams, int launches,
                      const std::function<void(int, std::size_t)>& launch) {
  return timed_between_events(streams, [&] {
    std::vector<std::jthread> threads;
    for (std::size_t s = 0; s < streams.size(); ++s)
      threads.emplace_back([&, s] {
        for (int i = int(s); i < launches; i += int(streams.size())) launch(i, s);
      });
  });  // the threads are joined before the closing events are recorded
}
#endif

}  // namespace

void add_integrate_options(CLI::App& command, IntegrateBenchOptions& o) {
  command.add_option("--events", o.events, "timed frames per GPU row")
      ->check(CLI::Range(16, 10000000))
      ->capture_default_str();
  command.add_option("--distinct", o.distinct, "distinct simulated frames, rotated")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  command.add_option("--cpu-events", o.cpu_events, "frames of the CPU row")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  command.add_option("--streams", o.streams, "CUDA streams of the GPU rows")
      ->delimiter(',')
      ->check(CLI::Range(1, 16))
      ->capture_default_str();
  command.add_option("--batch", o.batch, "frames per launch of the batched rows (<= --distinct)")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  command.add_option("--bins", o.bins, "radial bins")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  command.add_option("--only", o.only,
                     "only the GPU rows whose path contains this text (e.g. \"pixel-major\"), "
                     "for profiling and A/B runs");
  add_common_options(command, o.seed, o.json_path, o.markdown_path);
}

int run_integrate(const IntegrateBenchOptions& o) {
  if (o.batch > o.distinct)
    throw InputError("--batch " + std::to_string(o.batch) + " is more than --distinct " +
                     std::to_string(o.distinct) + " frames");
  ThreadPool pool;
  const DetectorDescription detector = find_detector("epix10ka2m");
  SimulatorConfig sim_config;
  sim_config.seed = o.seed;
  const DetectorSimulator simulator(detector, sim_config, &pool);
  const integrate::PixelLayout layout = integrate::layout_from_detector(detector);
  const std::size_t pixels = layout.pixels();

  integrate::PoniGeometry poni;
  poni.distance = 0.100;
  poni.pixel1 = poni.pixel2 = 100e-6;
  poni.poni1 = simulator.powder_geometry().beam_y_px * poni.pixel1;
  poni.poni2 = simulator.powder_geometry().beam_x_px * poni.pixel2;
  poni.wavelength = 12.398419843320026e-10 / sim_config.photon_energy_kev;
  integrate::IntegrationConfig config;
  config.unit = integrate::RadialUnit::QNm;
  config.bins = o.bins;
  config.polarization = 0.99;
  std::vector<std::uint8_t> mask(pixels);
  std::size_t masked = 0;
  for (std::size_t p = 0; p < pixels; ++p) {
    mask[p] = simulator.constants().masked(p) ? 1 : 0;
    masked += mask[p];
  }
  Integrator cpu(poni, layout, config);
  cpu.set_mask(mask);
  cpu.set_thread_pool(&pool);
  integrate::IntegrationConfig bbox_config = config;
  bbox_config.splitting = integrate::Splitting::BBox;
  Integrator cpu_bbox(poni, layout, bbox_config);
  cpu_bbox.set_mask(mask);
  cpu_bbox.set_thread_pool(&pool);

  std::vector<float> frames(std::size_t(o.distinct) * pixels);
  std::vector<std::uint8_t> raw(detector.raw_event_bytes());
  for (int i = 0; i < o.distinct; ++i) {
    simulator.generate(std::uint64_t(i), raw.data(), nullptr, &pool);
    calibrate_event_cpu(detector, simulator.constants(), {}, raw.data(),
                        frames.data() + std::size_t(i) * pixels, &pool);
  }
  const auto frame_span = [&](int i) {
    return std::span<const float>(frames.data() + std::size_t(i % o.distinct) * pixels, pixels);
  };
  const double image_bytes = double(pixels) * sizeof(float);

  nlohmann::json rows = nlohmann::json::array();
  std::ostringstream table;
  table << "| path | streams | frames/launch | frames/s | image GB/s | bytes read/frame | of floor "
           "| vs CPU |\n"
        << "|---|---|---|---|---|---|---|---|\n";

  // CPU row (builds the matrices on the way, outside the timing).
  const Profile cpu_frame0 = cpu.integrate(frame_span(0));
  const Profile cpu_bbox_frame0 = cpu_bbox.integrate(frame_span(0));
  const Integrator::SigmaClip clip{5, 3.0};
  const Profile cpu_clip_frame0 = cpu.sigma_clip(frame_span(0), clip);
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < o.cpu_events; ++i) cpu.integrate(frame_span(i));
  const double cpu_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double cpu_rate = o.cpu_events / cpu_seconds;
  std::cout << "cpu, " << pool.size() << " threads: " << cpu_rate << " frames/s\n";
  table << "| cpu, " << pool.size() << " threads | - | 1 | " << std::fixed << std::setprecision(1)
        << cpu_rate << " | " << std::setprecision(2) << cpu_rate * image_bytes * 1e-9
        << " | - | - | - |\n";
  rows.push_back({{"path", "cpu"},
                  {"threads", pool.size()},
                  {"frames_per_s", cpu_rate},
                  {"image_gbps", cpu_rate * image_bytes * 1e-9}});

  std::string device_line = "device: none (CPU row only)";
  std::vector<std::string> failed_rows;  // rows whose profile differed from the CPU's
  double copy_gbps = 0;
#ifdef LIVEDRP_HAVE_CUDA
  if (cuda_ready("integrate")) {
    copy_gbps = device_copy_gbps(std::size_t(1) << 30, 9);
    device_line = "device: " + gpu::device_properties().name + ", device-to-device copy " +
                  std::to_string(int(copy_gbps)) + " GB/s";
    std::cout << device_line << "\n";
    gpu::DeviceBuffer device_frames(frames.size() * sizeof(float));
    {
      gpu::Stream upload;
      gpu::copy_async(device_frames.get(), frames.data(), frames.size() * sizeof(float), upload,
                      "frames to the device");
      upload.synchronize();
    }
    const auto frame_on_device = [&](int i) {
      return device_frames.as<const float>() + std::size_t(i % o.distinct) * pixels;
    };
    const gpu::IntegrationPlan plan = gpu::plan_from(cpu);
    const gpu::IntegrationPlan bbox_plan = gpu::plan_from(cpu_bbox);
    {
      const double floor_bytes = double(gpu::DeviceIntegrator(plan).bytes_read_per_frame());
      const double floor_rate = copy_gbps * 1e9 / floor_bytes;
      table << "| floor (csr bytes at copy bandwidth) | - | - | " << std::setprecision(1)
            << floor_rate << " | " << std::setprecision(1) << floor_rate * image_bytes * 1e-9
            << " | " << std::setprecision(0) << floor_bytes << " | 1.000 | - |\n";
      rows.push_back({{"path", "floor"},
                      {"frames_per_s", floor_rate},
                      {"image_gbps", floor_rate * image_bytes * 1e-9},
                      {"bytes_read_per_frame", floor_bytes}});
    }

    // One row: `make(s)` builds stream s's integrator state and returns its launch function
    // (frame index -> enqueue on that stream) and its frame-0 check.
    struct Path {
      std::function<void(int, const gpu::Stream&)> launch;
      std::function<Profile(const gpu::Stream&)> first_profile;
    };
    std::vector<std::string> row_names;  // every GPU row's path, for --only's error
    int rows_run = 0;
    const auto row = [&](const std::string& name, int stream_count, int frames_per_launch,
                         double bytes_per_frame, const Profile& reference,
                         const std::function<Path(int)>& make, bool thread_per_stream = false) {
      if (std::find(row_names.begin(), row_names.end(), name) == row_names.end())
        row_names.push_back(name);
      if (name.find(o.only) == std::string::npos) return;
      ++rows_run;
      std::vector<std::unique_ptr<gpu::Stream>> streams;
      std::vector<Path> paths;
      for (int s = 0; s < stream_count; ++s) {
        streams.push_back(std::make_unique<gpu::Stream>());
        paths.push_back(make(s));
      }
      const double difference = worst_difference(paths[0].first_profile(*streams[0]), reference);
      if (!(difference <= 1e-5)) {
        // Not timed: a path that computes something else has no speed to report. The other rows
        // still run; the bench fails at the end.
        std::cerr << "integrate bench: " << name << " differs from the CPU on frame 0 by "
                  << difference << " relative (bound 1e-5)\n";
        table << "| " << name << " | " << stream_count << " | " << frames_per_launch
              << " | - | - | " << std::setprecision(0) << bytes_per_frame
              << " | - | **wrong**: " << std::scientific << std::setprecision(1) << difference
              << std::fixed << " |\n";
        rows.push_back({{"path", name},
                        {"streams", stream_count},
                        {"frames_per_launch", frames_per_launch},
                        {"max_relative_difference_vs_cpu", difference},
                        {"error", "differs from the CPU beyond 1e-5"}});
        failed_rows.push_back(name);
        return;
      }
      const int launches = std::max(1, o.events / frames_per_launch);
      const auto time = thread_per_stream ? timed_threaded : timed;
      time(streams, std::min(launches, 8 * stream_count),
           [&](int i, std::size_t s) { paths[s].launch(i, *streams[s]); });  // warm-up
      const double seconds =
          time(streams, launches, [&](int i, std::size_t s) { paths[s].launch(i, *streams[s]); });
      const double rate = double(launches) * frames_per_launch / seconds;
      const double of_floor = rate * bytes_per_frame / (copy_gbps * 1e9);
      std::cout << name << ", " << stream_count << " streams, " << frames_per_launch
                << " frames/launch: " << rate << " frames/s\n";
      table << "| " << name << " | " << stream_count << " | " << frames_per_launch << " | "
            << std::setprecision(1) << rate << " | " << std::setprecision(1)
            << rate * image_bytes * 1e-9 << " | " << std::setprecision(0) << bytes_per_frame
            << " | " << std::setprecision(3) << of_floor << " | " << std::scientific
            << std::setprecision(1) << difference << std::fixed << " |\n";
      rows.push_back({{"path", name},
                      {"streams", stream_count},
                      {"frames_per_launch", frames_per_launch},
                      {"frames_per_s", rate},
                      {"image_gbps", rate * image_bytes * 1e-9},
                      {"bytes_read_per_frame", bytes_per_frame},
                      {"of_floor", of_floor},
                      {"max_relative_difference_vs_cpu", difference}});
    };

    std::vector<std::unique_ptr<gpu::DeviceIntegrator>> keep;
    const auto csr_path = [&](const gpu::IntegrationPlan& p, int batch,
                              gpu::IntegrationKernel kernel = gpu::IntegrationKernel::BinMajor) {
      return [&, batch, kernel, source = &p](int) {
        keep.push_back(std::make_unique<gpu::DeviceIntegrator>(*source, batch, kernel));
        if (keep.back()->kernel() != kernel)
          throw RuntimeFault("integrate bench: the plan does not allow the kernel asked for");
        gpu::DeviceIntegrator* d = keep.back().get();
        Path path;
        if (batch == 1) {
          path.launch = [&, d](int i, const gpu::Stream& s) { d->enqueue(frame_on_device(i), s); };
        } else {
          // Batches of consecutive frames, starting points rotated over the distinct frames.
          const int starts = o.distinct - batch + 1;
          path.launch = [&, d, batch, starts](int i, const gpu::Stream& s) {
            d->enqueue_batch(frame_on_device(i % starts), batch, s);
          };
        }
        path.first_profile = [&, d](const gpu::Stream& s) {
          d->enqueue(frame_on_device(0), s);
          return d->collect(s);
        };
        return path;
      };
    };
    const double csr_bytes = double(gpu::DeviceIntegrator(plan).bytes_read_per_frame());
    const double bbox_bytes = double(gpu::DeviceIntegrator(bbox_plan).bytes_read_per_frame());
    const double pixel_major_bytes = double(
        gpu::DeviceIntegrator(plan, 1, gpu::IntegrationKernel::PixelMajor).bytes_read_per_frame());
    {
      const double floor_rate = copy_gbps * 1e9 / pixel_major_bytes;
      table << "| floor (pixel-major bytes at copy bandwidth) | - | - | " << std::setprecision(1)
            << floor_rate << " | " << std::setprecision(1) << floor_rate * image_bytes * 1e-9
            << " | " << std::setprecision(0) << pixel_major_bytes << " | 1.000 | - |\n";
      rows.push_back({{"path", "floor, pixel-major"},
                      {"frames_per_s", floor_rate},
                      {"image_gbps", floor_rate * image_bytes * 1e-9},
                      {"bytes_read_per_frame", pixel_major_bytes}});
    }
    for (const int streams : o.streams)
      row("csr", streams, 1, csr_bytes, cpu_frame0, csr_path(plan, 1));
    for (const int streams : o.streams)
      row("csr pixel-major", streams, 1, pixel_major_bytes, cpu_frame0,
          csr_path(plan, 1, gpu::IntegrationKernel::PixelMajor));
    for (const int streams : o.streams)
      if (streams > 1)
        row("csr pixel-major, a host thread per stream", streams, 1, pixel_major_bytes, cpu_frame0,
            csr_path(plan, 1, gpu::IntegrationKernel::PixelMajor), true);
    if (o.batch > 1)
      for (const int streams : o.streams)
        row("csr pixel-major batched", streams, o.batch, pixel_major_bytes, cpu_frame0,
            csr_path(plan, o.batch, gpu::IntegrationKernel::PixelMajor));
    // The same single-event launches (kernel and copy back per event), kGraphEvents of them
    // captured once per stream as a CUDA graph and replayed, as the engine's graph lanes launch:
    // the host's per-launch cost is paid once per graph.
    static constexpr int kGraphEvents = 8;
    std::vector<std::unique_ptr<gpu::LaunchGraph>> graphs;
    for (const int streams : o.streams)
      row("csr pixel-major, graphs of " + std::to_string(kGraphEvents) + " launches", streams, 1,
          pixel_major_bytes, cpu_frame0, [&](int) {
            keep.push_back(std::make_unique<gpu::DeviceIntegrator>(
                plan, 1, gpu::IntegrationKernel::PixelMajor));
            gpu::DeviceIntegrator* d = keep.back().get();
            const gpu::Stream capture;
            graphs.push_back(std::make_unique<gpu::LaunchGraph>(
                capture, std::vector<gpu::GraphCopy>{}, [&, d](const gpu::Stream& s) {
                  for (int k = 0; k < kGraphEvents; ++k) d->enqueue(frame_on_device(k), s);
                }));
            gpu::LaunchGraph* g = graphs.back().get();
            Path path;
            // Called once per event; every kGraphEvents-th call replays the graph.
            path.launch = [g, calls = std::make_shared<int>(0)](int, const gpu::Stream& s) {
              if (++*calls % kGraphEvents == 0) g->launch(s);
            };
            path.first_profile = [&, d](const gpu::Stream& s) {
              d->enqueue(frame_on_device(0), s);
              return d->collect(s);
            };
            return path;
          });
    if (o.batch > 1)
      for (const int streams : o.streams)
        row("csr batched", streams, o.batch, csr_bytes, cpu_frame0, csr_path(plan, o.batch));

    std::vector<std::unique_ptr<gpu::DeviceHistogramIntegrator>> histograms;
    for (const int streams : o.streams)
      row("atomic histogram", streams, 1,
          double(gpu::DeviceHistogramIntegrator(plan).bytes_read_per_frame()), cpu_frame0,
          [&](int) {
            histograms.push_back(std::make_unique<gpu::DeviceHistogramIntegrator>(plan));
            gpu::DeviceHistogramIntegrator* h = histograms.back().get();
            Path path;
            path.launch = [&, h](int i, const gpu::Stream& s) {
              h->enqueue(frame_on_device(i), s);
            };
            path.first_profile = [&, h](const gpu::Stream& s) {
              h->enqueue(frame_on_device(0), s);
              return h->collect(s);
            };
            return path;
          });
    for (const int streams : o.streams)
      row("csr bbox", streams, 1, bbox_bytes, cpu_bbox_frame0, csr_path(bbox_plan, 1));
    for (const int streams : o.streams)
      row("csr sigma clip (5 x 3 sigma)", streams, 1, csr_bytes, cpu_clip_frame0, [&](int) {
        keep.push_back(std::make_unique<gpu::DeviceIntegrator>(plan));
        gpu::DeviceIntegrator* d = keep.back().get();
        Path path;
        path.launch = [&, d](int i, const gpu::Stream& s) {
          d->enqueue_sigma_clip(frame_on_device(i), clip, s);
        };
        path.first_profile = [&, d](const gpu::Stream& s) {
          d->enqueue_sigma_clip(frame_on_device(0), clip, s);
          return d->collect(s);
        };
        return path;
      });
    if (rows_run == 0) {
      std::string names;
      for (const std::string& n : row_names) names += (names.empty() ? "\"" : ", \"") + n + "\"";
      throw InputError("--only \"" + o.only + "\" matches no GPU row; the rows are: " + names);
    }
    std::cout << "matrix entries: " << plan.pixel.size() << " without splitting, "
              << bbox_plan.pixel.size() << " with bbox\n";
  }
#endif

  std::ostringstream markdown;
  markdown << "## livedrp-bench integrate: epix10ka2m, " << o.bins << " bins in q_nm^-1\n\n- "
           << device_line << "\n- frames: " << o.distinct
           << " simulated events calibrated on the CPU (float32, " << pixels << " pixels, "
           << masked
           << " masked); PONI at the beam centre, 100 mm, 100 um pixels, 9.5 keV; solid angle and "
              "polarisation 0.99; Poisson errors\n- image GB/s: 4 bytes a pixel of the frame; "
              "floor: the bytes a path reads per frame (image + per-entry tables) at the copy "
              "bandwidth; vs CPU: worst relative difference of any bin value on frame 0\n\n"
           << table.str();
  std::cout << "\n" << markdown.str();
  if (!o.markdown_path.empty()) std::ofstream(o.markdown_path) << markdown.str();
  if (!o.json_path.empty())
    std::ofstream(o.json_path)
        << nlohmann::json{{"benchmark", "integrate"}, {"detector", "epix10ka2m"}, {"bins", o.bins},
                          {"unit", "q_nm^-1"},        {"copy_gbps", copy_gbps},   {"rows", rows}}
               .dump(2);
  if (!failed_rows.empty()) {
    std::string names;
    for (const std::string& n : failed_rows) names += (names.empty() ? "" : ", ") + n;
    throw RuntimeFault("integrate bench: these rows differ from the CPU beyond 1e-5: " + names);
  }
  return 0;
}

}  // namespace livedrp::bench
