// libFuzzer target: a calibration constants file (HDF5, docs/formats.md), read by
// load_constants_hdf5 from a file in memory for a small ePix10ka-like detector (small_epix.hpp),
// then as a gain map. Its seed is save_constants_hdf5's output (write_seeds.cpp).
//
// HDF5 itself is the system's library, not instrumented: the fuzzer sees the coverage of
// livedrp's checks only, and a fault inside libhdf5 shows as a crash without ASan's report.
#include <cstddef>
#include <cstdint>
#include <string>

#include "calib/constants.hpp"
#include "fuzz_refusal.hpp"
#include "memory_file.hpp"
#include "small_epix.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace livedrp;
  static const DetectorDescription detector = fuzz::small_epix();
  static fuzz::MemoryFile file;
  const std::string path = file.hold(data, size);
  fuzz::accepted([&] { load_constants_hdf5(path, detector); });
  fuzz::accepted([&] { load_gain_map_hdf5(path, detector); });
  return 0;
}
