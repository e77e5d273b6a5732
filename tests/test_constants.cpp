// Calibration constants in HDF5 (docs/formats.md): a saved file loads back identically, and damaged
// or foreign files are refused with an error that names the file and the dataset.
#include <QtTest>

#include <hdf5.h>

#include "calib/constants.hpp"
#include "core/error.hpp"
#include "sim/simulator.hpp"

using namespace livedrp;

namespace {

QString error_of(const std::function<void()>& action) {
  try {
    action();
  } catch (const InputError& e) {
    return QString::fromStdString(e.what());
  }
  return {};
}

// Writes a file with the given datasets (float32 planes, uint8 masks) of chosen shapes.
void write_file(const std::string& path, const std::vector<hsize_t>& plane_shape,
                const std::vector<hsize_t>& pixel_shape, bool with_config,
                std::uint8_t config_value, bool with_gain = true) {
  hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  auto write = [&](const char* name, const std::vector<hsize_t>& shape, hid_t type, double value) {
    std::size_t n = 1;
    for (auto e : shape) n *= e;
    hid_t space = H5Screate_simple(int(shape.size()), shape.data(), nullptr);
    hid_t dataset = H5Dcreate2(file, name, type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (type == H5T_NATIVE_FLOAT) {
      std::vector<float> values(n, float(value));
      H5Dwrite(dataset, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data());
    } else {
      std::vector<std::uint8_t> values(n, std::uint8_t(value));
      H5Dwrite(dataset, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data());
    }
    H5Dclose(dataset);
    H5Sclose(space);
  };
  write("pedestal", plane_shape, H5T_NATIVE_FLOAT, 1000.0);
  if (with_gain) write("gain", plane_shape, H5T_NATIVE_FLOAT, 0.1);
  write("mask", pixel_shape, H5T_NATIVE_UINT8, 0);
  if (with_config) write("config", pixel_shape, H5T_NATIVE_UINT8, config_value);
  H5Fclose(file);
}

}  // namespace

class TestConstants : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;
  std::string path(const char* name) const { return (dir_.path() + "/" + name).toStdString(); }

 private slots:
  void saved_constants_load_back_identically() {
    for (const char* name : {"epix10ka2m", "jungfrau4m"}) {
      const DetectorDescription d = find_detector(name);
      DetectorSimulator simulator(d, SimulatorConfig{});
      const CalibrationConstants& original = simulator.constants();
      const std::string file = path("roundtrip.h5");
      save_constants_hdf5(file, d, original);
      const CalibrationConstants loaded = load_constants_hdf5(file, d);
      QCOMPARE(loaded.modes, original.modes);
      QCOMPARE(loaded.pixels, original.pixels);
      QVERIFY(loaded.pixel_status == original.pixel_status);
      QCOMPARE(loaded.pedestal_gain.size(), original.pedestal_gain.size());
      QVERIFY(std::memcmp(loaded.pedestal_gain.data(), original.pedestal_gain.data(),
                          original.pedestal_gain.size() * sizeof(calib::PedestalGain)) == 0);
    }
  }

  void mask_uses_nonzero_as_bad_and_config_sets_modes() {
    const DetectorDescription d = find_detector("epix10ka2m");
    const std::string file = path("config.h5");
    write_file(file, {7, 16, 352, 384}, {16, 352, 384}, true, calib::kConfigAML);
    const CalibrationConstants c = load_constants_hdf5(file, d);
    QCOMPARE(int(c.pixel_status[0]), int(calib::kConfigAML));
    QCOMPARE(c.at(3, 5).pedestal, 1000.0f);
    QCOMPARE(c.at(6, 5).gain, 0.1f);
    QVERIFY(!c.masked(0));
  }

  void missing_file_and_non_hdf5_file_are_named() {
    const DetectorDescription d = find_detector("jungfrau4m");
    QVERIFY(
        error_of([&] { load_constants_hdf5(path("absent.h5"), d); }).contains("does not exist"));
    const std::string text = path("text.h5");
    QFile f(QString::fromStdString(text));
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("this is not HDF5");
    f.close();
    QVERIFY(error_of([&] { load_constants_hdf5(text, d); }).contains("not an HDF5 file"));
  }

  void missing_dataset_is_named() {
    const DetectorDescription d = find_detector("jungfrau4m");
    const std::string file = path("nogain.h5");
    write_file(file, {3, 8, 512, 1024}, {8, 512, 1024}, false, 0, false);
    const QString error = error_of([&] { load_constants_hdf5(file, d); });
    QVERIFY2(error.contains("/gain is missing"), qPrintable(error));
    QVERIFY(error.contains("nogain.h5"));
  }

  void wrong_shape_names_found_and_expected() {
    const DetectorDescription d = find_detector("jungfrau4m");
    const std::string file = path("shape.h5");
    write_file(file, {3, 8, 512, 512}, {8, 512, 1024}, false, 0);
    const QString error = error_of([&] { load_constants_hdf5(file, d); });
    QVERIFY2(error.contains("[3, 8, 512, 512]") && error.contains("[3, 8, 512, 1024]"),
             qPrintable(error));
  }

  void file_of_another_detector_is_refused() {
    const DetectorDescription jungfrau = find_detector("jungfrau4m");
    const DetectorDescription epix = find_detector("epix10ka2m");
    const std::string file = path("other.h5");
    save_constants_hdf5(file, jungfrau, identity_constants(jungfrau));
    const QString error = error_of([&] { load_constants_hdf5(file, epix); });
    QVERIFY2(error.contains("jungfrau4m") && error.contains("epix10ka2m"), qPrintable(error));
  }

  void epix_config_out_of_range_is_refused() {
    const DetectorDescription d = find_detector("epix10ka2m");
    const std::string file = path("badconfig.h5");
    write_file(file, {7, 16, 352, 384}, {16, 352, 384}, true, 9);
    const QString error = error_of([&] { load_constants_hdf5(file, d); });
    QVERIFY2(error.contains("/config value 9"), qPrintable(error));
  }
};

QTEST_GUILESS_MAIN(TestConstants)
#include "test_constants.moc"
