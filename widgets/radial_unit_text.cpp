#include "widgets/radial_unit_text.hpp"

namespace livedrp::widgets {
namespace {

struct UnitText {
  QString symbol;  // the quantity
  QString unit;    // its unit as printed after a number
};

UnitText textOf(protocol::RadialUnit unit) {
  switch (unit) {
    case protocol::RadialUnit::TwoThetaDeg:
      return {QStringLiteral("2θ"), QStringLiteral("°")};
    case protocol::RadialUnit::QInverseNm:
      return {QStringLiteral("q"), QStringLiteral("nm⁻¹")};
    case protocol::RadialUnit::QInverseAngstrom:
      return {QStringLiteral("q"), QStringLiteral("Å⁻¹")};
    case protocol::RadialUnit::RadiusMm:
      return {QStringLiteral("r"), QStringLiteral("mm")};
  }
  return {QStringLiteral("radial"), QString()};
}

}  // namespace

QString radialUnitWireName(protocol::RadialUnit unit) {
  const std::string_view name = protocol::to_string(unit);
  return QString::fromUtf8(name.data(), qsizetype(name.size()));
}

QString radialAxisTitle(protocol::RadialUnit unit) {
  const UnitText text = textOf(unit);
  return QStringLiteral("%1 (%2)").arg(text.symbol, text.unit);
}

QString radialValueText(protocol::RadialUnit unit, double value) {
  const UnitText text = textOf(unit);
  // Degrees sit against the number; other units are separated by a space.
  const QString separator =
      unit == protocol::RadialUnit::TwoThetaDeg ? QString() : QStringLiteral(" ");
  return QStringLiteral("%1 = %2%3%4")
      .arg(text.symbol, QString::number(value, 'g', 5), separator, text.unit);
}

}  // namespace livedrp::widgets
