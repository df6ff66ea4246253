// pdfix export's labels and OpenTelemetry file ids, on the export tests' recording
// (e2e/export_fixture.h).
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "e2e/export_fixture.h"
#include "e2e/harness.h"
#include "opentelemetry/proto/collector/profiles/v1development/profiles_service.pb.h"

namespace pdfix::e2e {
namespace {

// --labels tells samples apart by process and thread as well: pprof's pid and tid labels,
// OTLP's process.pid and thread.id, folded's comm-pid/tid (as stackcollapse-perf.pl). The OTLP
// mapping of the program carries its file id (process.executable.build_id.htlhash) as the eBPF
// profiler computes it, here by Python's hashlib; --no-symbols keeps it, for the services that
// symbolize by it.
TEST_F(ExportTest, LabelsTellProcessesAndThreadsApartAndOtlpNamesTheBinarysFileId) {
  RunResult r = sh("perf script -F comm,pid,tid -i " + quote(dir_ + "/in.data") +
                   " 2>/dev/null | awk '$1 == \"hot\" { print $2 }' | sort -u");
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string pid_tid = r.out.substr(0, r.out.find('\n'));  // "PID/TID"
  ASSERT_NE(pid_tid.find('/'), std::string::npos) << r.out;
  const std::string pid = pid_tid.substr(0, pid_tid.find('/'));

  const std::string folded = dir_ + "/hot.folded";
  r = pdfix_run("export -q --format folded --labels comm,pid,tid " + quote(dir_ + "/in.data") +
                " " + quote(folded));
  ASSERT_EQ(r.status, 0) << r.err;
  r = sh("awk '{ n += $NF } END { print n }' " + quote(folded));
  EXPECT_EQ(std::stoull(r.out), perf_stats(dir_ + "/in.data")["SAMPLE"]);
  r = sh("grep -c '^hot-" + pid_tid + ";' " + quote(folded));
  EXPECT_GT(std::stoi(r.out), 0) << sh("head -3 " + quote(folded)).out;

  const std::string pprof_file = dir_ + "/hot.pb.gz";
  r = pdfix_run("export -q --labels pid,tid " + quote(dir_ + "/in.data") + " " + quote(pprof_file));
  ASSERT_EQ(r.status, 0) << r.err;
  r = pprof("-raw", pprof_file);
  EXPECT_NE(r.out.find("pid:[" + pid + "]"), std::string::npos) << r.out.substr(0, 2000);
  EXPECT_EQ(r.out.find("comm:["), std::string::npos);

  const std::string otlp_file = dir_ + "/hot.otlp";
  r = pdfix_run("export -q --no-symbols --format otlp --labels pid " + quote(dir_ + "/in.data") +
                " " + quote(otlp_file));
  ASSERT_EQ(r.status, 0) << r.err;
  opentelemetry::proto::collector::profiles::v1development::ExportProfilesServiceRequest request;
  ASSERT_TRUE(request.ParseFromString(sh("cat " + quote(otlp_file)).out));
  const auto& d = request.dictionary();
  r =
      sh("python3 -c 'import hashlib, sys; d = open(sys.argv[1], \"rb\").read(); n = len(d); "
         "print(hashlib.sha256(d[:4096] + d[-min(n, 4096):] + n.to_bytes(8, \"big\"))"
         ".hexdigest()[:32])' " +
         quote(dir_ + "/hot"));
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string expected = r.out.substr(0, 32);
  std::map<std::string, std::string> hot;  // the program's mapping's string attributes
  std::set<int64_t> pids;
  for (const auto& m : d.mapping_table()) {
    if (m.filename_strindex() == 0 || !d.string_table(m.filename_strindex()).ends_with("/hot")) {
      continue;
    }
    for (const int a : m.attribute_indices()) {
      hot[d.string_table(d.attribute_table(a).key_strindex())] =
          d.attribute_table(a).value().string_value();
    }
  }
  for (const auto& p : request.resource_profiles(0).scope_profiles(0).profiles()) {
    for (const auto& sample : p.samples()) {
      for (const int a : sample.attribute_indices()) {
        if (d.string_table(d.attribute_table(a).key_strindex()) == "process.pid") {
          pids.insert(d.attribute_table(a).value().int_value());
        }
      }
    }
  }
  EXPECT_EQ(hot["process.executable.build_id.htlhash"], expected);
  EXPECT_EQ(hot["process.executable.build_id.gnu"], own_id(dir_ + "/hot"));
  EXPECT_TRUE(pids.contains(std::stoll(pid))) << pid;
}

}  // namespace
}  // namespace pdfix::e2e
