// Azimuthal integration (no pixel splitting) against pyFAI 0.21.3 integrate1d_ng: the cases and
// references written by tests/reference/pyfai/make_integrate_refs.py (plain, tilted and
// off-detector geometries, every radial unit, radial and azimuth ranges, solid angle, polarisation,
// mask, dark, flat, dummy values, Poisson and azimuthal error models, a stack of frames, and a
// multi-segment detector with gaps integrated from its segment stack). Every bin must agree within
// 1e-4 relative; pixel counts exactly. Also: rebuilding only what changed, and bad input.
#include <QtTest>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/detector.hpp"
#include "core/error.hpp"
#include "core/thread_pool.hpp"
#include "integrate/array_values.hpp"
#include "integrate/integrator.hpp"
#include "integrate/poni.hpp"
#include "io/npy.hpp"
#include "pyfai_cases.hpp"

using namespace livedrp;
using namespace livedrp::integrate;
using namespace livedrp::integrate::testing;

namespace {

std::string error_of(const std::function<void()>& action) {
  try {
    action();
  } catch (const InputError& e) {
    return e.what();
  }
  return {};
}

// |ours - ref| relative to |ref|; a reference of 0 (an empty bin) is compared absolutely.
double relative_error(double ours, double ref) {
  if (std::isnan(ours) != std::isnan(ref)) return INFINITY;
  if (std::isnan(ref)) return 0.0;
  return std::fabs(ours - ref) / std::max(std::fabs(ref), 1e-300 + (ref == 0.0 ? 1.0 : 0.0));
}

// Worst relative error of intensity, sigma and the sums over the bins of one frame; counts and
// bin positions checked on the way. Returns +inf (and says why) when something is off.
// Without splitting the counts are whole pixels and must agree exactly; with bbox they are sums of
// shares and count towards the relative error.
// pyFAI 0.21's sigma_clip reports max(3, count) for a bin whose clipping stopped early; either
// value is accepted there.
double compare_frame(const Profile& p, const double* ref, int bins, const std::string& what,
                     bool split, bool clipped) {
  double worst = 0.0;
  for (int b = 0; b < bins; ++b) {
    const double* row = ref + 7 * b;
    const double count = p.count[std::size_t(b)];
    if (clipped && count > 0.0 && std::max(count, 3.0) == row[6]) {
      // as pyFAI
    } else if (split) {
      worst = std::max(worst, relative_error(p.count[std::size_t(b)], row[6]));
    } else if (p.count[std::size_t(b)] != row[6]) {
      qWarning("%s bin %d: count %g, pyFAI %g", what.c_str(), b, p.count[std::size_t(b)], row[6]);
      return INFINITY;
    }
    if (relative_error(p.radial[std::size_t(b)], row[0]) > 1e-12) {
      qWarning("%s bin %d: radial %.17g, pyFAI %.17g", what.c_str(), b, p.radial[std::size_t(b)],
               row[0]);
      return INFINITY;
    }
    const double ours[] = {p.intensity[std::size_t(b)], p.sigma[std::size_t(b)],
                           p.signal[std::size_t(b)], p.variance[std::size_t(b)],
                           p.normalization[std::size_t(b)]};
    for (int k = 0; k < 5; ++k) {
      const double e = relative_error(ours[k], row[k + 1]);
      if (!(e <= worst)) worst = e;
    }
  }
  return worst;
}

}  // namespace

class TestIntegratePyfai : public QObject {
  Q_OBJECT

 private slots:
  void matches_pyfai_data() {
    QTest::addColumn<QString>("name");
    for (const auto& c : load_cases())
      QTest::newRow(c["name"].get<std::string>().c_str())
          << QString::fromStdString(c["name"].get<std::string>());
  }

  void matches_pyfai() {
    QFETCH(QString, name);
    nlohmann::json c;
    for (const auto& candidate : load_cases())
      if (candidate["name"] == name.toStdString()) c = candidate;
    Setup s = setup_case(c);
    const int bins = c["npt"].get<int>();
    const std::size_t pixels = s.integrator->pixels();
    const bool stack = s.reference.shape.size() == 3;
    const std::uint64_t frames = stack ? s.reference.shape[0] : 1;
    const bool split = c.value("method", "no") == "bbox";
    const bool clipped = c.contains("sigma_clip");
    Integrator::SigmaClip clip;
    if (clipped) {
      clip.cutoff = c["sigma_clip"].at("cutoff").get<double>();
      clip.max_iter = c["sigma_clip"].at("max_iter").get<int>();
    }
    QCOMPARE(s.input.elements(), frames * pixels);
    double worst = 0.0;
    for (std::uint64_t f = 0; f < frames; ++f) {
      const std::vector<float> frame = float_values(s.input, f * pixels, pixels);
      const Profile p =
          clipped ? s.integrator->sigma_clip(frame, clip) : s.integrator->integrate(frame);
      QCOMPARE(p.intensity.size(), std::size_t(bins));
      const double e =
          compare_frame(p, s.reference.as<double>() + f * std::uint64_t(bins) * 7, bins,
                        name.toStdString() + " frame " + std::to_string(f), split, clipped);
      worst = std::max(worst, e);
    }
    qInfo("%s: max relative error %.3g over %d bins x %d frames", qPrintable(name), worst, bins,
          int(frames));
    const double tolerance = split ? 1e-3 : 1e-4;
    QVERIFY2(worst <= tolerance, qPrintable(QString("max relative error %1").arg(worst)));
  }

  // Changing the mask or a correction rebuilds the normalisation only; the number of bins or a
  // range the CSR only; the unit everything. Results follow the change.
  void rebuilds_only_what_changed() {
    nlohmann::json c;
    for (const auto& candidate : load_cases())
      if (candidate["name"] == "untilted_q") c = candidate;
    Setup s = setup_case(c);
    Integrator& in = *s.integrator;
    const std::vector<float> frame = float_values(s.input);
    const Profile first = in.integrate(frame);
    QCOMPARE(in.build_counts().positions, 1);
    QCOMPARE(in.build_counts().normalization, 1);
    QCOMPARE(in.build_counts().csr, 1);
    in.integrate(frame);
    QCOMPARE(in.build_counts().csr, 1);

    std::vector<std::uint8_t> mask(in.pixels(), 0);
    mask[0] = mask[100] = 1;
    in.set_mask(mask);
    const Profile masked = in.integrate(frame);
    QCOMPARE(in.build_counts().normalization, 2);
    QCOMPARE(in.build_counts().csr, 1);
    double count_before = 0, count_after = 0;
    for (int b = 0; b < in.config().bins; ++b) {
      count_before += first.count[std::size_t(b)];
      count_after += masked.count[std::size_t(b)];
    }
    QCOMPARE(count_after, count_before - 2);

    IntegrationConfig config = in.config();
    config.polarization = 0.5;
    in.set_config(config);
    in.integrate(frame);
    QCOMPARE(in.build_counts().normalization, 3);
    QCOMPARE(in.build_counts().csr, 1);

    config.bins = 17;
    in.set_config(config);
    QCOMPARE(in.integrate(frame).intensity.size(), std::size_t(17));
    QCOMPARE(in.build_counts().csr, 2);
    QCOMPARE(in.build_counts().normalization, 3);
    QCOMPARE(in.build_counts().positions, 1);

    config.unit = RadialUnit::TwoThetaDeg;
    in.set_config(config);
    in.integrate(frame);
    QCOMPARE(in.build_counts().positions, 2);
    QCOMPARE(in.build_counts().csr, 3);
    QCOMPARE(in.csr().entries(), in.pixels());  // the mask lives in the normalisation

    // bbox leaves masked pixels out of the matrix (and out of the default range), as pyFAI: a new
    // mask rebuilds it too.
    config.splitting = Splitting::BBox;
    in.set_config(config);
    in.integrate(frame);
    QCOMPARE(in.build_counts().csr, 4);
    QCOMPARE(in.build_counts().positions, 2);
    const std::size_t entries = in.csr().entries();
    mask[200] = 1;
    in.set_mask(mask);
    in.integrate(frame);
    QCOMPARE(in.build_counts().csr, 5);
    QVERIFY(in.csr().entries() < entries);
    float share = 0.0f;  // every unmasked pixel is shared out whole
    for (const float coef : in.csr().coef) share += coef;
    QVERIFY(std::fabs(share - float(in.pixels() - 3)) < 1e-2f);
  }

  void bad_input_names_the_problem() {
    const PoniGeometry poni = read_poni(reference_dir() / "untilted.poni");
    const PixelLayout layout = plain_layout(48, 64);
    IntegrationConfig ok;
    ok.bins = 10;
    const auto with = [&](const std::function<void(IntegrationConfig&)>& change) {
      IntegrationConfig c = ok;
      change(c);
      return error_of([&] { Integrator(poni, layout, c); });
    };
    QVERIFY(with([](auto&) {}).empty());
    QVERIFY(with([](auto& c) { c.bins = 0; }).find("bins") != std::string::npos);
    QVERIFY(with([](auto& c) { c.bins = 1 << 25; }).find("bins") != std::string::npos);
    QVERIFY(with([](auto& c) {
              c.radial_range = std::pair{1.0, 1.0};
            }).find("radial range") != std::string::npos);
    QVERIFY(with([](auto& c) {
              c.radial_range = std::pair{NAN, 1.0};
            }).find("radial range") != std::string::npos);
    QVERIFY(with([](auto& c) {
              c.azimuth_range = std::pair{0.0, INFINITY};
            }).find("azimuth range") != std::string::npos);
    QVERIFY(with([](auto& c) { c.polarization = 1.5; }).find("polarization") != std::string::npos);
    QVERIFY(with([](auto& c) { c.delta_dummy = -1; }).find("delta dummy") != std::string::npos);

    PoniGeometry no_wavelength = poni;
    no_wavelength.wavelength.reset();
    QVERIFY(error_of([&] { Integrator(no_wavelength, layout, ok); }).find("wavelength") !=
            std::string::npos);
    IntegrationConfig tth = ok;
    tth.unit = RadialUnit::TwoThetaDeg;
    QVERIFY(error_of([&] { Integrator(no_wavelength, layout, tth); }).empty());

    Integrator in(poni, layout, ok);
    QVERIFY(error_of([&] { in.set_mask(std::vector<std::uint8_t>(5)); }).find("mask has 5") !=
            std::string::npos);
    QVERIFY(error_of([&] { in.set_dark(std::vector<float>(7)); }).find("dark has 7") !=
            std::string::npos);
    QVERIFY(error_of([&] { in.set_flat(std::vector<float>(9)); }).find("flat has 9") !=
            std::string::npos);
    QVERIFY(error_of([&] { in.integrate(std::vector<float>(3)); }).find("frame has 3") !=
            std::string::npos);
    QVERIFY(error_of([&] {
              in.sigma_clip(std::vector<float>(in.pixels()), {-1, 3.0});
            }).find("max_iter") != std::string::npos);
    QVERIFY(error_of([&] {
              in.sigma_clip(std::vector<float>(in.pixels()), {3, NAN});
            }).find("cutoff") != std::string::npos);
    QVERIFY(!radial_unit_from_name("q_pm^-1"));
    QCOMPARE(to_string(*radial_unit_from_name("q_A^-1")), std::string_view("q_A^-1"));
  }

  // std is one pixel's spread: for a flat image of 100 counts and unit normalisation, 10 under the
  // Poisson model (sigma, the error of the mean, 10 / sqrt(n)), 0 under the azimuthal one.
  void standard_deviation_of_a_flat_image() {
    const PoniGeometry poni = read_poni(reference_dir() / "untilted.poni");
    IntegrationConfig config;
    config.bins = 12;
    config.solid_angle = false;
    Integrator in(poni, plain_layout(48, 64), config);
    const std::vector<float> frame(in.pixels(), 100.0f);
    const Profile p = in.integrate(frame);
    for (int b = 0; b < config.bins; ++b) {
      const auto i = std::size_t(b);
      QVERIFY(p.count[i] > 0);
      QVERIFY(std::fabs(p.intensity[i] - 100.0) < 1e-12);
      QVERIFY(std::fabs(p.std[i] - 10.0) < 1e-12);
      QVERIFY(std::fabs(p.sigma[i] - 10.0 / std::sqrt(p.count[i])) < 1e-12);
    }
    config.error_model = ErrorModel::Azimuthal;
    in.set_config(config);
    const Profile a = in.integrate(frame);
    for (int b = 0; b < config.bins; ++b) QCOMPARE(a.std[std::size_t(b)], 0.0);
  }

  // Threads change nothing: a large image, many bins, both splittings, clipping.
  void threads_give_identical_results() {
    const PoniGeometry poni = read_poni(reference_dir() / "untilted.poni");
    const PixelLayout layout = plain_layout(300, 400);
    std::vector<float> frame(layout.pixels());
    for (std::size_t k = 0; k < frame.size(); ++k) frame[k] = float((k * 7919) % 1000) * 0.1f;
    ThreadPool pool(4);
    for (const Splitting splitting : {Splitting::None, Splitting::BBox}) {
      IntegrationConfig config;
      config.bins = 5000;
      config.splitting = splitting;
      config.polarization = 0.9;
      Integrator serial(poni, layout, config), threaded(poni, layout, config);
      threaded.set_thread_pool(&pool);
      const Profile a = serial.integrate(frame), b = threaded.integrate(frame);
      QVERIFY(a.intensity == b.intensity && a.sigma == b.sigma && a.count == b.count);
      QVERIFY(serial.csr().pixel == threaded.csr().pixel);
      const Profile c = serial.sigma_clip(frame, {}), d = threaded.sigma_clip(frame, {});
      QVERIFY(c.intensity == d.intensity && c.std == d.std && c.count == d.count);
    }
  }

  // Segment placement: a segment's pixel (0, 0) corner at (y_px, x_px), quarter turns about it.
  void segment_placement() {
    PixelLayout l;
    l.segments = 2;
    l.rows = 2;
    l.cols = 3;
    l.placement = {{10.0, 4.0, 0}, {20.0, 8.0, 90}};
    const PixelCentre a = pixel_centre(l, 0, 1, 2);
    QCOMPARE(a.c1, 5.5);
    QCOMPARE(a.c2, 12.5);
    // Turned by 90 degrees (core/detector.hpp): the fast axis runs along +y (rows), the slow
    // axis along -x (columns).
    const PixelCentre b = pixel_centre(l, 1, 0, 2);
    QCOMPARE(b.c1, 8.0 + 2.5);
    QCOMPARE(b.c2, 20.0 - 0.5);
    const FrameExtent e = assembled_extent(l);
    QCOMPARE(e.rows, 11);  // segment 0 ends at row 4 + 2, segment 1 at row 8 + 3
    QCOMPARE(e.cols, 20);  // segment 1 spans columns 18..20, segment 0 10..13
    QCOMPARE(plain_layout(3, 4).pixels(), std::size_t(12));
    QVERIFY(error_of([] { plain_layout(0, 4); }).find("must be positive") != std::string::npos);
    DetectorDescription d = find_detector("epix10ka2m");
    const PixelLayout epix = layout_from_detector(d);
    QCOMPARE(epix.pixels(), std::size_t(16 * 352 * 384));
    d.placement.pop_back();
    QVERIFY(error_of([&] { layout_from_detector(d); }).find("places 15 segments") !=
            std::string::npos);
  }

  // A segment of 4 x 6 pixels in ASICs of 2 x 3 with double pixels at the ASIC edges (raw rows 1,
  // 2 and columns 2, 3), its corner at (y 4, x 10): positions and extents worked out by hand.
  void large_pixels_sit_and_span_where_the_sensor_has_them() {
    PixelLayout l;
    l.rows = 4;
    l.cols = 6;
    l.placement = {{10.0, 4.0, 0}};
    l.grid = {4, 6, 2, 3, 2};
    // Quadruple pixel (1, 2): rows [1, 3) and columns [2, 4) of the segment's normal pixels.
    const PixelCentre quad = pixel_centre(l, 0, 1, 2);
    QCOMPARE(quad.c1, 4.0 + 2.0);
    QCOMPARE(quad.c2, 10.0 + 3.0);
    const PixelSpan quad_span = pixel_span(l, 0, 1, 2);
    QCOMPARE(quad_span.min_c1, 5.0);
    QCOMPARE(quad_span.max_c1, 7.0);
    QCOMPARE(quad_span.min_c2, 12.0);
    QCOMPARE(quad_span.max_c2, 14.0);
    QCOMPARE(pixel_area(l, 1, 2), 4);
    QCOMPARE(pixel_area(l, 0, 3), 2);
    QCOMPARE(pixel_area(l, 3, 5), 1);
    // The last pixel ends 2 normal pixels further than its raw index says.
    const PixelSpan last = pixel_span(l, 0, 3, 5);
    QCOMPARE(last.max_c1, 4.0 + 6.0);
    QCOMPARE(last.max_c2, 10.0 + 8.0);
    const FrameExtent e = assembled_extent(l);
    QCOMPARE(e.rows, 10);
    QCOMPARE(e.cols, 18);
    // From a description: the grid comes with the placement.
    const PixelLayout jungfrau = layout_from_detector(find_detector("jungfrau4m"));
    QCOMPARE(jungfrau.grid.edge_factor, 2);
    QCOMPARE(pixel_centre(jungfrau, 0, 0, 256).c2, 258.0);
  }

  // The integrator over that segment (corner at the origin, PONI there, 0.1 m away, 75 um
  // pixels, no rotation). The double pixel (0, 3) spans columns [4, 6): r_mm bins of one pixel
  // (0.075 mm) from 0 to 0.6 mm. Its bbox, from its true corners, reaches r = 4 px (corner
  // (0, 4)) and sqrt(1 + 36) = 6.083 px (corner (1, 6)) around its centre r = sqrt(0.25 + 25) =
  // 5.025 px: delta 1.058 px, so bins 3 to 6 (a normal-sized box would give bins 4 and 5 only).
  // Its solid angle is twice a normal pixel's at its centre: 2 cos^3, cos = L / |(p1, p2, L)|.
  void large_pixels_split_and_normalise_over_their_true_area() {
    PixelLayout l;
    l.rows = 4;
    l.cols = 6;
    l.placement = {{0.0, 0.0, 0}};
    l.grid = {4, 6, 2, 3, 2};
    PoniGeometry poni;
    poni.distance = 0.1;
    poni.pixel1 = poni.pixel2 = 75e-6;
    IntegrationConfig c;
    c.unit = RadialUnit::RMm;
    c.splitting = Splitting::BBox;
    c.bins = 8;
    c.radial_range = std::pair{0.0, 0.6};
    Integrator integrator(poni, l, c);
    const CsrMatrix& csr = integrator.csr();
    std::vector<int> bins_of_double_pixel;
    for (int bin = 0; bin < csr.bins; ++bin)
      for (std::int32_t e = csr.row_start[std::size_t(bin)];
           e < csr.row_start[std::size_t(bin) + 1]; ++e)
        if (csr.pixel[std::size_t(e)] == 3) bins_of_double_pixel.push_back(bin);
    QCOMPARE(bins_of_double_pixel, (std::vector<int>{3, 4, 5, 6}));

    const auto cos_incidence_at = [](double c1, double c2) {
      const double p1 = c1 * 75e-6, p2 = c2 * 75e-6;
      return 0.1 / std::sqrt(p1 * p1 + p2 * p2 + 0.01);
    };
    const std::span<const float> norm = integrator.normalization();
    QCOMPARE(norm[3], float(2.0 * std::pow(cos_incidence_at(0.5, 5.0), 3)));
    QCOMPARE(norm[1 * 6 + 2], float(4.0 * std::pow(cos_incidence_at(2.0, 3.0), 3)));
    QCOMPARE(norm[0], float(std::pow(cos_incidence_at(0.5, 0.5), 3)));
  }

  // The per-bin helpers at their edges, as pyFAI's histogram has them.
  void bin_helpers_follow_pyfai() {
    const BinGrid g = make_bin_grid(4, 0.0, 1.0);
    QCOMPARE(g.max, 1.0 * (1.0 + 1.1920928955078125e-07));
    QCOMPARE(bin_index(g, 0.0), 0);
    QCOMPARE(bin_index(g, 1.0), 3);    // the largest position is inside
    QCOMPARE(bin_index(g, -0.1), 0);   // truncation towards zero, as pyFAI
    QCOMPARE(bin_index(g, -0.3), -1);  // more than one bin below
    QCOMPARE(bin_index(g, g.max), -1);
    QCOMPARE(bin_index(g, NAN), -1);
    QCOMPARE(upper_bound(-2.0), -2.0 / (1.0 + 1.1920928955078125e-07));
    const auto r = azimuth_range_radians({150.0, -150.0});
    QVERIFY(std::fabs(r.first - 150.0 / 180.0 * kPi) < 1e-15);
    QVERIFY(std::fabs(r.second - 210.0 / 180.0 * kPi) < 1e-15);

    // Azimuthal model: the one-pass update gives the weighted spread of signal/normalisation.
    BinAccumulator a;
    const float sig[] = {2.0f, 4.0f, 9.0f}, norm[] = {1.0f, 2.0f, 3.0f};
    for (int k = 0; k < 3; ++k) accumulate_azimuthal(a, PixelSample{sig[k], 0.0f, norm[k], 1.0f});
    // Mean 15/6; variance = sum w (x/w - mean)^2 weighted by w: 1*(2-2.5)^2 + 2*(2-2.5)^2 +
    // 3*(3-2.5)^2 = 1.5, in pyFAI's scaling of w^2: sum (s - w*mean)^2 / w.
    double expected = 0.0;
    for (int k = 0; k < 3; ++k) {
      const double d = sig[k] - norm[k] * 2.5;
      expected += d * d / norm[k];
    }
    QVERIFY(std::fabs(a.variance - expected) < 1e-12);
    QCOMPARE(a.count, 3.0);
    const BinResult res = finalize_bin(a, -1.0);
    QCOMPARE(res.intensity, 2.5);
    QCOMPARE(finalize_bin(BinAccumulator{}, -1.0).intensity, -1.0);
  }
};

QTEST_APPLESS_MAIN(TestIntegratePyfai)
#include "test_integrate_pyfai.moc"
