#include "widgets/number_format.hpp"

#include <cmath>

#include <QLocale>

namespace livedrp::widgets {
namespace {
const QLocale& english() {
  static const QLocale locale(QLocale::English, QLocale::UnitedStates);
  return locale;
}
}  // namespace

QString formatCount(std::uint64_t count) { return english().toString(qulonglong(count)); }

QString formatRateHz(double hz) {
  if (!std::isfinite(hz)) return QStringLiteral("- Hz");
  const int decimals = std::abs(hz) < 100 ? 1 : 0;
  return english().toString(hz, 'f', decimals) + QStringLiteral(" Hz");
}

QString formatGbps(double gbps) {
  if (!std::isfinite(gbps)) return QStringLiteral("- GB/s");
  return english().toString(gbps, 'f', 2) + QStringLiteral(" GB/s");
}

QString formatDuration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return QStringLiteral("-");
  if (seconds < 60) return QString::number(seconds, 'f', 1) + QStringLiteral(" s");
  const auto whole = static_cast<long long>(seconds);
  if (whole < 3600) {
    return QStringLiteral("%1 min %2 s").arg(whole / 60).arg(whole % 60, 2, 10, QLatin1Char('0'));
  }
  return QStringLiteral("%1 h %2 min")
      .arg(whole / 3600)
      .arg((whole % 3600) / 60, 2, 10, QLatin1Char('0'));
}

}  // namespace livedrp::widgets
