#include "widgets/radial_profile_picker.hpp"

#include <QColor>
#include <QPen>

#include <qwt_picker_machine.h>
#include <qwt_plot.h>
#include <qwt_text.h>

#include "widgets/radial_unit_text.hpp"

namespace livedrp::widgets {

RadialProfilePicker::RadialProfilePicker(QwtPlot* plot)
    : QwtPlotPicker(QwtAxis::XBottom, QwtAxis::YLeft, QwtPicker::CrossRubberBand,
                    QwtPicker::AlwaysOn, plot->canvas()) {
  setObjectName(QStringLiteral("radialProfilePicker"));
  // The tracker machine makes every mouse move a selection, so moved() reports the position
  // without a click: the read-out follows the mouse.
  setStateMachine(new QwtPickerTrackerMachine);
  setRubberBandPen(QPen(QColor(0x55, 0x55, 0x55), 1.0, Qt::DashLine));
  setTrackerPen(QPen(Qt::black));
}

QString RadialProfilePicker::textAt(const QPointF& position) const {
  return QStringLiteral("%1, I = %2")
      .arg(radialValueText(unit_, position.x()), QString::number(position.y(), 'g', 4));
}

QwtText RadialProfilePicker::trackerTextF(const QPointF& position) const {
  QwtText text(textAt(position));
  // Readable over the curves.
  text.setBackgroundBrush(QColor(255, 255, 255, 220));
  return text;
}

}  // namespace livedrp::widgets
