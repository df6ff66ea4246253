#include "e2e/perf_frames.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <map>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "e2e/call_sites.h"
#include "e2e/harness.h"
#include "llvm/Support/JSON.h"

namespace pdfix::e2e {
namespace {

bool has_user_frame(const Sample& s) {
  return std::any_of(s.begin() + (s.empty() ? 0 : 1), s.end(),
                     [](const std::string& line) { return line.find(" (/") != std::string::npos; });
}

// Where perf's unwinder read past the stack copy (a frame larger than the copy, or its end), it
// takes whatever it finds for a return address: 0 or one in no mapping ([unknown]), or one in
// anonymous memory (//anon: the heap, where no file's code is in a program without JIT). That
// last frame is libunwind's end, not a caller.
bool past_the_copy(const std::string& dso) { return dso == "[unknown]" || dso == "//anon"; }

// User frames perf can place: its chain's last frame past the copy does not count.
size_t placed_user_frames(const Sample& s) {
  auto f = CallSites::user_frames(s);
  if (!f.empty() && past_the_copy(f.back().dso)) f.pop_back();
  return f.size();
}

}  // namespace

std::vector<Sample> frames(const std::string& path, const std::string& symfs) {
  RunResult r =
      sh("perf script -i " + quote(path) + (symfs.empty() ? "" : " --symfs " + quote(symfs)) +
         " -F comm,tid,time,ip,sym,dso --no-inline 2>/dev/null");
  EXPECT_EQ(r.status, 0) << path;
  return samples_of(r.out);
}

std::vector<Sample> samples_of(const std::string& script) {
  std::vector<Sample> samples(1);
  std::istringstream lines(script);
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty()) {
      samples.back().push_back(line);
    } else if (!samples.back().empty()) {
      samples.emplace_back();
    }
  }
  if (samples.back().empty()) samples.pop_back();
  return samples;
}

bool agree(Sample perf, const Sample& ours) {
  if (perf == ours) return true;
  const auto last = CallSites::user_frames({"", perf.empty() ? "" : perf.back()});
  if (!last.empty() && past_the_copy(last.front().dso)) perf.pop_back();
  return perf.size() <= ours.size() && std::equal(perf.begin(), perf.end(), ours.begin()) &&
         std::none_of(
             ours.begin() + static_cast<std::ptrdiff_t>(perf.size()), ours.end(),
             [](const std::string& l) { return l.find("([unknown])") != std::string::npos; });
}

double same_share(const std::vector<Sample>& a, const std::vector<Sample>& b) {
  EXPECT_EQ(a.size(), b.size());
  size_t same = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) same += agree(a[i], b[i]);
  return a.empty() ? 0 : static_cast<double>(same) / static_cast<double>(a.size());
}

void expect_call_sites(const std::vector<Sample>& perf, const std::vector<Sample>& ours) {
  CallSites sites;
  size_t bad = 0, checked = 0, differ = 0, perf_bad = 0, ours_bad_where_differ = 0;
  std::string example;
  for (size_t i = 0; i < ours.size(); ++i) {
    const auto wrong = sites.bad(ours[i]);
    checked += CallSites::callers(ours[i]).size();
    bad += wrong.size();
    if (!wrong.empty() && example.empty()) example = ours[i].front() + " " + wrong.front();
    if (i < perf.size() && perf[i] != ours[i]) {
      ++differ;
      perf_bad += !sites.bad(perf[i]).empty();
      ours_bad_where_differ += !wrong.empty();
    }
  }
  EXPECT_GT(checked, 0U);
  EXPECT_EQ(bad, 0U) << "of " << checked << " callers pdfix wrote, e.g. " << example;
  std::cout << "call sites: " << checked << " callers in OUT, " << bad << " not after a call; "
            << differ
            << " samples differ from perf's, of which perf's chain has a bad call site in "
            << perf_bad << ", pdfix's in " << ours_bad_where_differ << "\n";
}

double user_covered(const std::vector<Sample>& perf, const std::vector<Sample>& ours) {
  size_t want = 0, have = 0;
  for (size_t i = 0; i < std::min(perf.size(), ours.size()); ++i) {
    if (!has_user_frame(perf[i])) continue;
    ++want;
    have += has_user_frame(ours[i]);
  }
  return want == 0 ? 0 : static_cast<double>(have) / static_cast<double>(want);
}

uint64_t user_frames(const std::vector<Sample>& samples) {
  uint64_t n = 0;
  for (const Sample& s : samples) {
    for (const std::string& line : s) n += line.find("(/") != std::string::npos;
  }
  return n;
}

Judgement judge(const std::vector<Sample>& perf, const std::vector<Sample>& ours,
                const std::set<uint32_t>* tids, const std::string& root) {
  EXPECT_EQ(perf.size(), ours.size());
  CallSites sites(root);
  Judgement j;
  for (size_t i = 0; i < std::min(perf.size(), ours.size()); ++i) {
    const auto wrong = sites.bad(ours[i]);
    j.callers += CallSites::callers(ours[i]).size();
    j.bad_callers += wrong.size();
    if (!wrong.empty() && j.example.empty()) j.example = ours[i].front() + ": " + wrong.front();
    if (tids != nullptr) {
      const auto tid = tid_of(perf[i]);
      if (!tid || !tids->contains(*tid)) continue;
    }
    const size_t want = placed_user_frames(perf[i]);
    if (want == 0) continue;
    ++j.samples;
    if (CallSites::user_frames(ours[i]).size() >= want && wrong.empty()) {
      ++j.as_deep;
    } else if (j.example.empty()) {
      j.example = absl::StrCat(ours[i].front(), ": ", CallSites::user_frames(ours[i]).size(),
                               " user frames, perf shows ", want);
    }
  }
  j.direct_calls = sites.targets_judged();
  return j;
}

std::optional<uint32_t> tid_of(const Sample& s) {
  // "comm tid time:": the command may hold spaces, the time ends with ':'.
  if (s.empty()) return std::nullopt;
  std::istringstream words(s.front());
  std::vector<std::string> w;
  for (std::string word; words >> word;) w.push_back(word);
  for (size_t i = 1; i < w.size(); ++i) {
    if (w[i].ends_with(":") && w[i - 1].find_first_not_of("0123456789") == std::string::npos) {
      return static_cast<uint32_t>(std::stoul(w[i - 1]));
    }
  }
  return std::nullopt;
}

std::set<uint32_t> sampled_before_their_fork(const std::string& path) {
  std::map<int64_t, int64_t> first_sample, fork;
  for (const llvm::json::Object& o : records_of(path)) {
    const auto type = o.getString("type");
    const auto tid = o.getInteger("tid");
    const auto offset = o.getString("offset");
    if (!type || !tid || !offset) continue;
    const int64_t at = std::stoll(offset->str(), nullptr, 16);
    if (*type == "SAMPLE") first_sample.try_emplace(*tid, at);
    if (*type == "FORK") fork.try_emplace(*tid, at);
  }
  std::set<uint32_t> out;
  for (const auto& [tid, at] : fork) {
    auto s = first_sample.find(tid);
    if (s != first_sample.end() && s->second < at) out.insert(static_cast<uint32_t>(tid));
  }
  return out;
}

std::vector<Sample> cut_after_first_user_frame(std::vector<Sample> samples) {
  for (Sample& s : samples) {
    bool seen = false;
    std::erase_if(s, [&](const std::string& line) {
      if (&line == &s.front() || CallSites::kernel_frame(line)) {
        return false;
      }
      const bool drop = seen;
      seen = true;
      return drop;
    });
  }
  return samples;
}

std::vector<Sample> with_garbage_frame(std::vector<Sample> samples) {
  for (Sample& s : samples) {
    const auto user = CallSites::user_frames(s);
    if (user.empty() || user.back().dso.starts_with("[")) continue;
    // The ELF header: no call ends at its second byte.
    s.push_back("\t               0 garbage (" + user.back().dso + ")");
  }
  return samples;
}

}  // namespace pdfix::e2e
