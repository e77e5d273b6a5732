// The CPU integrator's pixel-order walk (integrate/banded_entries.hpp): the bands partition the
// CSR's entries, list each band in ascending pixel order and keep every bin's own order; and
// Integrator::integrate and sigma_clip, which walk the bands, give bit for bit the sums of the
// definition: each bin's CSR row summed in row order (accumulate.hpp's formulas), for both
// splittings and error models, with a dark and dummy values, on one thread and on pools.
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/thread_pool.hpp"
#include "integrate/banded_entries.hpp"
#include "integrate/integrator.hpp"

using namespace livedrp;
using namespace livedrp::integrate;

namespace {

// A tilted geometry (rings cross the image obliquely) on a plain detector of rows x cols.
PoniGeometry tilted_geometry(int rows, int cols) {
  PoniGeometry g;
  g.version = 2;
  g.distance = 0.08;
  g.poni1 = 0.43 * rows * 1e-4;
  g.poni2 = 0.61 * cols * 1e-4;
  g.rot1 = 0.05;
  g.rot2 = -0.03;
  g.wavelength = 1e-10;
  g.pixel1 = g.pixel2 = 1e-4;
  return g;
}

// Noise-like frame with a few NaN, infinite and dummy (-1) pixels.
std::vector<float> test_frame(std::size_t pixels) {
  std::vector<float> frame(pixels);
  std::uint32_t state = 12345;
  for (std::size_t k = 0; k < pixels; ++k) {
    state = state * 1664525u + 1013904223u;
    frame[k] = float(state >> 8) * 0x1p-24f * 40.0f - 3.0f;
  }
  for (std::size_t k = 17; k < pixels; k += 997) frame[k] = NAN;
  for (std::size_t k = 31; k < pixels; k += 1499) frame[k] = INFINITY;
  for (std::size_t k = 5; k < pixels; k += 701) frame[k] = -1.0f;
  return frame;
}

// Each bin's CSR row walked in row order: the order the sums are defined in.
Profile by_rows(Integrator& in, const std::vector<float>& frame, const std::vector<float>& dark,
                const IntegrationConfig& config, const Integrator::SigmaClip* clip) {
  const CsrMatrix& csr = in.csr();
  const std::span<const float> norm = in.normalization();
  const DummyTest dummy{config.dummy.has_value(), float(config.dummy.value_or(0.0)),
                        float(config.delta_dummy)};
  const bool azimuthal = config.error_model == ErrorModel::Azimuthal;
  Profile p;
  for (int b = 0; b < csr.bins; ++b) {
    std::vector<std::pair<PixelSample, float>> entries;
    for (std::int32_t e = csr.row_start[std::size_t(b)]; e < csr.row_start[std::size_t(b) + 1];
         ++e) {
      const auto k = std::size_t(csr.pixel[std::size_t(e)]);
      const PixelSample s = preprocess_pixel(frame[k], dark.empty() ? 0.0f : dark[k], norm[k],
                                             config.error_model, dummy);
      if (!clip || (s.count != 0.0f && csr.coef[std::size_t(e)] != 0.0f))
        entries.push_back({s, csr.coef[std::size_t(e)]});
    }
    const auto sum = [&] {
      BinAccumulator acc;
      for (const auto& [s, coef] : entries)
        azimuthal ? accumulate_azimuthal(acc, s, coef) : accumulate(acc, s, coef);
      return acc;
    };
    BinAccumulator acc = sum();
    for (int iteration = 0; clip && iteration < clip->max_iter; ++iteration) {
      if (acc.normalization == 0.0 || acc.count == 0.0) break;
      const double mean = acc.signal / acc.normalization;
      const double threshold = clip_threshold(acc.count, clip->cutoff, clip_spread(acc));
      const std::size_t before = entries.size();
      std::erase_if(entries, [&](const auto& e) { return clip_rejects(e.first, mean, threshold); });
      if (entries.size() == before) break;
      acc = sum();
    }
    const BinResult r = finalize_bin(acc, config.dummy.value_or(0.0), config.error_model);
    p.intensity.push_back(r.intensity);
    p.sigma.push_back(r.sigma);
    p.std.push_back(r.std);
    p.signal.push_back(acc.signal);
    p.variance.push_back(acc.variance);
    p.normalization.push_back(acc.normalization);
    p.count.push_back(acc.count);
  }
  return p;
}

// Bit for bit, NaN equal to NaN.
bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::memcmp(&a[i], &b[i], sizeof(double)) != 0) return false;
  return true;
}

bool same_profile(const Profile& a, const Profile& b) {
  return same_bits(a.intensity, b.intensity) && same_bits(a.sigma, b.sigma) &&
         same_bits(a.std, b.std) && same_bits(a.signal, b.signal) &&
         same_bits(a.variance, b.variance) && same_bits(a.normalization, b.normalization) &&
         same_bits(a.count, b.count);
}

}  // namespace

class TestIntegrateBanded : public QObject {
  Q_OBJECT

 private slots:
  // A hand-made CSR of 6 bins over 10 pixels (pixel 3 split over bins 1-3, bin 4 empty).
  void bands_partition_the_entries_in_pixel_order() {
    CsrMatrix csr;
    csr.bins = 6;
    // bin: 0 -> {0, 4, 9}, 1 -> {1, 3}, 2 -> {2, 3, 8}, 3 -> {3, 5}, 4 -> {}, 5 -> {6, 7}
    csr.row_start = {0, 3, 5, 8, 10, 10, 12};
    csr.pixel = {0, 4, 9, 1, 3, 2, 3, 8, 3, 5, 6, 7};
    csr.coef = {1, 1, 1, 1, 0.25f, 1, 0.5f, 1, 0.25f, 1, 1, 1};
    for (const int asked : {1, 2, 3, 6, 50}) {
      const BandedEntries banded = band_entries(csr, 10, asked);
      QCOMPARE(banded.bands(), std::size_t(std::min(asked, 6)));
      QCOMPARE(banded.band_first_bin.front(), 0);
      QCOMPARE(banded.band_first_bin.back(), 6);
      QVERIFY(!banded.unit_shares);
      QCOMPARE(banded.pixel.size(), csr.entries());
      std::vector<std::vector<std::pair<std::int32_t, float>>> rows(6);
      for (std::size_t band = 0; band < banded.bands(); ++band) {
        QVERIFY(banded.band_first_bin[band] <= banded.band_first_bin[band + 1]);
        QCOMPARE(banded.band_start[band],
                 std::size_t(csr.row_start[std::size_t(banded.band_first_bin[band])]));
        for (std::size_t e = banded.band_start[band]; e < banded.band_start[band + 1]; ++e) {
          QVERIFY(banded.bin[e] >= banded.band_first_bin[band] &&
                  banded.bin[e] < banded.band_first_bin[band + 1]);
          if (e > banded.band_start[band]) QVERIFY(banded.pixel[e - 1] <= banded.pixel[e]);
          rows[std::size_t(banded.bin[e])].push_back({banded.pixel[e], banded.coef[e]});
        }
      }
      // Each bin gets back its row, entries in the row's order.
      for (int b = 0; b < 6; ++b) {
        std::vector<std::pair<std::int32_t, float>> row;
        for (std::int32_t e = csr.row_start[std::size_t(b)]; e < csr.row_start[std::size_t(b) + 1];
             ++e)
          row.push_back({csr.pixel[std::size_t(e)], csr.coef[std::size_t(e)]});
        QVERIFY(rows[std::size_t(b)] == row);
      }
    }
    // Two bands cut at the half of the 12 entries: after bin 2 (8 entries, the first reaching 6).
    QCOMPARE(band_entries(csr, 10, 2).band_first_bin, (std::vector<int>{0, 3, 6}));
    // No entries at all: every band empty, nothing read.
    CsrMatrix empty;
    empty.bins = 4;
    empty.row_start.assign(5, 0);
    const BandedEntries none = band_entries(empty, 3, 8);
    QCOMPARE(none.band_first_bin.back(), 4);
    QCOMPARE(none.band_start.back(), std::size_t(0));
    QVERIFY(none.pixel.empty() && none.unit_shares);
  }

  void integration_sums_each_bin_in_its_row_order() {
    const int rows = 160, cols = 224;
    const PoniGeometry poni = tilted_geometry(rows, cols);
    const PixelLayout layout = plain_layout(rows, cols);
    const std::vector<float> frame = test_frame(layout.pixels());
    std::vector<float> dark(layout.pixels());
    for (std::size_t k = 0; k < dark.size(); ++k) dark[k] = float(k % 7) * 0.125f;
    dark[100] = -1.0f;  // a dummy dark
    std::vector<std::uint8_t> mask(layout.pixels(), 0);
    for (std::size_t k = 0; k < mask.size(); k += 53) mask[k] = 1;
    ThreadPool two(2), three(3);
    int cases = 0;
    for (const Splitting splitting : {Splitting::None, Splitting::BBox})
      for (const ErrorModel model : {ErrorModel::Poisson, ErrorModel::Azimuthal, ErrorModel::None})
        for (const bool with_dark : {false, true}) {
          IntegrationConfig config;
          config.bins = 97;
          config.splitting = splitting;
          config.error_model = model;
          config.polarization = 0.95;
          if (with_dark) config.dummy = -1.0;
          Integrator in(poni, layout, config);
          in.set_mask(mask);
          if (with_dark) in.set_dark(dark);
          const std::vector<float> no_dark;
          const std::vector<float>& d = with_dark ? dark : no_dark;
          const Profile expected = by_rows(in, frame, d, config, nullptr);
          const Integrator::SigmaClip clip{5, 2.0};
          const Profile expected_clip = by_rows(in, frame, d, config, &clip);
          QVERIFY(expected.count[48] > 0.0);
          for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), &two, &three}) {
            in.set_thread_pool(pool);
            QVERIFY2(same_profile(in.integrate(frame), expected),
                     qPrintable(QString("integrate, case %1").arg(cases)));
            QVERIFY2(same_profile(in.sigma_clip(frame, clip), expected_clip),
                     qPrintable(QString("sigma_clip, case %1").arg(cases)));
          }
          ++cases;
        }
    QCOMPARE(cases, 12);
  }
};

QTEST_APPLESS_MAIN(TestIntegrateBanded)
#include "test_integrate_banded.moc"
