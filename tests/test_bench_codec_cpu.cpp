// livedrp-bench codec --cpu-only: the CPU rows put livedrp's codec beside zstd, lz4 and
// bitshuffle-LZ4 (Debian's bitshuffle HDF5 plugin, called as HDF5 calls it) on the same arrays;
// every row round-trips (the bench fails otherwise) and has a ratio and both speeds. No
// wall-clock limits: the speeds are whatever the machine gives.
#include <QTemporaryDir>
#include <QtTest>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "cli_process.hpp"

namespace {

constexpr int kNoTimeLimit = -1;
// Where Debian's bitshuffle package puts its HDF5 plugin.
const char* const kBitshufflePlugin = "/usr/lib/x86_64-linux-gnu/hdf5/serial/plugins/libh5bshuf.so";

}  // namespace

class TestBenchCodecCpu : public QObject {
  Q_OBJECT

 private slots:
  void cpu_rows_compare_the_codec_with_zstd_lz4_and_bitshuffle_lz4() {
    QTemporaryDir dir;
    const QString json = dir.path() + "/codec.json";
    const CliResult r = run_cli("LIVEDRP_BENCH_EXE",
                                {"codec", "--cpu-only", "--cpu-events", "1", "--distinct", "1",
                                 "--only", "raw uint16", "--json", json},
                                kNoTimeLimit);
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    std::ifstream in(json.toStdString());
    const nlohmann::json report = nlohmann::json::parse(in);
    std::set<std::string> compressors;
    for (const auto& row : report.at("cpu")) {
      QCOMPARE(row.at("data").get<std::string>(), std::string("raw uint16 lossless"));
      QVERIFY(row.at("ratio").get<double>() > 0.9);
      QVERIFY(row.at("compress_gbps").get<double>() > 0.0);
      QVERIFY(row.at("decompress_gbps").get<double>() > 0.0);
      compressors.insert(row.at("compressor").get<std::string>());
    }
    QVERIFY(compressors.count("livedrp") && compressors.count("zstd -1") &&
            compressors.count("lz4"));
    if (!std::filesystem::exists(kBitshufflePlugin)) {
      QVERIFY2(r.err.contains("bitshuffle-lz4 rows left out"), qPrintable(r.err));
      QSKIP("Debian's bitshuffle plugin is not installed: its row is left out, saying why");
    }
    QVERIFY2(compressors.count("bitshuffle-lz4"), qPrintable(r.err));
    // Bit planes of a noisy pedestal: the high planes are constant, so bitshuffle-LZ4 shrinks the
    // raw words as the codec does.
    for (const auto& row : report.at("cpu"))
      if (row.at("compressor") == "bitshuffle-lz4") QVERIFY(row.at("ratio").get<double>() > 1.2);
  }
};

QTEST_GUILESS_MAIN(TestBenchCodecCpu)
#include "test_bench_codec_cpu.moc"
