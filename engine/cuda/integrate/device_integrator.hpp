#pragma once
// Azimuthal integration on the GPU: the CPU Integrator's built state (CSR matrix, static per-pixel
// normalisation, dark, settings) uploaded once, and per event the same per-pixel preprocessing and
// per-bin accumulation (integrate/corrections.hpp, integrate/accumulate.hpp) as the CPU, so the
// profiles agree with the CPU's within rounding (1e-5 relative per bin is the bound the tests
// hold it to). Plain C++ header (no CUDA types), like cuda/device.hpp.
//
// The device matrix holds only the entries that can contribute: a pixel whose static
// normalisation is 0 (masked, bad flat, dummy dark) adds exactly nothing on the CPU either, so
// it is left out. Each remaining entry carries its pixel index, its normalisation (and, where
// they apply, its share and the dark), all laid out in bin order: per event the kernel reads the
// image (gathered) and these tables (streamed), nothing else.
//
// Per event: one kernel, a block per bin (per bin and frame for a batch), sums in double, merged
// in a fixed order, so results are deterministic run to run; thread 0 finalises the bin. On
// request, without pixel splitting and with the Poisson (or no) error model, the pixel-major
// kernels of pixel_major.hpp instead (the image read once, a tile per block, per-segment partial
// sums merged per bin in a fixed order; deterministic too). With the
// Poisson (or no) error model the normalisation, count and squared normalisation of a bin are
// the same every event except for entries the event invalidates (a dummy or non-finite value):
// they are summed once at upload, and per event the kernel reads the image and each entry's pixel
// index (and share and dark where they apply), the normalisation only of invalidated entries,
// whose sums it subtracts. The azimuthal model needs every entry's weight in its running update:
// thread t runs the CPU's accumulate_azimuthal over entries t, t + 256, ..., and the block merges
// the partial sums pairwise with the same update's pairwise form. The bin values go to pinned
// host memory in the same stream.
#include <cstdint>
#include <memory>
#include <vector>

#include "cuda/device.hpp"
#include "integrate/integrator.hpp"

namespace livedrp::gpu {

// What the device integrator needs from the CPU Integrator, as plain data (livedrp_cuda does not
// link the engine library: this is filled in the caller's translation unit by plan_from()).
struct IntegrationPlan {
  int bins = 0;
  std::size_t pixels = 0;
  // Rows and columns of one segment (pixels = segments x rows x cols), so that the pixel-major
  // path can cut the image into 2-D tiles; 0 when unknown (the image is then one row).
  int rows = 0, cols = 0;
  bool split = false;  // shares other than 1 (bbox splitting)
  integrate::ErrorModel error_model = integrate::ErrorModel::Poisson;
  integrate::DummyTest dummy;
  double empty = 0.0;  // value of a bin without valid pixels (pyFAI: the dummy, else 0)
  // The contributing entries in bin order: bin b is [row_start[b], row_start[b + 1]).
  std::vector<std::int32_t> row_start, pixel;
  std::vector<float> normalization, coef, dark;  // per entry; coef only if split, dark if any
  std::vector<double> radial;                    // bin centres in the unit, as the CPU reports
};

// The CPU integrator's state as a plan. Builds what the CPU has not built yet (csr() and
// normalization() do); compiled in the caller, which links the engine.
inline IntegrationPlan plan_from(integrate::Integrator& reference) {
  const integrate::IntegrationConfig& config = reference.config();
  const integrate::CsrMatrix& csr = reference.csr();
  const std::span<const float> normalization = reference.normalization();
  const std::vector<float>& dark = reference.dark();
  const integrate::BinGrid& grid = reference.bin_grid();
  IntegrationPlan plan;
  plan.bins = csr.bins;
  plan.pixels = reference.pixels();
  plan.rows = reference.layout().rows;
  plan.cols = reference.layout().cols;
  plan.split = config.splitting == integrate::Splitting::BBox;
  plan.error_model = config.error_model;
  plan.dummy = {config.dummy.has_value(), float(config.dummy.value_or(0.0)),
                float(config.delta_dummy)};
  plan.empty = config.dummy.value_or(0.0);
  plan.row_start.assign(1, 0);
  for (int b = 0; b < csr.bins; ++b) {
    for (std::int32_t e = csr.row_start[std::size_t(b)]; e < csr.row_start[std::size_t(b) + 1];
         ++e) {
      const std::size_t k = std::size_t(csr.pixel[std::size_t(e)]);
      const float dark_value = dark.empty() ? 0.0f : dark[k];
      // preprocess_pixel() gives these entries an all-zero sample on every event.
      if (normalization[k] == 0.0f || integrate::is_dummy(plan.dummy, dark_value)) continue;
      plan.pixel.push_back(std::int32_t(k));
      plan.normalization.push_back(normalization[k]);
      if (plan.split) plan.coef.push_back(csr.coef[std::size_t(e)]);
      if (!dark.empty()) plan.dark.push_back(dark_value);
    }
    plan.row_start.push_back(std::int32_t(plan.pixel.size()));
  }
  // Bin centres as Integrator::integrate reports them (numpy.linspace of the first and last
  // centre, the last exactly; then scaled to the unit).
  const double first = grid.min + 0.5 * grid.delta, last = grid.max - 0.5 * grid.delta;
  const double scale = integrate::unit_scale(config.unit);
  plan.radial.resize(std::size_t(plan.bins));
  const double step = plan.bins > 1 ? (last - first) / double(plan.bins - 1) : 0.0;
  for (int i = 0; i < plan.bins; ++i) plan.radial[std::size_t(i)] = double(i) * step + first;
  if (plan.bins > 1) plan.radial.back() = last;
  for (double& r : plan.radial) r *= scale;
  return plan;
}

// The kernel that integrates an event (enqueue, enqueue_batch, enqueue_into). PixelMajor needs
// a plan without pixel splitting and with the Poisson (or no) error model; for
// another plan the integrator takes BinMajor (kernel() says which one it took). Sigma clipping
// always runs its own bin-major kernel.
enum class IntegrationKernel {
  BinMajor,    // a block per bin, entries gathered; deterministic. The default.
  PixelMajor,  // pixel_major.hpp: tiles read once, partials merged in a fixed order; deterministic
};

class DeviceIntegrator {
 public:
  // Uploads the plan once. `max_batch`: the most frames one enqueue_batch() takes.
  explicit DeviceIntegrator(const IntegrationPlan& plan, int max_batch = 1,
                            IntegrationKernel kernel = IntegrationKernel::BinMajor);
  explicit DeviceIntegrator(integrate::Integrator& reference, int max_batch = 1)
      : DeviceIntegrator(plan_from(reference), max_batch) {}
  ~DeviceIntegrator();
  DeviceIntegrator(const DeviceIntegrator&) = delete;
  DeviceIntegrator& operator=(const DeviceIntegrator&) = delete;

  int bins() const;
  std::size_t pixels() const;
  IntegrationKernel kernel() const;  // the one this plan allowed
  std::size_t entries() const;       // contributing (pixel, bin) entries of the device matrix
  // Bytes the integration must read per frame: the image and the per-entry tables.
  std::size_t bytes_read_per_frame() const;

  // Enqueues the integration of `device_frame` (pixels() float32 in layout order, device memory)
  // on `stream`, ending with the copy of the bin values to pinned host memory. No host wait.
  void enqueue(const float* device_frame, const Stream& stream);
  // `frames` (1 .. max_batch) consecutive frames of pixels() values each, one launch.
  void enqueue_batch(const float* device_frames, int frames, const Stream& stream);
  // Radial statistics with sigma clipping (Integrator::sigma_clip: same rejection rule, same
  // stopping rule), one frame. Throws InputError as the CPU does for a bad max_iter or cutoff.
  void enqueue_sigma_clip(const float* device_frame, const integrate::Integrator::SigmaClip& clip,
                          const Stream& stream);

  // For a pipeline with several frames in flight on one stream: as enqueue(), but the bin values
  // go to `host_results` (pinned host memory of result_doubles() values, the caller's), so each
  // enqueue has its own destination. Read it with profile_from() once the stream has passed this
  // point (a CUDA event recorded after it has completed). No host wait.
  std::size_t result_doubles() const;  // one frame's bin values
  static std::size_t result_doubles_for(int bins);  // the same, for a plan of `bins` bins
  void enqueue_into(const float* device_frame, double* host_results, const Stream& stream);
  // The same into device memory (result_doubles() values), for consumers that keep results on
  // the device; capturable into a device-launched graph (no pointer queries, kernels only with
  // the pixel-major kernel).
  void enqueue_into_device(const float* device_frame, double* device_results,
                           const Stream& stream);
  integrate::Profile profile_from(const double* host_results) const;

  // Waits for `stream`; the profile of frame `index` of the last enqueue (0 for enqueue and
  // enqueue_sigma_clip), the same struct and values as the CPU integrator returns.
  integrate::Profile collect(const Stream& stream, int index = 0);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace livedrp::gpu
