// The live writers on the CUDA backend (issue 36): with several lanes, events come back from the
// device out of order and the reorder stage holds some back, so a hit's calibrated image is read
// either when it is released (in order) or when it returns (held back: LiveWriters::keep_held).
// Either way every frame of the hit files must be its event's calibration, bit for bit (the
// device calibration is the CPU's, test_gpu_calibration), with peakfinder8's list for it, in the
// run's order; the profile series holds every event's profile within the GPU integrator's
// tolerance (test_gpu_engine_integration's), in order; the average image (every event read back,
// held back or not) is the CPU's mean of the calibrated events, bit for bit.
#include <QTemporaryDir>
#include <QtTest>

#include <filesystem>

#include "gpu_test_support.hpp"
#include "hit_file_support.hpp"
#include "live_integration_support.hpp"
#include "live_peaks_support.hpp"
#include "sim/simulator_settings.hpp"

using namespace livedrp;
using namespace livedrp::hit_file_test;

namespace {

constexpr int kMaxPeaks = 64;
constexpr double kGpuTolerance = 1e-5;  // relative per bin, as test_gpu_engine_integration

}  // namespace

class TestGpuLiveWriters : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() { LIVEDRP_SKIP_WITHOUT_GPU(); }

  void hits_profiles_and_average_of_a_several_lane_run_are_the_cpu_references() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const DetectorDescription detector = find_detector("epix10ka2m");
    EngineConfig c;
    c.source = "sim:epix10ka2m";
    c.backend = "cuda";
    c.publish = "";
    c.cpu_threads = 2;
    c.events = 24;
    c.full_ring = "wait";
    c.simulator_pool = 4;
    c.simulator_pool_selection = "hit_fraction";
    c.hit_fraction = 0.5;
    c.runtime.streams = 4;
    c.runtime.slots_per_stream = 2;
    c.peak_finding.enabled = true;
    c.peak_finding.params.min_peaks_for_hit = 2;
    c.peak_finding.params.max_num_peaks = kMaxPeaks;
    c.image.publish_hz = 0;
    ThreadPool pool(4);
    const DetectorSimulator simulator = live_peaks_test::engine_simulator(c, pool);
    c.integration.enabled = true;
    c.integration.poni =
        live_integration_test::write_poni(dir, detector, simulator.powder_geometry());
    c.integration.mask = live_integration_test::write_mask(dir, detector);
    c.integration.npt = 200;
    c.integration.polarization = 0.95;
    c.write.hits_directory = dir.filePath("hits").toStdString();
    c.write.hits_per_file = 5;
    c.write.profiles = dir.filePath("profiles.h5").toStdString();
    c.write.average = dir.filePath("average.h5").toStdString();

    WriteStatus written;
    {
      Engine engine(c);
      engine.start();
      engine.wait();
      const RunSummary summary = engine.summary();
      QVERIFY2(summary.error.empty(), summary.error.c_str());
      QCOMPARE(summary.stats.events_processed, c.events);
      written = engine.write_status();
    }
    QVERIFY2(written.hits.error.empty(), written.hits.error.c_str());
    QCOMPARE(written.hits.dropped + written.hits.failed, std::uint64_t(0));
    QCOMPARE(written.profiles.written, c.events);
    QCOMPARE(written.average.written, c.events);

    // The references, computed here on the CPU.
    const std::vector<std::uint64_t> indices = simulator_pool_indices(
        simulator, std::size_t(c.simulator_pool), c.simulator_pool_selection);
    peaks::PeakFinder8 finder =
        live_peaks_test::independent_finder(detector, simulator.constants(), c.peak_finding.params);
    integrate::Integrator integrator =
        live_integration_test::independent_integrator(c, detector, simulator.constants());
    integrator.set_thread_pool(&pool);
    std::vector<std::vector<float>> calibrated;
    std::vector<peaks::PeakList> lists;
    std::vector<std::vector<double>> profiles;
    std::vector<std::size_t> hits;
    std::vector<std::uint8_t> raw(detector.raw_event_bytes());
    for (std::uint64_t i = 0; i < c.events; ++i) {
      simulator.generate(indices[i % indices.size()], raw.data(), nullptr, &pool);
      std::vector<float> image(detector.pixels());
      calibrate_event_cpu(detector, simulator.constants(), c.calibration, raw.data(), image.data(),
                          &pool);
      lists.push_back(finder.find(image.data(), &pool));
      if (lists.back().hit) hits.push_back(std::size_t(i));
      profiles.push_back(profile_intensities(integrator.integrate(image)));
      calibrated.push_back(std::move(image));
    }
    QVERIFY(!hits.empty() && hits.size() < c.events);
    QCOMPARE(written.hits.written, std::uint64_t(hits.size()));

    const peaks::SlabLayout slab = peaks::slab_layout(detector);
    std::vector<HitFrame> frames;
    for (const std::string& path : written.hits.files) {
      QString problem;
      for (HitFrame& frame :
           read_hit_frames(path, hsize_t(slab.height), hsize_t(slab.width), kMaxPeaks, problem))
        frames.push_back(std::move(frame));
      QVERIFY2(problem.isEmpty(), qPrintable(problem));
    }
    QCOMPARE(frames.size(), hits.size());
    for (std::size_t j = 0; j < frames.size(); ++j) {
      QCOMPARE(frames[j].sequence, simulator.header_for(hits[j]).sequence);
      const QString difference = compare_hit_frame(frames[j], calibrated[hits[j]], lists[hits[j]]);
      QVERIFY2(difference.isEmpty(), qPrintable(difference));
    }

    const hid_t file = H5Fopen(c.write.profiles.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    QVERIFY(file >= 0);
    const auto intensity =
        read_dataset<double>(file, "/entry/profiles/intensity", H5T_NATIVE_DOUBLE);
    const auto sequence =
        read_dataset<std::uint64_t>(file, "/entry/profiles/event_sequence", H5T_NATIVE_UINT64);
    H5Fclose(file);
    QVERIFY(intensity.ok && sequence.ok);
    const std::size_t bins = std::size_t(c.integration.npt);
    QCOMPARE(intensity.values.size(), std::size_t(c.events) * bins);
    for (std::size_t i = 0; i < c.events; ++i) {
      QCOMPARE(sequence.values[i], simulator.header_for(i).sequence);
      const std::vector<double> row(intensity.values.begin() + long(i * bins),
                                    intensity.values.begin() + long((i + 1) * bins));
      const long diff = live_integration_test::first_difference(row, profiles[i], kGpuTolerance);
      QVERIFY2(diff < 0, qPrintable(QString("event %1 bin %2").arg(i).arg(diff)));
    }

    const ExpectedAverage average = expected_average(detector, calibrated);
    const hid_t average_file = H5Fopen(c.write.average.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    QVERIFY(average_file >= 0);
    const auto image = read_dataset<float>(average_file, "/entry/average/data", H5T_NATIVE_FLOAT);
    H5Fclose(average_file);
    QVERIFY(image.ok);
    QCOMPARE(image.shape, (std::vector<hsize_t>{average.height, average.width}));
    QVERIFY(std::memcmp(image.values.data(), average.image.data(),
                        average.image.size() * sizeof(float)) == 0);
  }
};

QTEST_GUILESS_MAIN(TestGpuLiveWriters)
#include "test_gpu_live_writers.moc"
