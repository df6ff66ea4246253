// pdfix inject --buildids on recordings made here, judged by the machine's perf and readelf.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "e2e/harness.h"
#include "fixture/perf_data_builder.h"
#include "format/file_header.h"

namespace pdfix::e2e {
namespace {
namespace fs = std::filesystem;

struct MapLine {
  std::string filename;
  std::string prot;
  std::string build_id;  // empty when the record has dev/ino
};

// What perf itself says about the map records.
std::vector<MapLine> perf_maps(const std::string& path) {
  RunResult r = sh("perf script --show-mmap-events -i " + quote(path) + " | grep PERF_RECORD_MMAP");
  std::vector<MapLine> maps;
  static const std::regex line(R"(\]: (\S+) (.*)$)");
  static const std::regex id(R"(<([0-9a-f]+)>\]:)");
  std::istringstream in(r.out);
  std::string l;
  while (std::getline(in, l)) {
    std::smatch m, i;
    if (!std::regex_search(l, m, line)) continue;
    MapLine ml{m[2], m[1], ""};
    if (std::regex_search(l, i, id)) ml.build_id = i[1];
    maps.push_back(ml);
  }
  return maps;
}

std::string readelf_id(const std::string& path) {
  std::smatch m;
  std::string out = sh("readelf -n " + quote(path)).out;
  static const std::regex re("Build ID: ([0-9a-f]+)");
  return std::regex_search(out, m, re) ? m[1].str() : "";
}

class InjectTest : public ::testing::Test {
 protected:
  void SetUp() override {
    PDFIX_NEEDS_PERF_RECORD();
    dir_ = temp_dir();
    build_app(dir_ + "/app", "1");
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  std::string record(const std::string& args, const std::string& app, bool pipe = false) {
    const std::string out = dir_ + (pipe ? "/in.pipe.data" : "/in.data");
    RunResult r = sh("perf record -q -B " + args + (pipe ? " -o - " : " -o " + out) + " -- " + app +
                     (pipe ? " > " + out : ""));
    EXPECT_EQ(r.status, 0) << r.err;
    return out;
  }

  // The app recorded while perf's build-id cache `cache` gets it (as perf record does at its end),
  // then deleted: only the cache can name it.
  std::string record_into_cache_then_delete(const std::string& app, const std::string& cache) {
    const std::string in = record(
        "", "sh -c " + quote(app + "; perf --buildid-dir " + cache + " buildid-cache -a " + app));
    fs::remove(app);
    return in;
  }

  // Every check of the issue on an injected recording of the app in `where`.
  void expect_every_map_identified(const std::string& in, const std::string& out,
                                   const std::string& where, bool pipe = false) {
    const std::string app_id = readelf_id(where + "/app");
    const std::string lib_id = readelf_id(where + "/libwork.so");
    const std::string kernel_id = sh("perf buildid-list -k").out.substr(0, 40);
    ASSERT_TRUE(std::regex_match(kernel_id, std::regex("[0-9a-f]{40}"))) << kernel_id;
    ASSERT_EQ(app_id.size(), 40U);
    // The vdso's id as perf itself records it (without -B it writes the table).
    const std::string vdso_id =
        sh("perf record -q -o " + quote(dir_ + "/vdso.data") + " -- true >/dev/null 2>&1; " +
           "perf buildid-list -i " + quote(dir_ + "/vdso.data") + " | sed -n 's/ \\[vdso\\]$//p'")
            .out.substr(0, 40);
    ASSERT_TRUE(std::regex_match(vdso_id, std::regex("[0-9a-f]{40}"))) << vdso_id;
    bool saw_app = false, saw_lib = false, saw_kernel = false, saw_vdso = false;
    for (const MapLine& m : perf_maps(out)) {
      if (m.filename == "[vdso]") {
        // Recorded in this boot: the vdso is the one the running kernel gives pdfix too.
        EXPECT_EQ(m.build_id, vdso_id) << "not the vdso's build-id";
        saw_vdso = true;
        continue;
      }
      if (m.filename.starts_with("[kernel.kallsyms]")) {
        EXPECT_EQ(m.build_id, kernel_id);
        saw_kernel = true;
        continue;
      }
      if (m.prot.find('x') == std::string::npos || m.filename.front() != '/') continue;
      EXPECT_FALSE(m.build_id.empty()) << "no build-id on " << m.filename;
      if (m.filename == where + "/app") {
        EXPECT_EQ(m.build_id, app_id);
        saw_app = true;
      }
      if (m.filename == where + "/libwork.so") {
        EXPECT_EQ(m.build_id, lib_id);
        saw_lib = true;
      }
      if (m.filename.starts_with("/usr/") || m.filename.starts_with("/lib")) {
        EXPECT_EQ(m.build_id, readelf_id(m.filename)) << m.filename;
      }
    }
    EXPECT_TRUE(saw_app && saw_lib && saw_kernel && saw_vdso);
    const std::string list = sh("perf buildid-list -i " + quote(out)).out;
    // On a stream perf lists only the objects that samples hit, and only the library is sure to
    // be hit; the map records above carry every id either way.
    EXPECT_NE(list.find(lib_id + " " + where + "/libwork.so"), std::string::npos) << list;
    if (!pipe) {
      EXPECT_NE(list.find(app_id + " " + where + "/app"), std::string::npos) << list;
      EXPECT_NE(list.find(kernel_id + " [kernel.kallsyms]"), std::string::npos) << list;
      // And from the table: perf record -B wrote none, and with one perf lists the table alone
      // (with none it lists what the map records say, which would pass the lines above too).
      const std::string missing = " 2>/dev/null | grep '^# missing features:' || true";
      EXPECT_NE(sh("perf report --header-only -i " + quote(in) + missing).out.find(" BUILD_ID "),
                std::string::npos);
      EXPECT_EQ(sh("perf report --header-only -i " + quote(out) + missing).out.find(" BUILD_ID "),
                std::string::npos);
    }
    const std::string report = "perf report --stdio --sort dso,sym -i ";
    RunResult a = sh(report + quote(in) + " | grep -v '^#'");
    RunResult b = sh(report + quote(out) + " | grep -v '^#'");
    EXPECT_NE(a.out.find("work"), std::string::npos) << a.out;
    EXPECT_EQ(a.out, b.out);
  }

  std::string dir_;
};

TEST_F(InjectTest, EveryFileBackedMapAndTheKernelGetTheirIds) {
  const std::string in = record("", dir_ + "/app/app");
  RunResult r = sh(pdfix() + " inject --buildids " + in + " " + dir_ + "/out.data");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("map records upgraded"), std::string::npos) << r.err;
  expect_every_map_identified(in, dir_ + "/out.data", dir_ + "/app");
}

TEST_F(InjectTest, ThroughAPipe) {
  // perf record -o - | pdfix inject --buildids - - | perf ...: pipes on both sides of pdfix.
  const std::string in = record("", dir_ + "/app/app", /*pipe=*/true);
  const std::string out = dir_ + "/out.pipe.data";
  RunResult r = sh("cat " + in + " | " + pdfix() + " inject --buildids - - | cat > " + out);
  ASSERT_EQ(r.status, 0) << r.err;
  expect_every_map_identified(in, out, dir_ + "/app", /*pipe=*/true);
  r = sh("perf record -q -B -o - -- " + dir_ + "/app/app | " + pdfix() +
         " inject --buildids - - | perf report --stdio --sort dso -i - | grep -c libwork");
  EXPECT_EQ(r.out, "1\n") << r.err;
  // A stream has no table section: the ids also travel as HEADER_BUILD_ID records, which readers
  // that never look at MMAP2 ids (perf < 5.12) take. perf's own dump counts them: none before,
  // one per DSO after (at least the program, its library, libc and the kernel).
  const std::string count = " 2>/dev/null | grep -c 'PERF_RECORD_BUILD_ID' || true";
  EXPECT_EQ(sh("perf report -D -i " + in + count).out, "0\n");
  const std::string after = sh("perf report -D -i " + out + count).out;
  EXPECT_GE(std::stoi(after), 4) << after;
}

TEST_F(InjectTest, ZstdCompressedRecording) {
  const std::string in = record("-z", dir_ + "/app/app");
  ASSERT_NE(sh(pdfix() + " info " + in).out.find("COMPRESSED"), std::string::npos);
  RunResult r = sh(pdfix() + " inject --buildids " + in + " " + dir_ + "/out.data");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(sh(pdfix() + " info " + dir_ + "/out.data").out.find("COMPRESSED"), std::string::npos)
      << "output should stay compressed";
  expect_every_map_identified(in, dir_ + "/out.data", dir_ + "/app");
}

// What the app's and the library's maps carry after inject; the app's maps must have been seen.
void expect_app_without_id(const std::string& out, const std::string& app, const std::string& lib) {
  bool saw_app = false;
  bool saw_lib = false;
  for (const MapLine& m : perf_maps(out)) {
    if (m.filename == app) {
      saw_app = true;
      EXPECT_EQ(m.build_id, "") << "given an id it cannot have";
    }
    if (m.filename == lib) {
      saw_lib = true;
      EXPECT_EQ(m.build_id, readelf_id(m.filename));
    }
  }
  EXPECT_TRUE(saw_app);
  EXPECT_TRUE(saw_lib);
}

TEST_F(InjectTest, ABinaryReplacedAfterRecordingIsNotGivenTheNewId) {
  const std::string in = record("", dir_ + "/app/app");
  const std::string old_id = readelf_id(dir_ + "/app/app");
  // As a package manager replaces a file: built elsewhere, dated before the recording (dpkg
  // keeps the package's mtime), renamed over the path. Only the inode tells.
  build_app(dir_ + "/v2", "2");
  ASSERT_EQ(sh("touch -d @946684800 " + quote(dir_ + "/v2/app")).status, 0);
  fs::rename(dir_ + "/v2/app", dir_ + "/app/app");
  const std::string new_id = readelf_id(dir_ + "/app/app");
  ASSERT_NE(old_id, new_id);
  RunResult r = sh(pdfix() + " inject --buildids --json " + in + " " + dir_ + "/out.data");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("replaced (this host's file at that path is a new inode"), std::string::npos)
      << r.out;
  expect_app_without_id(dir_ + "/out.data", dir_ + "/app/app", dir_ + "/app/libwork.so");
}

// `dir`/app/app, rewritten in place (its inode still `inode`, its id no longer `old_id`) since the
// recording `in` began: fix gives its maps no id, and says the file is stale.
void expect_rewritten_app_stale(const std::string& dir, const std::string& in,
                                const std::string& inode, const std::string& old_id) {
  const std::string app = dir + "/app/app";
  ASSERT_EQ(sh("stat -c %i " + quote(app)).out, inode);
  ASSERT_NE(readelf_id(app), old_id);
  RunResult r = sh(pdfix() + " fix --json " + in + " " + dir + "/out.data");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("stale (modified after the recording began)"), std::string::npos) << r.out;
  expect_app_without_id(dir + "/out.data", app, dir + "/app/libwork.so");
}

TEST_F(InjectTest, ABinaryRewrittenInPlaceAfterRecordingIsNotGivenTheNewId) {
  const std::string app = dir_ + "/app/app";
  const std::string in = record("", app);
  const std::string inode = sh("stat -c %i " + quote(app)).out;
  const std::string old_id = readelf_id(app);
  // The same inode, other bytes, written after the recording ended: only the time tells, and
  // only if the recording's end time reaches the trust rules.
  build_app(dir_ + "/v2", "2");
  ASSERT_EQ(sh("sleep 1; cp " + quote(dir_ + "/v2/app") + " " + quote(app)).status, 0);
  expect_rewritten_app_stale(dir_, in, inode, old_id);
}

TEST_F(InjectTest, ABinaryRewrittenInPlaceWhileRecordingIsNotGivenTheNewId) {
  // The program runs, then the linker rewrites it in place (same inode, other bytes) while perf
  // still records: the map was the old content, and only the recording's start tells.
  const std::string app = dir_ + "/app/app";
  const std::string inode = sh("stat -c %i " + quote(app)).out;
  const std::string old_id = readelf_id(app);
  build_app(dir_ + "/v2", "2");
  const std::string in = record("", "sh -c " + quote(app + "; cp " + quote(dir_ + "/v2/app") + " " +
                                                     quote(app) + "; sleep 1"));
  expect_rewritten_app_stale(dir_, in, inode, old_id);
}

// The id of `name` in perf's view of the map records of `path`; empty when none carries one.
std::string mapped_id(const std::string& path, const std::string& name) {
  for (const MapLine& m : perf_maps(path)) {
    if (m.filename == name && !m.build_id.empty()) return m.build_id;
  }
  return "";
}

TEST_F(InjectTest, AStaleBuildIdCacheEntryIsNeverTakenForTheMappedFile) {
  // Version 1 went into a cache by hand; version 2 was built, recorded with -B, then deleted.
  const std::string app = dir_ + "/app/app";
  const std::string cache = dir_ + "/cache";
  const std::string v1 = readelf_id(app);
  ASSERT_EQ(sh("perf --buildid-dir " + cache + " buildid-cache -a " + app).status, 0);
  sleep(1);  // whole seconds tell the cache entry from the recording
  build_app(dir_ + "/app", "2");
  const std::string v2 = readelf_id(app);
  ASSERT_NE(v1, v2);
  const std::string in = record("", app);
  fs::remove(app);
  const std::string out = dir_ + "/out.data";
  RunResult r = sh(pdfix() + " fix --buildid-dir " + cache + " " + in + " " + out);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("candidate from the build-id cache, not proven"), std::string::npos)
      << r.err;
  // The app's maps were seen, and none was given version 1's id (or any).
  bool saw_app = false;
  for (const MapLine& m : perf_maps(out)) {
    if (m.filename != app) continue;
    saw_app = true;
    EXPECT_EQ(m.build_id, "") << "the app's map was given a cache entry's id";
  }
  EXPECT_TRUE(saw_app);
  EXPECT_EQ(sh("perf buildid-list -i " + quote(out)).out.find(v1), std::string::npos);
  // perf report, given the cache, never takes version 1's symbols for the program's samples.
  const std::string report = "perf --buildid-dir " + cache + " report -q --stdio --sort sym -i ";
  EXPECT_EQ(sh(report + out + " 2>/dev/null").out.find("spin_v1"), std::string::npos);
  // It would have, had the map been given version 1's id: the report can tell.
  const std::string wrong = dir_ + "/wrong.data";
  ASSERT_EQ(sh(pdfix() + " inject --buildids --known-build-ids " + app + "=" + v1 + " " + in + " " +
               wrong)
                .status,
            0);
  EXPECT_NE(sh(report + wrong + " 2>/dev/null").out.find("spin_v1"), std::string::npos);
}

TEST_F(InjectTest, ACacheEntryAddedWhileRecordingNamesAFileSinceDeleted) {
  // The cache is filled during the recording, as perf record does at its end; then the binary is
  // deleted.
  const std::string app = dir_ + "/app/app";
  const std::string cache = dir_ + "/cache";
  const std::string id = readelf_id(app);
  const std::string in = record_into_cache_then_delete(app, cache);
  const std::string out = dir_ + "/out.data";
  RunResult r = sh(pdfix() + " fix -v --buildid-dir " + cache + " " + in + " " + out);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("build-id cache, added while recording"), std::string::npos) << r.err;
  EXPECT_EQ(mapped_id(out, app), id);
}

TEST_F(InjectTest, SysrootAndKnownIdsResolvePathsThatAreGone) {
  const std::string in = record("", dir_ + "/app/app");
  const std::string app_id = readelf_id(dir_ + "/app/app");
  const std::string lib_id = readelf_id(dir_ + "/app/libwork.so");
  // The recording host's files now live only under a sysroot.
  const std::string root = dir_ + "/root";
  fs::create_directories(root + dir_);
  fs::rename(dir_ + "/app", root + dir_ + "/app");
  RunResult r = sh(pdfix() + " inject --buildids --sysroot " + root + " " + in + " " + dir_ +
                   "/sysroot.data");
  ASSERT_EQ(r.status, 0) << r.err;
  r = sh(pdfix() + " inject --buildids " + in + " " + dir_ + "/plain.data");
  ASSERT_EQ(r.status, 0) << r.err;
  r = sh(pdfix() + " inject --buildids --known-build-ids " + dir_ + "/app/app=" + app_id + "," +
         dir_ + "/app/libwork.so=" + lib_id + " " + in + " " + dir_ + "/known.data");
  ASSERT_EQ(r.status, 0) << r.err;
  auto id_of = [&](const std::string& file, const std::string& name) {
    for (const MapLine& m : perf_maps(file)) {
      if (m.filename == name) return m.build_id;
    }
    return std::string("(no map)");
  };
  EXPECT_EQ(id_of(dir_ + "/sysroot.data", dir_ + "/app/app"), app_id);
  EXPECT_EQ(id_of(dir_ + "/sysroot.data", dir_ + "/app/libwork.so"), lib_id);
  EXPECT_EQ(id_of(dir_ + "/plain.data", dir_ + "/app/app"), "");
  EXPECT_EQ(id_of(dir_ + "/known.data", dir_ + "/app/app"), app_id);
  EXPECT_EQ(id_of(dir_ + "/known.data", dir_ + "/app/libwork.so"), lib_id);
}

TEST_F(InjectTest, ALongRecordingKeepsItsPageOffsetsBehindTheGrownKernelMap) {
  // perf 6.1 writes the kernel map as an MMAP, 32 bytes shorter than its MMAP2 form. The data
  // section is padded so that everything after it keeps its offset within a page, as it had.
  // 8 KiB of stack a sample: a few hundred samples are enough, even when perf throttles.
  const std::string in = record("--call-graph dwarf,8192 -F 10000", dir_ + "/app/app");
  const std::string out = dir_ + "/out.data";
  RunResult r = sh(pdfix() + " inject --buildids " + in + " " + out);
  ASSERT_EQ(r.status, 0) << r.err;
  const testing::Bytes a_file = testing::read_file(in);
  const testing::Bytes b_file = testing::read_file(out);
  auto a = format::parse_file_header(a_file);
  auto b = format::parse_file_header(b_file);
  ASSERT_TRUE(a.ok() && b.ok());
  // Long runs start at 256 KiB; this leaves room for several.
  ASSERT_GT(a->data.size, uint64_t{512} << 10) << "too short to have long runs";
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  EXPECT_GT(b->data.offset, a->data.offset);
  EXPECT_LT(b->data.offset, a->data.offset + page);
  EXPECT_EQ((b->data.end() - a->data.end()) % page, 0U);
  expect_every_map_identified(in, out, dir_ + "/app");
}

TEST_F(InjectTest, RunningItTwiceChangesNothing) {
  const std::string in = record("", dir_ + "/app/app");
  ASSERT_EQ(sh(pdfix() + " inject --buildids " + in + " " + dir_ + "/once.data").status, 0);
  RunResult r = sh(pdfix() + " inject --buildids " + dir_ + "/once.data " + dir_ + "/twice.data");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find(" 0 map records upgraded"), std::string::npos) << r.err;
  EXPECT_TRUE(same_file(dir_ + "/once.data", dir_ + "/twice.data"));
}

TEST_F(InjectTest, RunningItTwiceOnAStreamChangesNothing) {
  // pdfix after pdfix in one pipeline: the second finds every id in place, the HEADER_BUILD_ID
  // records the first added included, and adds none again.
  const std::string in = record("", dir_ + "/app/app", /*pipe=*/true);
  for (const std::string verb : {"inject --buildids", "fix"}) {
    const std::string once = dir_ + "/once.pipe.data";
    const std::string twice = dir_ + "/twice.pipe.data";
    RunResult r = sh("cat " + in + " | " + pdfix() + " " + verb + " - - | tee " + once + " | " +
                     pdfix() + " " + verb + " --json - - > " + twice);
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_TRUE(same_file(once, twice)) << verb;
    EXPECT_FALSE(same_file(in, once)) << verb;
    // The second run's own report: nothing upgraded, nothing added to the table.
    const std::string json = r.err.substr(r.err.rfind("\n{") + 1);
    EXPECT_NE(json.find("\"upgraded\": 0"), std::string::npos) << json;
    EXPECT_NE(json.find("\"table_entries_added\": 0"), std::string::npos) << json;
  }
}

TEST_F(InjectTest, InjectReadsTheCacheGivenWithBuildidDir) {
  // As ACacheEntryAddedWhileRecordingNamesAFileSinceDeleted, through inject's own option.
  const std::string app = dir_ + "/app/app";
  const std::string cache = dir_ + "/cache";
  const std::string id = readelf_id(app);
  const std::string in = record_into_cache_then_delete(app, cache);
  ASSERT_EQ(sh(pdfix() + " inject --buildids " + in + " " + dir_ + "/none.data").status, 0);
  EXPECT_EQ(mapped_id(dir_ + "/none.data", app), "");  // without it, ~/.debug knows nothing
  RunResult r = sh(pdfix() + " inject --buildids --buildid-dir " + cache + " " + in + " " + dir_ +
                   "/out.data");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(mapped_id(dir_ + "/out.data", app), id);
}

TEST_F(InjectTest, FixJsonHasEachPassUnderItsNameWithPerfsCounts) {
  const std::string in = record("", dir_ + "/app/app");
  const std::string out = dir_ + "/out.data";
  RunResult r = sh(pdfix() + " fix --json " + in + " " + out);
  ASSERT_EQ(r.status, 0) << r.err;
  // One object, and for each pass the members a script reads; checked with Python's parser.
  const std::string script =
      "import json,sys; d=json.load(open(sys.argv[1])); "
      "print(sorted(d)); i=d['inject']; "
      "print(i['upgraded'], i['had_build_id'], i['left_alone'], i['table_entries_added']); "
      "print(d['module_sizes']['module_maps'], len(d['module_sizes']['changed']))";
  std::ofstream(dir_ + "/fix.json") << r.out;
  RunResult p = sh("python3 -c " + quote(script) + " " + dir_ + "/fix.json");
  ASSERT_EQ(p.status, 0) << p.err << r.err;
  std::istringstream lines(p.out);
  std::string keys, inject, modules;
  std::getline(lines, keys);
  std::getline(lines, inject);
  std::getline(lines, modules);
  EXPECT_EQ(keys, "['compat', 'inject', 'jit', 'module_sizes', 'repair_build_ids', 'tag_kernel']");
  // perf's view: the map records that carry an id after, none before (perf record -B).
  int with_id_before = 0, with_id_after = 0, maps = 0;
  for (const MapLine& m : perf_maps(in)) with_id_before += m.build_id.empty() ? 0 : 1;
  for (const MapLine& m : perf_maps(out)) {
    ++maps;
    with_id_after += m.build_id.empty() ? 0 : 1;
  }
  EXPECT_EQ(with_id_before, 0);
  int upgraded = -1, had = -1, left = -1, added = -1;
  std::istringstream(inject) >> upgraded >> had >> left >> added;
  EXPECT_EQ(upgraded, with_id_after);
  EXPECT_EQ(had, 0);
  EXPECT_EQ(upgraded + had + left, maps);
  // Every id went into the table, which perf record -B left without one: perf lists them.
  const std::string list = sh("perf buildid-list -i " + quote(out) + " | wc -l").out;
  EXPECT_EQ(added, std::stoi(list));
  // No kernel module maps in a program's recording on this machine.
  EXPECT_EQ(modules, "0 0");
}

}  // namespace
}  // namespace pdfix::e2e
