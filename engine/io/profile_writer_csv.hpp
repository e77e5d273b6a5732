#pragma once
// Radial profiles as CSV: one header line `frame,radial,intensity,sigma`, then one row per frame
// and bin (10 significant digits). "-" writes to stdout.
#include <memory>
#include <string>

#include "io/profile_output.hpp"

namespace livedrp::io {

std::unique_ptr<ProfileWriter> open_csv_profile_writer(const std::string& output,
                                                       const ProfileOutputContext& context);

}  // namespace livedrp::io
