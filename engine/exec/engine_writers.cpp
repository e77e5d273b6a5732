// Engine::write_status: the live writers' counts, files and errors (exec/live_writers.hpp).
#include "exec/engine_impl.hpp"

namespace livedrp {

WriteStatus Engine::write_status() const {
  const Impl& d = *impl_;
  return d.live_writers ? d.live_writers->status() : WriteStatus{};
}

}  // namespace livedrp
