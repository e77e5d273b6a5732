#include "io/profile_output.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "io/profile_writer_csv.hpp"
#include "io/profile_writer_nexus.hpp"
#include "io/profile_writer_pyfai.hpp"

namespace livedrp::io {
namespace {

const std::vector<std::pair<std::string, ProfileFormat>>& extension_table() {
  static const std::vector<std::pair<std::string, ProfileFormat>> table = {
      {".csv", ProfileFormat::Csv},       {".xy", ProfileFormat::PyFaiText},
      {".dat", ProfileFormat::PyFaiText}, {".h5", ProfileFormat::NexusHdf5},
      {".nxs", ProfileFormat::NexusHdf5}, {".hdf5", ProfileFormat::NexusHdf5}};
  return table;
}

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return char(std::tolower(c)); });
  return text;
}

}  // namespace

std::string accepted_profile_extensions() {
  std::string list;
  for (const auto& [extension, format] : extension_table())
    list += (list.empty() ? "" : ", ") + extension;
  return list;
}

ProfileFormat profile_format_for(const std::string& output) {
  if (output == "-") return ProfileFormat::Csv;
  const std::filesystem::path path(output);
  // A folder is the user's to fix, whatever its name looks like.
  if (std::filesystem::is_directory(path))
    throw InputError("cannot write output file '" + output + "': it is a directory");
  const std::string extension = lower(path.extension().string());
  for (const auto& [known, format] : extension_table())
    if (extension == known) return format;
  throw InputError("output file '" + output + "' has " +
                   (extension.empty() ? std::string("no extension")
                                      : "the extension '" + path.extension().string() + "'") +
                   "; the format follows the extension: " + accepted_profile_extensions() +
                   " (.csv: CSV, .xy/.dat: pyFAI text, .h5/.nxs/.hdf5: NeXus), or - for CSV on "
                   "stdout");
}

std::unique_ptr<ProfileWriter> open_profile_writer(ProfileFormat format, const std::string& output,
                                                   const ProfileOutputContext& context) {
  switch (format) {
    case ProfileFormat::PyFaiText:
      return open_pyfai_profile_writer(output, context);
    case ProfileFormat::NexusHdf5:
      return open_nexus_profile_writer(output, context);
    case ProfileFormat::Csv:
    default:
      return open_csv_profile_writer(output, context);
  }
}

std::string radial_axis_name(integrate::RadialUnit unit) {
  switch (unit) {
    case integrate::RadialUnit::TwoThetaDeg:
      return "2th";
    case integrate::RadialUnit::RMm:
      return "r";
    case integrate::RadialUnit::QNm:
    case integrate::RadialUnit::QA:
    default:
      return "q";
  }
}

std::string radial_axis_units(integrate::RadialUnit unit) {
  switch (unit) {
    case integrate::RadialUnit::TwoThetaDeg:
      return "degree";
    case integrate::RadialUnit::RMm:
      return "mm";
    case integrate::RadialUnit::QA:
      return "1/angstrom";
    case integrate::RadialUnit::QNm:
    default:
      return "1/nm";
  }
}

}  // namespace livedrp::io
