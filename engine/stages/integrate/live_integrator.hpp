#pragma once
// Live integration's set-up from the pipeline configuration's "integration" section.
#include "calib/constants.hpp"
#include "core/detector.hpp"
#include "exec/engine.hpp"
#include "integrate/integrator.hpp"

namespace livedrp::stages {

// The integrator the configuration describes, for the detector's segment placement. Its mask is
// the configured mask file's and the calibration constants' bad pixels (which calibrate to 0 and
// would otherwise pull the profile down). Throws InputError naming the field.
integrate::Integrator make_live_integrator(const LiveIntegrationConfig& config,
                                           const DetectorDescription& detector,
                                           const CalibrationConstants& constants);

}  // namespace livedrp::stages
