// libFuzzer target: a NumPy .npy file (masks, radius maps, pedestals), read by io::read_npy from
// a file in memory: magic, version, header length, the header dictionary, shape and data size.
#include <cstddef>
#include <cstdint>

#include "fuzz_refusal.hpp"
#include "io/npy.hpp"
#include "memory_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace livedrp;
  static fuzz::MemoryFile file;
  const std::string path = file.hold(data, size);
  fuzz::accepted([&] {
    const io::Array array = io::read_npy(path);
    // An accepted array holds exactly the bytes its header announced, and they came from the file.
    if (array.bytes.size() > size) __builtin_trap();
  });
  return 0;
}
