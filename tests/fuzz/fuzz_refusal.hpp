#pragma once
// What every fuzz target holds a decoder of outside input to: it accepts the bytes, or refuses
// them with the project's own error types, whose text names what is wrong. Any other exception
// (std::bad_alloc, a JSON library error, std::out_of_range) escapes to libFuzzer, which reports it
// as a crash, and so do an empty refusal and a refusal longer than the bound errors keep: a
// decoder that did not validate its input before using it.
#include <cstring>

#include "core/error.hpp"
#include "protocol/message.hpp"

namespace livedrp::fuzz {

// A refusal's text: said (not empty) and bounded (kMaxInputErrorChars plus the note of the cut),
// so that a hostile input is never echoed whole to a log or a reply.
inline void check_refusal_text(const char* what) {
  const std::size_t length = std::strlen(what);
  if (length == 0 || length > kMaxInputErrorChars + 100) __builtin_trap();
}

// Runs `decode`; returns true when it accepted the input, false when it refused it properly.
template <class Decode>
bool accepted(Decode&& decode) {
  try {
    decode();
    return true;
  } catch (const InputError& error) {
    check_refusal_text(error.what());
  } catch (const protocol::ProtocolError& error) {
    check_refusal_text(error.what());
  }
  return false;
}

}  // namespace livedrp::fuzz
