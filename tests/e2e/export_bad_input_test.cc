// pdfix export of bad input, on the export tests' recording (e2e/export_fixture.h): a recording
// cut short, an event it does not hold, a non-ELF file where the finder looks for a binary, a
// debug file of another build where the binary's debug link points. Each gives a clear error
// with no profile written, or frames left unnamed and said why: never a wrong name.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "e2e/export_fixture.h"
#include "e2e/harness.h"
#include "llvm/Support/JSON.h"

namespace pdfix::e2e {
namespace {
namespace fs = std::filesystem;

// The summary's entry for the mapping of `file` under leaves_by_mapping.
llvm::json::Object leaves_of(const llvm::json::Object& summary, const std::string& file) {
  for (const llvm::json::Value& v : *summary.getArray("leaves_by_mapping")) {
    if (v.getAsObject()->getString("file").value_or("") == file) return *v.getAsObject();
  }
  ADD_FAILURE() << "no mapping of " << file << " in the summary";
  return {};
}

TEST_F(ExportTest, ARecordingCutShortOrAnEventItLacksIsAnErrorAndNoProfile) {
  const std::string in = dir_ + "/in.data";
  const std::string cut = dir_ + "/cut.data";
  fs::copy_file(in, cut);
  fs::resize_file(cut, fs::file_size(in) / 2);
  RunResult r = pdfix_run("export " + quote(cut) + " " + quote(dir_ + "/cut.pb.gz"));
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_NE(r.err.find("cut.data: offset 0x"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("past the end of the file"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir_ + "/cut.pb.gz"));

  r = pdfix_run("export --format folded --event no-such-event " + quote(in) + " " +
                quote(dir_ + "/out.folded"));
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_NE(r.err.find("--event no-such-event: not sampled in"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir_ + "/out.folded"));
  EXPECT_EQ(fs::directory_iterator(dir_) == fs::directory_iterator(), false);
  for (const auto& e : fs::directory_iterator(dir_)) {
    EXPECT_FALSE(e.path().filename().string().starts_with(".out")) << e.path();
  }
}

// The program gone from its path, text files there and in a --search root: the recording (-B)
// carries no id, none of them proves one, so its frames stay unnamed, and the summary says why.
TEST_F(ExportTest, ANonElfFileWhereTheBinaryWasLeavesItsFramesUnnamed) {
  const std::string hot = dir_ + "/hot";
  const std::string id = own_id(hot);
  fs::rename(hot, dir_ + "/hot.away");
  const std::string root = dir_ + "/root";
  fs::create_directories(root + dir_);
  std::ofstream(root + hot) << "#!/bin/sh\necho not an ELF file\n";
  std::ofstream(hot) << "not an ELF file either\n";
  RunResult r = pdfix_run("export --json --search " + quote(root) + " " + quote(dir_ + "/in.data") +
                          " " + quote(dir_ + "/out.pb.gz"));
  ASSERT_EQ(r.status, 0) << r.err;
  const llvm::json::Object program = leaves_of(parse_object(r.out), hot);
  EXPECT_GT(program.getInteger("samples").value_or(0), 0);
  EXPECT_EQ(program.getInteger("named").value_or(-1), 0);
  EXPECT_NE(program.getString("problem").value_or("").find("no build-id proven"), std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find(id), std::string::npos) << r.out;
  EXPECT_GE(parse_object(r.out).getInteger("binaries_not_read").value_or(0), 1) << r.out;
  r = pprof("-top -nodecount=1000000", dir_ + "/out.pb.gz");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(r.out.find("left_caller"), std::string::npos) << r.out;
  // --strict: the job was not done, and the exit status says so; the profile is written still.
  r = pdfix_run("export --strict --search " + quote(root) + " " + quote(dir_ + "/in.data") + " " +
                quote(dir_ + "/strict.pb.gz"));
  EXPECT_EQ(r.status, 3) << r.err;
  EXPECT_NE(r.err.find("sampled binaries not found or not read here"), std::string::npos) << r.err;
  EXPECT_EQ(pprof("-top", dir_ + "/strict.pb.gz").status, 0);
}

// The program stripped of every symbol after the recording, its debug link pointing at the debug
// file of another build, whose functions lie at the same addresses under other names: that file
// does not carry the program's id, so nothing is named from it.
TEST_F(ExportTest, ADebugFileOfAnotherBuildNamesNothing) {
  std::string other = kProgram;
  for (const std::string from : {"left_caller", "right_caller"}) {
    for (size_t at = other.find(from); at != std::string::npos; at = other.find(from, at)) {
      other.replace(at, from.size(), "wrong_" + from.substr(0, from.find('_')));
    }
  }
  std::ofstream(dir_ + "/other.c") << other;
  RunResult r = sh("cd " + quote(dir_) +
                   " && gcc -O2 -g -fno-omit-frame-pointer -o other other.c"
                   " && objcopy --only-keep-debug other hot.debug"
                   " && strip --strip-all hot && objcopy --add-gnu-debuglink=hot.debug hot");
  ASSERT_EQ(r.status, 0) << r.err;
  ASSERT_NE(own_id(dir_ + "/other"), own_id(dir_ + "/hot"));
  r = pdfix_run("export --json " + quote(dir_ + "/in.data") + " " + quote(dir_ + "/out.pb.gz"));
  ASSERT_EQ(r.status, 0) << r.err;
  const llvm::json::Object program = leaves_of(parse_object(r.out), dir_ + "/hot");
  EXPECT_GT(program.getInteger("samples").value_or(0), 0);
  EXPECT_EQ(program.getInteger("named").value_or(-1), 0) << r.out;
  r = pprof("-top -nodecount=1000000", dir_ + "/out.pb.gz");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(r.out.find("wrong_"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("left_caller"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace pdfix::e2e
