#pragma once
// What the tests of `livedrp-engine integrate` share: the pyFAI reference folder, a case by name
// from one of its JSON case lists, and the command's CSV read back.
#include <QFile>
#include <QString>
#include <QStringList>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "test_data.hpp"

namespace livedrp::integrate_cli_testing {

inline std::filesystem::path reference_dir() {
  return livedrp::testing::test_reference_dir() / "pyfai";
}

// The case `name` of the list in `cases_file` (in reference_dir()); empty when there is none.
inline nlohmann::json find_case(const std::string& cases_file, const std::string& name) {
  std::ifstream in(reference_dir() / cases_file);
  for (const auto& c : nlohmann::json::parse(in))
    if (c["name"] == name) return c;
  return {};
}

struct CsvRow {
  int frame;
  double radial, intensity, sigma;
};

// The rows of an integrate CSV, its header line in `header`; empty when a row is malformed.
inline std::vector<CsvRow> read_csv(const QString& path, QString* header) {
  std::vector<CsvRow> rows;
  QFile file(path);
  if (!file.open(QIODevice::ReadOnly)) return rows;
  *header = QString::fromUtf8(file.readLine()).trimmed();
  while (!file.atEnd()) {
    const QStringList f = QString::fromUtf8(file.readLine()).trimmed().split(',');
    if (f.size() != 4) return {};
    rows.push_back({f[0].toInt(), f[1].toDouble(), f[2].toDouble(), f[3].toDouble()});
  }
  return rows;
}

inline double relative(double ours, double reference) {
  return reference == 0.0 ? std::fabs(ours) : std::fabs(ours - reference) / std::fabs(reference);
}

}  // namespace livedrp::integrate_cli_testing
