#pragma once
// The radial profile: intensity against the radial coordinate, two curves, the latest event's
// profile and the engine's running average, labelled in a legend; the x axis names the unit the
// data carries. Log y is a toggle. A crosshair follows the mouse and readoutChanged() reports the
// position and the curves' values in the bin under it. The plot does not replot by itself on new
// data: its owner coalesces replots (RadialProfileView).
#include <QPointF>
#include <QString>

#include <qwt_plot.h>

#include "protocol/profile_topic.hpp"

class QwtPlotCurve;

namespace livedrp::widgets {

class RadialProfilePicker;

class RadialProfilePlot : public QwtPlot {
  Q_OBJECT

 public:
  explicit RadialProfilePlot(QWidget* parent = nullptr);

  // Takes the profile's curves, unit and legend texts. Bins without pixels (NaN) are left out of
  // the curves, and so are intensities <= 0 while the y axis is logarithmic.
  void setProfile(const protocol::RadialProfile& profile);
  void clear();
  bool hasProfile() const { return has_profile_; }
  // The profile shown, as received (bins the curves leave out included): what its CSV holds.
  const protocol::RadialProfile& profile() const { return profile_; }

  void setLogY(bool on);
  bool logY() const { return log_y_; }

  const QwtPlotCurve* latestCurve() const { return latest_; }
  const QwtPlotCurve* averageCurve() const { return average_; }
  RadialProfilePicker* picker() const { return picker_; }
  // What the read-out says for a position in plot coordinates: the position, then the latest and
  // average intensities of the bin nearest to it.
  QString readoutAt(const QPointF& position) const;

 signals:
  void readoutChanged(const QString& text);

 private:
  void rebuildCurves();

  protocol::RadialProfile profile_;
  bool has_profile_ = false;
  bool log_y_ = false;
  QwtPlotCurve* latest_ = nullptr;
  QwtPlotCurve* average_ = nullptr;
  RadialProfilePicker* picker_ = nullptr;
};

}  // namespace livedrp::widgets
