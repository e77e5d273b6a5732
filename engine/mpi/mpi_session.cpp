#include "mpi/mpi_session.hpp"

#include <cstdlib>

#include <mpi.h>

#include "core/error.hpp"

namespace livedrp::mpi {

bool launched_as_rank() {
  // Open MPI's mpirun, MPICH's Hydra and Slurm's PMI-2 (PMI_SIZE); a world of one is an
  // ordinary run.
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"})
    if (const char* value = std::getenv(name); value && std::atoi(value) > 1) return true;
  // srun --mpi=pmix sets no size of PMIx's own: its rank, with the step's task count.
  if (std::getenv("PMIX_RANK"))
    if (const char* tasks = std::getenv("SLURM_STEP_NUM_TASKS"); tasks && std::atoi(tasks) > 1)
      return true;
  return false;
}

void check(int code, const char* what) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) length = 0;
  throw RuntimeFault(
      std::string("MPI: ") + what + ": " +
      (length > 0 ? std::string(text, std::size_t(length)) : "error code " + std::to_string(code)));
}

Session::Session() {
  int provided = 0;
  if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
    throw RuntimeFault("MPI: MPI_Init_thread failed (is this process started by mpirun?)");
  if (provided < MPI_THREAD_FUNNELED) {
    MPI_Finalize();
    throw RuntimeFault(
        "MPI: the library does not provide MPI_THREAD_FUNNELED (livedrp calls MPI from one "
        "thread while the engine runs threads of its own)");
  }
  check(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN), "setting MPI_ERRORS_RETURN");
  check(MPI_Comm_rank(MPI_COMM_WORLD, &rank_), "MPI_Comm_rank");
  check(MPI_Comm_size(MPI_COMM_WORLD, &size_), "MPI_Comm_size");
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int length = 0;
  check(MPI_Get_processor_name(name, &length), "MPI_Get_processor_name");
  processor_.assign(name, std::size_t(length));
}

Session::~Session() {
  MPI_Finalize();
}

}  // namespace livedrp::mpi
