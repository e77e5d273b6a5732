#pragma once
// File > Export Average Image (HDF5)... and the same entry in the detector image's right-click
// menu: the mean of the calibrated images the window received since the current run started
// (DetectorImageView::runAverage(); the `image` topic, at most image.publish_hz a second: a
// sample of the run's events, not every event), written with the engine's own average-image
// writer (io/average_image_writer.hpp), so the file has the layout of `livedrp-engine run
// --write-average` (docs/formats.md, "Average image") and a PONI pyFAI-calib2 fits to it is one
// for livedrp. The file says it is a sample: /entry/average's averaged_over is
// "sampled_images", averaged_over_note names the count, and `events` is the number of images.
// The entry is disabled, its text saying why, until an image of the run arrives; an export
// asked for then is refused with the reason and writes nothing. The file dialog is asked
// through a replaceable chooser, so tests drive it without a modal dialog.
#include <cstdint>
#include <functional>
#include <string>

#include <QObject>
#include <QPointer>
#include <QString>

class QAction;
class QWidget;

namespace livedrp::widgets {
class DetectorImageView;
}

namespace livedrp::app {

class AverageImageExport : public QObject {
  Q_OBJECT

 public:
  // Asks where to write (caption, suggested path, filter); an empty path when cancelled.
  using PathChooser = std::function<QString(QWidget* parent, const QString& caption,
                                            const QString& suggested, const QString& filter)>;
  // The pipeline configuration (JSON text) of run `run` as the window knows it; empty when it
  // does not (the file then carries "{}").
  using ConfigurationOf = std::function<std::string(std::int64_t run)>;

  AverageImageExport(QWidget& window, widgets::DetectorImageView& view,
                     ConfigurationOf configuration);

  // Shared by the File menu and the image's right-click menu; follows the run's average.
  QAction* action() const { return action_; }
  void setPathChooser(PathChooser chooser) { chooser_ = std::move(chooser); }

  // Why there is nothing to export (empty when there is).
  QString unavailableReason() const;
  // What an export would hold, in words ("the mean of the 12 images of run 3 this window
  // received, events #.. to #.., a sample: ..."); empty when nothing.
  QString description() const;
  // Asks for a path, then exportTo(); refuses (failed) when there is nothing to export.
  void exportWithDialog();
  // Writes the run's average to `path` (replacing a file there: the dialog asked). Emits
  // exported or failed; true when written.
  bool exportTo(const QString& path);

 signals:
  void exported(const QString& line);
  void failed(const QString& problem);

 private:
  void follow(quint64 images, qint64 run);
  static QString askWithFileDialog(QWidget* parent, const QString& caption,
                                   const QString& suggested, const QString& filter);

  QWidget& window_;
  QPointer<widgets::DetectorImageView> view_;
  ConfigurationOf configuration_;
  QAction* action_;
  PathChooser chooser_;
  QString last_directory_;
};

}  // namespace livedrp::app
