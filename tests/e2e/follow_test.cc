// pdfix follow against a real `perf record -a -g --switch-output`: every chunk fixed while its
// programs live, a program rebuilt at its path between chunks keeping each run's own id (judged by
// the ids the files had when they ran), both binaries in the store, the store served by debuginfod
// to a second host; and the journal's promises
// under SIGKILL, a chunk perf never finished, and a second run on the same output directory.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <thread>

#include "e2e/follow_fixture.h"
#include "e2e/harness.h"
#include "llvm/Support/JSON.h"

namespace pdfix::e2e {
namespace {
namespace fs = std::filesystem;

using FollowTest = FollowChunksTest;

TEST_F(FollowTest, EveryChunkIsFixedWhileItsProgramsLiveAndARebuiltProgramKeepsEachRunsId) {
  PDFIX_NEEDS_PERF_RECORD();
  const std::string app = dir_ + "/app/app";
  build_app(dir_ + "/app", "1");
  const std::string v1 = own_id(app);
  const std::string follow =
      background_->start(store_env_ + pdfix() + " follow --json --store " + quote(dir_ + "/raw") +
                             " " + quote(dir_ + "/out"),
                         "follow.jsonl");
  const std::string perf = background_->start(
      "perf record -a -g -F 499 --switch-output=1s -o " + quote(dir_ + "/raw/perf.data"),
      "perf.log");
  // Short processes, each inside a chunk; the program is rebuilt at its path (a new inode, as
  // an upgrade makes) while perf records and follow runs, and runs again.
  const auto runs = [&](const std::string& pids) {
    return sh("sleep 1; for i in 1 2 3 4 5 6; do " + quote(app) + " & echo $! >>" +
              quote(dir_ + "/" + pids) + "; wait; sleep 0.2; done");
  };
  RunResult r = runs("pids1");
  ASSERT_EQ(r.status, 0) << r.err;
  // The first build's chunks are fixed before it is replaced: perf finishes the chunk of its last
  // run, and follow that chunk. (A chunk fixed after the file it mapped was replaced can prove no
  // id for its maps: that inode is gone, and follow does not guess. On a busy machine follow may
  // fix a chunk a second or more after perf wrote it.)
  const size_t recorded = chunks_in(dir_ + "/raw").size();
  ASSERT_TRUE(within_a_minute([&] { return chunks_in(dir_ + "/raw").size() > recorded; }));
  const size_t with_first_build = chunks_in(dir_ + "/raw").size();
  ASSERT_TRUE(within_a_minute([&] { return journal_lines(dir_ + "/out") >= with_first_build; }))
      << journal_lines(dir_ + "/out") << " of " << with_first_build << " chunks finished";
  build_app(dir_ + "/app", "2");
  const std::string v2 = own_id(app);
  ASSERT_NE(v1, v2);
  r = runs("pids2");
  ASSERT_EQ(r.status, 0) << r.err;
  r = sh("sleep 1; kill -INT " + perf + "; while kill -0 " + perf +
         " 2>/dev/null; do sleep 0.1; "
         "done");
  ASSERT_EQ(r.status, 0) << r.err;
  const std::vector<std::string> chunks = chunks_in(dir_ + "/raw");
  ASSERT_GE(chunks.size(), 4u) << sh("cat " + quote(dir_ + "/perf.log.err")).out;
  EXPECT_TRUE(within_a_minute([&] { return journal_lines(dir_ + "/out") == chunks.size(); }))
      << journal_lines(dir_ + "/out") << " of " << chunks.size() << " chunks finished";
  r = sh("kill -INT " + follow + "; while kill -0 " + follow + " 2>/dev/null; do sleep 0.1; done");
  ASSERT_EQ(r.status, 0) << r.err;

  const std::string printed = sh("cat " + quote(dir_ + "/follow.jsonl")).out;
  auto lines = lines_of(printed);
  ASSERT_EQ(lines["summary"].size(), 1u) << printed;
  const llvm::json::Object* summary = lines["summary"][0].getObject("summary");
  ASSERT_NE(summary, nullptr);
  // Every chunk fixed. A system-wide recording takes every process of the machine: one whose
  // jitdump is gone when its chunk is fixed (a JIT test's node, run beside this one) makes that
  // chunk incomplete (status 3), rightly; no chunk may be left unfixed.
  EXPECT_EQ(int_of(*summary, "fixed") + int_of(*summary, "incomplete"),
            static_cast<int64_t>(chunks.size()))
      << printed;
  EXPECT_EQ(int_of(*summary, "not_fixed"), 0) << printed;
  EXPECT_EQ(summary->getString("stopped_by").value_or(""), "SIGINT");

  // Each map of the program carries the id its file had when that process ran: none missing,
  // none wrong, both versions seen.
  const std::set<uint32_t> pids1 = pids_in(dir_ + "/pids1");
  const std::set<uint32_t> pids2 = pids_in(dir_ + "/pids2");
  std::map<std::string, int> judged;
  std::map<std::string, std::set<std::string>> ids_in;  // by chunk: the program's ids in it
  for (const std::string& chunk : chunks) {
    ASSERT_EQ(lines[chunk].size(), 1u) << chunk << " reported other than once:\n" << printed;
    // Status 3 only for another process's jitdump gone (above).
    const llvm::json::Object* jit = lines[chunk][0].getObject("fix")
                                        ? lines[chunk][0].getObject("fix")->getObject("jit")
                                        : nullptr;
    const bool dump_gone = jit != nullptr && jit->getInteger("dumps_missing").value_or(0) > 0;
    EXPECT_EQ(int_of(lines[chunk][0], "status"), dump_gone ? 3 : 0) << printed;
    ASSERT_TRUE(fs::exists(dir_ + "/out/" + chunk)) << chunk;
    for (const MapRecord& m : maps_of(dir_ + "/out/" + chunk)) {
      if (m.filename != app) continue;
      const std::string want = pids1.count(m.pid) ? v1 : pids2.count(m.pid) ? v2 : "";
      ASSERT_NE(want, "") << "a map of the program by pid " << m.pid << ", which no run had";
      EXPECT_EQ(m.build_id, want) << chunk << " pid " << m.pid;
      ++judged[want];
      ids_in[chunk].insert(want);
    }
  }
  EXPECT_GE(judged[v1], 3) << "maps of the first build";
  EXPECT_GE(judged[v2], 3) << "maps of the second build";

  // Both builds are in the store, each once; from the store alone perf names the first build's
  // function in a chunk of its runs, though the path now holds the second.
  for (const std::string& id : {v1, v2}) {
    EXPECT_TRUE(fs::exists(dir_ + "/.debug/.build-id/" + id.substr(0, 2) + "/" + id.substr(2)))
        << id;
  }
  r = sh("find " + quote(dir_ + "/.debug" + app) + " -name elf | wc -l");
  EXPECT_EQ(r.out, "2\n") << sh("find " + quote(dir_ + "/.debug")).out;
  // From the store alone, perf names each build's function in the chunks of its runs, though the
  // path now holds the second build: the first's only where its runs were.
  std::map<std::string, int> named;
  // A chunk of the first build's runs alone in which perf names spin_v1 here: a map of the
  // program with no sample in it names nothing, on any host.
  std::string first;
  for (const auto& [chunk, ids] : ids_in) {
    r = sh(store_env_ + "perf report --stdio --sort sym -i " + quote(dir_ + "/out/" + chunk) +
           " 2>&1");
    named["spin_v1"] += r.out.find("spin_v1") != std::string::npos;
    named["spin_v2"] += r.out.find("spin_v2") != std::string::npos;
    if (!ids.count(v2)) {
      EXPECT_EQ(r.out.find("spin_v2"), std::string::npos) << chunk << "\n" << r.out;
      if (first.empty() && r.out.find("spin_v1") != std::string::npos) first = chunk;
    }
  }
  EXPECT_GE(named["spin_v1"], 1);
  EXPECT_GE(named["spin_v2"], 1);

  // The store is what a fleet's debuginfod serves (-F: its ELF files, by their ids). A second
  // host, its cache empty and the program's files gone, fetches what a chunk of the first build's
  // runs names, and perf names that build's function from what came.
  ASSERT_NE(first, "") << "no chunk of the first build's runs alone names spin_v1";
  fs::create_directories(dir_ + "/server");
  fs::create_directories(dir_ + "/host2");
  Debuginfod server(dir_ + "/server", "-F " + quote(dir_ + "/.debug"));
  const bool ready = server.serves("executable", v1, dir_ + "/served-app");
  fs::remove_all(dir_ + "/app");
  const std::string host2 = "env HOME=" + quote(dir_ + "/host2") +
                            " DEBUGINFOD_CACHE_PATH=" + quote(dir_ + "/client") + " ";
  r = sh(host2 + pdfix() + " fetch --json --buildid-dir " + quote(dir_ + "/host2/.debug") +
         " --debuginfod " + server.url() + " " + quote(dir_ + "/out/" + first));
  server.stop();
  ASSERT_TRUE(ready) << "debuginfod never served the first build from the store";
  EXPECT_EQ(r.status, 0) << r.err;
  const llvm::json::Object fetched = parse_object(r.out);
  ASSERT_NE(fetched.getObject("counts"), nullptr) << r.out;
  EXPECT_GE(int_of(*fetched.getObject("counts"), "fetched"), 1) << r.out;
  r = sh(host2 + "perf report --stdio --sort sym -i " + quote(dir_ + "/out/" + first) + " 2>&1");
  EXPECT_NE(r.out.find("spin_v1"), std::string::npos) << first << "\n" << r.out;
}

TEST_F(FollowTest, KilledAndStartedAgainItFixesEveryChunkOnce) {
  make_chunks(3);
  // SIGKILL once the chunks there are finished.
  const std::string follow = background_->start(
      store_env_ + pdfix() + " follow --json " + quote(dir_ + "/raw") + " " + quote(dir_ + "/out"),
      "first.jsonl");
  ASSERT_TRUE(within_a_minute([&] { return journal_lines(dir_ + "/out") == 3; }));
  ASSERT_EQ(sh("kill -KILL " + follow + "; while kill -0 " + follow +
               " 2>/dev/null; do sleep "
               "0.1; done")
                .status,
            0);
  // More chunks, and what a kill at other moments leaves: a temporary output half written, a
  // complete output whose journal line was never written, and a line cut short.
  make_chunks(3, 3);
  const std::vector<std::string> chunks = chunks_in(dir_ + "/raw");
  ASSERT_EQ(chunks.size(), 6u);
  std::ofstream(dir_ + "/out/." + chunks[3] + ".pdfix-AbC123") << "half";
  RunResult r = sh(pdfix() + " copy " + quote(dir_ + "/raw/" + chunks[4]) + " " +
                   quote(dir_ + "/out/" + chunks[4]));
  ASSERT_EQ(r.status, 0) << r.err;
  std::ofstream(dir_ + "/out/.pdfix-follow-journal", std::ios::app) << chunks[5];

  r = once();
  EXPECT_EQ(r.status, 0) << r.err;
  auto first = lines_of(sh("cat " + quote(dir_ + "/first.jsonl")).out);
  auto second = lines_of(r.out);
  for (const std::string& chunk : chunks) {
    const size_t fixed = first[chunk].size() + second[chunk].size() -
                         (second[chunk].size() == 1 && second[chunk][0].get("status") == nullptr);
    EXPECT_EQ(fixed, chunk == chunks[4] ? 0u : 1u) << chunk << "\n" << r.out;
    // The journal's: not looked at again.
    if (chunk < chunks[3]) {
      EXPECT_TRUE(second[chunk].empty()) << chunk << "\n" << r.out;
    }
    EXPECT_TRUE(fs::exists(dir_ + "/out/" + chunk)) << chunk;
    EXPECT_TRUE(perf_stats(dir_ + "/out/" + chunk).count("SAMPLE")) << chunk;
  }
  for (const auto& e : fs::directory_iterator(dir_ + "/out")) {
    EXPECT_EQ(e.path().filename().string().find(".pdfix-", 1), std::string::npos) << e.path();
  }
  EXPECT_EQ(journal_lines(dir_ + "/out"), chunks.size());
  // And again: nothing left to do.
  r = once();
  EXPECT_EQ(r.status, 0) << r.err;
  const llvm::json::Object* summary = lines_of(r.out)["summary"][0].getObject("summary");
  ASSERT_NE(summary, nullptr);
  EXPECT_EQ(int_of(*summary, "fixed"), 0);
  EXPECT_EQ(int_of(*summary, "earlier"), static_cast<int64_t>(chunks.size()));
}

TEST_F(FollowTest, AChunkPerfNeverFinishedIsSalvagedAndTheRunGoesOn) {
  PDFIX_NEEDS_PERF_RECORD();
  make_chunks(2);
  // perf record killed while writing: its header never finished.
  RunResult r = sh("cd " + quote(dir_) +
                   " && (perf record -o killed.data -- sleep 10 >/dev/null "
                   "2>&1 & p=$!; sleep 1; kill -KILL $p; wait $p; true)");
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string killed = "perf.data.2026112712000005";
  fs::rename(dir_ + "/killed.data", dir_ + "/raw/" + killed);
  r = once("--remove-raw");
  // Fixed as far as its records go, and said to be incomplete.
  EXPECT_EQ(r.status, 3) << r.err;
  auto lines = lines_of(r.out);
  ASSERT_EQ(lines[killed].size(), 1u) << r.out;
  EXPECT_EQ(int_of(lines[killed][0], "status"), 3);
  EXPECT_NE(r.out.find("\"unfinished\""), std::string::npos) << r.out;
  EXPECT_EQ(sh("perf report --stdio -i " + quote(dir_ + "/out/" + killed)).status, 0);
  const llvm::json::Object* summary = lines["summary"][0].getObject("summary");
  ASSERT_NE(summary, nullptr);
  EXPECT_EQ(int_of(*summary, "fixed"), 2);
  EXPECT_EQ(int_of(*summary, "incomplete"), 1);
  EXPECT_EQ(int_of(*summary, "not_fixed"), 0);
  for (const std::string& chunk : chunks_in(dir_ + "/out")) {
    EXPECT_FALSE(fs::exists(dir_ + "/raw/" + chunk)) << "--remove-raw: " << chunk;
  }
}

// The files of an unpacked bundle's cache, by their names in it.
std::string cache_files(const std::string& dir) {
  return sh("cd " + quote(dir + "/.debug") + " && find . -type f | sort").out;
}

TEST_F(FollowTest, ArchiveKeepsEachBinaryInOneBundleOfTheRunAndUnpackGathersThem) {
  PDFIX_NEEDS_PERF_RECORD();
  // Two recordings: one of sh and ls, one of sh and gzip. Chunks: the first twice, the second,
  // then (a second run) the second again, and one a killed run left fixed but not bundled.
  for (const auto& [name, command] : std::vector<std::pair<std::string, std::string>>{
           {"ls", "ls -R /usr/share/doc >/dev/null"},
           {"gzip", "head -c 3000000 /dev/urandom | gzip -c >/dev/null"}}) {
    RunResult r = sh("perf record -q -o " + quote(dir_ + "/" + name + ".data") + " -- sh -c " +
                     quote(command));
    ASSERT_EQ(r.status, 0) << r.err;
  }
  const auto chunk = [&](int i, const std::string& of) {
    const std::string name = "perf.data.2026112812000" + std::to_string(10 + i);
    fs::copy_file(dir_ + "/" + of + ".data", dir_ + "/raw/" + name);
    return name;
  };
  const std::vector<std::string> chunks = {chunk(0, "ls"), chunk(1, "ls"), chunk(2, "gzip")};
  const std::string bundles = dir_ + "/bundles";
  fs::create_directories(bundles);
  RunResult r = once("--archive " + quote(bundles));
  ASSERT_EQ(r.status, 0) << r.err;
  auto lines = lines_of(r.out);
  const auto archived = [&](const std::string& name) -> llvm::json::Object {
    const llvm::json::Object* fix = lines[name].empty() ? nullptr : lines[name][0].getObject("fix");
    const llvm::json::Object* a = fix != nullptr ? fix->getObject("archive") : nullptr;
    EXPECT_NE(a, nullptr) << name << "\n" << r.out;
    return a != nullptr ? *a : llvm::json::Object{};
  };
  // The first bundle holds the binaries; a copy of it holds none of its own; the gzip recording's
  // holds gzip (and what else it alone maps).
  EXPECT_GT(int_of(archived(chunks[0]), "kept"), 3);
  EXPECT_EQ(int_of(archived(chunks[0]), "in_earlier_bundles"), 0);
  EXPECT_EQ(int_of(archived(chunks[1]), "kept"), 0);
  EXPECT_GT(int_of(archived(chunks[1]), "in_earlier_bundles"), 3);
  EXPECT_GE(int_of(archived(chunks[2]), "kept"), 1);
  EXPECT_GT(int_of(archived(chunks[2]), "in_earlier_bundles"), 1);

  // Started again: the chain goes on. A killed run left the fifth chunk fixed, not bundled: it is
  // fixed again, bundle and all.
  const std::string fourth = chunk(3, "gzip");
  const std::string fifth = chunk(4, "gzip");
  fs::copy_file(dir_ + "/raw/" + fifth, dir_ + "/out/" + fifth);
  r = once("--archive " + quote(bundles));
  ASSERT_EQ(r.status, 0) << r.err;
  lines = lines_of(r.out);
  for (const std::string& name : {fourth, fifth}) {
    EXPECT_EQ(int_of(archived(name), "kept"), 0) << name;
    ASSERT_TRUE(fs::exists(bundles + "/" + name + ".tar.zst")) << name;
  }
  ASSERT_EQ(lines[fifth].size(), 1u) << r.out;
  EXPECT_EQ(int_of(lines[fifth][0], "status"), 0) << r.out;
  const std::string manifest =
      sh("tar --zstd -xOf " + quote(bundles + "/" + fourth + ".tar.zst") + " pdfix-bundle.json")
          .out;
  EXPECT_NE(manifest.find(chunks[0] + ".tar.zst"), std::string::npos) << manifest;
  EXPECT_NE(manifest.find(chunks[2] + ".tar.zst"), std::string::npos) << manifest;

  // Unpacked, the fourth bundle gives the cache and the report a bundle of its own gives.
  r = sh(pdfix() + " unpack " + quote(bundles + "/" + fourth + ".tar.zst") + " " +
         quote(dir_ + "/u4"));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("from " + chunks[0] + ".tar.zst, an earlier bundle of its chain"),
            std::string::npos)
      << r.err;
  r = sh(store_env_ + pdfix() + " fix -q --archive " + quote(dir_ + "/whole.tar.zst") + " " +
         quote(dir_ + "/raw/" + fourth) + " " + quote(dir_ + "/whole.data"));
  ASSERT_EQ(r.status, 0) << r.err;
  r = sh(pdfix() + " unpack " + quote(dir_ + "/whole.tar.zst") + " " + quote(dir_ + "/uw"));
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string gathered = cache_files(dir_ + "/u4");
  EXPECT_EQ(gathered, cache_files(dir_ + "/uw"));
  EXPECT_GT(std::count(gathered.begin(), gathered.end(), '\n'), 3) << gathered;
  EXPECT_TRUE(same_file(dir_ + "/u4/perf.data", dir_ + "/uw/perf.data"));
  const auto report = [&](const std::string& d) {
    return sh("perf --buildid-dir " + quote(d + "/.debug") + " report --stdio --sort dso,sym -i " +
              quote(d + "/perf.data") + " 2>/dev/null | grep -v '^#'")
        .out;
  };
  EXPECT_EQ(report(dir_ + "/u4"), report(dir_ + "/uw"));
  EXPECT_NE(report(dir_ + "/u4").find("gzip"), std::string::npos);

  // The bundle that holds the rest gone: unpack says which, and writes nothing.
  fs::rename(bundles + "/" + chunks[0] + ".tar.zst", dir_ + "/moved.tar.zst");
  r = sh(pdfix() + " unpack " + quote(bundles + "/" + fourth + ".tar.zst") + " " +
         quote(dir_ + "/u5"));
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find(chunks[0] + ".tar.zst of its chain, which is not beside it"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(dir_ + "/u5"));

  // --self-contained: each bundle holds all its chunk's binaries.
  fs::create_directories(dir_ + "/out2");
  fs::create_directories(dir_ + "/alone");
  r = sh(store_env_ + pdfix() + " follow --once --json --archive " + quote(dir_ + "/alone") +
         " --self-contained " + quote(dir_ + "/raw") + " " + quote(dir_ + "/out2"));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(
      sh("tar --zstd -tf " + quote(dir_ + "/alone/" + fourth + ".tar.zst") +
         " | grep -c '^.debug/.*/elf$'")
          .out,
      sh("tar --zstd -tf " + quote(dir_ + "/whole.tar.zst") + " | grep -c '^.debug/.*/elf$'").out);
  EXPECT_FALSE(fs::exists(dir_ + "/alone/.pdfix-bundle-chain"));
}

TEST_F(FollowTest, ASecondRunOnTheSameOutputDirectoryIsRefused) {
  const std::string follow = background_->start(
      pdfix() + " follow " + quote(dir_ + "/raw") + " " + quote(dir_ + "/out"), "f.log");
  ASSERT_TRUE(within_a_minute([&] { return fs::exists(dir_ + "/out/.pdfix-follow-journal"); }));
  RunResult r = once();
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("another pdfix follow is writing into"), std::string::npos) << r.err;
  r = sh("kill -TERM " + follow + "; while kill -0 " + follow +
         " 2>/dev/null; do sleep 0.1; done; " + "cat " + quote(dir_ + "/f.log.err"));
  EXPECT_NE(r.out.find("follow: 0 fixed"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace pdfix::e2e
