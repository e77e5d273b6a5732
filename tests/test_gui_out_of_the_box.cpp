// Issue 34, "out of the box": the window with no saved settings runs the simulated ePix10ka2M with
// every stage on (lossy compression, integration with the shipped geometry, peak finding), and on
// the CPU backend the radial-profile dock draws the simulator's powder rings at the radii the
// simulator drew them, and the hit-rate dock counts the simulator's hits. The shipped geometry
// follows the simulated detector chosen; for a source with no shipped geometry integration is
// off and the dock says why.
//
// Ring positions are computed here from the simulator's ring radii (pixels from its beam) and
// the shipped PONI's distance and wavelength: q = 4 pi / lambda * sin(atan(r * pixel / d) / 2).
// The drawn running-average curve's maximum near each ring, refined by a parabola through it and
// its neighbours, is mapped back to a radius and compared with the simulator's.
#include <QApplication>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFile>
#include <QMimeData>
#include <QSettings>
#include <QTemporaryDir>
#include <QTest>
#include <QUrl>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <vector>

#include <qwt_plot_curve.h>
#include <nlohmann/json.hpp>

#include "app/app_options.hpp"
#include "app/engine_host.hpp"
#include "app/main_window.hpp"
#include "app/peak_tuning_panel.hpp"
#include "app/run_control_widget.hpp"
#include "core/detector.hpp"
#include "integrate/shipped_geometry.hpp"
#include "sim/simulator.hpp"
#include "widgets/hit_rate_model.hpp"
#include "widgets/profile_model.hpp"
#include "widgets/radial_profile_plot.hpp"
#include "widgets/radial_profile_view.hpp"
#include "widgets/stats_model.hpp"

using namespace livedrp;
using livedrp::app::AppOptions;
using livedrp::app::MainWindow;
using livedrp::app::PeakTuningPanel;

namespace {

// Generous: the CPU backend builds the integrator's tables and generates the simulator's pool
// first, then runs all four stages on 2.2-Mpixel events on a loaded 2-core machine.
constexpr int kRunTimeoutMs = 600'000;
// A found ring within half a pixel of where the simulator drew it (rings are 2.5 px wide).
constexpr double kRingTolerancePx = 0.5;

// q in nm^-1 of a point `radius_px` from the beam on an untilted detector.
double q_of_radius(double radius_px, const integrate::PoniGeometry& poni, double pixel_m) {
  const double two_theta = std::atan(radius_px * pixel_m / poni.distance);
  return 4 * std::numbers::pi / *poni.wavelength * std::sin(two_theta / 2) * 1e-9;
}
double radius_of_q(double q_nm, const integrate::PoniGeometry& poni, double pixel_m) {
  const double two_theta = 2 * std::asin(q_nm * 1e9 * *poni.wavelength / (4 * std::numbers::pi));
  return poni.distance * std::tan(two_theta) / pixel_m;
}

// The drawn curve's maximum within [low, high] (q), refined by the parabola through it and its
// two neighbours; NaN when the window holds no interior maximum. The curve is first smoothed by
// a running mean of kSmoothing samples, symmetric, so a ring's crest stays where it is, while a
// bin holding one of the simulator's bright spots (a single pixel of hundreds to thousands of
// photons) weighs a fifth as much.
constexpr std::size_t kSmoothing = 5;
double peak_between(const QwtPlotCurve& curve, double low, double high) {
  const std::size_t n = curve.dataSize(), half = kSmoothing / 2;
  if (n < kSmoothing + 2) return std::nan("");
  std::vector<double> q(n), smooth(n, 0.0);
  for (std::size_t i = 0; i < n; ++i) q[i] = curve.sample(i).x();
  for (std::size_t i = half; i + half < n; ++i) {
    for (std::size_t k = i - half; k <= i + half; ++k) smooth[i] += curve.sample(k).y();
    smooth[i] /= double(kSmoothing);
  }
  std::size_t best = n;
  for (std::size_t i = half + 1; i + half + 1 < n; ++i) {
    if (q[i] < low || q[i] > high) continue;
    if (best == n || smooth[i] > smooth[best]) best = i;
  }
  if (best == n) return std::nan("");
  const double a = smooth[best - 1], b = smooth[best], c = smooth[best + 1];
  const double denominator = a - 2 * b + c;
  if (!(denominator < 0)) return q[best];
  // Vertex of the parabola through three points spaced (nearly) evenly in q.
  const double step = 0.5 * (q[best + 1] - q[best - 1]);
  return q[best] + 0.5 * step * (a - c) / denominator;
}

// The drawn value at the sample nearest to q.
double value_nearest(const QwtPlotCurve& curve, double q) {
  std::size_t nearest = 0;
  for (std::size_t i = 1; i < curve.dataSize(); ++i)
    if (std::abs(curve.sample(i).x() - q) < std::abs(curve.sample(nearest).x() - q)) nearest = i;
  return curve.sample(nearest).y();
}

AppOptions freshOptions(const QTemporaryDir& dir, const QString& name) {
  AppOptions options;
  options.settings_file = dir.filePath(name);  // a new file: no saved settings
  options.publish = "tcp://127.0.0.1:*";
  options.autostart = false;
  return options;
}

}  // namespace

class OutOfTheBoxTest : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;

 private slots:
  void initTestCase() { QVERIFY(dir_.isValid()); }

  void theDefaultConfigurationHasEveryStageOn() {
    MainWindow window(freshOptions(dir_, QStringLiteral("defaults.ini")));
    const EngineConfig config = window.engineConfig();
    QCOMPARE(config.source, std::string("sim:epix10ka2m"));
    QCOMPARE(config.compression.codec, std::string("lossy"));
    QVERIFY(config.integration.enabled);
    QCOMPARE(config.integration.poni, std::string("builtin:epix10ka2m"));
    QVERIFY(config.peak_finding.enabled);
    // The engine takes it as it is: the shipped geometry resolves.
    QVERIFY(integrate::load_poni(config.integration.poni).wavelength.has_value());
    QVERIFY2(window.radialProfileView()->placeholderText().contains("builtin:epix10ka2m"),
             qPrintable(window.radialProfileView()->placeholderText()));
  }

  void theShippedGeometryFollowsTheSimulatedDetector() {
    MainWindow window(freshOptions(dir_, QStringLiteral("follow.ini")));
    QComboBox* source = window.runControl()->sourceCombo();
    source->setCurrentText(QStringLiteral("sim:jungfrau4m"));
    QVERIFY(window.engineConfig().integration.enabled);
    QCOMPARE(window.engineConfig().integration.poni, std::string("builtin:jungfrau4m"));

    // A replay: no shipped geometry, integration off, and the dock says why.
    source->setCurrentText(QStringLiteral("replay:/data/run0001.h5"));
    QVERIFY(!window.engineConfig().integration.enabled);
    QVERIFY(window.engineConfig().peak_finding.enabled);
    const QString replay = window.radialProfileView()->placeholderText();
    QVERIFY2(replay.contains("azimuthal integration is off") && replay.contains("replay") &&
                 replay.contains("sim:epix10ka2m") && replay.contains("integration.poni"),
             qPrintable(replay));

    // A simulated detector of one's own description: no geometry ships for it either.
    source->setCurrentText(QStringLiteral("sim:/home/me/my_detector.json"));
    QVERIFY(!window.engineConfig().integration.enabled);
    QVERIFY2(window.radialProfileView()->placeholderText().contains(
                 "no geometry ships for the simulated detector '/home/me/my_detector.json'"),
             qPrintable(window.radialProfileView()->placeholderText()));

    // A live stream.
    source->setCurrentText(QStringLiteral("sls:tcp://127.0.0.1:30001"));
    QVERIFY(!window.engineConfig().integration.enabled);
    QVERIFY(window.radialProfileView()->placeholderText().contains("live detector stream"));

    // Back on a simulated detector with a shipped geometry, integration comes back on.
    source->setCurrentText(QStringLiteral("sim:epix10ka2m"));
    QVERIFY(window.engineConfig().integration.enabled);
    QCOMPARE(window.engineConfig().integration.poni, std::string("builtin:epix10ka2m"));
  }

  void aLiveStreamIsOfferedWithItsDetector() {
    MainWindow window(freshOptions(dir_, QStringLiteral("stream.ini")));
    auto* control = window.runControl();
    QComboBox* source = control->sourceCombo();
    QComboBox* detector = control->streamDetectorCombo();
    // Both stream kinds are offered, at the stand-in publishers' documented endpoints.
    for (const char* offered : {"sls:tcp://127.0.0.1:30001", "dectris:tcp://127.0.0.1:31001"})
      QVERIFY2(source->findText(QString::fromLatin1(offered)) >= 0, offered);
    // The stream detector field is for streams only; it offers every built-in detector.
    QVERIFY(!detector->isEnabled());
    QVERIFY(detector->findText(QStringLiteral("jungfrau4m")) >= 0);
    QVERIFY(detector->findText(QStringLiteral("eiger2x4m")) >= 0);
    source->setCurrentText(QStringLiteral("sls:tcp://10.0.0.5:30001,tcp://10.0.0.5:30002"));
    QVERIFY(detector->isEnabled());
    detector->setCurrentText(QStringLiteral("jungfrau4m"));
    EngineConfig config = window.engineConfig();
    QCOMPARE(config.source, std::string("sls:tcp://10.0.0.5:30001,tcp://10.0.0.5:30002"));
    QCOMPARE(config.stream.detector, std::string("jungfrau4m"));
    // Empty: the source's own detector (a Dectris start message's).
    source->setCurrentText(QStringLiteral("dectris:tcp://127.0.0.1:31001"));
    detector->setCurrentText(QString());
    QCOMPARE(window.engineConfig().stream.detector, std::string());
    // A simulated source leaves the field disabled and the configuration's stream section alone.
    source->setCurrentText(QStringLiteral("sim:epix10ka2m"));
    QVERIFY(!detector->isEnabled());
  }

  void aPoniTheUserGaveIsKept() {
    // A saved configuration naming its own PONI file keeps it whatever the source.
    const QString ini = dir_.filePath(QStringLiteral("own.ini"));
    {
      EngineConfig own;
      own.integration.enabled = true;
      own.integration.poni = "/beamline/geometry/run12.poni";
      QSettings settings(ini, QSettings::IniFormat);
      settings.setValue("engine/config", QString::fromStdString(own.to_json().dump()));
    }
    AppOptions options;
    options.settings_file = ini;
    options.autostart = false;
    MainWindow window(options);
    window.runControl()->sourceCombo()->setCurrentText(QStringLiteral("sim:jungfrau4m"));
    QCOMPARE(window.engineConfig().integration.poni, std::string("/beamline/geometry/run12.poni"));
    QVERIFY(window.engineConfig().integration.enabled);
  }

  void aConfigurationFileIsTheStartingPointAndRoundTrips() {
    // `livedrp --config FILE.json` starts from the file (over the saved settings), the options
    // over it; File > Save Configuration writes what the next start would run, and File > Open
    // Configuration reads it back; a bad file changes nothing and says what is wrong.
    EngineConfig file_config;
    file_config.source = "sim:jungfrau4m";
    file_config.integration.enabled = true;
    file_config.integration.poni = "builtin:jungfrau4m";
    file_config.integration.npt = 500;
    file_config.peak_finding.enabled = true;
    file_config.peak_finding.params.minimum_snr = 7;
    AppOptions options = freshOptions(dir_, QStringLiteral("config.ini"));
    options.config = file_config;
    options.config_file = QStringLiteral("run.json");
    options.rate_hz = 50;
    MainWindow window(options);
    EngineConfig config = window.engineConfig();
    QCOMPARE(config.source, std::string("sim:jungfrau4m"));
    QCOMPARE(config.integration.npt, 500);
    QCOMPARE(config.integration.poni, std::string("builtin:jungfrau4m"));
    QCOMPARE(config.peak_finding.params.minimum_snr, 7.0f);
    QCOMPARE(config.rate_hz, 50.0);
    QVERIFY(window.logText().contains("configuration read from run.json"));

    const QString saved = dir_.filePath(QStringLiteral("saved.json"));
    QVERIFY(window.saveConfiguration(saved));
    QVERIFY(load_engine_config_file(saved.toStdString()).to_json() == config.to_json());

    EngineConfig other = config;
    other.integration.npt = 321;
    other.compression.codec = "lossless";
    const QString other_path = dir_.filePath(QStringLiteral("other.json"));
    {
      QFile file(other_path);
      QVERIFY(file.open(QIODevice::WriteOnly));
      file.write(QByteArray::fromStdString(other.to_json().dump()));
    }
    QVERIFY(window.openConfiguration(other_path));
    QCOMPARE(window.engineConfig().integration.npt, 321);
    QCOMPARE(window.engineConfig().compression.codec, std::string("lossless"));

    nlohmann::json bad = other.to_json();
    bad["peak_finding"]["params"]["minimum_snr"] = "high";
    const QString bad_path = dir_.filePath(QStringLiteral("bad.json"));
    {
      QFile file(bad_path);
      QVERIFY(file.open(QIODevice::WriteOnly));
      file.write(QByteArray::fromStdString(bad.dump()));
    }
    QVERIFY(!window.openConfiguration(bad_path));
    QVERIFY2(window.logText().contains("configuration not opened") &&
                 window.logText().contains("minimum_snr"),
             qPrintable(window.logText()));
    QCOMPARE(window.engineConfig().integration.npt, 321);  // unchanged
  }

  void theTuningPanelsApplyWithNoRunChangesTheNextRun() {
    AppOptions options = freshOptions(dir_, QStringLiteral("tuning.ini"));
    options.backend = "cpu";
    options.rate_hz = 5;
    MainWindow window(options);
    QVERIFY(!window.engineHost()->isActive());
    PeakTuningPanel* panel = window.peakTuning();
    qobject_cast<QDoubleSpinBox*>(panel->field("minimum_snr"))->setValue(6.5);
    QVERIFY(panel->apply());
    QCOMPARE(window.engineConfig().peak_finding.params.minimum_snr, 6.5f);
    QCOMPARE(panel->paramsVersion().value_or(99), std::uint64_t(0));  // no run has them yet
    QCOMPARE(double(panel->inForce().minimum_snr), 6.5);
    QVERIFY(panel->refusalText().isEmpty());
    QVERIFY(window.logText().contains("apply from the next start"));

    // A name the engine does not know is refused here as the engine would, and changes nothing.
    emit panel->applyRequested({{"params", {{"minimum_snrr", 3}}}});
    QVERIFY2(panel->refusalText().contains(QStringLiteral("minimum_snrr")),
             qPrintable(panel->refusalText()));
    QCOMPARE(window.engineConfig().peak_finding.params.minimum_snr, 6.5f);

    // The next start runs with them.
    window.startRun();
    QTRY_VERIFY_WITH_TIMEOUT(window.engineHost()->isActive(), 60000);
    // The host takes the configuration on its thread: its copy follows once the engine started.
    QTRY_COMPARE_WITH_TIMEOUT(window.engineHost()->currentConfig().peak_finding.params.minimum_snr,
                              6.5f, 60000);
    window.stopRun();
    QTRY_VERIFY_WITH_TIMEOUT(!window.engineHost()->isActive(), 60000);
  }

  void droppedFilesDoTheObviousThing() {
    AppOptions options = freshOptions(dir_, QStringLiteral("drops.ini"));
    MainWindow window(options);
    const auto drop = [&window](const QStringList& paths) {
      QMimeData mime;
      QList<QUrl> urls;
      for (const QString& path : paths) urls << QUrl::fromLocalFile(path);
      mime.setUrls(urls);
      QDragEnterEvent enter(QPoint(10, 10), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
      QApplication::sendEvent(&window, &enter);
      if (!enter.isAccepted()) return false;
      QDropEvent dropped(QPointF(10, 10), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
      QApplication::sendEvent(&window, &dropped);
      return true;
    };

    // A pipeline configuration opens.
    EngineConfig config = window.engineConfig();
    config.integration.npt = 777;
    const QString json_path = dir_.filePath(QStringLiteral("dropped.json"));
    {
      QFile file(json_path);
      QVERIFY(file.open(QIODevice::WriteOnly));
      file.write(QByteArray::fromStdString(config.to_json().dump()));
    }
    QVERIFY(drop({json_path}));
    QCOMPARE(window.engineConfig().integration.npt, 777);

    // A PONI geometry becomes integration's, checked first: one that does not parse is refused.
    const QString poni_path = dir_.filePath(QStringLiteral("beamline.poni"));
    {
      QFile file(poni_path);
      QVERIFY(file.open(QIODevice::WriteOnly));
      const auto& shipped = integrate::shipped_geometries();
      const auto it = std::find_if(shipped.begin(), shipped.end(),
                                   [](const auto& g) { return g.name == "epix10ka2m"; });
      QVERIFY(it != shipped.end());
      file.write(it->poni.data(), qint64(it->poni.size()));
    }
    QVERIFY(drop({poni_path}));
    QCOMPARE(window.engineConfig().integration.poni, poni_path.toStdString());
    QVERIFY(window.engineConfig().integration.enabled);
    const QString bad_poni = dir_.filePath(QStringLiteral("bad.poni"));
    {
      QFile file(bad_poni);
      QVERIFY(file.open(QIODevice::WriteOnly));
      file.write("Distance: far\n");
    }
    QVERIFY(drop({bad_poni}));
    QVERIFY2(
        window.logText().contains("geometry not taken") && window.logText().contains("bad.poni"),
        qPrintable(window.logText()));
    QCOMPARE(window.engineConfig().integration.poni, poni_path.toStdString());

    // Other kinds are not accepted for dropping, and openDroppedFile says what it takes.
    QVERIFY(!drop({dir_.filePath(QStringLiteral("notes.txt"))}));
    QVERIFY(!window.openDroppedFile(dir_.filePath(QStringLiteral("notes.txt"))));
    QVERIFY(window.logText().contains("drop a pipeline configuration (.json)"));

    // An HDF5 file replays: the run's source becomes it.
    const QString h5 = dir_.filePath(QStringLiteral("run0001.h5"));
    QVERIFY(drop({h5}));
    QTRY_COMPARE_WITH_TIMEOUT(QString::fromStdString(window.engineConfig().source),
                              QStringLiteral("replay:") + h5, 60000);
    window.stopRun();
    QTRY_VERIFY_WITH_TIMEOUT(!window.engineHost()->isActive(), 60000);
  }

  void theDefaultRunDrawsTheSimulatorsRingsAndCountsItsHits() {
    AppOptions options = freshOptions(dir_, QStringLiteral("run.ini"));
    options.backend = "cpu";
    options.autostart = true;
    MainWindow window(options);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    const EngineConfig config = window.engineConfig();
    QVERIFY(window.engineHost()->isActive());

    // The truth, from a simulator built here with the engine's settings.
    const DetectorDescription detector = find_detector("epix10ka2m");
    const DetectorSimulator simulator(detector, SimulatorConfig{});
    QCOMPARE(config.seed, simulator.config().seed);
    QCOMPARE(config.hit_fraction, simulator.config().hit_fraction);
    const std::uint64_t pool = std::uint64_t(config.simulator_pool);
    // The pool holds the hit fraction in whole events: the earliest hits and non-hits, ascending
    // (simulator.pool_selection "hit_fraction"), found here from the simulator's hit flags.
    QCOMPARE(config.simulator_pool_selection, std::string("hit_fraction"));
    const auto pool_hits = std::uint64_t(std::llround(config.hit_fraction * double(pool)));
    std::vector<std::uint64_t> pool_events;
    std::uint64_t hits_taken = 0;
    for (std::uint64_t index = 0; pool_events.size() < pool; ++index) {
      const bool hit = simulator.is_hit(index);
      if (hit ? hits_taken < pool_hits : pool_events.size() - hits_taken < pool - pool_hits) {
        hits_taken += hit ? 1 : 0;
        pool_events.push_back(index);
      }
    }
    QVERIFY(pool_hits > 0);

    // A profile averaged over every event of the simulator's pool, drawn.
    widgets::ProfileModel* profiles = window.profileModel();
    QTRY_VERIFY_WITH_TIMEOUT(profiles->hasProfile() && profiles->latest().average_events >= pool,
                             kRunTimeoutMs);
    QCOMPARE(profiles->latest().unit, protocol::RadialUnit::QInverseNm);
    widgets::RadialProfileView* view = window.radialProfileView();
    QVERIFY(!view->showingPlaceholder());
    const QwtPlotCurve& curve = *view->plot()->averageCurve();
    QTRY_VERIFY_WITH_TIMEOUT(curve.dataSize() > std::size_t(config.integration.npt) / 2,
                             kRunTimeoutMs);

    const integrate::PoniGeometry poni = integrate::load_poni(config.integration.poni);
    const double pixel_m = detector.pixel_size_um * 1e-6;
    const double sigma_px = simulator.config().ring_sigma_px;
    const std::vector<double>& rings = simulator.powder_geometry().ring_radii_px;
    QCOMPARE(rings.size(), simulator.config().ring_radius_fractions.size());
    for (const double ring_px : rings) {
      const double found_q = peak_between(curve, q_of_radius(ring_px - 3 * sigma_px, poni, pixel_m),
                                          q_of_radius(ring_px + 3 * sigma_px, poni, pixel_m));
      const double found_px = radius_of_q(found_q, poni, pixel_m);
      qInfo("ring at %.3f px (q %.4f nm^-1): drawn at %.3f px (q %.4f nm^-1)", ring_px,
            q_of_radius(ring_px, poni, pixel_m), found_px, found_q);
      QVERIFY2(std::abs(found_px - ring_px) <= kRingTolerancePx,
               qPrintable(QString("ring at %1 px drawn at %2 px").arg(ring_px).arg(found_px)));
    }
    // Between rings the profile is the flat background, well under a ring's crest.
    const double between =
        value_nearest(curve, q_of_radius(0.5 * (rings[0] + rings[1]), poni, pixel_m));
    const double crest = value_nearest(curve, q_of_radius(rings[0], poni, pixel_m));
    QVERIFY2(crest > 3 * between,
             qPrintable(QString("crest %1, between %2").arg(crest).arg(between)));

    // The hit rate over at least two passes of the pool, against the simulator's hit flags of
    // the same events (run event k is pool event k % pool: the source cycles its pool).
    widgets::HitRateModel* hit_rate = window.hitRateModel();
    QTRY_VERIFY_WITH_TIMEOUT(hit_rate->latest() && hit_rate->latest()->total_events >= 2 * pool,
                             kRunTimeoutMs);
    const protocol::PeakFindingStats block = *hit_rate->latest();
    std::uint64_t true_hits = 0;
    for (std::uint64_t k = 0; k < block.total_events; ++k)
      true_hits += simulator.is_hit(pool_events[k % pool]) ? 1 : 0;
    qInfo(
        "%llu events searched: %llu hits found, %llu true (hit fraction %.4f found, %.4f true, "
        "%.2f configured); %llu peaks",
        (unsigned long long)block.total_events, (unsigned long long)block.total_hits,
        (unsigned long long)true_hits, double(block.total_hits) / double(block.total_events),
        double(true_hits) / double(block.total_events), config.hit_fraction,
        (unsigned long long)block.total_peaks);
    QVERIFY(true_hits > 0);  // the pool holds hits, or the comparison would say little
    // Within 5% of the true hits, at least one (test_peak_defaults' tolerance).
    const double tolerance = std::max(1.0, 0.05 * double(true_hits));
    QVERIFY2(std::abs(double(block.total_hits) - double(true_hits)) <= tolerance,
             qPrintable(QString("%1 hits found, %2 true").arg(block.total_hits).arg(true_hits)));
    QVERIFY(hit_rate->sampleCount() > 0);  // the chart has points to draw

    // Compression is on too: the stats carry the lossy codec's ratio.
    QTRY_VERIFY_WITH_TIMEOUT(
        window.model()->hasStats() && window.model()->latestStats().compression.has_value(),
        kRunTimeoutMs);
    const protocol::CompressionStats& compression = *window.model()->latestStats().compression;
    QCOMPARE(compression.codec, std::string("lossy"));
    QVERIFY(compression.total_bytes_out > 0 &&
            compression.total_bytes_in > compression.total_bytes_out);

    window.stopRun();
    QTRY_VERIFY_WITH_TIMEOUT(!window.engineHost()->isActive(), kRunTimeoutMs);
  }
};

QTEST_MAIN(OutOfTheBoxTest)
#include "test_gui_out_of_the_box.moc"
