#pragma once
// A table of numbers as the GUI's CSV exports write it: "# " note lines (what the data is, its
// unit, what an empty cell means), one header line of column names, then the rows. Numbers are
// written in the shortest form that reads back to the same double (std::to_chars), so a reader
// gets exactly the values the plot holds; a missing value (a bin without pixels, a time one curve
// has and another has not) is written "nan", which numpy, pandas and spreadsheets read.
#include <cstddef>
#include <vector>

#include <QByteArray>
#include <QString>
#include <QStringList>

namespace livedrp::widgets {

struct CsvTable {
  QStringList notes;    // one "# " line each, before the header
  QStringList columns;  // names, quoted where they hold a comma or a quote
  // values[column][row]; every column as long as the first.
  std::vector<std::vector<double>> values;

  std::size_t rowCount() const { return values.empty() ? 0 : values.front().size(); }
};

// The file's bytes (UTF-8, "\n" line ends).
QByteArray csvText(const CsvTable& table);

// Appends `value` in the shortest text that reads back to it ("0.1", "1e-300", "nan", "-inf").
void appendNumber(QByteArray& out, double value);
void appendNumber(QByteArray& out, float value);
// A CSV field: as is, or in double quotes (quotes doubled) when it holds a comma, quote or line
// end.
QByteArray csvField(const QString& text);

}  // namespace livedrp::widgets
