#include "core/memory_limit.hpp"

#include <unistd.h>

#include "core/error.hpp"

namespace livedrp {

std::uint64_t input_allocation_limit() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_bytes = sysconf(_SC_PAGESIZE);
  // Unknown (no sysconf answer): 4 GiB, enough for any detector input this project reads.
  if (pages <= 0 || page_bytes <= 0) return std::uint64_t(4) << 30;
  return std::uint64_t(pages) * std::uint64_t(page_bytes) / 2;
}

void check_input_allocation(std::uint64_t bytes, const std::string& what) {
  const std::uint64_t limit = input_allocation_limit();
  if (bytes > limit)
    throw InputError(what + " needs " + std::to_string(bytes) +
                     " bytes, more than half of this machine's memory (" + std::to_string(limit) +
                     " bytes)");
}

}  // namespace livedrp
