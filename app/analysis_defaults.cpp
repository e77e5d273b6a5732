#include "app/analysis_defaults.hpp"

#include <QStringList>

#include "integrate/shipped_geometry.hpp"

namespace livedrp::app {
namespace {

constexpr const char* kSimulatorPrefix = "sim:";

// The detector of a `sim:DETECTOR` source; empty for any other source.
std::string simulatedDetector(const std::string& source) {
  return source.rfind(kSimulatorPrefix, 0) == 0 ? source.substr(4) : std::string();
}

// "sim:epix10ka2m, sim:jungfrau4m, ...": the sources a geometry ships for.
QString shippedSources() {
  QStringList sources;
  for (const integrate::ShippedGeometry& geometry : integrate::shipped_geometries())
    sources << QStringLiteral("sim:%1").arg(QString::fromUtf8(geometry.name));
  return sources.join(QStringLiteral(", "));
}

}  // namespace

EngineConfig outOfTheBoxConfig() {
  EngineConfig config;  // source sim:epix10ka2m
  config.compression.codec = "lossy";
  config.peak_finding.enabled = true;
  // The pool the simulated source cycles holds the simulator's 10% hit fraction in whole events
  // (2 hits of 20), so the hit-rate dock shows the configured rate; the first 20 events of the
  // default seed hold one hit.
  config.simulator_pool = 20;
  config.simulator_pool_selection = "hit_fraction";
  // Any shipped reference starts the following; followSource puts in the source's own.
  config.integration.poni = std::string(integrate::kShippedPoniPrefix) + "epix10ka2m";
  followSource(config);
  return config;
}

void followSource(EngineConfig& config) {
  if (!integrate::is_shipped_poni_reference(config.integration.poni)) return;
  if (const auto shipped = integrate::shipped_poni_reference(simulatedDetector(config.source))) {
    config.integration.poni = *shipped;
    config.integration.enabled = true;
    return;
  }
  // The reference stays, so that integration comes back on with a simulated detector again.
  config.integration.enabled = false;
}

QString integrationOffReason(const EngineConfig& config) {
  if (config.integration.enabled) return {};
  const QString source = QString::fromStdString(config.source);
  const QString remedy = QStringLiteral(
      "give integration.poni (a pyFAI PONI file) in the engine configuration "
      "(a layout file's engine/config, or livedrp-engine run --config)");
  if (!integrate::is_shipped_poni_reference(config.integration.poni))
    return QStringLiteral(
        "azimuthal integration is off in this configuration "
        "(integration.enabled is false): no radial profile");
  QString why;
  if (source.startsWith(QLatin1String("replay:")))
    why = QStringLiteral("a replay brings no geometry with it");
  else if (source.startsWith(QLatin1String("sls:")) || source.startsWith(QLatin1String("dectris:")))
    why = QStringLiteral("a live detector stream's geometry is the experiment's");
  else if (source.startsWith(QLatin1String(kSimulatorPrefix)))
    why = QStringLiteral("no geometry ships for the simulated detector '%1'")
              .arg(QString::fromStdString(simulatedDetector(config.source)));
  else
    why = QStringLiteral("no geometry ships for the source '%1'").arg(source);
  return QStringLiteral("azimuthal integration is off: %1 (geometries ship for %2 only); %3")
      .arg(why, shippedSources(), remedy);
}

}  // namespace livedrp::app
