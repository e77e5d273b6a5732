#pragma once
// A processing rank's side of the control requests (docs/mpi.md, "Control"), on its MPI thread:
// a request from the collector is answered from the rank's engine (rank_requests.hpp) and the
// answer sent back without waiting for the collector to take it.
#include <list>
#include <vector>

#include <mpi.h>

#include "exec/engine.hpp"

namespace livedrp::mpi {

class RankControl {
 public:
  explicit RankControl(int rank) : rank_(rank) {}
  ~RankControl();  // lets go of answers never taken (finish() was not reached)
  RankControl(const RankControl&) = delete;
  RankControl& operator=(const RankControl&) = delete;

  // Answers the requests that have come, if any. Throws RuntimeFault on a failure of MPI.
  void poll(Engine& engine);
  // Receives the message `message` (probed, tag kTagRequest) and answers it.
  void answer(Engine& engine, MPI_Message& message, const MPI_Status& status);
  // Completes the answers' sends (the collector takes every answer it is owed before it ends).
  void finish();

 private:
  struct Send {
    std::vector<std::uint8_t> bytes;
    MPI_Request request = MPI_REQUEST_NULL;
  };
  int rank_;
  std::list<Send> sends_;
};

}  // namespace livedrp::mpi
