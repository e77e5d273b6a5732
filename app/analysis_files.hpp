#pragma once
// The files a configuration's analysis stages name, opened before the configuration goes to an
// engine on this machine, so that a wrong path is refused beside the Apply that named it and not
// at the next start. Each is read by the loader the engine reads it with (integrate::load_poni,
// io::read_array), and a refusal is that loader's text behind the field's name, as the engine
// words it ("integration.poni: PONI file ...: cannot be opened").
//
// Only what needs no detector is checked here: whether a mask has the detector's pixel count,
// or the detector has the gain configurations asked for, is the engine's check's to say
// (check_engine_config, which the main window runs on the Apply's configuration; a remote
// engine's "check" request), shown in the same place.
#include "exec/engine.hpp"

namespace livedrp::app {

// The PONI file (or shipped geometry) and mask of integration when it is on; the mask and radius
// map of peak finding when it is on. Throws InputError naming the field.
void checkAnalysisFiles(const EngineConfig& config);

}  // namespace livedrp::app
