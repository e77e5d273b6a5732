#include "app/average_image_export.hpp"

#include <exception>
#include <memory>
#include <vector>

#include <QAction>
#include <QDir>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>

#include "io/average_image_writer.hpp"
#include "widgets/detector_image_view.hpp"

namespace livedrp::app {

AverageImageExport::AverageImageExport(QWidget& window, widgets::DetectorImageView& view,
                                       ConfigurationOf configuration)
    : QObject(&window),
      window_(window),
      view_(&view),
      configuration_(std::move(configuration)),
      action_(new QAction(this)),
      chooser_(&AverageImageExport::askWithFileDialog) {
  action_->setObjectName(QStringLiteral("exportAverageImageAction"));
  connect(action_, &QAction::triggered, this, &AverageImageExport::exportWithDialog);
  connect(&view, &widgets::DetectorImageView::runAverageChanged, this, &AverageImageExport::follow);
  follow(view.runAverage().images(), view.runAverage().run());
}

void AverageImageExport::follow(quint64 images, qint64 run) {
  action_->setEnabled(images > 0);
  if (images == 0) {
    action_->setText(tr("Export Average Image (HDF5): no image of this run received yet"));
    action_->setStatusTip(unavailableReason());
    return;
  }
  action_->setText(tr("Export &Average Image (HDF5)..."));
  action_->setStatusTip(
      tr("The mean of the %n image(s) of run %1 this window received (a sample of the "
         "run's events, not every event) to an HDF5 file for pyFAI-calib2",
         nullptr, int(images))
          .arg(run));
}

QString AverageImageExport::unavailableReason() const {
  if (!view_) return tr("no detector image view");
  if (view_->runAverage().images() == 0)
    return tr(
        "no detector image of this run received yet: the engine publishes `image` a few "
        "times a second while a run goes with image.publish_hz above 0");
  return {};
}

QString AverageImageExport::description() const {
  if (!unavailableReason().isEmpty()) return {};
  const widgets::ImageMean& average = view_->runAverage();
  return tr("the mean of the %n image(s) of run %1 this window received (events #%2 to #%3): a "
            "sample of the run's events (the engine publishes image.publish_hz images a "
            "second), not every event; livedrp-engine run --write-average averages every event",
            nullptr, int(average.images()))
      .arg(average.run())
      .arg(average.first_sequence())
      .arg(average.last_sequence());
}

void AverageImageExport::exportWithDialog() {
  if (const QString reason = unavailableReason(); !reason.isEmpty()) {
    emit failed(tr("average image not exported: %1").arg(reason));
    return;
  }
  const widgets::ImageMean& average = view_->runAverage();
  const QString directory = last_directory_.isEmpty() ? QDir::currentPath() : last_directory_;
  const QString suggested = QDir(directory).filePath(
      QStringLiteral("run%1-average.h5").arg(average.run(), 4, 10, QLatin1Char('0')));
  const QString caption =
      tr("Export the average of %n sampled image(s) of run %1 (not every event)", nullptr,
         int(average.images()))
          .arg(average.run());
  QString path = chooser_(&window_, caption, suggested, tr("HDF5 files (*.h5 *.hdf5 *.nxs)"));
  if (path.isEmpty()) return;
  if (QFileInfo(path).suffix().isEmpty()) path += QStringLiteral(".h5");
  last_directory_ = QFileInfo(path).absolutePath();
  exportTo(path);
}

bool AverageImageExport::exportTo(const QString& path) {
  if (const QString reason = unavailableReason(); !reason.isEmpty()) {
    emit failed(tr("average image not exported to %1: %2").arg(path, reason));
    return false;
  }
  const widgets::ImageMean& average = view_->runAverage();
  const widgets::ImageFramePtr mean = average.computeMean();
  std::string configuration = configuration_ ? configuration_(average.run()) : std::string();
  const bool configuration_known = !configuration.empty();
  if (!configuration_known) configuration = "{}";
  io::AverageImageOptions options;
  options.path = path.toStdString();
  options.unit = mean->unit;
  options.pipeline_config_json = configuration;
  options.creator = "livedrp (GUI: Export Average Image)";
  options.origin = "Export Average Image";
  options.overwrite = true;  // the save dialog asked before replacing a file
  options.averaged_over = io::kAverageOverSampledImages;
  options.averaged_over_note = description().toStdString() +
                               (configuration_known ? std::string()
                                                    : "; the run's configuration was not known "
                                                      "to the window (configuration {})");
  std::unique_ptr<io::AverageImageWriter> writer;
  try {
    writer = std::make_unique<io::AverageImageWriter>(options);
    writer->write(mean->pixels, mean->height, mean->width, average.images(),
                  average.first_pulse_id(), average.last_pulse_id());
  } catch (const std::exception& error) {
    if (writer) {  // created, not written whole: no half file is left behind
      writer.reset();
      QFile::remove(path);
    }
    emit failed(tr("average image not exported: %1").arg(QString::fromUtf8(error.what())));
    return false;
  }
  emit exported(tr("average image exported to %1: %2").arg(path, description()));
  return true;
}

QString AverageImageExport::askWithFileDialog(QWidget* parent, const QString& caption,
                                              const QString& suggested, const QString& filter) {
  return QFileDialog::getSaveFileName(parent, caption, suggested, filter);
}

}  // namespace livedrp::app
