// A function's name as profiles show it: a C++ name demangled without its parameters
// (`std::vector<int>::push_back`), as perf report and pprof print one, the mangled name kept
// beside it (pprof's and OTLP's system_name); another language's name as it is.
#pragma once

#include <string>

namespace pdfix::profile {

std::string function_name(const std::string& linkage_name);

}  // namespace pdfix::profile
