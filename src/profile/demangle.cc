#include "profile/demangle.h"

#include <cstdlib>
#include <memory>

#include "llvm/Demangle/Demangle.h"

namespace pdfix::profile {

std::string function_name(const std::string& linkage_name) {
  // A compiler's clone of a function (_ZN1a1fEi.isra.0, .constprop.0, .cold) is shown by the
  // function's name, as perf shows it: the suffix is no part of the mangled name.
  // Only a C++ name is taken apart: to the Itanium demangler a C function named `f` or `i` is the
  // type float or int. Rust's and D's names, demangled whole, are left as the demangler has them.
  if (!linkage_name.starts_with("_Z")) return llvm::demangle(linkage_name);
  const std::string mangled = linkage_name.substr(0, linkage_name.find('.'));
  llvm::ItaniumPartialDemangler d;
  if (d.partialDemangle(mangled.c_str())) return llvm::demangle(linkage_name);
  // A function's name and scope, its template arguments included; what is not a function (a
  // vtable, a guard variable) whole.
  const std::unique_ptr<char, decltype(&std::free)> name(
      d.isFunction() ? d.getFunctionName(nullptr, nullptr) : d.finishDemangle(nullptr, nullptr),
      &std::free);
  return name != nullptr ? std::string(name.get()) : linkage_name;
}

}  // namespace pdfix::profile
