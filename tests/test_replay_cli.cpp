// `livedrp-engine run --record DIR` and `--source replay:...`: a recorded simulator run replays
// with the same results, progress (events, percent, rate, time left) goes to stderr, and bad
// replay input exits 2 naming the file.
#include <QtTest>

#include <fstream>

#include <nlohmann/json.hpp>

#include "cli_process.hpp"

namespace {

nlohmann::json read_json(const QString& path) {
  std::ifstream in(path.toStdString());
  return nlohmann::json::parse(in);
}

}  // namespace

class TestReplayCli : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;

 private slots:
  void record_then_replay_gives_the_same_results() {
    const QString record_dir = dir_.filePath("run"), recorded = dir_.filePath("recorded.json"),
                  replayed = dir_.filePath("replayed.json");
    CliResult r =
        run_cli("LIVEDRP_ENGINE_EXE", {"run", "--source", "sim:generic_f32", "--backend", "cpu",
                                       "--events", "8", "--publish", "", "--record", record_dir,
                                       "--record-max-mb", "10", "--summary-json", recorded});
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    QVERIFY2(r.out.contains("recorded: 8 events in 4 files"), qPrintable(r.out));
    const auto first = read_json(recorded);
    QCOMPARE(first["record"]["files"].size(), std::size_t(4));  // two 4 MiB events a file

    // Replayed at 5 Hz so that progress lines appear (one a second).
    r = run_cli("LIVEDRP_ENGINE_EXE",
                {"run", "--source", "replay:" + record_dir, "--rate", "5", "--backend", "cpu",
                 "--publish", "", "--summary-json", replayed});
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    QVERIFY2(r.err.contains(" of 8 (") && r.err.contains("%)") && r.err.contains("s left") &&
                 r.err.contains("limited by pacing"),
             qPrintable(r.err));
    const auto second = read_json(replayed);
    QCOMPARE(second["events_processed"].get<int>(), 8);
    QCOMPARE(second["events_dropped"].get<int>(), 0);
    QCOMPARE(second["replay"]["handed"].get<int>(), 8);
    QCOMPARE(second["replay"]["pace"].get<std::string>(), std::string("rate"));
    QCOMPARE(second["order_errors"].get<int>(), 0);

    // Flat out, twice over (loop + event limit), from one file with its dataset named.
    const std::string file = first["record"]["files"][0].get<std::string>();
    r = run_cli("LIVEDRP_ENGINE_EXE",
                {"run", "--source", QString::fromStdString("replay:" + file + ":/entry/data/data"),
                 "--flat-out", "--loop", "--events", "7", "--backend", "cpu", "--publish", "",
                 "--summary-json", replayed});
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    const auto looped = read_json(replayed);
    QCOMPARE(looped["events_processed"].get<int>(), 7);
    QVERIFY(looped["replay"]["loops"].get<int>() >= 3);  // 2 events a pass
    const std::string limiter = looped["replay"]["limited_by"].get<std::string>();
    QVERIFY2(limiter == "disk" || limiter == "pipeline", limiter.c_str());
  }

  void bad_replay_input_exits_2_naming_it() {
    EXPECT_BAD_INPUT(run_cli("LIVEDRP_ENGINE_EXE", {"run", "--source", "replay:/no/such/file.h5",
                                                    "--backend", "cpu", "--publish", ""}),
                     "/no/such/file.h5 does not exist");
    EXPECT_BAD_INPUT(run_cli("LIVEDRP_ENGINE_EXE",
                             {"run", "--source", "sim:generic_f32", "--loop", "--publish", ""}),
                     "need a replay source");
    const QString text = dir_.filePath("junk.h5");
    std::ofstream(text.toStdString()) << "junk";
    EXPECT_BAD_INPUT(run_cli("LIVEDRP_ENGINE_EXE", {"run", "--source", "replay:" + text,
                                                    "--backend", "cpu", "--publish", ""}),
                     "junk.h5 is not an HDF5 file");
  }
};

QTEST_GUILESS_MAIN(TestReplayCli)
#include "test_replay_cli.moc"
