// A shared library loaded when a verb needs it rather than linked into pdfix: every library
// linked is loaded, relocated and initialized on every run, whatever the verb.
#pragma once

#include <dlfcn.h>

#include <string>
#include <type_traits>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"

namespace pdfix::store {

class LoadedLibrary {
 public:
  // `soname` as the dynamic linker finds it; `package` names what provides it, for the error.
  static absl::StatusOr<LoadedLibrary> open(const std::string& soname, const std::string& package) {
    // Never unloaded: the libraries pdfix loads keep global state for the life of the process.
    void* handle = dlopen(soname.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (handle == nullptr) {
      return absl::FailedPreconditionError(
          absl::StrCat("cannot load ", soname, " (Debian: ", package, "): ", dlerror()));
    }
    return LoadedLibrary(handle);
  }

  // Sets `into` to the function `name`; false when the library lacks it.
  template <class Function>
  bool bind(const char* name, Function& into) const {
    static_assert(std::is_pointer_v<Function>);
    into = reinterpret_cast<Function>(dlsym(handle_, name));
    return into != nullptr;
  }

 private:
  explicit LoadedLibrary(void* handle) : handle_(handle) {}
  void* handle_;
};

}  // namespace pdfix::store
