// Arrays in and out of the offline commands: NumPy .npy (checked against bytes NumPy itself
// writes, and against numpy.load through python3 when it is installed), HDF5 datasets (including
// chunked and gzip-compressed ones written by h5py), raw binary; and every kind of bad input
// answered with an error that names the file and what is wrong.
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <cstring>
#include <fstream>
#include <functional>
#include <string>

#include "core/error.hpp"
#include "io/array_file.hpp"
#include "io/hdf5_array.hpp"
#include "io/npy.hpp"

using namespace livedrp;
using namespace livedrp::io;

namespace {

std::string error_of(const std::function<void()>& action) {
  try {
    action();
  } catch (const InputError& e) {
    return e.what();
  }
  return {};
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

// The bytes numpy.save writes for np.arange(6, dtype='<u2').reshape(2, 3) (NumPy 1.24, format
// 1.0): 10-byte preamble, header padded with spaces to 128 bytes in all, then the data.
std::string numpy_u2_2x3() {
  std::string header = "{'descr': '<u2', 'fortran_order': False, 'shape': (2, 3), }";
  header.append(128 - 10 - header.size() - 1, ' ');
  header.push_back('\n');
  std::string bytes("\x93NUMPY\x01\x00", 8);
  bytes.push_back(char(header.size() & 0xFF));
  bytes.push_back(char(header.size() >> 8));
  bytes += header;
  for (std::uint16_t v = 0; v < 6; ++v) bytes.append(reinterpret_cast<const char*>(&v), 2);
  return bytes;
}

// Debian's interpreter, where the installer puts numpy and h5py (a python3 earlier in PATH, e.g.
// pyenv's, may lack them).
QString python() {
  return QFile::exists("/usr/bin/python3") ? QStringLiteral("/usr/bin/python3")
                                           : QStringLiteral("python3");
}

bool have_python_numpy_h5py() {
  QProcess p;
  p.start(python(), {"-c", "import numpy, h5py"});
  return p.waitForFinished(30000) && p.exitStatus() == QProcess::NormalExit && p.exitCode() == 0;
}

}  // namespace

class TestArrayIo : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;
  std::string path(const char* name) { return dir_.filePath(name).toStdString(); }

 private slots:
  void reads_what_numpy_writes() {
    write_bytes(path("a.npy"), numpy_u2_2x3());
    const Array a = read_npy(path("a.npy"));
    QCOMPARE(int(a.type), int(ElementType::UInt16));
    QCOMPARE(a.shape, (std::vector<std::uint64_t>{2, 3}));
    for (std::uint16_t i = 0; i < 6; ++i) QCOMPARE(a.as<std::uint16_t>()[i], i);
  }

  void writes_what_numpy_writes() {
    Array a;
    a.type = ElementType::UInt16;
    a.shape = {2, 3};
    a.bytes.resize(12);
    for (std::uint16_t i = 0; i < 6; ++i) std::memcpy(a.bytes.data() + 2 * i, &i, 2);
    write_npy(path("b.npy"), a);
    std::ifstream in(path("b.npy"), std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    QCOMPARE(bytes, numpy_u2_2x3());
  }

  void npy_round_trips_every_type_and_shape() {
    const std::vector<std::vector<std::uint64_t>> shapes = {{},  {0},       {1},
                                                            {7}, {3, 0, 2}, {2, 3, 4, 5}};
    for (int t = 0; t <= int(ElementType::Float64); ++t)
      for (const auto& shape : shapes) {
        Array a;
        a.type = ElementType(t);
        a.shape = shape;
        a.bytes.resize(a.elements() * element_bytes(a.type));
        for (std::size_t i = 0; i < a.bytes.size(); ++i) a.bytes[i] = std::uint8_t(i * 37 + t);
        write_npy(path("c.npy"), a);
        const Array b = read_npy(path("c.npy"));
        QCOMPARE(int(b.type), t);
        QCOMPARE(b.shape, shape);
        QVERIFY(b.bytes == a.bytes);
      }
  }

  void bad_npy_files_are_named_with_the_reason() {
    std::string good = numpy_u2_2x3();
    auto with = [&](std::string bytes) {
      write_bytes(path("bad.npy"), bytes);
      return error_of([&] { read_npy(path("bad.npy")); });
    };
    QVERIFY(with("hello").find("too short") != std::string::npos);
    QVERIFY(with("not a numpy file at all").find("no magic") != std::string::npos);
    std::string big_endian = good;
    big_endian.replace(big_endian.find("<u2"), 3, ">u2");
    QVERIFY(with(big_endian).find("big endian") != std::string::npos);
    std::string fortran = good;
    fortran.replace(fortran.find("False"), 5, "True ");
    QVERIFY(with(fortran).find("Fortran") != std::string::npos);
    std::string complex = good;
    complex.replace(complex.find("<u2"), 3, "<c8");
    QVERIFY(with(complex).find("'<c8' is not one livedrp reads") != std::string::npos);
    std::string version = good;
    version[6] = 9;
    QVERIFY(with(version).find("format version 9") != std::string::npos);
    QVERIFY(with(good + "xx").find("bytes follow") != std::string::npos);
    // Every truncation: an error, never a crash or a short array.
    for (std::size_t n = 0; n < good.size(); ++n) {
      const std::string e = with(good.substr(0, n));
      QVERIFY2(!e.empty(), qPrintable(QString("truncated to %1 bytes was accepted").arg(n)));
      QVERIFY(e.find(path("bad.npy")) != std::string::npos);
    }
    QVERIFY(error_of([&] { read_npy(path("missing.npy")); }).find("cannot be opened") !=
            std::string::npos);
  }

  void hdf5_round_trips_and_names_missing_datasets() {
    Array a;
    a.type = ElementType::Float32;
    a.shape = {4, 5};
    a.bytes.resize(80);
    for (int i = 0; i < 20; ++i) {
      const float v = 0.5f * float(i) - 3.0f;
      std::memcpy(a.bytes.data() + 4 * i, &v, 4);
    }
    write_hdf5_dataset(path("d.h5"), "/entry/data/data", a);
    const Array b = read_array(parse_array_location(path("d.h5") + ":/entry/data/data"));
    QCOMPARE(int(b.type), int(ElementType::Float32));
    QCOMPARE(b.shape, a.shape);
    QVERIFY(b.bytes == a.bytes);
    QVERIFY(error_of([&] {
              read_hdf5_dataset(path("d.h5"), "/entry/nothing/data");
            }).find("/entry/nothing does not exist") != std::string::npos);
    QVERIFY(error_of([&] {
              read_hdf5_dataset(path("d.h5"), "/entry/data");
            }).find("not a dataset") != std::string::npos);
    QVERIFY(error_of([&] {
              read_array(parse_array_location(path("d.h5")));
            }).find("name the dataset") != std::string::npos);
    write_bytes(path("broken.h5"), std::string("\x89HDF\r\n\x1a\n", 8) + std::string(40, '\0'));
    QVERIFY(
        !error_of([&] { read_array(parse_array_location(path("broken.h5") + ":/x")); }).empty());
  }

  void reads_chunked_compressed_datasets_written_by_h5py() {
    if (!have_python_numpy_h5py()) QSKIP("python3 with numpy and h5py not installed");
    const QString script = QString(
                               "import numpy as np, h5py\n"
                               "a = (np.arange(3*40*50, dtype=np.uint32) * 7 % "
                               "65536).astype('<u2').reshape(3, 40, 50)\n"
                               "with h5py.File('%1', 'w') as f:\n"
                               "    f.create_dataset('/entry/data/data', data=a, chunks=(1, 40, "
                               "50), compression='gzip', shuffle=True)\n"
                               "np.save('%2', a.astype('<f4'))\n")
                               .arg(QString::fromStdString(path("h5py.h5")))
                               .arg(QString::fromStdString(path("numpy.npy")));
    QProcess p;
    p.start(python(), {"-c", script});
    QVERIFY(p.waitForFinished(60000));
    QCOMPARE(p.exitCode(), 0);
    const Array h = read_array(parse_array_location(path("h5py.h5") + ":/entry/data/data"));
    const Array n = read_array(parse_array_location(path("numpy.npy")));
    QCOMPARE(h.shape, (std::vector<std::uint64_t>{3, 40, 50}));
    QCOMPARE(n.shape, h.shape);
    QCOMPARE(int(h.type), int(ElementType::UInt16));
    QCOMPARE(int(n.type), int(ElementType::Float32));
    for (std::uint64_t i = 0; i < h.elements(); ++i) {
      const std::uint16_t want = std::uint16_t(i * 7 % 65536);
      QCOMPARE(h.as<std::uint16_t>()[i], want);
      QCOMPARE(n.as<float>()[i], float(want));
    }
  }

  void raw_binary_needs_a_layout_that_fits() {
    write_bytes(path("r.bin"), std::string(24, '\x01'));
    QVERIFY(error_of([&] {
              read_array(parse_array_location(path("r.bin")));
            }).find("needs --dtype and --shape") != std::string::npos);
    RawLayout layout{ElementType::UInt16, parse_shape_text("3x4")};
    const Array a = read_array(parse_array_location(path("r.bin")), layout);
    QCOMPARE(a.elements(), std::uint64_t(12));
    QCOMPARE(a.as<std::uint16_t>()[11], std::uint16_t(0x0101));
    layout.shape = parse_shape_text("5,4");
    QVERIFY(error_of([&] {
              read_array(parse_array_location(path("r.bin")), layout);
            }).find("has 24 bytes") != std::string::npos);
    QVERIFY(!error_of([] { parse_shape_text("3,,4"); }).empty());
    QVERIFY(!error_of([] { parse_shape_text("-3"); }).empty());
    QCOMPARE(parse_shape_text("16x352x384"), (std::vector<std::uint64_t>{16, 352, 384}));
    QCOMPARE(parse_array_location("run/a.h5:/entry/data").file, std::filesystem::path("run/a.h5"));
    QCOMPARE(parse_array_location("run/a.h5:/entry/data").dataset, std::string("/entry/data"));
    QCOMPARE(parse_array_location("run/a.npy").dataset, std::string());
  }
};

QTEST_GUILESS_MAIN(TestArrayIo)
#include "test_array_io.moc"
