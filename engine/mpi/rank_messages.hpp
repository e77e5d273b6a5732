#pragma once
// The messages a processing rank's stage books publish on topics the collector does not merge
// itself (docs/mpi.md): `fidelity`, and the topics of stages registered outside the engine. The
// rank's engine hands them over on its reporter thread (Engine::forward_stage_messages); the
// newest of each topic waits here for the rank's next report, and the collector publishes what
// the reports bring. `profile` and `peaks` are left out: the collector merges those from the
// ranks' sums and hits.
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "protocol/message.hpp"

namespace livedrp::mpi {

class RankMessages {
 public:
  // For Engine::forward_stage_messages; `this` must outlive the engine's run.
  std::function<void(const protocol::Message&)> sink();
  // The newest message of each topic since the previous call, in topic order.
  std::vector<protocol::Message> take();

 private:
  std::mutex mutex_;
  std::map<std::string, protocol::Message> newest_;
};

// Whether the collector forwards a rank's message on `topic` as it is (false for the topics it
// merges from the ranks' sums and hits).
bool forwarded_topic(const std::string& topic);

}  // namespace livedrp::mpi
