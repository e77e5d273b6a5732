#pragma once
// The HDF5 side of the livedrp filter (livedrp_filter.hpp): its H5Z_class2_t, with the can_apply
// and set_local callbacks and the filter function, which never lets an exception into HDF5's C
// code. The plugin (plugin.cpp) hands it to HDF5; the engine registers the same class in its own
// process (register_filter), so that it writes and reads recordings without HDF5_PLUGIN_PATH.
#include <hdf5.h>

namespace livedrp::hdf5_filter {

const H5Z_class2_t& filter_class();
// H5Zregister of the class; false when HDF5 refuses. Registering again is harmless.
bool register_filter();

}  // namespace livedrp::hdf5_filter
