// `livedrp-engine integrate --output` in each format its extension picks: pyFAI's text format
// (.xy, .dat; one file per frame of a stack) and NeXus NXdata in HDF5 (.h5, .nxs), each read back
// independently (the text parsed here, the HDF5 file through the HDF5 C API) and compared number
// by number with the CSV of the same run; the pyFAI header's geometry against the PONI file's own
// lines; the NeXus attributes silx needs (NX_class, default, signal, axes, <axis>_indices, units);
// an extension of no format refused with exit status 2, naming it and the accepted ones.
#include <hdf5.h>
#include <QtTest>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli_process.hpp"
#include "integrate_csv_support.hpp"

using namespace livedrp;
using integrate_cli_testing::CsvRow;
using integrate_cli_testing::reference_dir;

namespace {

QString ref(const char* name) {
  return QString::fromStdString((reference_dir() / name).string());
}

// The PONI file's "Key: value" lines, read here rather than by the engine's parser.
std::map<std::string, std::string> poni_lines(const char* name) {
  std::map<std::string, std::string> lines;
  std::ifstream in(reference_dir() / name);
  std::string line;
  while (std::getline(in, line)) {
    const auto colon = line.find(':');
    if (line.empty() || line[0] == '#' || colon == std::string::npos) continue;
    lines[line.substr(0, colon)] = line.substr(line.find_first_not_of(' ', colon + 1));
  }
  return lines;
}

struct TextProfile {
  std::vector<std::string> header;  // the '#' lines, without the '#'
  std::vector<std::array<double, 3>> rows;
};

// A pyFAI text file: '#' lines, then whitespace-separated radial, intensity, sigma.
TextProfile read_text_profile(const QString& path) {
  TextProfile p;
  std::ifstream in(path.toStdString());
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    if (line[0] == '#') {
      p.header.push_back(line.substr(1));
      continue;
    }
    std::istringstream fields(line);
    std::array<double, 3> row{};
    if (!(fields >> row[0] >> row[1] >> row[2])) return {};
    p.rows.push_back(row);
  }
  return p;
}

// The header line that starts with `key` (after "# "), or "" when none does.
std::string header_value(const TextProfile& p, const std::string& key) {
  for (const std::string& h : p.header)
    if (h.rfind(" " + key, 0) == 0) return h.substr(key.size() + 1);
  return "";
}

bool close(double ours, double theirs, double relative) {
  return std::fabs(ours - theirs) <= relative * std::max(std::fabs(theirs), 1e-300) ||
         ours == theirs;
}

// --- HDF5 read-back through the C API ---
std::vector<std::string> string_attribute(hid_t object, const char* name) {
  std::vector<std::string> values;
  if (H5Aexists(object, name) <= 0) return values;
  const hid_t a = H5Aopen(object, name, H5P_DEFAULT);
  const hid_t type = H5Aget_type(a), space = H5Aget_space(a);
  const hssize_t count = H5Sget_simple_extent_npoints(space);
  if (H5Tget_class(type) == H5T_STRING && H5Tis_variable_str(type) > 0) {
    std::vector<char*> texts(std::size_t(count), nullptr);
    const hid_t memory = H5Tcopy(H5T_C_S1);
    H5Tset_size(memory, H5T_VARIABLE);
    H5Tset_cset(memory, H5Tget_cset(type));
    H5Aread(a, memory, texts.data());
    for (char* t : texts) values.emplace_back(t ? t : "");
    H5Dvlen_reclaim(memory, space, H5P_DEFAULT, texts.data());
    H5Tclose(memory);
  }
  H5Sclose(space);
  H5Tclose(type);
  H5Aclose(a);
  return values;
}

std::string string_attribute1(hid_t object, const char* name) {
  const auto v = string_attribute(object, name);
  return v.size() == 1 ? v[0] : "<" + std::to_string(v.size()) + " values>";
}

long long integer_attribute(hid_t object, const char* name) {
  long long value = -1;
  const hid_t a = H5Aopen(object, name, H5P_DEFAULT);
  if (a < 0) return value;
  H5Aread(a, H5T_NATIVE_LLONG, &value);
  H5Aclose(a);
  return value;
}

struct DoubleArray {
  std::vector<hsize_t> shape;
  std::vector<double> values;
};

DoubleArray read_doubles(hid_t file, const char* path) {
  DoubleArray array;
  const hid_t d = H5Dopen2(file, path, H5P_DEFAULT);
  if (d < 0) return array;
  const hid_t space = H5Dget_space(d);
  array.shape.resize(std::size_t(H5Sget_simple_extent_ndims(space)));
  H5Sget_simple_extent_dims(space, array.shape.data(), nullptr);
  array.values.resize(std::size_t(H5Sget_simple_extent_npoints(space)));
  H5Dread(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, array.values.data());
  H5Sclose(space);
  H5Dclose(d);
  return array;
}

std::string read_text(hid_t file, const char* path) {
  const hid_t d = H5Dopen2(file, path, H5P_DEFAULT);
  if (d < 0) return "<missing>";
  const hid_t memory = H5Tcopy(H5T_C_S1);
  H5Tset_size(memory, H5T_VARIABLE);
  char* text = nullptr;
  std::string value;
  if (H5Dread(d, memory, H5S_ALL, H5S_ALL, H5P_DEFAULT, &text) >= 0 && text) {
    value = text;
    H5free_memory(text);
  }
  H5Tclose(memory);
  H5Dclose(d);
  return value;
}

std::string group_class(hid_t file, const char* path) {
  const hid_t g = H5Oopen(file, path, H5P_DEFAULT);
  if (g < 0) return "<missing>";
  const std::string c = string_attribute1(g, "NX_class");
  H5Oclose(g);
  return c;
}

}  // namespace

class TestIntegrateOutputs : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;

  QString temp(const QString& name) const { return dir_.path() + "/" + name; }

  // The stack case of test_integrate_cli: 3 frames of 48 x 64, 20 bins in q_nm^-1.
  static QStringList stack_arguments() {
    return {"integrate",
            "--poni",
            ref("untilted.poni"),
            "--input",
            ref("int_stack_q_input.npy"),
            "--mask",
            ref("int_stack_q_mask.npy"),
            "--npt",
            "20",
            "--unit",
            "q_nm^-1",
            "--polarization",
            "0.9"};
  }

  static void run_ok(const QStringList& arguments) {
    const CliResult r = run_cli("LIVEDRP_ENGINE_EXE", arguments);
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
  }

  // The CSV of the same run, the reference every other format is compared with.
  std::vector<CsvRow> csv_of(const QStringList& arguments, const QString& name) {
    const QString out = temp(name + ".csv");
    const CliResult r = run_cli("LIVEDRP_ENGINE_EXE", QStringList(arguments) << "--output" << out);
    if (r.exit_code != 0) return {};
    QString header;
    return integrate_cli_testing::read_csv(out, &header);
  }

 private slots:
  void initTestCase() {
    QVERIFY2(QFile::exists(qEnvironmentVariable("LIVEDRP_ENGINE_EXE")),
             "set LIVEDRP_ENGINE_EXE to the livedrp-engine executable (CTest does)");
    QVERIFY(dir_.isValid());
  }

  void pyfai_text_of_a_stack_is_one_file_per_frame_equal_to_the_csv() {
    const std::vector<CsvRow> csv = csv_of(stack_arguments(), "stack");
    QCOMPARE(int(csv.size()), 3 * 20);
    run_ok(QStringList(stack_arguments()) << "--output" << temp("stack.xy"));
    // pyFAI's batch writer numbers frame files prefix + "%04i": no file of the bare name.
    QVERIFY(!QFile::exists(temp("stack.xy")));
    QVERIFY(!QFile::exists(temp("stack_0003.xy")));
    for (int f = 0; f < 3; ++f) {
      const QString path = temp(QString("stack_%1.xy").arg(f, 4, 10, QChar('0')));
      const TextProfile p = read_text_profile(path);
      QCOMPARE(int(p.rows.size()), 20);
      QCOMPARE(header_value(p, "Frame index:"),
               " " + std::to_string(f) + " (of 3 in the input, counted from 0)");
      QCOMPARE(header_value(p, "-->"), " " + path.toStdString());
      // pyFAI's words for a mask given with the frames (integrate1d).
      QCOMPARE(header_value(p, "Mask applied:"), std::string(" user provided"));
      QCOMPARE(header_value(p, "Polarization factor:"), std::string(" 0.9"));
      for (int b = 0; b < 20; ++b) {
        const CsvRow& c = csv[std::size_t(f * 20 + b)];
        QCOMPARE(c.frame, f);
        // The CSV keeps 10 significant digits, the text 11.
        QVERIFY2(close(p.rows[b][0], c.radial, 1e-9), qPrintable(QString::number(b)));
        QVERIFY2(close(p.rows[b][1], c.intensity, 1e-9), qPrintable(QString::number(b)));
        QVERIFY2(close(p.rows[b][2], c.sigma, 1e-9), qPrintable(QString::number(b)));
      }
    }
  }

  void pyfai_text_header_carries_the_geometry_unit_and_corrections() {
    const QStringList arguments{"integrate",
                                "--poni",
                                ref("untilted.poni"),
                                "--input",
                                ref("int_untilted_q_input.npy"),
                                "--npt",
                                "16",
                                "--unit",
                                "2th_deg"};
    run_ok(QStringList(arguments) << "--output" << temp("one.dat"));
    const TextProfile p = read_text_profile(temp("one.dat"));
    QCOMPARE(int(p.rows.size()), 16);
    QVERIFY(!p.header.empty());
    QCOMPARE(p.header[0], std::string(" == pyFAI calibration =="));
    const auto poni = poni_lines("untilted.poni");
    // pyFAI prints the distance and wavelength with Python's str(), PONI with %.3e, the
    // rotations with %.6f.
    QCOMPARE(header_value(p, "Distance Sample to Detector:"), " " + poni.at("Distance") + " m");
    QCOMPARE(header_value(p, "Wavelength:"), " " + poni.at("Wavelength") + " m");
    double poni1 = 0, poni2 = 0;
    QCOMPARE(std::sscanf(header_value(p, "PONI:").c_str(), " %lf, %lf m", &poni1, &poni2), 2);
    QVERIFY(close(poni1, std::stod(poni.at("Poni1")), 1e-3));
    QVERIFY(close(poni2, std::stod(poni.at("Poni2")), 1e-3));
    QCOMPARE(header_value(p, "Rotations:"), std::string(" 0.000000 0.000000 0.000000 rad"));
    QVERIFY2(
        header_value(p, "Detector ").find("PixelSize= 1.000e-04, 1.000e-04 m") != std::string::npos,
        header_value(p, "Detector ").c_str());
    QCOMPARE(header_value(p, "Mask applied:"), std::string(" False"));
    QCOMPARE(header_value(p, "Polarization factor:"), std::string(" None"));
    // One frame: the file is the name given.
    QCOMPARE(header_value(p, "Frame index:"),
             std::string(" 0 (of 1 in the input, counted from 0)"));
    // The configuration as one JSON line.
    const nlohmann::json config = nlohmann::json::parse(header_value(p, "Configuration:"));
    QCOMPARE(config["integrate"]["npt"].get<int>(), 16);
    QCOMPARE(config["integrate"]["unit"].get<std::string>(), std::string("2th_deg"));
    QCOMPARE(config["integrate"]["poni_geometry"]["distance"].get<double>(), 0.1);
    // The detector orientation, which moves every pixel, is echoed too (3 unless the PONI says).
    QCOMPARE(config["integrate"]["poni_geometry"]["orientation"].get<int>(), 3);
    // The column line names the unit as pyFAI does, then I and sigma.
    std::istringstream columns(p.header.back());
    std::string unit, intensity, sigma;
    columns >> unit >> intensity >> sigma;
    QCOMPARE(unit, std::string("2th_deg"));
    QCOMPARE(intensity, std::string("I"));
    QCOMPARE(sigma, std::string("sigma"));
    // Numbers as in the CSV.
    const std::vector<CsvRow> csv = csv_of(arguments, "one");
    QCOMPARE(int(csv.size()), 16);
    for (int b = 0; b < 16; ++b) {
      QVERIFY(close(p.rows[b][0], csv[std::size_t(b)].radial, 1e-9));
      QVERIFY(close(p.rows[b][1], csv[std::size_t(b)].intensity, 1e-9));
      QVERIFY(close(p.rows[b][2], csv[std::size_t(b)].sigma, 1e-9));
    }
  }

  void nexus_file_is_an_nxdata_silx_plots_equal_to_the_csv() {
    const std::vector<CsvRow> csv = csv_of(stack_arguments(), "nexus");
    QCOMPARE(int(csv.size()), 3 * 20);
    run_ok(QStringList(stack_arguments()) << "--output" << temp("stack.h5"));
    const hid_t file = H5Fopen(temp("stack.h5").toUtf8().constData(), H5F_ACC_RDONLY, H5P_DEFAULT);
    QVERIFY(file >= 0);
    // NeXus' default chain leads a viewer from the root to the plot.
    QCOMPARE(string_attribute1(file, "default"), std::string("entry"));
    QCOMPARE(group_class(file, "/entry"), std::string("NXentry"));
    const hid_t entry = H5Gopen2(file, "/entry", H5P_DEFAULT);
    QCOMPARE(string_attribute1(entry, "default"), std::string("profiles"));
    H5Gclose(entry);
    QCOMPARE(group_class(file, "/entry/profiles"), std::string("NXdata"));
    const hid_t data = H5Gopen2(file, "/entry/profiles", H5P_DEFAULT);
    QCOMPARE(string_attribute1(data, "signal"), std::string("intensity"));
    QCOMPARE(string_attribute(data, "axes"), (std::vector<std::string>{"frame", "q"}));
    QCOMPARE(integer_attribute(data, "frame_indices"), 0LL);
    QCOMPARE(integer_attribute(data, "q_indices"), 1LL);
    H5Gclose(data);
    const hid_t q_axis = H5Dopen2(file, "/entry/profiles/q", H5P_DEFAULT);
    QCOMPARE(string_attribute1(q_axis, "units"), std::string("1/nm"));
    H5Dclose(q_axis);
    const hid_t signal = H5Dopen2(file, "/entry/profiles/intensity", H5P_DEFAULT);
    QCOMPARE(string_attribute1(signal, "interpretation"), std::string("spectrum"));
    H5Dclose(signal);

    const DoubleArray intensity = read_doubles(file, "/entry/profiles/intensity");
    const DoubleArray errors = read_doubles(file, "/entry/profiles/intensity_errors");
    const DoubleArray q = read_doubles(file, "/entry/profiles/q");
    const DoubleArray frame = read_doubles(file, "/entry/profiles/frame");
    QCOMPARE(intensity.shape, (std::vector<hsize_t>{3, 20}));
    QCOMPARE(errors.shape, (std::vector<hsize_t>{3, 20}));
    QCOMPARE(q.shape, (std::vector<hsize_t>{20}));
    QCOMPARE(frame.values, (std::vector<double>{0, 1, 2}));
    for (std::size_t k = 0; k < csv.size(); ++k) {
      QVERIFY(close(intensity.values[k], csv[k].intensity, 1e-9));
      QVERIFY(close(errors.values[k], csv[k].sigma, 1e-9));
      QVERIFY(close(q.values[k % 20], csv[k].radial, 1e-9));
    }

    QCOMPARE(group_class(file, "/entry/integration"), std::string("NXprocess"));
    QCOMPARE(group_class(file, "/entry/integration/configuration"), std::string("NXnote"));
    QCOMPARE(read_text(file, "/entry/integration/configuration/type"), std::string("text/json"));
    const nlohmann::json config =
        nlohmann::json::parse(read_text(file, "/entry/integration/configuration/data"));
    QCOMPARE(config["integrate"]["npt"].get<int>(), 20);
    QCOMPARE(config["integrate"]["polarization"].get<double>(), 0.9);
    QCOMPARE(config["integrate"]["poni_geometry"]["wavelength"].get<double>(), 1e-10);
    QVERIFY(read_text(file, "/entry/integration/program").rfind("livedrp-engine integrate", 0) ==
            0);
    H5Fclose(file);
  }

  void nexus_axis_follows_the_unit() {
    run_ok({"integrate", "--poni", ref("untilted.poni"), "--input", ref("int_untilted_q_input.npy"),
            "--npt", "12", "--unit", "2th_deg", "--output", temp("one.nxs")});
    const hid_t file = H5Fopen(temp("one.nxs").toUtf8().constData(), H5F_ACC_RDONLY, H5P_DEFAULT);
    QVERIFY(file >= 0);
    const hid_t data = H5Gopen2(file, "/entry/profiles", H5P_DEFAULT);
    QCOMPARE(string_attribute(data, "axes"), (std::vector<std::string>{"frame", "2th"}));
    QCOMPARE(integer_attribute(data, "2th_indices"), 1LL);
    H5Gclose(data);
    const hid_t axis = H5Dopen2(file, "/entry/profiles/2th", H5P_DEFAULT);
    QCOMPARE(string_attribute1(axis, "units"), std::string("degree"));
    QCOMPARE(string_attribute1(axis, "long_name"), std::string("2th (2th_deg)"));
    H5Dclose(axis);
    // One frame is a stack of one.
    QCOMPARE(read_doubles(file, "/entry/profiles/intensity").shape, (std::vector<hsize_t>{1, 12}));
    H5Fclose(file);
  }

  void every_accepted_extension_in_any_case_is_written() {
    for (const char* name : {"a.XY", "b.Dat", "c.hdf5", "d.NXS", "e.CSV"}) {
      run_ok(QStringList(stack_arguments()) << "--output" << temp(name));
      const QString suffix = QFileInfo(name).suffix().toLower();
      const QString written = suffix == "xy" || suffix == "dat"
                                  ? temp(QString(name).replace(".", "_0000."))
                                  : temp(name);
      QVERIFY2(QFileInfo(written).size() > 0, qPrintable(written));
      if (suffix == "hdf5" || suffix == "nxs")
        QVERIFY(H5Fis_hdf5(written.toUtf8().constData()) > 0);
    }
  }

  void output_of_no_known_extension_is_refused() {
    const QStringList base = stack_arguments();
    EXPECT_BAD_INPUT(
        run_cli("LIVEDRP_ENGINE_EXE", QStringList(base) << "--output" << temp("profile.txt")),
        "the extension '.txt'");
    EXPECT_BAD_INPUT(
        run_cli("LIVEDRP_ENGINE_EXE", QStringList(base) << "--output" << temp("profile.txt")),
        ".csv, .xy, .dat, .h5, .nxs, .hdf5");
    EXPECT_BAD_INPUT(
        run_cli("LIVEDRP_ENGINE_EXE", QStringList(base) << "--output" << temp("profile")),
        "has no extension");
    QVERIFY(!QFile::exists(temp("profile.txt")));
    // A folder that does not exist, for each format: named, exit 2.
    for (const char* name : {"missing/p.csv", "missing/p.xy", "missing/p.h5"})
      EXPECT_BAD_INPUT(run_cli("LIVEDRP_ENGINE_EXE", QStringList(base) << "--output" << temp(name)),
                       "cannot write output file");
  }
};

QTEST_GUILESS_MAIN(TestIntegrateOutputs)
#include "test_integrate_outputs.moc"
