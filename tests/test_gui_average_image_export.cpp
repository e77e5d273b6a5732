// File > Export Average Image (HDF5) and the detector image's right-click entry (issue 36): the
// mean of the calibrated images the window received since the run started, fed here as `image`
// messages encoded and decoded as on the wire and handed to the window's model as the subscriber
// hands them, written in the engine's average-image layout (docs/formats.md, "Average image") and
// read back with the HDF5 C API: per pixel the float32 of the double mean of the finite values
// (NaN where none), the number of images as `events`, the first and last pulse ids, and the
// attributes that say it is a sample. A new run starts the average again; before any image the
// entry is disabled and an export is refused, writing nothing.
#include <hdf5.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include <QAction>
#include <QFile>
#include <QMenu>
#include <QMenuBar>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

#include <nlohmann/json.hpp>

#include "app/average_image_export.hpp"
#include "app/main_window.hpp"
#include "app/plot_export_actions.hpp"
#include "exec/engine.hpp"
#include "gui_window_options.hpp"
#include "hit_file_support.hpp"
#include "protocol/message.hpp"
#include "protocol/peaks_topic.hpp"
#include "protocol/topics.hpp"
#include "widgets/detector_image_plot.hpp"
#include "widgets/detector_image_view.hpp"
#include "widgets/peak_finding_model.hpp"
#include "widgets/stats_model.hpp"

using livedrp::app::AverageImageExport;
using livedrp::app::MainWindow;
using livedrp::hit_file_test::read_dataset;
using livedrp::hit_file_test::read_string_attribute;
using livedrp::protocol::ImageFrame;
using livedrp::protocol::Message;
using livedrp::widgets::MessageBatch;

namespace {

constexpr std::size_t kWidth = 4, kHeight = 3;
const float kNaN = std::numeric_limits<float>::quiet_NaN();

// One image of run `run` as the subscriber hands it to the window: encoded, decoded, batched.
MessageBatch imageBatch(const std::vector<float>& pixels, std::uint64_t sequence,
                        std::uint64_t pulse_id, std::int64_t run) {
  ImageFrame frame;
  frame.sequence = sequence;
  frame.pulse_id = pulse_id;
  frame.width = kWidth;
  frame.height = kHeight;
  frame.pixels = pixels;
  frame.unit = "keV";
  frame.segments = 1;  // an image names its segments even without gain modes
  Message message = livedrp::protocol::make_image_message(frame);
  message.run = run;
  message.sequence = sequence;
  message.pulse_id = pulse_id;
  const std::vector<std::string> parts = livedrp::protocol::encode(message);
  return {std::make_shared<const Message>(
      livedrp::protocol::decode(std::vector<std::string_view>(parts.begin(), parts.end())))};
}

// The engine's `status` for run `run`, carrying its configuration, as the subscriber hands it.
MessageBatch statusBatch(std::int64_t run) {
  livedrp::protocol::StatusPayload status;
  status.state = "running";
  status.source = "sim:generic_f32";
  livedrp::EngineConfig config;
  config.run = run;
  config.source = status.source;
  status.config = config.to_json();
  Message message = livedrp::protocol::make_status_message(status);
  message.run = run;
  const std::vector<std::string> parts = livedrp::protocol::encode(message);
  return {std::make_shared<const Message>(
      livedrp::protocol::decode(std::vector<std::string_view>(parts.begin(), parts.end())))};
}

std::uint64_t readU64(hid_t file, const char* path) {
  const auto read = read_dataset<std::uint64_t>(file, path, H5T_NATIVE_UINT64);
  return read.ok && read.values.size() == 1 ? read.values[0] : ~std::uint64_t(0);
}

std::string readStringField(hid_t file, const char* path) {
  const hid_t dataset = H5Dopen2(file, path, H5P_DEFAULT);
  if (dataset < 0) return {};
  const hid_t type = H5Dget_type(dataset);
  std::string value;
  if (H5Tis_variable_str(type) > 0) {
    char* text = nullptr;
    const hid_t memory = H5Tget_native_type(type, H5T_DIR_ASCEND);
    if (H5Dread(dataset, memory, H5S_ALL, H5S_ALL, H5P_DEFAULT, &text) >= 0 && text) value = text;
    if (text) H5free_memory(text);
    H5Tclose(memory);
  } else {
    std::string text(H5Tget_size(type), '\0');
    if (H5Dread(dataset, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, text.data()) >= 0)
      value = text.c_str();
  }
  H5Tclose(type);
  H5Dclose(dataset);
  return value;
}

QStringList actionTexts(const QList<QAction*>& actions) {
  QStringList texts;
  for (QAction* action : actions)
    if (!action->isSeparator()) texts << action->text().remove(QLatin1Char('&'));
  return texts;
}

}  // namespace

class AverageImageExportTest : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;

  QString path(const QString& name) const { return dir_.filePath(name); }

  // Hands `batch` to the window's image model and waits until the run's average holds `images`.
  static bool feed(MainWindow& window, const MessageBatch& batch, std::uint64_t images) {
    window.peakModel()->apply(batch);
    return QTest::qWaitFor(
        [&] { return window.detectorImageView()->runAverage().images() == images; }, 10'000);
  }

 private slots:
  void initTestCase() { QVERIFY(dir_.isValid()); }

  void beforeAnyImageTheEntryIsDisabledAndAnExportIsRefused() {
    MainWindow window(idle_window_options(dir_, QStringLiteral("none.ini")));
    AverageImageExport* exporter = window.averageImageExport();
    QVERIFY(exporter);
    QVERIFY(!exporter->action()->isEnabled());
    QVERIFY2(exporter->action()->text().contains(QLatin1String("no image of this run")),
             qPrintable(exporter->action()->text()));
    QVERIFY(!exporter->unavailableReason().isEmpty());
    bool asked = false;
    exporter->setPathChooser([&](QWidget*, const QString&, const QString&, const QString&) {
      asked = true;
      return path(QStringLiteral("never.h5"));
    });
    QSignalSpy failed(exporter, &AverageImageExport::failed);
    QSignalSpy exported(exporter, &AverageImageExport::exported);
    exporter->exportWithDialog();
    QVERIFY(!asked);  // nothing to export: no dialog
    const QString file = path(QStringLiteral("refused.h5"));
    QVERIFY(!exporter->exportTo(file));
    QCOMPARE(failed.count(), 2);
    QCOMPARE(exported.count(), 0);
    const QString problem = failed.last().at(0).toString();
    QVERIFY2(problem.contains(QLatin1String("no detector image")), qPrintable(problem));
    QVERIFY(!QFile::exists(file));
    QVERIFY(!QFile::exists(path(QStringLiteral("never.h5"))));
  }

  void theEntryIsInTheFileMenuAndTheImagesRightClickMenu() {
    MainWindow window(idle_window_options(dir_, QStringLiteral("menus.ini")));
    QAction* action = window.averageImageExport()->action();
    bool in_file_menu = false;
    for (QAction* top : window.menuBar()->actions())
      if (top->menu() && top->menu()->actions().contains(action)) in_file_menu = true;
    QVERIFY(in_file_menu);
    QVERIFY(feed(window, imageBatch(std::vector<float>(kWidth * kHeight, 1.0f), 1, 100, 1), 1));
    QVERIFY(action->isEnabled());
    QCOMPARE(action->text().remove(QLatin1Char('&')),
             QStringLiteral("Export Average Image (HDF5)..."));
    std::unique_ptr<QMenu> menu(
        window.plotExport()->contextMenu(*window.detectorImageView()->plot(), nullptr));
    QVERIFY(menu->actions().contains(action));
    QVERIFY(
        actionTexts(menu->actions()).contains(QStringLiteral("Export Average Image (HDF5)...")));
  }

  void theFileHoldsTheMeanOfTheRunsImagesAndSaysItIsASample() {
    MainWindow window(idle_window_options(dir_, QStringLiteral("mean.ini")));
    AverageImageExport* exporter = window.averageImageExport();
    // Run 1: two images, which run 2 must not include.
    QVERIFY(feed(window, imageBatch(std::vector<float>(kWidth * kHeight, 1000.0f), 1, 500, 1), 1));
    QVERIFY(feed(window, imageBatch(std::vector<float>(kWidth * kHeight, -7.0f), 2, 501, 1), 2));
    QCOMPARE(window.detectorImageView()->runAverage().run(), std::int64_t(1));
    window.model()->apply(statusBatch(2));

    // Run 2: three images (the protocol refuses infinite values: NaN is what a frame may hold);
    // pixel 0 never finite, pixel 1 finite in two of them, the rest values
    // whose float mean differs from the double one.
    const std::vector<std::vector<float>> frames = [] {
      std::vector<std::vector<float>> f(3, std::vector<float>(kWidth * kHeight));
      for (std::size_t k = 0; k < f.size(); ++k)
        for (std::size_t p = 0; p < kWidth * kHeight; ++p)
          f[k][p] = 0.1f * float(p + 1) + 1.0e-3f * float(k * k) + 16777216.0f * float(p == 5);
      f[0][0] = kNaN;
      f[1][0] = kNaN;
      f[2][0] = kNaN;
      f[1][1] = kNaN;
      return f;
    }();
    const std::uint64_t first_pulse = 9000, last_pulse = 9000 + 2 * 7;
    for (std::size_t k = 0; k < frames.size(); ++k)
      QVERIFY(feed(window, imageBatch(frames[k], 10 + k, first_pulse + 7 * k, 2), k + 1));
    QCOMPARE(window.detectorImageView()->runAverage().run(), std::int64_t(2));
    QVERIFY(exporter->action()->isEnabled());

    QString caption;
    const QString file = path(QStringLiteral("run2-average"));
    exporter->setPathChooser([&](QWidget*, const QString& asked, const QString&, const QString&) {
      caption = asked;
      return file;  // no suffix: .h5 is added
    });
    QSignalSpy exported(exporter, &AverageImageExport::exported);
    exporter->exportWithDialog();
    QCOMPARE(exported.count(), 1);
    QVERIFY2(caption.contains(QLatin1String("3 sampled image")) &&
                 caption.contains(QLatin1String("not every event")),
             qPrintable(caption));
    const QString line = exported.at(0).at(0).toString();
    QVERIFY2(line.contains(QLatin1String("3 image")) && line.contains(QLatin1String("a sample")) &&
                 line.contains(QLatin1String("not every event")),
             qPrintable(line));

    // The expected mean, computed here in double, as float32.
    std::vector<float> expected(kWidth * kHeight);
    for (std::size_t p = 0; p < expected.size(); ++p) {
      double sum = 0;
      int count = 0;
      for (const auto& frame : frames)
        if (std::isfinite(frame[p])) {
          sum += double(frame[p]);
          ++count;
        }
      expected[p] = count > 0 ? float(sum / count) : kNaN;
    }

    const std::string written = (file + QStringLiteral(".h5")).toStdString();
    const hid_t h5 = H5Fopen(written.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    QVERIFY2(h5 >= 0, written.c_str());
    const auto data = read_dataset<float>(h5, "/entry/average/data", H5T_NATIVE_FLOAT);
    QVERIFY(data.ok);
    QCOMPARE(data.shape, (std::vector<hsize_t>{kHeight, kWidth}));
    const hid_t dataset = H5Dopen2(h5, "/entry/average/data", H5P_DEFAULT);
    const hid_t stored = H5Dget_type(dataset);
    QVERIFY(H5Tequal(stored, H5T_IEEE_F32LE) > 0);
    H5Tclose(stored);
    H5Dclose(dataset);
    QVERIFY(std::isnan(data.values[0]));
    for (std::size_t p = 1; p < expected.size(); ++p)
      QVERIFY2(data.values[p] == expected[p],
               qPrintable(QStringLiteral("pixel %1: %2, expected %3")
                              .arg(p)
                              .arg(double(data.values[p]), 0, 'g', 10)
                              .arg(double(expected[p]), 0, 'g', 10)));
    // Pixel 1 is the mean of its two finite values, not of three.
    QCOMPARE(data.values[1], float((double(frames[0][1]) + double(frames[2][1])) / 2));
    QCOMPARE(readU64(h5, "/entry/average/events"), std::uint64_t(3));
    QCOMPARE(readU64(h5, "/entry/average/first_pulse_id"), first_pulse);
    QCOMPARE(readU64(h5, "/entry/average/last_pulse_id"), last_pulse);
    QCOMPARE(read_string_attribute(h5, "/entry/average/data", "units"), std::string("keV"));
    QCOMPARE(read_string_attribute(h5, "/entry/average", "signal"), std::string("data"));
    QCOMPARE(read_string_attribute(h5, "/entry", "NX_class"), std::string("NXentry"));
    QCOMPARE(read_string_attribute(h5, "/entry/average", "NX_class"), std::string("NXdata"));
    QCOMPARE(read_string_attribute(h5, "/entry/average", "averaged_over"),
             std::string("sampled_images"));
    const std::string note = read_string_attribute(h5, "/entry/average", "averaged_over_note");
    QVERIFY2(note.find("3 image(s) of run 2") != std::string::npos &&
                 note.find("not every event") != std::string::npos,
             note.c_str());
    // The configuration the engine's status gave for run 2.
    const nlohmann::json config =
        nlohmann::json::parse(read_string_attribute(h5, "/", "pipeline_config"), nullptr, false);
    QVERIFY2(config.is_object() && config.value("run", -1) == 2, config.dump().c_str());
    QVERIFY(nlohmann::json::parse(readStringField(h5, "/entry/configuration/data"), nullptr,
                                  false) == config);
    H5Fclose(h5);

    // Exporting again to the same path replaces the file (the dialog asked).
    QVERIFY(exporter->exportTo(file + QStringLiteral(".h5")));
  }

  void aNewRunStartsTheAverageAgainAndClearingEmptiesIt() {
    MainWindow window(idle_window_options(dir_, QStringLiteral("reset.ini")));
    AverageImageExport* exporter = window.averageImageExport();
    QVERIFY(feed(window, imageBatch(std::vector<float>(kWidth * kHeight, 4.0f), 1, 1, 7), 1));
    QVERIFY(feed(window, imageBatch(std::vector<float>(kWidth * kHeight, 8.0f), 2, 2, 7), 2));
    // Run 8's first image starts a new average: it alone is the mean.
    QVERIFY(feed(window, imageBatch(std::vector<float>(kWidth * kHeight, 2.5f), 3, 3, 8), 1));
    const QString file = path(QStringLiteral("run8.h5"));
    QVERIFY(exporter->exportTo(file));
    const hid_t h5 = H5Fopen(file.toStdString().c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    QVERIFY(h5 >= 0);
    const auto data = read_dataset<float>(h5, "/entry/average/data", H5T_NATIVE_FLOAT);
    QCOMPARE(data.values, std::vector<float>(kWidth * kHeight, 2.5f));
    QCOMPARE(readU64(h5, "/entry/average/events"), std::uint64_t(1));
    QCOMPARE(readU64(h5, "/entry/average/first_pulse_id"), std::uint64_t(3));
    // No status for run 8: the configuration is not known, and the file says so.
    QCOMPARE(read_string_attribute(h5, "/", "pipeline_config"), std::string("{}"));
    QVERIFY(read_string_attribute(h5, "/entry/average", "averaged_over_note").find("not known") !=
            std::string::npos);
    H5Fclose(h5);
    // A start in the window clears the image model (MainWindow::startRun): nothing to export.
    window.peakModel()->clear();
    QCOMPARE(window.detectorImageView()->runAverage().images(), std::uint64_t(0));
    QVERIFY(!exporter->action()->isEnabled());
    QVERIFY(!exporter->exportTo(path(QStringLiteral("after-clear.h5"))));
    QVERIFY(!QFile::exists(path(QStringLiteral("after-clear.h5"))));
  }
};

QTEST_MAIN(AverageImageExportTest)
#include "test_gui_average_image_export.moc"
