#include "widgets/csv_table.hpp"

#include <charconv>
#include <cmath>

namespace livedrp::widgets {
namespace {

template <typename T>
void appendShortest(QByteArray& out, T value) {
  // to_chars spells NaN and infinities "nan", "inf" with a sign: the forms numpy and pandas read.
  char buffer[64];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
  out.append(buffer, int(result.ptr - buffer));
}

}  // namespace

void appendNumber(QByteArray& out, double value) {
  appendShortest(out, value);
}

void appendNumber(QByteArray& out, float value) {
  appendShortest(out, value);
}

QByteArray csvField(const QString& text) {
  QByteArray field = text.toUtf8();
  if (!field.contains(',') && !field.contains('"') && !field.contains('\n') &&
      !field.contains('\r'))
    return field;
  field.replace("\"", "\"\"");
  return '"' + field + '"';
}

QByteArray csvText(const CsvTable& table) {
  QByteArray out;
  for (const QString& note : table.notes) {
    // A note never spans lines: a reader skips "#" lines one at a time.
    QString line = note;
    line.replace(QLatin1Char('\n'), QLatin1Char(' '));
    out += "# " + line.toUtf8() + '\n';
  }
  for (qsizetype column = 0; column < table.columns.size(); ++column) {
    if (column > 0) out += ',';
    out += csvField(table.columns[column]);
  }
  out += '\n';
  const std::size_t rows = table.rowCount();
  out.reserve(out.size() + qsizetype(rows * table.values.size() * 12));
  for (std::size_t row = 0; row < rows; ++row) {
    for (std::size_t column = 0; column < table.values.size(); ++column) {
      if (column > 0) out += ',';
      const auto& values = table.values[column];
      appendNumber(out, row < values.size() ? values[row] : std::nan(""));
    }
    out += '\n';
  }
  return out;
}

}  // namespace livedrp::widgets
