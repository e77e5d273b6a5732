// Azimuthal integration on the GPU (cuda/integrate) against the CPU Integrator and pyFAI 0.21.3:
// every pyFAI reference case of tests/reference/pyfai (no splitting and bbox, every unit, ranges,
// corrections, mask, dark, flat, dummy, both error models, a stack of frames also integrated in
// one batched launch, the segmented detector, sigma clipping) within 1e-5 relative per bin of the
// CPU for intensity, sigma, std and the four sums, and within the CPU suite's bounds of pyFAI's
// own numbers. Then an ePix10ka2M-sized frame with 1000 bins (both splittings, both error models,
// dark, flat, mask, dummy pixels, sigma clipping), run twice for bit-identical repeats, and the
// benchmark's atomic-histogram baseline against the CPU. The device plan (bin centres, the
// entries left in the matrix) is checked against the CPU without a GPU too.
#include <QFile>
#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli_process.hpp"
#include "core/detector.hpp"
#include "core/error.hpp"
#include "cuda/integrate/device_integrator.hpp"
#include "gpu_test_support.hpp"
#include "integrate/array_values.hpp"
#include "integrate/integrator.hpp"
#include "integrate/poni.hpp"
#include "io/npy.hpp"
#include "pyfai_cases.hpp"
#ifdef LIVEDRP_HAVE_CUDA
#include "cuda/device.hpp"
#include "cuda/integrate/device_histogram.hpp"
#include "cuda/integrate/pixel_major.hpp"
#endif

using namespace livedrp;
using namespace livedrp::integrate;
using namespace livedrp::integrate::testing;

namespace {

nlohmann::json find_case(const QString& name) {
  for (const auto& c : load_cases())
    if (c["name"] == name.toStdString()) return c;
  return {};
}

// The reference cases are set up by pyfai_cases.hpp, as in tests/test_integrate_pyfai.cpp.

// |a - b| over the larger magnitude; both NaN agree; exact zeros (an empty bin) agree only with
// zero (below 1e-300 in magnitude).
double relative_error(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b) ? 0.0 : INFINITY;
  if (a == b) return 0.0;
  return std::fabs(a - b) / std::max({std::fabs(a), std::fabs(b), 1e-300});
}

#ifdef LIVEDRP_HAVE_CUDA
// Worst relative difference between two profiles over every bin and every reported value; the
// bin centres must be identical. `where` names the worst value.
double profile_difference(const Profile& gpu, const Profile& cpu, std::string& where) {
  if (gpu.radial != cpu.radial) {
    where = "bin centres differ";
    return INFINITY;
  }
  const std::vector<double> Profile::*fields[] = {
      &Profile::intensity, &Profile::sigma,         &Profile::std,  &Profile::signal,
      &Profile::variance,  &Profile::normalization, &Profile::count};
  const char* names[] = {"intensity", "sigma",         "std",  "signal",
                         "variance",  "normalization", "count"};
  double worst = 0.0;
  for (int f = 0; f < 7; ++f) {
    const std::vector<double>& a = gpu.*fields[f];
    const std::vector<double>& b = cpu.*fields[f];
    if (a.size() != b.size()) {
      where = std::string(names[f]) + " sizes differ";
      return INFINITY;
    }
    for (std::size_t k = 0; k < a.size(); ++k) {
      const double e = relative_error(a[k], b[k]);
      if (!(e <= worst)) {
        worst = e;
        where = std::string(names[f]) + " bin " + std::to_string(k) + ": gpu " +
                std::to_string(a[k]) + ", cpu " + std::to_string(b[k]);
      }
    }
  }
  return worst;
}

// Against pyFAI's columns (radial, intensity, sigma, signal, variance, normalisation, count) as
// tests/test_integrate_pyfai.cpp compares the CPU: counts exact without splitting, pyFAI's
// max(3, count) accepted for a clipped bin.
double pyfai_difference(const Profile& p, const double* ref, int bins, bool split, bool clipped) {
  double worst = 0.0;
  for (int b = 0; b < bins; ++b) {
    const double* row = ref + 7 * b;
    const auto i = std::size_t(b);
    if (clipped && p.count[i] > 0.0 && std::max(p.count[i], 3.0) == row[6]) {
    } else if (split) {
      worst = std::max(worst, relative_error(p.count[i], row[6]));
    } else if (p.count[i] != row[6]) {
      return INFINITY;
    }
    const double ours[] = {p.radial[i], p.intensity[i], p.sigma[i],
                           p.signal[i], p.variance[i],  p.normalization[i]};
    for (int k = 0; k < 6; ++k) {
      const double e = relative_error(ours[k], row[k]);
      if (!(e <= worst)) worst = e;
    }
  }
  return worst;
}

// An ePix10ka2M-sized problem: the detector's layout, a PONI near its middle at 100 mm, 1000 bins
// in q, frames of smooth rings plus a deterministic pseudo-random texture.
struct LargeCase {
  std::unique_ptr<Integrator> integrator;
  std::vector<float> frame;
};

LargeCase large_case(Splitting splitting, ErrorModel model, bool corrections) {
  const PixelLayout layout = layout_from_detector(find_detector("epix10ka2m"));
  const FrameExtent extent = assembled_extent(layout);
  PoniGeometry poni;
  poni.distance = 0.1;
  poni.pixel1 = poni.pixel2 = 100e-6;
  poni.poni1 = 0.5 * extent.rows * poni.pixel1 + 37e-6;
  poni.poni2 = 0.5 * extent.cols * poni.pixel2 - 52e-6;
  poni.rot1 = 0.01;
  poni.wavelength = 1.3e-10;
  IntegrationConfig config;
  config.bins = 1000;
  config.splitting = splitting;
  config.error_model = model;
  if (corrections) {
    config.polarization = 0.98;
    config.dummy = -1.0;
  }
  LargeCase c;
  c.integrator = std::make_unique<Integrator>(poni, layout, config);
  const std::size_t n = layout.pixels();
  c.frame.resize(n);
  std::uint64_t state = 0x9E3779B97F4A7C15ull;
  for (std::size_t k = 0; k < n; ++k) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    const double noise = double(state >> 40) / double(1ull << 24);
    c.frame[k] = float(50.0 + 40.0 * std::sin(double(k % 384) * 0.05) + 30.0 * noise);
  }
  if (corrections) {
    std::vector<std::uint8_t> mask(n, 0);
    std::vector<float> dark(n), flat(n);
    for (std::size_t k = 0; k < n; ++k) {
      mask[k] = k % 997 == 0 ? 1 : 0;
      dark[k] = float(k % 13) * 0.25f;
      flat[k] = 0.9f + float(k % 7) * 0.03f;
      if (k % 1009 == 0) c.frame[k] = -1.0f;     // dummy pixels in the event
      if (k % 50021 == 0) c.frame[k] = 5000.0f;  // outliers for the clipping
    }
    c.integrator->set_mask(std::move(mask));
    c.integrator->set_dark(std::move(dark));
    c.integrator->set_flat(std::move(flat));
  }
  return c;
}

#endif  // LIVEDRP_HAVE_CUDA

}  // namespace

class TestGpuIntegrate : public QObject {
  Q_OBJECT

 private slots:
  // No GPU needed: what the device is given stands for the CPU's matrix exactly.
  void plan_stands_for_the_cpu_state() {
    for (const auto& c : load_cases()) {
      Setup s = setup_case(c);
      const std::size_t pixels = s.integrator->pixels();
      const std::vector<float> frame = float_values(s.input, 0, pixels);
      const Profile cpu = s.integrator->integrate(frame);
      const gpu::IntegrationPlan plan = gpu::plan_from(*s.integrator);
      const std::string name = c["name"].get<std::string>();
      QVERIFY2(plan.radial == cpu.radial, name.c_str());
      QCOMPARE(plan.bins, c["npt"].get<int>());
      QCOMPARE(plan.row_start.size(), std::size_t(plan.bins) + 1);
      QCOMPARE(std::size_t(plan.row_start.back()), plan.pixel.size());
      // Every entry left out has a zero normalisation (or a dummy dark): it adds nothing.
      std::size_t contributing = 0;
      const CsrMatrix& csr = s.integrator->csr();
      const std::span<const float> norm = s.integrator->normalization();
      for (const std::int32_t k : csr.pixel) contributing += norm[std::size_t(k)] != 0.0f ? 1 : 0;
      QVERIFY2(plan.pixel.size() <= contributing, name.c_str());
      QVERIFY2(c.contains("dummy") || plan.pixel.size() == contributing, name.c_str());
      double entry_count = 0.0;
      for (int b = 0; b < plan.bins; ++b)
        for (std::int32_t e = plan.row_start[std::size_t(b)];
             e < plan.row_start[std::size_t(b) + 1]; ++e)
          entry_count += plan.split ? plan.coef[std::size_t(e)] : 1.0;
      double cpu_count = 0.0;
      for (const double v : cpu.count) cpu_count += v;
      // Counts of the CPU are over valid pixels of this event, a subset of the entries.
      QVERIFY2(cpu_count <= entry_count + 1e-3, name.c_str());
    }
  }

  // No GPU needed: the pixel-major path's tables (built on the host) hold every entry of the
  // plan once, in bin order inside each tile, with the segment heads, first entries and per-run
  // segment counts that the tile kernel relies on; and the order inside each run spreads a warp's
  // shared loads over the banks at least as well as pixel order would.
  void pixel_major_tables_hold_every_entry_once() {
#ifdef LIVEDRP_HAVE_CUDA
    namespace pm = gpu::pixel_major;
    int checked = 0;
    for (const auto& c : load_cases()) {
      Setup s = setup_case(c);
      const gpu::IntegrationPlan plan = gpu::plan_from(*s.integrator);
      pm::Tables t;
      if (!pm::build_tables(plan, t)) continue;  // splitting or azimuthal errors: not this path
      ++checked;
      const std::string name = c["name"].get<std::string>();
      std::vector<int> bin_of_pixel(plan.pixels, -1);
      for (int b = 0; b < plan.bins; ++b)
        for (std::int32_t e = plan.row_start[std::size_t(b)];
             e < plan.row_start[std::size_t(b) + 1]; ++e)
          bin_of_pixel[std::size_t(plan.pixel[std::size_t(e)])] = b;
      std::vector<int> seen(plan.pixels, 0);
      double spread_passes = 0, pixel_order_passes = 0;
      for (std::size_t tile = 0; tile < t.tiles; ++tile) {
        const std::size_t first = std::size_t(t.tile_entry_start[tile]);
        const std::size_t end = std::size_t(t.tile_entry_start[tile + 1]);
        QVERIFY2(first % pm::kEntriesPerThread == 0 && end % pm::kEntriesPerThread == 0,
                 name.c_str());
        const std::int32_t segment_first = t.tile_segment_start[tile];
        std::vector<int> bins(end - first, -1);
        std::vector<std::uint32_t> local(end - first, pm::kPaddingOffset / 4);
        int segment = -1, previous_bin = -1;
        for (std::size_t k = first; k < end; ++k) {
          const std::uint32_t word =
              k % 2 == 0 ? std::uint32_t(t.entry[k]) | std::uint32_t(t.entry[k + 1]) << 16
                         : std::uint32_t(t.entry[k - 1]) | std::uint32_t(t.entry[k]) << 16;
          const bool head = (word & (k % 2 == 0 ? pm::kEvenHead : pm::kOddHead)) != 0;
          const std::uint32_t offset = k % 2 == 0 ? word & pm::kOffsetMask : word >> 16;
          if ((k - first) % pm::kEntriesPerThread == 0)
            QCOMPARE(int(t.run_segment[k / pm::kEntriesPerThread]), segment + 1);
          if (pm::is_padding(offset)) {
            QVERIFY2(!head, name.c_str());
            continue;
          }
          const std::uint32_t in_tile = offset / 4;
          const std::size_t pixel = std::size_t(t.tile_origin[tile]) +
                                    in_tile / pm::kTileCols * std::size_t(t.row_pitch) +
                                    in_tile % pm::kTileCols;
          QVERIFY2(pixel < plan.pixels && bin_of_pixel[pixel] >= 0, name.c_str());
          ++seen[pixel];
          const int bin = bin_of_pixel[pixel];
          QVERIFY2(bin >= previous_bin, name.c_str());  // bin order inside the tile
          QCOMPARE(head, bin != previous_bin);
          if (head) {
            ++segment;
            QCOMPARE(t.segment_bin[std::size_t(segment_first + segment)], bin);
            QCOMPARE(std::size_t(t.segment_first_entry[std::size_t(segment_first + segment)]),
                     k - first);
          }
          previous_bin = bin;
          bins[k - first] = bin;
          local[k - first] = in_tile;
        }
        // Bank passes of each warp step, as stored and with each (bin, run) piece in pixel order.
        std::vector<std::uint32_t> sorted = local;
        for (std::size_t a = 0; a < sorted.size();) {
          std::size_t b = a + 1;
          while (b < sorted.size() && bins[b] == bins[a] && b % pm::kEntriesPerThread != 0) ++b;
          std::sort(sorted.begin() + std::ptrdiff_t(a), sorted.begin() + std::ptrdiff_t(b));
          a = b;
        }
        const auto passes = [&](const std::vector<std::uint32_t>& order) {
          double total = 0;
          for (std::size_t w = 0; w < order.size(); w += 32 * pm::kEntriesPerThread)
            for (int step = 0; step < pm::kEntriesPerThread; ++step) {
              std::vector<std::vector<std::uint32_t>> bank(32);
              for (std::size_t lane = 0; lane < 32; ++lane) {
                const std::size_t k = w + lane * pm::kEntriesPerThread + std::size_t(step);
                if (k >= order.size()) break;
                auto& words = bank[order[k] % 32];
                if (std::find(words.begin(), words.end(), order[k]) == words.end())
                  words.push_back(order[k]);
              }
              std::size_t most = 1;
              for (const auto& words : bank) most = std::max(most, words.size());
              total += double(most);
            }
          return total;
        };
        spread_passes += passes(local);
        pixel_order_passes += passes(sorted);
        // Segments without entries (empty bins) come after the tile's own.
        for (std::int32_t k = segment + 1;
             k < t.tile_segment_start[tile + 1] - t.tile_segment_start[tile]; ++k)
          QCOMPARE(t.segment_first_entry[std::size_t(segment_first + k)], pm::kNoEntries);
      }
      for (std::size_t p = 0; p < plan.pixels; ++p)
        QVERIFY2(seen[p] == (bin_of_pixel[p] >= 0 ? 1 : 0), name.c_str());
      QVERIFY2(spread_passes <= pixel_order_passes, name.c_str());
      // Slots: every segment has its own, inside its bin's range, and a bin's segments take
      // their slots in segment (tile) order; every bin has at least one.
      const std::size_t segments = t.segment_bin.size();
      QCOMPARE(t.segment_slot.size(), segments);
      QCOMPARE(t.bin_segment_start.size(), std::size_t(plan.bins) + 1);
      QCOMPARE(std::size_t(t.bin_segment_start.back()), segments);
      std::vector<int> slot_taken(segments, 0);
      std::vector<std::int32_t> next_slot(t.bin_segment_start.begin(),
                                          t.bin_segment_start.end() - 1);
      for (std::size_t k = 0; k < segments; ++k) {
        const int bin = t.segment_bin[k];
        const std::int32_t slot = t.segment_slot[k];
        QCOMPARE(slot, next_slot[std::size_t(bin)]++);
        ++slot_taken[std::size_t(slot)];
      }
      for (int b = 0; b < plan.bins; ++b) {
        QVERIFY2(t.bin_segment_start[std::size_t(b)] < t.bin_segment_start[std::size_t(b) + 1],
                 name.c_str());
        QCOMPARE(next_slot[std::size_t(b)], t.bin_segment_start[std::size_t(b) + 1]);
      }
      for (const int taken : slot_taken) QCOMPARE(taken, 1);
    }
    QVERIFY(checked > 0);
    qInfo("%d plans' pixel-major tables checked", checked);
#else
    QSKIP("built without CUDA: no pixel-major tables");
#endif
  }

  void gpu_equals_cpu_and_pyfai_data() {
    QTest::addColumn<QString>("name");
    for (const auto& c : load_cases())
      QTest::newRow(c["name"].get<std::string>().c_str())
          << QString::fromStdString(c["name"].get<std::string>());
  }

  void gpu_equals_cpu_and_pyfai() {
    LIVEDRP_SKIP_WITHOUT_GPU();
#ifdef LIVEDRP_HAVE_CUDA
    QFETCH(QString, name);
    const nlohmann::json c = find_case(name);
    Setup s = setup_case(c);
    const int bins = c["npt"].get<int>();
    const std::size_t pixels = s.integrator->pixels();
    const bool stack = s.reference.shape.size() == 3;
    const int frames = stack ? int(s.reference.shape[0]) : 1;
    const bool split = c.value("method", "no") == "bbox";
    const bool clipped = c.contains("sigma_clip");
    Integrator::SigmaClip clip;
    if (clipped) {
      clip.cutoff = c["sigma_clip"].at("cutoff").get<double>();
      clip.max_iter = c["sigma_clip"].at("max_iter").get<int>();
    }
    gpu::DeviceIntegrator device(*s.integrator, frames);
    gpu::Stream stream;
    const std::vector<float> all = float_values(s.input, 0, pixels * std::size_t(frames));
    gpu::DeviceBuffer on_device(all.size() * sizeof(float));
    gpu::copy_async(on_device.get(), all.data(), all.size() * sizeof(float), stream,
                    "test frames to the device");
    double worst_cpu = 0.0, worst_pyfai = 0.0;
    std::vector<Profile> cpu_profiles;
    for (int f = 0; f < frames; ++f) {
      const std::vector<float> frame(all.begin() + std::ptrdiff_t(std::size_t(f) * pixels),
                                     all.begin() + std::ptrdiff_t(std::size_t(f + 1) * pixels));
      cpu_profiles.push_back(clipped ? s.integrator->sigma_clip(frame, clip)
                                     : s.integrator->integrate(frame));
      const float* device_frame = on_device.as<const float>() + std::size_t(f) * pixels;
      if (clipped)
        device.enqueue_sigma_clip(device_frame, clip, stream);
      else
        device.enqueue(device_frame, stream);
      const Profile g = device.collect(stream);
      std::string where;
      const double e = profile_difference(g, cpu_profiles.back(), where);
      QVERIFY2(e <= 1e-5, qPrintable(QString("frame %1: %2 relative, %3")
                                         .arg(f)
                                         .arg(e)
                                         .arg(QString::fromStdString(where))));
      worst_cpu = std::max(worst_cpu, e);
      worst_pyfai = std::max(
          worst_pyfai, pyfai_difference(g, s.reference.as<double>() + std::size_t(f) * bins * 7,
                                        bins, split, clipped));
    }
    // The pixel-major kernels, where the case allows them, on the whole stack in one launch and
    // then frame by frame.
    if (!clipped && !split && c.value("error_model", "poisson") != "azimuthal") {
      for (const gpu::IntegrationKernel kernel : {gpu::IntegrationKernel::PixelMajor}) {
        const QString kernel_name = "pixel-major";
        gpu::DeviceIntegrator other(gpu::plan_from(*s.integrator), frames, kernel);
        QCOMPARE(int(other.kernel()), int(kernel));
        other.enqueue_batch(on_device.as<const float>(), frames, stream);
        for (int f = 0; f < frames; ++f) {
          std::string where;
          const double e =
              profile_difference(other.collect(stream, f), cpu_profiles[std::size_t(f)], where);
          QVERIFY2(e <= 1e-5, qPrintable(QString("%1 frame %2: %3 relative, %4")
                                             .arg(kernel_name)
                                             .arg(f)
                                             .arg(e)
                                             .arg(QString::fromStdString(where))));
        }
        for (int f = 0; f < frames; ++f) {
          other.enqueue(on_device.as<const float>() + std::size_t(f) * pixels, stream);
          std::string where;
          const double e =
              profile_difference(other.collect(stream), cpu_profiles[std::size_t(f)], where);
          QVERIFY2(e <= 1e-5, qPrintable(QString("%1 frame %2 alone: %3 relative, %4")
                                             .arg(kernel_name)
                                             .arg(f)
                                             .arg(e)
                                             .arg(QString::fromStdString(where))));
        }
      }
    }
    // The whole stack in one launch gives each frame's profile again.
    if (frames > 1 && !clipped) {
      device.enqueue_batch(on_device.as<const float>(), frames, stream);
      for (int f = 0; f < frames; ++f) {
        std::string where;
        const double e =
            profile_difference(device.collect(stream, f), cpu_profiles[std::size_t(f)], where);
        QVERIFY2(e <= 1e-5, qPrintable(QString("batched frame %1: %2 relative, %3")
                                           .arg(f)
                                           .arg(e)
                                           .arg(QString::fromStdString(where))));
      }
    }
    qInfo("%s: %d frames, %zu entries; GPU vs CPU %.3g, GPU vs pyFAI %.3g relative",
          qPrintable(name), frames, device.entries(), worst_cpu, worst_pyfai);
    const double pyfai_tolerance = split ? 1e-3 : 1e-4;  // test_integrate_pyfai's bounds
    QVERIFY2(worst_pyfai <= pyfai_tolerance,
             qPrintable(QString("GPU vs pyFAI: %1 relative").arg(worst_pyfai)));
#endif
  }

  void large_frame_equals_cpu_data() {
    QTest::addColumn<int>("splitting");
    QTest::addColumn<int>("model");
    QTest::addColumn<bool>("corrections");
    // Whole bins of the event invalid (NaN) and single infinite pixels: the Poisson kernel, which
    // sums the normalisation once at upload, must subtract exactly what the event took away.
    QTest::addColumn<bool>("invalid_bins");
    QTest::newRow("no splitting, poisson")
        << int(Splitting::None) << int(ErrorModel::Poisson) << false << false;
    QTest::newRow("no splitting, poisson, corrections")
        << int(Splitting::None) << int(ErrorModel::Poisson) << true << false;
    QTest::newRow("no splitting, poisson, corrections, invalid bins")
        << int(Splitting::None) << int(ErrorModel::Poisson) << true << true;
    QTest::newRow("no splitting, azimuthal, corrections")
        << int(Splitting::None) << int(ErrorModel::Azimuthal) << true << false;
    QTest::newRow("bbox, poisson, corrections")
        << int(Splitting::BBox) << int(ErrorModel::Poisson) << true << false;
    QTest::newRow("bbox, poisson, invalid bins")
        << int(Splitting::BBox) << int(ErrorModel::Poisson) << false << true;
    QTest::newRow("bbox, azimuthal")
        << int(Splitting::BBox) << int(ErrorModel::Azimuthal) << false << false;
  }

  void large_frame_equals_cpu() {
    LIVEDRP_SKIP_WITHOUT_GPU();
#ifdef LIVEDRP_HAVE_CUDA
    QFETCH(int, splitting);
    QFETCH(int, model);
    QFETCH(bool, corrections);
    QFETCH(bool, invalid_bins);
    LargeCase c = large_case(Splitting(splitting), ErrorModel(model), corrections);
    int emptied_bins = 0;
    if (invalid_bins) {
      const gpu::IntegrationPlan plan = gpu::plan_from(*c.integrator);
      // Every pixel of bins 300..309 NaN (with bbox the neighbouring bins lose a share), and
      // one pixel in 50 of bins 500..599 infinite.
      for (int b = 300; b < 310; ++b)
        for (std::int32_t e = plan.row_start[std::size_t(b)];
             e < plan.row_start[std::size_t(b) + 1]; ++e)
          c.frame[std::size_t(plan.pixel[std::size_t(e)])] = std::nanf("");
      for (int b = 500; b < 600; ++b)
        for (std::int32_t e = plan.row_start[std::size_t(b)];
             e < plan.row_start[std::size_t(b) + 1]; e += 50)
          c.frame[std::size_t(plan.pixel[std::size_t(e)])] = INFINITY;
      const Profile cpu = c.integrator->integrate(c.frame);
      for (int b = 300; b < 310; ++b) emptied_bins += cpu.count[std::size_t(b)] == 0.0 ? 1 : 0;
      // Without splitting the ten bins are empty on the CPU; the GPU must say so too (below).
      if (Splitting(splitting) == Splitting::None) QCOMPARE(emptied_bins, 10);
    }
    gpu::DeviceIntegrator device(*c.integrator);
    gpu::Stream stream;
    gpu::DeviceBuffer on_device(c.frame.size() * sizeof(float));
    gpu::copy_async(on_device.get(), c.frame.data(), c.frame.size() * sizeof(float), stream,
                    "test frame to the device");
    const Profile cpu = c.integrator->integrate(c.frame);
    device.enqueue(on_device.as<const float>(), stream);
    const Profile first = device.collect(stream);
    device.enqueue(on_device.as<const float>(), stream);
    const Profile second = device.collect(stream);
    QVERIFY(first.intensity == second.intensity && first.sigma == second.sigma &&
            first.variance == second.variance && first.count == second.count);
    std::string where;
    const double e = profile_difference(first, cpu, where);
    QVERIFY2(e <= 1e-5, qPrintable(QString("%1 relative, %2").arg(e).arg(where.c_str())));
    for (int b = 300; b < 310 && invalid_bins; ++b)
      if (cpu.count[std::size_t(b)] == 0.0) {
        QCOMPARE(first.count[std::size_t(b)], 0.0);
        QCOMPARE(first.normalization[std::size_t(b)], 0.0);
      }
    int filled = 0;
    for (const double n : cpu.count) filled += n > 0 ? 1 : 0;
    QVERIFY(filled > 900);  // the profile is not mostly empty bins

    const Integrator::SigmaClip clip{5, 3.0};
    const Profile cpu_clipped = c.integrator->sigma_clip(c.frame, clip);
    device.enqueue_sigma_clip(on_device.as<const float>(), clip, stream);
    const double clip_e = profile_difference(device.collect(stream), cpu_clipped, where);
    QVERIFY2(clip_e <= 1e-5,
             qPrintable(QString("sigma clip: %1 relative, %2").arg(clip_e).arg(where.c_str())));
    qInfo("%zu entries: GPU vs CPU %.3g, sigma clipped %.3g relative", device.entries(), e, clip_e);

    // Without splitting and with Poisson errors the pixel-major kernel (the benchmark's
    // comparison) must give the same profile within the bound, the same bits on a second run,
    // and the same again after a sigma clip of its own reused the result buffer.
    if (Splitting(splitting) == Splitting::None && ErrorModel(model) == ErrorModel::Poisson) {
      gpu::DeviceIntegrator pixel_major(gpu::plan_from(*c.integrator), 1,
                                        gpu::IntegrationKernel::PixelMajor);
      QCOMPARE(int(pixel_major.kernel()), int(gpu::IntegrationKernel::PixelMajor));
      QVERIFY(pixel_major.bytes_read_per_frame() < device.bytes_read_per_frame());
      pixel_major.enqueue(on_device.as<const float>(), stream);
      const Profile p1 = pixel_major.collect(stream);
      const double b = profile_difference(p1, cpu, where);
      QVERIFY2(b <= 1e-5,
               qPrintable(QString("pixel-major: %1 relative, %2").arg(b).arg(where.c_str())));
      pixel_major.enqueue_sigma_clip(on_device.as<const float>(), clip, stream);
      pixel_major.collect(stream);
      pixel_major.enqueue(on_device.as<const float>(), stream);
      const Profile p2 = pixel_major.collect(stream);
      QVERIFY(p2.intensity == p1.intensity && p2.sigma == p1.sigma && p2.count == p1.count);
      qInfo("pixel-major vs CPU: %.3g relative", b);
      // Launches back to back on the stream, each straight into its own pinned results (the
      // merge writes them itself), alternating two frames: the same bits from each as from the
      // frame's launch alone, though none waits for the host. Each launch's kernels start as the
      // kernels before them finish (programmatic dependents), so this is also where a launch that
      // overwrote the partials before the previous merge had read them would show.
      std::vector<float> other_frame(c.frame.size());
      for (std::size_t i = 0; i < other_frame.size(); ++i)
        // The same pixels invalid: dummies (-1) stay dummies, NaN and infinities stay so.
        other_frame[i] = c.frame[i] == -1.0f ? -1.0f : 0.5f * c.frame[i] + 3.0f;
      gpu::DeviceBuffer other_on_device(other_frame.size() * sizeof(float));
      gpu::copy_async(other_on_device.get(), other_frame.data(), other_frame.size() * sizeof(float),
                      stream, "second test frame to the device");
      pixel_major.enqueue(other_on_device.as<const float>(), stream);
      const Profile q1 = pixel_major.collect(stream);
      QVERIFY(q1.signal != p1.signal);
      QCOMPARE(q1.count, p1.count);
      constexpr int kBackToBack = 6;
      gpu::PinnedBuffer pinned(kBackToBack * pixel_major.result_doubles() * sizeof(double));
      for (int k = 0; k < kBackToBack; ++k)
        pixel_major.enqueue_into((k % 2 == 0 ? on_device : other_on_device).as<const float>(),
                                 pinned.as<double>() + k * pixel_major.result_doubles(), stream);
      stream.synchronize();
      for (int k = 0; k < kBackToBack; ++k) {
        const Profile pk =
            pixel_major.profile_from(pinned.as<double>() + k * pixel_major.result_doubles());
        const Profile& expected = k % 2 == 0 ? p1 : q1;
        QVERIFY2(pk.intensity == expected.intensity && pk.sigma == expected.sigma &&
                     pk.std == expected.std && pk.signal == expected.signal &&
                     pk.variance == expected.variance &&
                     pk.normalization == expected.normalization && pk.count == expected.count,
                 qPrintable(QString("back-to-back launch %1").arg(k)));
      }

      // The bins whose every pixel the event invalidated are empty, as on the CPU.
      for (int bin = 300; bin < 310 && invalid_bins; ++bin)
        if (cpu.count[std::size_t(bin)] == 0.0) {
          QCOMPARE(p1.count[std::size_t(bin)], 0.0);
          QCOMPARE(p1.normalization[std::size_t(bin)], 0.0);
        }
    }

    // The benchmark's baseline: atomics in another order, still within the bound.
    if (Splitting(splitting) == Splitting::None && ErrorModel(model) == ErrorModel::Poisson &&
        !corrections) {
      gpu::DeviceHistogramIntegrator histogram(gpu::plan_from(*c.integrator));
      histogram.enqueue(on_device.as<const float>(), stream);
      const double h = profile_difference(histogram.collect(stream), cpu, where);
      qInfo("atomic histogram vs CPU: %.3g relative", h);
      QVERIFY2(h <= 1e-5,
               qPrintable(QString("histogram: %1 relative, %2").arg(h).arg(where.c_str())));
    }
#endif
  }

  // livedrp-engine integrate --backend cuda writes what --backend cpu writes (CSV at 10
  // significant digits): a stack, the segmented detector with bbox, sigma clipping.
  void cli_cuda_backend_matches_cpu_data() {
    QTest::addColumn<QStringList>("arguments");
    const auto ref = [](const char* name) {
      return QString::fromStdString((reference_dir() / name).string());
    };
    QTest::newRow("stack_q") << QStringList{"--poni",         ref("untilted.poni"),
                                            "--input",        ref("int_stack_q_input.npy"),
                                            "--mask",         ref("int_stack_q_mask.npy"),
                                            "--npt",          "20",
                                            "--polarization", "0.9"};
    QTest::newRow("clip_poisson") << QStringList{"--poni",
                                                 ref("untilted.poni"),
                                                 "--input",
                                                 ref("int_clip_poisson_input.npy"),
                                                 "--mask",
                                                 ref("int_clip_poisson_mask.npy"),
                                                 "--npt",
                                                 "30",
                                                 "--radial-range",
                                                 "0.3",
                                                 "2.4",
                                                 "--polarization",
                                                 "0.95",
                                                 "--sigma-clip",
                                                 "3",
                                                 "--clip-iterations",
                                                 "5"};
    QTest::newRow("tilted_tth_bbox") << QStringList{"--poni",
                                                    ref("tilted.poni"),
                                                    "--input",
                                                    ref("int_tilted_tth_bbox_input.npy"),
                                                    "--dark",
                                                    ref("int_tilted_tth_bbox_dark.npy"),
                                                    "--flat",
                                                    ref("int_tilted_tth_bbox_flat.npy"),
                                                    "--npt",
                                                    "25",
                                                    "--unit",
                                                    "2th_deg",
                                                    "--method",
                                                    "bbox",
                                                    "--azimuth-range",
                                                    "8",
                                                    "20",
                                                    "--polarization",
                                                    "0.9"};
  }

  void cli_cuda_backend_matches_cpu() {
    LIVEDRP_SKIP_WITHOUT_GPU();
    QFETCH(QStringList, arguments);
    if (qEnvironmentVariable("LIVEDRP_ENGINE_EXE").isEmpty())
      QSKIP("LIVEDRP_ENGINE_EXE is not set (run through ctest)");
    QTemporaryDir dir;
    QStringList lines[2];
    const char* backends[] = {"cpu", "cuda"};
    for (int k = 0; k < 2; ++k) {
      const QString out = dir.path() + "/" + backends[k] + ".csv";
      const CliResult r =
          run_cli("LIVEDRP_ENGINE_EXE", QStringList{"integrate"} << arguments << "--output" << out
                                                                 << "--backend" << backends[k]);
      QVERIFY2(
          r.exit_code == 0,
          qPrintable(
              QString("--backend %1: exit %2, %3").arg(backends[k]).arg(r.exit_code).arg(r.err)));
      QFile file(out);
      QVERIFY(file.open(QIODevice::ReadOnly));
      lines[k] = QString::fromUtf8(file.readAll()).split('\n', Qt::SkipEmptyParts);
    }
    QCOMPARE(lines[1].size(), lines[0].size());
    QVERIFY(lines[0].size() > 10);
    for (int i = 1; i < lines[0].size(); ++i) {
      const QStringList a = lines[0][i].split(','), b = lines[1][i].split(',');
      QCOMPARE(b.size(), a.size());
      QCOMPARE(b[0], a[0]);  // frame
      QCOMPARE(b[1], a[1]);  // bin centre, identical
      for (int f = 2; f < a.size(); ++f)
        if (b[f] != a[f])
          QVERIFY2(
              relative_error(b[f].toDouble(), a[f].toDouble()) <= 1e-5,
              qPrintable(QString("line %1: cuda %2, cpu %3").arg(i).arg(lines[1][i], lines[0][i])));
    }
  }

  void bad_use_is_refused() {
    LIVEDRP_SKIP_WITHOUT_GPU();
#ifdef LIVEDRP_HAVE_CUDA
    Setup s = setup_case(find_case("untilted_q"));
    gpu::DeviceIntegrator device(*s.integrator, 2);
    gpu::Stream stream;
    gpu::DeviceBuffer frames(2 * s.integrator->pixels() * sizeof(float));
    const auto refused = [](const std::function<void()>& action, const char* text) {
      try {
        action();
      } catch (const InputError& e) {
        return std::string(e.what()).find(text) != std::string::npos;
      }
      return false;
    };
    QVERIFY(
        refused([&] { device.enqueue_batch(frames.as<const float>(), 3, stream); }, "batch of 3"));
    QVERIFY(refused(
        [&] {
          device.enqueue_sigma_clip(frames.as<const float>(), {-1, 3.0}, stream);
        },
        "max_iter"));
    device.enqueue(frames.as<const float>(), stream);
    QVERIFY(refused([&] { device.collect(stream, 1); }, "no frame 1"));
    Setup bbox = setup_case(find_case("untilted_q_bbox"));
    QVERIFY(refused([&] { gpu::DeviceHistogramIntegrator h(gpu::plan_from(*bbox.integrator)); },
                    "splitting"));
#endif
  }
};

QTEST_GUILESS_MAIN(TestGpuIntegrate)
#include "test_gpu_integrate.moc"
