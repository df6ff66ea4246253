#include "cli/fix_many.h"

#include <filesystem>
#include <iostream>
#include <set>

#include "absl/strings/str_cat.h"
#include "llvm/Support/raw_os_ostream.h"
#include "store/find_memory.h"

namespace pdfix::cli {

namespace fs = std::filesystem;

int fix_many(const std::vector<passes::RepairKind*>& kinds, const FixArgs& a,
             const std::vector<std::string>& inputs, const resolve::Host& host) {
  std::error_code ec;
  if (a.out == "-" || !fs::is_directory(a.out, ec)) {
    return fail(absl::InvalidArgumentError(
        absl::StrCat("several recordings are fixed into a directory: ", a.out, " is none")));
  }
  if (!a.archive.empty()) {
    return fail(absl::InvalidArgumentError(
        "several recordings keep their binaries with --store; --archive makes one bundle a "
        "recording"));
  }
  // Every name is checked before anything is written: two inputs of one name would be one OUT.
  std::set<std::string> names;
  for (const std::string& in : inputs) {
    const std::string name = fs::path(in).filename().string();
    if (in == "-" || name.empty() || name == "." || name == "..") {
      return fail(absl::InvalidArgumentError(
          absl::StrCat(in, ": several recordings are read from files, each by its name")));
    }
    if (!names.insert(name).second) {
      return fail(absl::InvalidArgumentError(
          absl::StrCat("two recordings are named ", name, ": each is written as OUT/", name)));
    }
  }
  RunMemory memory;
  keep_freed_memory_between_recordings();
  Summary say(a.quiet);
  size_t done = 0;
  size_t incomplete = 0;
  size_t failed = 0;
  for (const std::string& in : inputs) {
    FixArgs one = a;
    one.in = in;
    one.out = (fs::path(a.out) / fs::path(in).filename()).string();
    say.out() << "pdfix fix: " << in << " -> " << one.out << "\n";
    int status = kExitOk;
    if (a.json) {
      llvm::json::Object reports;
      status = run_fix("fix", kinds, one, host, &reports, false, &memory);
      // A line a recording, whole at once, as follow prints its chunks.
      llvm::json::Object line{{"input", in}, {"output", one.out}, {"status", status}};
      if (status != kExitError) {
        line["fix"] = std::move(reports);
      } else if (const llvm::json::Value* error = reports.get("error")) {
        line["error"] = *error;
      }
      llvm::raw_os_ostream out(std::cout);
      out << llvm::json::Value(std::move(line)) << "\n";
      out.flush();
      std::cout.flush();
    } else {
      status = run_fix("fix", kinds, one, host, nullptr, false, &memory);
    }
    (status == kExitOk ? done : status == kExitIncomplete ? incomplete : failed)++;
  }
  say.out() << absl::StrCat("pdfix fix: ", done, " fixed, ", incomplete,
                            " with something missing, ", failed, " not fixed\n");
  if (a.json) {
    llvm::raw_os_ostream out(std::cout);
    out << llvm::json::Value(llvm::json::Object{
               {"summary", llvm::json::Object{{"fixed", static_cast<int64_t>(done)},
                                              {"incomplete", static_cast<int64_t>(incomplete)},
                                              {"not_fixed", static_cast<int64_t>(failed)}}}})
        << "\n";
  }
  return failed > 0 ? kExitError : incomplete > 0 ? kExitIncomplete : kExitOk;
}

}  // namespace pdfix::cli
