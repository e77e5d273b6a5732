#pragma once
// Where `livedrp-engine integrate` puts its radial profiles: the format follows the output file's
// extension (docs/formats.md, "Radial profiles"), and every format gets the same context (the
// geometry, the unit, which corrections ran and the configuration that produced the profiles).
// Writers take the profiles frame by frame, so a long stack never has to be held in memory.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "integrate/integrator.hpp"
#include "integrate/poni.hpp"
#include "integrate/units.hpp"

namespace livedrp::io {

enum class ProfileFormat {
  Csv,        // .csv or "-" (stdout): frame,radial,intensity,sigma
  PyFaiText,  // .xy, .dat: pyFAI's text format, one file per frame
  NexusHdf5,  // .h5, .nxs, .hdf5: NeXus NXdata, one [frame, bin] intensity
};

// The extensions each format is chosen by, for messages: ".csv, .xy, .dat, .h5, .nxs, .hdf5".
std::string accepted_profile_extensions();

// The format of `output` by its extension (any letter case). Throws InputError naming the
// extension and the accepted ones for anything else, and for a path that is a folder.
ProfileFormat profile_format_for(const std::string& output);

// What the files say beside the numbers.
struct ProfileOutputContext {
  std::uint64_t frames = 0;
  std::size_t bins = 0;
  integrate::RadialUnit unit = integrate::RadialUnit::QNm;
  integrate::PoniGeometry poni;
  // pyFAI's "Mask applied" (integrate1d): "user provided" for a mask given with the frames,
  // "from detector" when only the detector masks pixels (a named detector's module gaps, a
  // geometry's bad regions), "False" when no pixel is masked.
  std::string mask_applied = "False";
  bool dark_applied = false, flat_applied = false;
  std::optional<double> polarization;  // pyFAI's factor; none: no correction
  std::string program;                 // "livedrp-engine integrate 0.9.0"
  std::string configuration_json;      // the options and geometry that produced the profiles
};

class ProfileWriter {
 public:
  virtual ~ProfileWriter() = default;
  // Frame `frame` (0 .. frames - 1, in order) of `profile` (bins values in each of radial,
  // intensity and sigma). Throws RuntimeFault when the disk refuses.
  virtual void write(std::uint64_t frame, const integrate::Profile& profile) = 0;
  // Flushes and closes; throws RuntimeFault when that fails. Called once after the last frame.
  virtual void close() = 0;
  // Where the profiles went, for the command's summary line.
  virtual std::string destination() const = 0;
};

// Opens (creates or overwrites) the output now, so that a path that cannot be written is named
// (InputError) before any integration runs.
std::unique_ptr<ProfileWriter> open_profile_writer(ProfileFormat format, const std::string& output,
                                                   const ProfileOutputContext& context);

// The name pyFAI's radial units have as a NeXus axis ("q", "2th", "r") and its units attribute
// ("1/nm", "1/angstrom", "degree", "mm").
std::string radial_axis_name(integrate::RadialUnit unit);
std::string radial_axis_units(integrate::RadialUnit unit);

}  // namespace livedrp::io
