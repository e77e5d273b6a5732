#pragma once
// Exporting plots from the window (widgets/plot_export.hpp writes the files): a right-click menu
// on every plot (Export as PNG, SVG, data as CSV; the detector image also as .npy, and its "Whole
// image", which right click did before the menu) and File > Export: the current plot (the one
// clicked last, or in the dock the focus moved into last) or any plot by name. The file dialog is
// asked through a replaceable chooser, so tests drive the menus without a modal dialog. Results and
// refusals (an unwritable path, nothing to export yet) go out as signals; the window shows them
// in the Log and the status bar.
#include <functional>
#include <optional>
#include <vector>

#include <QAction>
#include <QObject>
#include <QPointer>
#include <QString>
#include <QStringList>

#include "widgets/plot_export.hpp"

class QAction;
class QMenu;
class QWidget;
class QwtPlot;

namespace livedrp::app {

class PlotExportActions : public QObject {
  Q_OBJECT

 public:
  // Asks where to write: the dialog's caption, a suggested path, the filters (the first one
  // selected). Returns the path and the filter chosen; an empty path when cancelled.
  struct Choice {
    QString path;
    QString filter;
  };
  using PathChooser = std::function<Choice(QWidget* parent, const QString& caption,
                                           const QString& suggested, const QStringList& filters)>;

  explicit PlotExportActions(QWidget& window);

  // Every QwtPlot under the window gets the right-click menu and an entry in menu(); call once
  // the docks are built. Each is named after its dock (plus its own title where a dock holds
  // several plots).
  void attachPlots();
  std::vector<QwtPlot*> plots() const;
  QString labelOf(const QwtPlot& plot) const;

  // File > Export: "Current Plot..." then one entry per plot.
  QMenu* menu() const { return menu_; }
  // The plot the user turned to last: clicked (plots take no keyboard focus), right-clicked, or
  // the one in the dock the keyboard focus moved into. Null before any.
  QwtPlot* currentPlot() const;
  // The right-click menu of `plot`, built afresh (owned by `parent`).
  QMenu* contextMenu(QwtPlot& plot, QWidget* parent);

  void setPathChooser(PathChooser chooser) { chooser_ = std::move(chooser); }
  // Added to the detector image's right-click menu after its exports (Export Average Image).
  void addImageAction(QAction* action) { image_actions_.emplace_back(action); }

  // Asks for a path (offering `format`, or every format the plot has) and exports there.
  void exportWithDialog(QwtPlot& plot, std::optional<widgets::ExportFormat> format);
  // Writes `plot` to `path` in `format`; emits exported or failed. True when written.
  bool exportTo(QwtPlot& plot, const QString& path, widgets::ExportFormat format);

 signals:
  void exported(const QString& line);
  void failed(const QString& problem);

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override;

 private:
  void rebuildMenu();
  void followFocus(QWidget* now);
  static Choice askWithFileDialog(QWidget* parent, const QString& caption, const QString& suggested,
                                  const QStringList& filters);

  QWidget& window_;
  QMenu* menu_;
  QAction* current_action_ = nullptr;
  std::vector<QPointer<QwtPlot>> plots_;
  std::vector<QPointer<QAction>> image_actions_;
  QPointer<QwtPlot> current_;
  QString last_directory_;
  PathChooser chooser_;
};

}  // namespace livedrp::app
