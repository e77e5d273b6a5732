#include "exec/backend.hpp"

#include "core/error.hpp"

namespace livedrp {

BackendChoice make_backend(const std::string& requested, const DetectorDescription& detector,
                           const CalibrationConstants& constants,
                           const calib::CalibrationParams& params, unsigned cpu_threads,
                           const StreamConfig& runtime) {
  // The CPU backend has one lane and launches nothing: the runtime settings are CUDA's.
  const std::string cpu_runtime_note =
      runtime == StreamConfig{}
          ? ""
          : "; the runtime settings (" + describe(runtime) + ") apply to the CUDA backend only";
  if (requested == "cpu")
    return {make_cpu_backend(detector, constants, params, cpu_threads),
            "cpu: as requested" + cpu_runtime_note};
  if (requested == "cuda") {
    if (auto reason = cuda_unavailable_reason())
      throw RuntimeFault("backend 'cuda' requested but CUDA is not usable: " + *reason);
    return {make_cuda_backend(detector, constants, params, runtime), "cuda: as requested"};
  }
  if (requested == "auto") {
    if (auto reason = cuda_unavailable_reason())
      return {make_cpu_backend(detector, constants, params, cpu_threads),
              "auto: CUDA not usable (" + *reason + "), using the CPU backend" + cpu_runtime_note};
    try {
      return {make_cuda_backend(detector, constants, params, runtime), "auto: CUDA device found"};
    } catch (const RuntimeFault& fault) {
      return {make_cpu_backend(detector, constants, params, cpu_threads),
              std::string("auto: CUDA set-up failed (") + fault.what() +
                  "), using the CPU backend" + cpu_runtime_note};
    }
  }
  throw InputError("unknown backend '" + requested + "' (expected cpu, cuda or auto)");
}

}  // namespace livedrp
