#pragma once
// The main window's named dock layouts (View > Layouts). Four are built in, one for each way the
// window is used (DESIGN.md's users):
// - Dashboard, the default: rates, compression, radial profile and the detector image with its
//   peaks side by side, the panels tabbed in a column on the left;
// - Operator: rates, counters, hit rate, gain modes, radial profile and the image;
// - Peak-finder tuning: the tuning panel, the image, the hit rate and the peak table;
// - Stream comparison: the stream configuration, the comparison, the engine view and the rates.
// Each places every dock (the ones its user does not need tabbed behind the ones they do), in
// columns sized in proportion to the window, so a layout looks the same on any screen.
// User layouts are QMainWindow::saveState snapshots saved by name in the application's QSettings
// (group "user_layouts"), restored with restoreState.
#include <QByteArray>
#include <QObject>
#include <QString>
#include <QStringList>
#include <optional>
#include <vector>

class QDockWidget;
class QMainWindow;
class QMenu;
class QSettings;

namespace livedrp::app {

// The window's docks by the part they play in a layout.
struct WindowDocks {
  QDockWidget* rates = nullptr;
  QDockWidget* run_control = nullptr;
  QDockWidget* counters = nullptr;
  QDockWidget* log = nullptr;
  QDockWidget* stream_config = nullptr;
  QDockWidget* engine = nullptr;
  QDockWidget* comparison = nullptr;
  QDockWidget* compression = nullptr;
  QDockWidget* fidelity = nullptr;
  QDockWidget* radial_profile = nullptr;
  QDockWidget* detector_image = nullptr;
  QDockWidget* peak_table = nullptr;
  QDockWidget* hit_rate = nullptr;
  QDockWidget* gain_occupancy = nullptr;
  QDockWidget* peak_tuning = nullptr;
  QDockWidget* analysis = nullptr;
  QDockWidget* replay = nullptr;
  QDockWidget* alarms = nullptr;

  std::vector<QDockWidget*> all() const;
};

enum class BuiltInLayout { Dashboard, Operator, PeakTuning, StreamComparison };

// A layout as columns, left to right, of cells, top to bottom; a cell's docks are tabbed with the
// first one in front. Widths and heights are weights: each column (cell) gets its share of the
// window's dock area.
struct LayoutCell {
  std::vector<QDockWidget*> tabs;
  int height_weight = 1;
};
struct LayoutColumn {
  std::vector<LayoutCell> cells;
  int width_weight = 1;
};
using DockArrangement = std::vector<LayoutColumn>;

class DockLayouts : public QObject {
  Q_OBJECT

 public:
  static constexpr BuiltInLayout kBuiltIns[] = {BuiltInLayout::Dashboard, BuiltInLayout::Operator,
                                                BuiltInLayout::PeakTuning,
                                                BuiltInLayout::StreamComparison};
  // The QSettings group user layouts are saved in, one key a name.
  static constexpr const char* kUserLayoutsGroup = "user_layouts";

  // `state_version` is the window's QMainWindow::saveState version: a user layout saved with
  // another one is refused when restored (the docks it names may have changed).
  DockLayouts(QMainWindow& window, WindowDocks docks, int state_version, QSettings& settings,
              QObject* parent = nullptr);

  static QString title(BuiltInLayout layout);
  // Where each dock goes in `layout`.
  DockArrangement arrangement(BuiltInLayout layout) const;
  // The docks `layout` shows side by side, none behind another (the front tab of each cell).
  std::vector<QDockWidget*> frontDocks(BuiltInLayout layout) const;

  // Places every dock as `layout` says and shows it; the sizes follow at once on a visible window,
  // on the window's first show otherwise.
  void arrange(BuiltInLayout layout);
  // QMainWindow::restoreState; a built-in arrangement waiting for the first show is dropped, so
  // the restored sizes stand. False when `state` is empty or of another version.
  bool restoreWindowState(const QByteArray& state);

  // User layouts, sorted case-insensitively. Names as SavedConfigurations takes them (letters,
  // digits, space, '_', '-', '.'), and not a built-in's title.
  QStringList userLayoutNames() const;
  // Saves the window's current arrangement as `name` (replacing one of that name); the reason
  // when the name is refused or the settings cannot be written.
  std::optional<QString> saveUserLayout(const QString& name);
  // False (and why, in logMessage) when there is no such layout or it is from another version.
  bool restoreUserLayout(const QString& name);
  bool deleteUserLayout(const QString& name);

  // View > Layouts: the built-ins, the user layouts, Save Current Layout As..., Delete Layout
  // (its entries are rebuilt each time it opens).
  QMenu* menu() const { return menu_; }

 signals:
  void logMessage(const QString& line);

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override;

 private:
  void place(const DockArrangement& arrangement);
  void applySizes(const DockArrangement& arrangement);
  void applyPendingSizes();
  void rebuildMenu();
  void saveUserLayoutDialog();
  QString userLayoutKey(const QString& name) const;

  QMainWindow& window_;
  const WindowDocks docks_;
  const int state_version_;
  QSettings& settings_;
  // A built-in arranged before the window was shown: its sizes need the window's real size.
  std::optional<DockArrangement> pending_sizes_;
  QMenu* menu_ = nullptr;
};

}  // namespace livedrp::app
