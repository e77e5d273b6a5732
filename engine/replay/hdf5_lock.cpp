#include "replay/hdf5_lock.hpp"

namespace livedrp::replay {

std::mutex& hdf5_mutex() {
  static std::mutex mutex;
  return mutex;
}

}  // namespace livedrp::replay
