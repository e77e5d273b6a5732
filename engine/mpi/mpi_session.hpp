#pragma once
// The MPI library for one process of a run of many engines (docs/mpi.md). Only the MPI standard
// is used (MPI-3: matched probes), so Open MPI and MPICH both serve. Every MPI call of livedrp is
// made on the thread that made the session (MPI_THREAD_FUNNELED): the engines' own threads never
// touch MPI.
#include <string>

namespace livedrp::mpi {

// True when a launcher started this process as one rank of several (mpirun/mpiexec of Open MPI
// or MPICH, srun): the variables they set say so before MPI is initialised, so that a plain
// `livedrp-engine run` never starts MPI.
bool launched_as_rank();

class Session {
 public:
  // MPI_Init_thread; errors on MPI_COMM_WORLD come back as codes (MPI_ERRORS_RETURN), so that a
  // failure is reported with its text instead of aborting the job. Throws RuntimeFault.
  Session();
  ~Session();  // MPI_Finalize
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  std::string processor() const { return processor_; }  // MPI_Get_processor_name

 private:
  int rank_ = 0;
  int size_ = 1;
  std::string processor_;
};

// Throws RuntimeFault "MPI: <what>: <the library's error text>" unless `code` is MPI_SUCCESS.
void check(int code, const char* what);

}  // namespace livedrp::mpi
