// livedrp-codec on the command line: .npy, HDF5 and raw inputs round-trip through compress and
// decompress with their values (checked element by element against what the test wrote), verify
// passes for both codecs and says how close the lossy one came, and bad input of every kind gives
// exit status 2 with a message that names the problem.
#include <QtTest>

#include <cmath>
#include <cstring>
#include <random>

#include "cli_process.hpp"
#include "exec/backend.hpp"
#include "io/array_file.hpp"
#include "io/hdf5_array.hpp"
#include "io/npy.hpp"

using namespace livedrp;

class TestCodecCli : public QObject {
  Q_OBJECT

  using Result = CliResult;
  static Result run(const QStringList& arguments) {
    return run_cli("LIVEDRP_CODEC_EXE", arguments);
  }

  QTemporaryDir dir_;
  QString path(const char* name) const { return dir_.path() + "/" + name; }

  // A pedestal with noise (uint16), and a photon-sparse calibrated image with NaN and infinity.
  static io::Array raw_image() {
    io::Array a;
    a.type = io::ElementType::UInt16;
    a.shape = {2, 352, 384};
    a.bytes.resize(a.elements() * 2);
    std::mt19937 random(7);
    std::normal_distribution<float> noise(0.0f, 4.0f);
    for (std::uint64_t i = 0; i < a.elements(); ++i)
      a.as<std::uint16_t>()[i] = std::uint16_t(1500.0f + noise(random) + float(i % 384) * 0.1f);
    return a;
  }
  static io::Array calibrated_image() {
    io::Array a;
    a.type = io::ElementType::Float32;
    a.shape = {352, 384};
    a.bytes.resize(a.elements() * 4);
    std::mt19937 random(8);
    std::exponential_distribution<float> photons(20.0f);
    for (std::uint64_t i = 0; i < a.elements(); ++i) a.as<float>()[i] = photons(random);
    a.as<float>()[10] = std::nanf("");
    a.as<float>()[11] = INFINITY;
    a.as<float>()[12] = 1e30f;
    return a;
  }

  void expect_bad_input(const QStringList& arguments, const QString& expected_text) {
    EXPECT_BAD_INPUT(run(arguments), expected_text);
  }

 private slots:
  void initTestCase() {
    QVERIFY2(QFile::exists(qEnvironmentVariable("LIVEDRP_CODEC_EXE")),
             "set LIVEDRP_CODEC_EXE to the livedrp-codec executable (CTest does)");
  }

  void npy_round_trips_bit_exact_and_compresses() {
    const io::Array a = raw_image();
    io::write_npy(path("raw.npy").toStdString(), a);
    Result r = run({"compress", "--codec", "lossless", path("raw.npy"), path("raw.ldz")});
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    QVERIFY(r.err.contains("ratio"));
    QVERIFY(QFileInfo(path("raw.ldz")).size() < qint64(a.bytes.size()) / 2);
    r = run({"decompress", path("raw.ldz"), path("back.npy")});
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    const io::Array b = io::read_npy(path("back.npy").toStdString());
    QCOMPARE(b.shape, a.shape);
    QCOMPARE(int(b.type), int(a.type));
    QVERIFY(b.bytes == a.bytes);
  }

  void hdf5_lossy_round_trip_stays_within_the_bound() {
    const io::Array a = calibrated_image();
    io::write_hdf5_dataset(path("cal.h5").toStdString(), "/entry/data/data", a);
    const QString input = path("cal.h5") + ":/entry/data/data";
    Result r =
        run({"compress", "--codec", "lossy", "--error-bound", "0.25", input, path("cal.ldz")});
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    r = run({"decompress", path("cal.ldz"), path("back.h5") + ":/images/0"});
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    const io::Array b = io::read_hdf5_dataset(path("back.h5").toStdString(), "/images/0");
    QCOMPARE(b.shape, a.shape);
    for (std::uint64_t i = 0; i < a.elements(); ++i) {
      const float x = a.as<float>()[i], y = b.as<float>()[i];
      if (!std::isfinite(x))
        QVERIFY(std::memcmp(&x, &y, 4) == 0);
      else
        QVERIFY2(std::fabs(double(y) - double(x)) <= 0.25,
                 qPrintable(QString("element %1").arg(i)));
    }
    r = run({"verify", "--codec", "lossy", "--error-bound", "0.25", input});
    QCOMPARE(r.exit_code, 0);
    QVERIFY(r.err.contains("verify passed"));
  }

  void raw_input_needs_dtype_and_shape() {
    const io::Array a = raw_image();
    io::write_array({path("raw.bin").toStdString(), {}}, io::ArrayFormat::Raw, a);
    expect_bad_input({"verify", path("raw.bin")}, "--dtype and --shape");
    expect_bad_input({"verify", "--dtype", "uint16", "--shape", "2x352x385", path("raw.bin")},
                     "needs");
    const Result r = run({"verify", "--dtype", "uint16", "--shape", "2x352x384", path("raw.bin")});
    QCOMPARE(r.exit_code, 0);
    QVERIFY(r.err.contains("bit-exact"));
  }

  void bad_input_is_named() {
    io::write_npy(path("raw.npy").toStdString(), raw_image());
    expect_bad_input({"compress", "--codec", "lossy", path("raw.npy"), path("x")}, "--error-bound");
    expect_bad_input(
        {"compress", "--codec", "lossy", "--error-bound", "0.5", path("raw.npy"), path("x")},
        "uint16");
    expect_bad_input({"decompress", path("raw.npy"), path("y.npy")},
                     "not a livedrp compressed stream");
    expect_bad_input({"compress", path("nothing.npy"), path("x")}, "does not exist");
    if (cuda_unavailable_reason())  // without a device the CUDA backend says why
      expect_bad_input({"compress", "--backend", "cuda", path("raw.npy"), path("x")},
                       "no usable CUDA device");
    QVERIFY(run({"compress", "--codec", "lossless", path("raw.npy"), path("ok.ldz")}).exit_code ==
            0);
    QFile file(path("ok.ldz"));
    QVERIFY(file.open(QIODevice::ReadWrite));
    const qint64 size = file.size();
    QVERIFY(file.resize(size / 2));
    file.close();
    expect_bad_input({"decompress", path("ok.ldz"), path("z.npy")}, "compressed stream");
  }
};

QTEST_GUILESS_MAIN(TestCodecCli)
#include "test_codec_cli.moc"
