#pragma once
// Radial profiles as NeXus in HDF5, the layout silx, h5web and pyFAI's viewers plot without being
// told anything (NeXus NXdata: the `signal` attribute names the plotted field, `axes` its axes,
// `<axis>_indices` which dimension each one spans):
//
//   /                        @default = "entry", @creator, @file_name, @file_time
//   /entry                   NXentry, @default = "profiles"; program_name (@version)
//   /entry/integration       NXprocess: program, version, date, sequence_index = 1
//   /entry/integration/configuration   NXnote: type = "text/json", data = the configuration
//   /entry/profiles          NXdata, @signal = "intensity", @axes = ["frame", R],
//                            @frame_indices = 0, @R_indices = 1
//     intensity         float64 [frames, bins], @interpretation = "spectrum"
//     intensity_errors  float64 [frames, bins] (sigma; NeXus pairs FIELD_errors with FIELD)
//     frame             uint64 [frames], the frame's index in the input stack
//     R                 float64 [bins], @units, @long_name (pyFAI's unit name)
//
// R is "q" (units "1/nm" or "1/angstrom"), "2th" ("degree") or "r" ("mm"). One frame is a
// [1, bins] stack too, so that a script reads every file alike.
#include <memory>
#include <string>

#include "io/profile_output.hpp"

namespace livedrp::io {

std::unique_ptr<ProfileWriter> open_nexus_profile_writer(const std::string& output,
                                                         const ProfileOutputContext& context);

}  // namespace livedrp::io
