#pragma once
// A processing rank's side of the control requests (docs/mpi.md, "Control"), on its MPI thread:
// a request from the collector is answered from the rank's engine (rank_requests.hpp) and the
// answer sent back without waiting for the collector to take it. A prepare_apply is answered when
// the new engine, built on a thread of its own, is ready, and a commit_apply when the running
// engine has drained (a later poll), so that the rank goes on reporting meanwhile.
#include <cstdint>
#include <list>
#include <optional>
#include <vector>

#include <mpi.h>

#include "mpi/rank_engines.hpp"
#include "mpi/rank_requests.hpp"

namespace livedrp::mpi {

class RankControl {
 public:
  explicit RankControl(int rank) : rank_(rank) {}
  ~RankControl();  // lets go of answers never taken (finish() was not reached)
  RankControl(const RankControl&) = delete;
  RankControl& operator=(const RankControl&) = delete;

  // Answers the requests that have come, if any, and an apply's preparation once it is done.
  // Throws RuntimeFault on a failure of MPI.
  void poll(RankEngines& engines);
  // Receives the message `message` (probed, tag kTagRequest) and answers it.
  void answer(RankEngines& engines, MPI_Message& message, const MPI_Status& status);
  // Completes the answers' sends (the collector takes every answer it is owed before it ends).
  void finish();

 private:
  struct Send {
    std::vector<std::uint8_t> bytes;
    MPI_Request request = MPI_REQUEST_NULL;
  };
  void send(const RankAnswer& answer);

  int rank_;
  std::list<Send> sends_;
  std::optional<std::uint64_t> preparing_;   // the prepare_apply request being built for
  std::optional<std::uint64_t> committing_;  // the commit_apply waiting for the old run to drain
};

}  // namespace livedrp::mpi
