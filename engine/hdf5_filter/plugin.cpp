// The entry points HDF5 looks for in a dynamically loaded filter (liblivedrp_h5filter.so on
// HDF5_PLUGIN_PATH): the plugin's type and its H5Z_class2_t (filter_class.hpp).
#include <H5PLextern.h>

#include "hdf5_filter/filter_class.hpp"

extern "C" {
H5PL_type_t H5PLget_plugin_type(void) {
  return H5PL_TYPE_FILTER;
}
const void* H5PLget_plugin_info(void) {
  return &livedrp::hdf5_filter::filter_class();
}
}
