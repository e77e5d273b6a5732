// The peak tuning panel, against a fake engine (the panel's signals and slots): the form shows
// every parameter with its default; Apply sends exactly the fields that differ from those in
// force, as {"params": {...}}; a value peaks::validate refuses is not sent and its reason shows
// in red; the engine's refusal shows the same way; a reply takes the values and version in
// force; a re-run request carries the frame count and its reply is summarised; PARAMS.json
// files round-trip through Save and Load (the format livedrp-engine peaks --params reads).
#include <fstream>

#include <QDoubleSpinBox>
#include <QLabel>
#include <QPushButton>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QTest>

#include <nlohmann/json.hpp>

#include "app/peak_tuning_panel.hpp"
#include "peaks/peak_params.hpp"

using livedrp::app::PeakTuningPanel;
using livedrp::peaks::PeakFinderParams;

namespace {

QSpinBox* intField(PeakTuningPanel& panel, const char* name) {
  return qobject_cast<QSpinBox*>(panel.field(name));
}
QDoubleSpinBox* floatField(PeakTuningPanel& panel, const char* name) {
  return qobject_cast<QDoubleSpinBox*>(panel.field(name));
}

// What the fake engine records.
struct Sent {
  std::vector<nlohmann::json> applies, reruns;
  int reads = 0;
};

void record(PeakTuningPanel& panel, Sent& sent) {
  QObject::connect(&panel, &PeakTuningPanel::applyRequested,
                   [&sent](const nlohmann::json& request) { sent.applies.push_back(request); });
  QObject::connect(&panel, &PeakTuningPanel::rerunRequested,
                   [&sent](const nlohmann::json& request) { sent.reruns.push_back(request); });
  QObject::connect(&panel, &PeakTuningPanel::paramsRequested, [&sent] { ++sent.reads; });
}

nlohmann::json engineReply(const PeakFinderParams& params, std::uint64_t version, bool enabled) {
  return {{"params", livedrp::peaks::to_json(params)},
          {"params_version", version},
          {"enabled", enabled}};
}

}  // namespace

class PeakTuningTest : public QObject {
  Q_OBJECT

 private slots:
  void theFormShowsEveryParameterWithItsDefault() {
    PeakTuningPanel panel;
    const nlohmann::json defaults = livedrp::peaks::to_json(PeakFinderParams{});
    QCOMPARE(defaults.size(), std::size_t(10));
    for (const auto& [name, value] : defaults.items()) {
      QVERIFY2(panel.field(name) != nullptr, name.c_str());
    }
    QCOMPARE(intField(panel, "max_num_peaks")->value(), 2048);
    QCOMPARE(floatField(panel, "minimum_snr")->value(), 5.0);
    QCOMPARE(floatField(panel, "max_res")->value(), 1e9);
    QCOMPARE(intField(panel, "min_peaks_for_hit")->value(), 10);
    QCOMPARE(livedrp::peaks::to_json(panel.formParams()).dump(), defaults.dump());
    QVERIFY(panel.changedParams().empty());
  }

  void applySendsOnlyTheChangedFields() {
    PeakTuningPanel panel;
    Sent sent;
    record(panel, sent);
    QVERIFY(!panel.apply());  // nothing changed: nothing sent
    QVERIFY(sent.applies.empty());
    floatField(panel, "minimum_snr")->setValue(7.5);
    intField(panel, "min_pixel_count")->setValue(3);
    panel.applyButton()->click();
    QCOMPARE(sent.applies.size(), std::size_t(1));
    const nlohmann::json expected = {{"params", {{"minimum_snr", 7.5}, {"min_pixel_count", 3}}}};
    QCOMPARE(sent.applies[0].dump(), expected.dump());
    QVERIFY(panel.refusalText().isEmpty());
    // The engine accepts: its reply is what is in force now, and nothing is pending.
    PeakFinderParams now;
    now.minimum_snr = 7.5f;
    now.min_pixel_count = 3;
    panel.showParams(engineReply(now, 2, true));
    QCOMPARE(panel.paramsVersion().value(), std::uint64_t(2));
    QVERIFY(panel.changedParams().empty());
    QVERIFY(panel.statusText().contains(QStringLiteral("parameters v2")));
    // A further change is compared with the new values in force.
    intField(panel, "max_pixel_count")->setValue(50);
    QCOMPARE(panel.changedParams().dump(), nlohmann::json({{"max_pixel_count", 50}}).dump());
  }

  void aValueOutOfRangeIsRefusedWithItsReasonAndNotSent() {
    PeakTuningPanel panel;
    Sent sent;
    record(panel, sent);
    intField(panel, "min_pixel_count")->setValue(5);
    intField(panel, "max_pixel_count")->setValue(3);
    QVERIFY(!panel.apply());
    QVERIFY(sent.applies.empty());
    QVERIFY2(panel.refusalText().contains(QStringLiteral("max_pixel_count")),
             qPrintable(panel.refusalText()));
    QVERIFY(panel.findChild<QLabel*>(QStringLiteral("peakTuningRefusal"))->isVisibleTo(&panel));
    QVERIFY(panel.findChild<QLabel*>(QStringLiteral("peakTuningRefusal"))
                ->styleSheet()
                .contains(QStringLiteral("#c00000")));
  }

  void theEnginesRefusalShows() {
    PeakTuningPanel panel;
    const QString reason = QStringLiteral(
        "request 'set_peak_params' refused: peak finding is off (peak_finding.enabled)");
    panel.showRefusal(reason);
    QCOMPARE(panel.refusalText(), reason);
    // An engine that says peak finding is off disables the controls that send, saying why.
    panel.showParams(engineReply(PeakFinderParams{}, 1, false));
    QVERIFY(!panel.applyButton()->isEnabled());
    QVERIFY(!panel.rerunButton()->isEnabled());
    QVERIFY(panel.applyButton()->toolTip().contains(QStringLiteral("peak_finding.enabled")));
    QVERIFY(panel.refusalText().isEmpty());  // a readable reply clears the old refusal
    panel.showParams(engineReply(PeakFinderParams{}, 1, true));
    QVERIFY(panel.applyButton()->isEnabled());
    // A reply that does not read is a refusal too, not silently taken.
    panel.showParams({{"params", {{"minimum_snr", "high"}}}, {"params_version", 1}});
    QVERIFY(panel.refusalText().contains(QStringLiteral("minimum_snr")));
  }

  void rerunSendsTheFrameCountAndShowsTheResult() {
    PeakTuningPanel panel;
    Sent sent;
    record(panel, sent);
    panel.rerunFramesBox()->setValue(4);
    panel.rerunButton()->click();
    QCOMPARE(sent.reruns.size(), std::size_t(1));
    QCOMPARE(sent.reruns[0].dump(), nlohmann::json({{"frames", 4}}).dump());
    panel.showRerun({{"frames", 4},
                     {"hits", 1},
                     {"peaks_per_frame", {3, 12, 0, 5}},
                     {"sequences", {10, 11, 12, 13}},
                     {"params_version", 3}});
    QVERIFY2(panel.statusText().contains(QStringLiteral(
                 "parameters v3 on 4 frame(s): 1 hit(s); peaks per frame 3, 12, 0, 5")),
             qPrintable(panel.statusText()));
  }

  void paramsRoundTripThroughSaveAndLoad() {
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("params.json"));
    PeakTuningPanel panel;
    floatField(panel, "adc_threshold")->setValue(12.25);
    intField(panel, "local_bg_radius")->setValue(5);
    floatField(panel, "max_res")->setValue(800.5);
    QVERIFY(panel.saveToFile(path));
    // The file is PARAMS.json: what the offline command reads.
    const PeakFinderParams read = livedrp::peaks::load_peak_params(path.toStdString());
    QCOMPARE(double(read.adc_threshold), 12.25);
    QCOMPARE(read.local_bg_radius, 5);
    QCOMPARE(double(read.max_res), 800.5);
    QCOMPARE(double(read.minimum_snr), 5.0);
    PeakTuningPanel other;
    QVERIFY(other.loadFromFile(path));
    QCOMPARE(livedrp::peaks::to_json(other.formParams()).dump(),
             livedrp::peaks::to_json(panel.formParams()).dump());
    // Loading does not apply: the loaded values are pending changes.
    QCOMPARE(other.changedParams().size(), std::size_t(3));
    // A file with a misspelt parameter is refused, naming it; the form keeps its values.
    const QString bad = dir.filePath(QStringLiteral("bad.json"));
    std::ofstream(bad.toStdString()) << R"({"minimum_snrr": 4})";
    QVERIFY(!other.loadFromFile(bad));
    QVERIFY2(other.refusalText().contains(QStringLiteral("minimum_snrr")),
             qPrintable(other.refusalText()));
    QCOMPARE(floatField(other, "adc_threshold")->value(), 12.25);
    QVERIFY(!other.loadFromFile(dir.filePath(QStringLiteral("missing.json"))));
  }
};

QTEST_MAIN(PeakTuningTest)
#include "test_gui_peak_tuning.moc"
