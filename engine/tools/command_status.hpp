#pragma once
// How the offline subcommands of livedrp-engine end: their message on stderr and the exit status
// the README documents (0 done, 1 the output could not be written or a device failed, 2 bad
// input named).
#include <iostream>

#include "core/error.hpp"

namespace livedrp::tools {

constexpr int kExitFailed = 1;
constexpr int kExitBadInput = 2;

template <typename Body>
int run_reporting_errors(Body&& body) {
  try {
    return body();
  } catch (const InputError& e) {
    std::cerr << "livedrp-engine: error: " << e.what() << "\n";
    return kExitBadInput;
  } catch (const RuntimeFault& e) {
    std::cerr << "livedrp-engine: error: " << e.what() << "\n";
    return kExitFailed;
  }
}

}  // namespace livedrp::tools
