// The stream-configuration panel: the configuration JSON it builds from its fields, named
// configurations saved as files and loaded back, and a bad file refused with its error.
#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFile>
#include <QListWidget>
#include <QPushButton>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QTest>

#include "app/saved_configurations.hpp"
#include "app/stream_config_panel.hpp"
#include "exec/engine.hpp"

using livedrp::EngineConfig;
using livedrp::app::SavedConfigurations;
using livedrp::app::StreamConfigPanel;

namespace {
void setCombo(QComboBox* combo, const QString& text) {
  const int index = combo->findText(text);
  QVERIFY2(index >= 0, qPrintable(text));
  combo->setCurrentIndex(index);
}

void writeText(const QString& path, const QByteArray& text) {
  QFile file(path);
  QVERIFY(file.open(QIODevice::WriteOnly));
  file.write(text);
}
}  // namespace

class StreamConfigPanelTest : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;

 private slots:
  void initTestCase() { QVERIFY(dir_.isValid()); }

  void buildsTheConfigurationJsonFromItsFields() {
    StreamConfigPanel panel;
    EngineConfig base;
    base.source = "sim:jungfrau4m";
    base.rate_hz = 120;
    base.ring_slots = 8;
    panel.setConfig(base);

    setCombo(panel.backendCombo(), "cpu");
    panel.streamsSpin()->setValue(4);
    panel.slotsSpin()->setValue(8);
    setCombo(panel.launchCombo(), "device_graph");
    panel.batchSpin()->setValue(2);
    setCombo(panel.segmentsCombo(), "one");
    setCombo(panel.hostThreadsCombo(), "per_stream");
    setCombo(panel.sourceCombo(), "device");
    panel.commonModeCheck()->setChecked(false);

    const nlohmann::json json = panel.configJson();
    QVERIFY2((json["backend"]) == ("cpu"), (json["backend"]).dump().c_str());
    QVERIFY2((json["runtime"]["streams"]) == (4), (json["runtime"]["streams"]).dump().c_str());
    QVERIFY2((json["runtime"]["slots_per_stream"]) == (8),
             (json["runtime"]["slots_per_stream"]).dump().c_str());
    QVERIFY2((json["runtime"]["launch"]) == ("device_graph"),
             (json["runtime"]["launch"]).dump().c_str());
    QVERIFY2((json["runtime"]["batch"]) == (2), (json["runtime"]["batch"]).dump().c_str());
    QVERIFY2((json["runtime"]["segments_per_launch"]) == ("one"),
             (json["runtime"]["segments_per_launch"]).dump().c_str());
    QVERIFY2((json["runtime"]["host_threads"]) == ("per_stream"),
             (json["runtime"]["host_threads"]).dump().c_str());
    QVERIFY2((json["runtime"]["source"]) == ("device"), (json["runtime"]["source"]).dump().c_str());
    QVERIFY2((json["calibration"]["common_mode"]) == (false),
             (json["calibration"]["common_mode"]).dump().c_str());
    // What the panel does not edit is kept.
    QVERIFY2((json["source"]) == ("sim:jungfrau4m"), (json["source"]).dump().c_str());
    QVERIFY2((json["ring_slots"]) == (8), (json["ring_slots"]).dump().c_str());

    const EngineConfig config = panel.config();
    QCOMPARE(config.runtime.streams, 4);
    QCOMPARE(config.runtime.launch, livedrp::LaunchMode::DeviceGraph);
    QCOMPARE(config.runtime.host_threads, livedrp::HostThreadModel::PerStream);
    QCOMPARE(config.rate_hz, 120.0);
    QCOMPARE(QString::fromStdString(describe(config.runtime)),
             QStringLiteral("4 streams, device_graph, K=2, one segment per launch, thread per "
                            "stream, device-resident source"));

    // The remote merge patch holds only the panel's fields.
    const nlohmann::json partial = panel.partialJson();
    QVERIFY(!partial.contains("source"));
    QVERIFY2((partial["runtime"]["streams"]) == (4),
             (partial["runtime"]["streams"]).dump().c_str());
    QVERIFY2((partial["calibration"]) == ((nlohmann::json{{"common_mode", false}})),
             (partial["calibration"]).dump().c_str());
  }

  void compressionRoundTripsIntoTheAppliedConfiguration() {
    StreamConfigPanel panel;
    EngineConfig base;
    base.compression.codec = "lossless";
    base.compression.error_bound = 2.5;
    panel.setConfig(base);
    QCOMPARE(panel.codecCombo()->currentText(), QStringLiteral("lossless"));
    QCOMPARE(panel.errorBoundSpin()->value(), 2.5);
    QVERIFY(!panel.errorBoundSpin()->isEnabled());  // the bound means something only for lossy

    setCombo(panel.codecCombo(), "lossy");
    QVERIFY(panel.errorBoundSpin()->isEnabled());
    panel.errorBoundSpin()->setValue(0.125);
    QSignalSpy spy(&panel, &StreamConfigPanel::applyRequested);
    panel.applyButton()->click();
    QCOMPARE(spy.count(), 1);
    const auto applied = qvariant_cast<EngineConfig>(spy.at(0).at(0));
    QCOMPARE(applied.compression.codec, std::string("lossy"));
    QCOMPARE(applied.compression.error_bound, 0.125);
    const nlohmann::json partial = panel.partialJson();
    QVERIFY2(partial["compression"] == (nlohmann::json{{"codec", "lossy"}, {"error_bound", 0.125}}),
             partial["compression"].dump().c_str());

    setCombo(panel.codecCombo(), "off");
    QVERIFY(!panel.errorBoundSpin()->isEnabled());
    QCOMPARE(panel.config().compression.codec, std::string("off"));
  }

  void applyEmitsTheValidatedConfiguration() {
    StreamConfigPanel panel;
    QSignalSpy spy(&panel, &StreamConfigPanel::applyRequested);
    panel.streamsSpin()->setValue(3);
    panel.applyButton()->click();
    QCOMPARE(spy.count(), 1);
    QCOMPARE(qvariant_cast<EngineConfig>(spy.at(0).at(0)).runtime.streams, 3);
  }

  void aSavedConfigurationRoundTripsThroughItsFile() {
    const QString directory = dir_.filePath("roundtrip");
    StreamConfigPanel panel;
    panel.setDirectory(directory);
    QCOMPARE(panel.savedList()->count(), 0);
    panel.streamsSpin()->setValue(6);
    setCombo(panel.launchCombo(), "graph");
    panel.batchSpin()->setValue(4);
    panel.commonModeCheck()->setChecked(false);
    QVERIFY(panel.saveAs(QStringLiteral("six streams graph")));
    QVERIFY(QFile::exists(directory + "/six streams graph.json"));
    QCOMPARE(panel.savedList()->count(), 1);
    QCOMPARE(panel.savedList()->item(0)->text(), QStringLiteral("six streams graph"));

    // The file is the EngineConfig JSON.
    const EngineConfig saved =
        SavedConfigurations(directory).load(QStringLiteral("six streams graph"));
    QCOMPARE(saved.runtime.streams, 6);
    QCOMPARE(saved.runtime.launch, livedrp::LaunchMode::Graph);
    QCOMPARE(saved.runtime.batch, 4);
    QCOMPARE(saved.calibration.common_mode, false);

    panel.setConfig(EngineConfig{});
    QCOMPARE(panel.streamsSpin()->value(), 1);
    QVERIFY(panel.loadSaved(QStringLiteral("six streams graph")));
    QCOMPARE(panel.streamsSpin()->value(), 6);
    QCOMPARE(panel.launchCombo()->currentText(), QStringLiteral("graph"));
    QCOMPARE(panel.batchSpin()->value(), 4);
    QVERIFY(!panel.commonModeCheck()->isChecked());
    QVERIFY(panel.statusText().contains(QStringLiteral("6 streams, graph, K=4")));
    QVERIFY(panel.errorText().isEmpty());
    QCOMPARE(panel.config().runtime, saved.runtime);
  }

  void anInvalidNameIsRefused() {
    StreamConfigPanel panel;
    panel.setDirectory(dir_.filePath("names"));
    QVERIFY(!panel.saveAs(QStringLiteral("../escape")));
    QVERIFY(panel.errorText().contains(QStringLiteral("not valid")));
    QCOMPARE(panel.savedList()->count(), 0);
  }

  void aFileWithStreamsOutOfRangeIsRefusedAndChangesNothing() {
    const QString directory = dir_.filePath("bad");
    QVERIFY(QDir().mkpath(directory));
    nlohmann::json json = EngineConfig{}.to_json();
    json["runtime"]["streams"] = 99;
    writeText(directory + "/too many.json", QByteArray::fromStdString(json.dump()));

    StreamConfigPanel panel;
    panel.setDirectory(directory);
    QCOMPARE(panel.savedList()->count(), 1);
    panel.streamsSpin()->setValue(2);
    QVERIFY(!panel.loadSaved(QStringLiteral("too many")));
    QVERIFY2(panel.errorText().contains(QStringLiteral("runtime.streams")),
             qPrintable(panel.errorText()));
    QVERIFY(panel.errorText().contains(QStringLiteral("99")));
    QCOMPARE(panel.streamsSpin()->value(), 2);  // the old configuration stays
    QCOMPARE(panel.config().runtime.streams, 2);

    writeText(directory + "/not json.json", "{ streams: ");
    QVERIFY(!panel.loadFile(directory + "/not json.json"));
    QVERIFY(panel.errorText().contains(QStringLiteral("not valid JSON")));
  }
};

QTEST_MAIN(StreamConfigPanelTest)
#include "test_gui_stream_config_panel.moc"
