#pragma once
// One lock for every HDF5 call made by the replay readers and the recorder's writer thread.
// Debian's serial HDF5 is built thread-safe (it serialises its own calls with a global lock), but
// a build without --enable-threadsafe is not, and HDF5's error-reporting switch that livedrp
// flips (QuietHdf5Errors) is process-wide there. HDF5 work is serialised either way, so this lock
// costs nothing extra; what runs in parallel is done outside it: pread() of raw chunks or
// contiguous events and their decompression (replay/chunk_decoder.hpp).
#include <mutex>

namespace livedrp::replay {

std::mutex& hdf5_mutex();

}  // namespace livedrp::replay
