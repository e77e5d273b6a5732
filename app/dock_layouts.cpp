#include "app/dock_layouts.hpp"

#include <algorithm>

#include <QAction>
#include <QDockWidget>
#include <QEvent>
#include <QInputDialog>
#include <QLayout>
#include <QLineEdit>
#include <QMainWindow>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QSettings>
#include <QStatusBar>
#include <QStyle>
#include <QTimer>
#include <QToolBar>

#include "app/saved_configurations.hpp"

namespace livedrp::app {
namespace {

// The part of the window the docks share: the window less its menu bar, tool bars and status
// bar (their geometry as the window's layout last placed them).
QRect dockArea(const QMainWindow& window) {
  QRect area = window.rect();
  const auto visible = [](const QWidget* widget) { return widget && !widget->isHidden(); };
  if (const QWidget* menu = window.menuWidget(); visible(menu))
    area.setTop(std::max(area.top(), menu->geometry().bottom() + 1));
  if (const auto* status = window.findChild<QStatusBar*>(QString(), Qt::FindDirectChildrenOnly);
      visible(status))
    area.setBottom(std::min(area.bottom(), status->geometry().top() - 1));
  for (const QToolBar* bar :
       window.findChildren<QToolBar*>(QString(), Qt::FindDirectChildrenOnly)) {
    if (!visible(bar) || bar->isFloating()) continue;
    const QRect at = bar->geometry();
    switch (window.toolBarArea(const_cast<QToolBar*>(bar))) {
      case Qt::TopToolBarArea:
        area.setTop(std::max(area.top(), at.bottom() + 1));
        break;
      case Qt::BottomToolBarArea:
        area.setBottom(std::min(area.bottom(), at.top() - 1));
        break;
      case Qt::LeftToolBarArea:
        area.setLeft(std::max(area.left(), at.right() + 1));
        break;
      case Qt::RightToolBarArea:
        area.setRight(std::min(area.right(), at.left() - 1));
        break;
      default:
        break;
    }
  }
  return area;
}

// `total` pixels shared by weight, less the separators between the parts.
QList<int> shares(const std::vector<int>& weights, int total, int separator) {
  int weight_sum = 0;
  for (int weight : weights) weight_sum += weight;
  const int space = total - separator * (static_cast<int>(weights.size()) - 1);
  QList<int> sizes;
  for (int weight : weights) sizes << std::max(1, space * weight / std::max(1, weight_sum));
  return sizes;
}

}  // namespace

std::vector<QDockWidget*> WindowDocks::all() const {
  return {rates,         run_control,    counters,       log,
          stream_config, engine,         comparison,     compression,
          fidelity,      radial_profile, detector_image, peak_table,
          hit_rate,      gain_occupancy, peak_tuning,    analysis,
          replay,        alarms};
}

DockLayouts::DockLayouts(QMainWindow& window, WindowDocks docks, int state_version,
                         QSettings& settings, QObject* parent)
    : QObject(parent),
      window_(window),
      docks_(std::move(docks)),
      state_version_(state_version),
      settings_(settings),
      menu_(new QMenu(tr("&Layouts"), &window)) {
  menu_->setObjectName(QStringLiteral("layoutsMenu"));
  window_.installEventFilter(this);
  // Rebuilt as it opens, never from one of its own actions (which clearing would delete).
  connect(menu_, &QMenu::aboutToShow, this, &DockLayouts::rebuildMenu);
  rebuildMenu();
}

QString DockLayouts::title(BuiltInLayout layout) {
  switch (layout) {
    case BuiltInLayout::Dashboard:
      return tr("Dashboard");
    case BuiltInLayout::Operator:
      return tr("Operator");
    case BuiltInLayout::PeakTuning:
      return tr("Peak-Finder Tuning");
    case BuiltInLayout::StreamComparison:
      return tr("Stream Comparison");
  }
  return {};
}

DockArrangement DockLayouts::arrangement(BuiltInLayout layout) const {
  const WindowDocks& d = docks_;
  // Weights are about the pixels each part gets on a 1920x1080 screen, where every column fits
  // the smallest size its docks take (the stream-configuration panel's 550 px height, the replay
  // bar's 600 px width, the radial profile's plot and waterfall). The panels a layout's user
  // rarely needs are tabs behind the ones they do: nothing is lost, only out of the way. The
  // analysis set-up (stages, geometry, masks, codec) is one tab away in the panels' column, next
  // to the first panel of the layout's user: done before a run, looked at rarely during one.
  switch (layout) {
    case BuiltInLayout::Dashboard:
      // The four a run is judged by, together: rate, compression ratio, radial profile and the
      // image with its peaks (the largest: a 2-Mpixel detector).
      return {{{{{d.run_control}, 180},
                {{d.counters, d.analysis, d.engine, d.stream_config, d.peak_tuning}, 560},
                {{d.log, d.alarms}, 260}},
               400},
              {{{{d.rates, d.hit_rate}, 330}, {{d.radial_profile}, 670}}, 600},
              {{{{d.compression, d.fidelity}, 420},
                {{d.detector_image, d.peak_table, d.gain_occupancy, d.comparison, d.replay}, 580}},
               920}};
    case BuiltInLayout::Operator:
      // Is data arriving, at what rate, is any dropped, what is the hit rate, what does the
      // detector see.
      return {
          {{{{d.run_control}, 180},
            {{d.counters, d.analysis, d.engine, d.stream_config, d.peak_tuning, d.comparison}, 560},
            {{d.log, d.alarms}, 260}},
           520},
          {{{{d.rates}, 500}, {{d.hit_rate, d.compression, d.fidelity}, 500}}, 600},
          {{{{d.detector_image, d.peak_table, d.replay}, 500},
            {{d.radial_profile, d.gain_occupancy}, 500}},
           800}};
    case BuiltInLayout::PeakTuning:
      // Change a parameter, watch the overlay, the hit rate and the peak list follow.
      return {
          {{{{d.peak_tuning, d.analysis, d.run_control, d.stream_config, d.comparison, d.engine},
             640},
            {{d.log, d.counters, d.alarms}, 360}},
           520},
          {{{{d.detector_image, d.radial_profile, d.gain_occupancy, d.replay}, 1}}, 860},
          {{{{d.hit_rate, d.rates, d.compression, d.fidelity}, 450}, {{d.peak_table}, 550}}, 540}};
    case BuiltInLayout::StreamComparison:
      // Settings on the left, the side-by-side results in the middle, the live engine on the
      // right.
      return {{{{{d.stream_config, d.run_control, d.analysis, d.peak_tuning}, 700},
                {{d.log, d.counters, d.alarms}, 300}},
               420},
              {{{{d.comparison}, 1}}, 700},
              {{{{d.rates, d.hit_rate}, 400},
                {{d.engine, d.compression, d.fidelity, d.radial_profile, d.detector_image,
                  d.peak_table, d.gain_occupancy, d.replay},
                 600}},
               800}};
  }
  return {};
}

std::vector<QDockWidget*> DockLayouts::frontDocks(BuiltInLayout layout) const {
  std::vector<QDockWidget*> front;
  for (const LayoutColumn& column : arrangement(layout))
    for (const LayoutCell& cell : column.cells) front.push_back(cell.tabs.front());
  return front;
}

void DockLayouts::arrange(BuiltInLayout layout) {
  const DockArrangement wanted = arrangement(layout);
  place(wanted);
  if (window_.isVisible()) {
    pending_sizes_.reset();
    applySizes(wanted);
  } else {
    pending_sizes_ = wanted;  // the window's size is not final before it is shown
  }
}

void DockLayouts::place(const DockArrangement& arrangement) {
  // Out of the layout first, so each dock is placed afresh whatever the user made of it.
  for (QDockWidget* dock : docks_.all()) {
    dock->setFloating(false);
    window_.removeDockWidget(dock);
  }
  // Columns side by side, then each column's cells one under the other, then the tabs.
  QDockWidget* previous_column = nullptr;
  for (const LayoutColumn& column : arrangement) {
    QDockWidget* head = column.cells.front().tabs.front();
    if (previous_column == nullptr)
      window_.addDockWidget(Qt::LeftDockWidgetArea, head);
    else
      window_.splitDockWidget(previous_column, head, Qt::Horizontal);
    previous_column = head;
  }
  for (const LayoutColumn& column : arrangement)
    for (std::size_t i = 1; i < column.cells.size(); ++i)
      window_.splitDockWidget(column.cells[i - 1].tabs.front(), column.cells[i].tabs.front(),
                              Qt::Vertical);
  for (const LayoutColumn& column : arrangement) {
    for (const LayoutCell& cell : column.cells) {
      for (std::size_t i = 1; i < cell.tabs.size(); ++i)
        window_.tabifyDockWidget(cell.tabs.front(), cell.tabs[i]);
      for (QDockWidget* dock : cell.tabs) dock->show();
      cell.tabs.front()->raise();  // the front tab
    }
  }
}

void DockLayouts::applySizes(const DockArrangement& arrangement) {
  window_.layout()->activate();  // where the menu, tool and status bars are now
  const QRect area = dockArea(window_);
  const int separator =
      window_.style()->pixelMetric(QStyle::PM_DockWidgetSeparatorExtent, nullptr, &window_);
  QList<QDockWidget*> heads;
  std::vector<int> width_weights;
  for (const LayoutColumn& column : arrangement) {
    heads << column.cells.front().tabs.front();
    width_weights.push_back(column.width_weight);
  }
  window_.resizeDocks(heads, shares(width_weights, area.width(), separator), Qt::Horizontal);
  for (const LayoutColumn& column : arrangement) {
    QList<QDockWidget*> cells;
    std::vector<int> height_weights;
    for (const LayoutCell& cell : column.cells) {
      cells << cell.tabs.front();
      height_weights.push_back(cell.height_weight);
    }
    window_.resizeDocks(cells, shares(height_weights, area.height(), separator), Qt::Vertical);
  }
  window_.layout()->activate();
}

void DockLayouts::applyPendingSizes() {
  if (!pending_sizes_) return;  // restored or rearranged since
  const DockArrangement wanted = *pending_sizes_;
  pending_sizes_.reset();
  applySizes(wanted);
}

bool DockLayouts::eventFilter(QObject* watched, QEvent* event) {
  // After the show, once the window's layout has its final size.
  if (watched == &window_ && event->type() == QEvent::Show && pending_sizes_)
    QTimer::singleShot(0, this, &DockLayouts::applyPendingSizes);
  return QObject::eventFilter(watched, event);
}

bool DockLayouts::restoreWindowState(const QByteArray& state) {
  if (state.isEmpty() || !window_.restoreState(state, state_version_)) return false;
  pending_sizes_.reset();
  return true;
}

QString DockLayouts::userLayoutKey(const QString& name) const {
  return QStringLiteral("%1/%2").arg(QLatin1String(kUserLayoutsGroup), name);
}

QStringList DockLayouts::userLayoutNames() const {
  settings_.beginGroup(QLatin1String(kUserLayoutsGroup));
  QStringList names = settings_.childKeys();
  settings_.endGroup();
  names.sort(Qt::CaseInsensitive);
  return names;
}

std::optional<QString> DockLayouts::saveUserLayout(const QString& name) {
  if (!SavedConfigurations::isValidName(name))
    return tr("\"%1\" is not a layout name: letters, digits, space, '_', '-' and '.', up to 64, "
              "not starting with '.'")
        .arg(name);
  for (BuiltInLayout layout : kBuiltIns)
    if (name.compare(title(layout), Qt::CaseInsensitive) == 0)
      return tr("\"%1\" is a built-in layout's name").arg(name);
  settings_.setValue(userLayoutKey(name), window_.saveState(state_version_));
  settings_.sync();
  if (settings_.status() != QSettings::NoError)
    return tr("cannot write the layout \"%1\" to %2").arg(name, settings_.fileName());
  emit logMessage(tr("layout \"%1\" saved").arg(name));
  return std::nullopt;
}

bool DockLayouts::restoreUserLayout(const QString& name) {
  const QByteArray state = settings_.value(userLayoutKey(name)).toByteArray();
  if (state.isEmpty()) {
    emit logMessage(tr("no layout \"%1\"").arg(name));
    return false;
  }
  if (!restoreWindowState(state)) {
    emit logMessage(
        tr("layout \"%1\" was saved by another version of the window and cannot be restored; "
           "delete it and save it again")
            .arg(name));
    return false;
  }
  return true;
}

bool DockLayouts::deleteUserLayout(const QString& name) {
  if (!settings_.contains(userLayoutKey(name))) return false;
  settings_.remove(userLayoutKey(name));
  settings_.sync();
  emit logMessage(tr("layout \"%1\" deleted").arg(name));
  return true;
}

void DockLayouts::rebuildMenu() {
  menu_->clear();
  for (BuiltInLayout layout : kBuiltIns) {
    const QString text =
        layout == BuiltInLayout::Dashboard ? tr("%1 (default)").arg(title(layout)) : title(layout);
    menu_->addAction(text, this, [this, layout] { arrange(layout); });
  }
  const QStringList names = userLayoutNames();
  if (!names.isEmpty()) menu_->addSeparator();
  for (const QString& name : names)
    menu_->addAction(name, this, [this, name] { restoreUserLayout(name); });
  menu_->addSeparator();
  menu_->addAction(tr("Save Current Layout &As..."), this, &DockLayouts::saveUserLayoutDialog);
  QMenu* remove = menu_->addMenu(tr("&Delete Layout"));
  remove->setEnabled(!names.isEmpty());
  for (const QString& name : names) {
    remove->addAction(name, this, [this, name] {
      if (QMessageBox::question(&window_, tr("Delete layout"),
                                tr("Delete the layout \"%1\"?").arg(name)) == QMessageBox::Yes)
        deleteUserLayout(name);
    });
  }
}

void DockLayouts::saveUserLayoutDialog() {
  bool ok = false;
  const QString name = QInputDialog::getText(&window_, tr("Save layout"), tr("Layout name:"),
                                             QLineEdit::Normal, QString(), &ok)
                           .trimmed();
  if (!ok || name.isEmpty()) return;
  if (const auto problem = saveUserLayout(name)) {
    emit logMessage(*problem);
    QMessageBox::warning(&window_, tr("Layout not saved"), *problem);
  }
}

}  // namespace livedrp::app
