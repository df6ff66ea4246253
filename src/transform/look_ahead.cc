#include "transform/look_ahead.h"

namespace pdfix::transform {

bool HeldBytes::add(uint64_t bytes) {
  bytes_ += bytes;
  return bytes_ > bound_;
}

std::string early_flush_note(uint64_t n) {
  if (n == 0) return "";
  return "  " + std::to_string(n) + (n == 1 ? " time" : " times") +
         " the records held to look ahead passed their bound (256 MiB) and were applied without "
         "the records after them\n";
}

}  // namespace pdfix::transform
