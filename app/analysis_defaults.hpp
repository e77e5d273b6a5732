#pragma once
// What the GUI analyses out of the box, and how the shipped geometry follows the source.
//
// `livedrp` with no saved settings runs the simulated ePix10ka2M with every stage on, so that each
// dock fills: calibration, lossy compression (the engine's default error bound), azimuthal
// integration with the geometry shipped for the detector (resources/geometry/, named
// "builtin:NAME": integrate/shipped_geometry.hpp) and peak finding with the engine's defaults,
// on a pool of simulated events that holds the simulator's hit fraction.
//
// While integration.poni names a shipped geometry, integration follows the source: a `sim:NAME`
// source with a shipped geometry gets that geometry and integration on; any other source (a
// replay, a live stream, a simulated detector of one's own description) has no geometry the GUI
// can vouch for, so integration goes off and integrationOffReason() says why. A PONI file the
// user named, or an empty one, is theirs: kept on or off as given.
#include <QString>

#include "exec/engine.hpp"

namespace livedrp::app {

// The GUI's configuration before any saved settings or command-line option.
EngineConfig outOfTheBoxConfig();

// Applies the rule above to `config` (its source as it stands).
void followSource(EngineConfig& config);

// Why `config` publishes no radial profile, in words for the radial-profile dock and the log;
// empty when integration is on.
QString integrationOffReason(const EngineConfig& config);

}  // namespace livedrp::app
