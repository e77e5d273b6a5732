#pragma once
// Radial profiles in pyFAI's text format (what AzimuthalIntegrator.integrate1d(filename=...)
// writes to .xy or .dat): a header of `#` lines with the geometry as pyFAI prints it
// ("== pyFAI calibration ==", "Distance Sample to Detector: ... m", "PONI: ..., ... m",
// "Rotations: ... rad", the detector's pixel size, "Wavelength: ... m", which corrections ran),
// a `# -->` line naming the file, a column line `# <unit> I sigma`, then one row per bin:
// radial, intensity, sigma.
//
// pyFAI's writer keeps one profile per file, and its batch writer names frame files
// prefix + "%04i" + extension; so one frame goes to FILE.xy itself and a stack of N frames to
// FILE_0000.xy .. FILE_<N-1>.xy beside it. Rows keep 11 significant digits (pyFAI writes 7),
// so that the text carries what the CSV does.
#include <memory>
#include <string>

#include "io/profile_output.hpp"

namespace livedrp::io {

// The file frame `frame` of `frames` goes to.
std::string pyfai_frame_path(const std::string& output, std::uint64_t frame, std::uint64_t frames);

std::unique_ptr<ProfileWriter> open_pyfai_profile_writer(const std::string& output,
                                                         const ProfileOutputContext& context);

}  // namespace livedrp::io
