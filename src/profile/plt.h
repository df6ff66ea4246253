// The PLT stubs of a binary, named as perf names them: `name@plt`. LLVM's symbolizer names no
// address in a PLT (it has no symbol there), or the symbol before it; LLVM's object library finds
// each stub of an x86-64 or aarch64 ELF file and the symbol its jump slot binds
// (ELFObjectFileBase::getPltEntries, by the target's instruction analysis), as llvm-objdump shows
// them. A stub whose slot binds no symbol (an IRELATIVE one) is not named.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "llvm/Object/ObjectFile.h"

namespace pdfix::profile {

class PltStubs {
 public:
  PltStubs() = default;
  // The stubs of `file` (none for a file of another kind or machine, or without a PLT).
  explicit PltStubs(const llvm::object::ObjectFile& file);
  // The stub's name at `address` (the file's own virtual address), or nullopt.
  std::optional<std::string> name_at(uint64_t address) const;
  size_t size() const { return stubs_.size(); }

 private:
  struct Stub {
    uint64_t start = 0;
    uint64_t end = 0;
    std::string name;
  };
  std::vector<Stub> stubs_;  // by address
};

}  // namespace pdfix::profile
