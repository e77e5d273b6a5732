#include "app/plot_export_actions.hpp"

#include <algorithm>

#include <QApplication>
#include <QDir>
#include <QDockWidget>
#include <QEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QMenu>
#include <QRegularExpression>
#include <QTabWidget>

#include <qwt_plot.h>
#include <qwt_text.h>

#include "widgets/detector_image_plot.hpp"
#include "widgets/image_zoomer.hpp"

namespace livedrp::app {
namespace {

using widgets::ExportFormat;

template <typename Ancestor>
Ancestor* ancestorOf(QWidget* widget) {
  for (; widget; widget = widget->parentWidget())
    if (auto* found = qobject_cast<Ancestor*>(widget)) return found;
  return nullptr;
}

// "Radial profile — history" -> "radial-profile-history": a file name the user can keep.
QString fileStem(const QString& label) {
  QString stem = label.toLower();
  stem.replace(QRegularExpression(QStringLiteral("[^a-z0-9]+")), QStringLiteral("-"));
  stem.remove(QRegularExpression(QStringLiteral("^-+|-+$")));
  return stem.isEmpty() ? QStringLiteral("plot") : stem;
}

QString actionText(ExportFormat format) {
  switch (format) {
    case ExportFormat::Png:
      return PlotExportActions::tr("Export as &PNG...");
    case ExportFormat::Svg:
      return PlotExportActions::tr("Export as &SVG...");
    case ExportFormat::Csv:
      return PlotExportActions::tr("Export Data as &CSV...");
    case ExportFormat::Npy:
      return PlotExportActions::tr("Export Image as &NumPy (.npy)...");
  }
  return {};
}

}  // namespace

PlotExportActions::PlotExportActions(QWidget& window)
    : QObject(&window),
      window_(window),
      menu_(new QMenu(tr("&Export"), &window)),
      chooser_(&PlotExportActions::askWithFileDialog) {
  menu_->setObjectName(QStringLiteral("exportMenu"));
  // The entry's text says which plot it will take, as things are when the menu opens.
  connect(menu_, &QMenu::aboutToShow, this, [this] {
    QwtPlot* plot = currentPlot();
    current_action_->setEnabled(plot != nullptr);
    current_action_->setText(plot ? tr("&Current Plot (%1)...").arg(labelOf(*plot))
                                  : tr("&Current Plot (click a plot first)"));
  });
  rebuildMenu();
  connect(qApp, &QApplication::focusChanged, this,
          [this](QWidget*, QWidget* now) { followFocus(now); });
}

void PlotExportActions::attachPlots() {
  for (QwtPlot* plot : window_.findChildren<QwtPlot*>()) {
    if (std::find(plots_.begin(), plots_.end(), plot) != plots_.end()) continue;
    plots_.emplace_back(plot);
    plot->setContextMenuPolicy(Qt::CustomContextMenu);
    connect(plot, &QWidget::customContextMenuRequested, this, [this, plot](const QPoint& at) {
      current_ = plot;
      QMenu* menu = contextMenu(*plot, plot);
      menu->setAttribute(Qt::WA_DeleteOnClose);
      menu->popup(plot->mapToGlobal(at));
    });
    // Clicking a plot makes it the current one; plots do not take the keyboard focus.
    plot->canvas()->installEventFilter(this);
  }
  rebuildMenu();
}

std::vector<QwtPlot*> PlotExportActions::plots() const {
  std::vector<QwtPlot*> plots;
  for (const QPointer<QwtPlot>& plot : plots_)
    if (plot) plots.push_back(plot);
  return plots;
}

QString PlotExportActions::labelOf(const QwtPlot& plot) const {
  auto* widget = const_cast<QwtPlot*>(&plot);
  QDockWidget* dock = ancestorOf<QDockWidget>(widget);
  const QString dock_title = dock ? dock->windowTitle() : plot.objectName();
  const int plots_in_dock = dock ? int(dock->findChildren<QwtPlot*>().size()) : 1;
  if (plots_in_dock <= 1) return dock_title;
  // Where a dock holds several plots: the plot's own title, else the tab it is on, else its
  // y axis.
  QString part = plot.windowTitle();
  if (part.isEmpty())
    if (auto* tabs = ancestorOf<QTabWidget>(widget))
      for (int tab = 0; tab < tabs->count() && part.isEmpty(); ++tab)
        if (tabs->widget(tab)->isAncestorOf(widget) || tabs->widget(tab) == widget)
          part = tabs->tabText(tab).remove(QLatin1Char('&'));
  if (part.isEmpty()) part = plot.axisTitle(QwtAxis::YLeft).text();
  return tr("%1 — %2").arg(dock_title, part);
}

QwtPlot* PlotExportActions::currentPlot() const {
  return current_;
}

void PlotExportActions::followFocus(QWidget* now) {
  if (!now || !window_.isAncestorOf(now)) return;
  if (auto* plot = ancestorOf<QwtPlot>(now)) {
    current_ = plot;
  } else if (auto* dock = ancestorOf<QDockWidget>(now)) {
    // A dock's controls (the image's colour scale, the profile's unit) stand for its plot.
    const auto in_dock = dock->findChildren<QwtPlot*>();
    if (!in_dock.isEmpty()) current_ = in_dock.front();
  }
}

QMenu* PlotExportActions::contextMenu(QwtPlot& plot, QWidget* parent) {
  auto* menu = new QMenu(parent);
  menu->setObjectName(QStringLiteral("plotExportContextMenu"));
  QPointer<QwtPlot> target(&plot);
  for (const ExportFormat format : widgets::exportFormats(plot)) {
    menu->addAction(actionText(format), this, [this, target, format] {
      if (target) exportWithDialog(*target, format);
    });
  }
  if (auto* image = qobject_cast<widgets::DetectorImagePlot*>(&plot)) {
    for (const QPointer<QAction>& action : image_actions_)
      if (action) menu->addAction(action);
    menu->addSeparator();
    menu->addAction(tr("&Whole Image"), image, [image] { image->zoomer()->zoom(0); });
  }
  return menu;
}

void PlotExportActions::exportWithDialog(QwtPlot& plot, std::optional<ExportFormat> format) {
  const std::vector<ExportFormat> formats = widgets::exportFormats(plot);
  // A right-click entry offers its own format; File > Export every format the plot has.
  QStringList filters;
  if (format) {
    filters << widgets::formatFilter(*format);
  } else {
    for (const ExportFormat offered : formats) filters << widgets::formatFilter(offered);
  }
  const QString label = labelOf(plot);
  const ExportFormat first = format.value_or(formats.front());
  const QString directory = last_directory_.isEmpty() ? QDir::currentPath() : last_directory_;
  const QString suggested =
      QDir(directory).filePath(fileStem(label) + QLatin1Char('.') + widgets::formatSuffix(first));
  const Choice choice = chooser_(&window_, tr("Export %1").arg(label), suggested, filters);
  if (choice.path.isEmpty()) return;

  // The suffix typed decides; without one, the filter chosen does.
  QString path = choice.path;
  std::optional<ExportFormat> chosen = widgets::formatForPath(path);
  if (!chosen) {
    chosen = first;
    for (const ExportFormat offered : formats)
      if (choice.filter == widgets::formatFilter(offered)) chosen = offered;
    path += QLatin1Char('.') + widgets::formatSuffix(*chosen);
  }
  last_directory_ = QFileInfo(path).absolutePath();
  if (std::find(formats.begin(), formats.end(), *chosen) == formats.end()) {
    emit failed(tr("%1 not written: %2 does not export as .%3")
                    .arg(path, label, widgets::formatSuffix(*chosen)));
    return;
  }
  exportTo(plot, path, *chosen);
}

bool PlotExportActions::exportTo(QwtPlot& plot, const QString& path, ExportFormat format) {
  if (const auto problem = widgets::exportPlot(plot, path, format)) {
    emit failed(tr("%1 not exported: %2").arg(labelOf(plot), *problem));
    return false;
  }
  emit exported(tr("%1 exported to %2").arg(labelOf(plot), path));
  return true;
}

bool PlotExportActions::eventFilter(QObject* watched, QEvent* event) {
  if (event->type() == QEvent::MouseButtonPress)
    if (auto* canvas = qobject_cast<QWidget*>(watched))
      if (auto* plot = qobject_cast<QwtPlot*>(canvas->parentWidget())) current_ = plot;
  return QObject::eventFilter(watched, event);
}

void PlotExportActions::rebuildMenu() {
  menu_->clear();
  current_action_ = menu_->addAction(tr("&Current Plot..."), this, [this] {
    if (QwtPlot* plot = currentPlot()) exportWithDialog(*plot, std::nullopt);
  });
  current_action_->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_E));
  menu_->addSeparator();
  for (QwtPlot* plot : plots()) {
    QPointer<QwtPlot> target(plot);
    menu_->addAction(labelOf(*plot) + QStringLiteral("..."), this, [this, target] {
      if (target) exportWithDialog(*target, std::nullopt);
    });
  }
}

PlotExportActions::Choice PlotExportActions::askWithFileDialog(QWidget* parent,
                                                               const QString& caption,
                                                               const QString& suggested,
                                                               const QStringList& filters) {
  Choice choice;
  choice.filter = filters.value(0);
  choice.path = QFileDialog::getSaveFileName(parent, caption, suggested,
                                             filters.join(QStringLiteral(";;")), &choice.filter);
  return choice;
}

}  // namespace livedrp::app
