#pragma once
// The crosshair of the radial-profile plot: follows the mouse over the canvas (no click needed),
// draws a cross and writes the (radial, intensity) under it next to the cursor, in the unit of
// the data shown.
#include <QPointF>

#include <qwt_plot_picker.h>

#include "protocol/profile_topic.hpp"

class QwtPlot;

namespace livedrp::widgets {

class RadialProfilePicker : public QwtPlotPicker {
  Q_OBJECT

 public:
  explicit RadialProfilePicker(QwtPlot* plot);

  void setUnit(protocol::RadialUnit unit) { unit_ = unit; }
  // "q = 1.2345 Å⁻¹, I = 567.8": what the tracker shows at a point in plot coordinates.
  QString textAt(const QPointF& position) const;

 protected:
  QwtText trackerTextF(const QPointF& position) const override;

 private:
  protocol::RadialUnit unit_ = protocol::RadialUnit::TwoThetaDeg;
};

}  // namespace livedrp::widgets
