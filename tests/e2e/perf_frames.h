// Samples as perf script prints them with their callchains, and the judging of an unwinder's
// chains (pdfix's) against perf's and against the binaries (CallSites).
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace pdfix::e2e {

// One sample's lines: its header, then a frame a line.
using Sample = std::vector<std::string>;
// By this host's perf; `symfs`: the root another host's files are copied under.
std::vector<Sample> frames(const std::string& path, const std::string& symfs = "");
// The same from perf script's text (-F comm,tid,time,ip,sym,dso), made elsewhere.
std::vector<Sample> samples_of(const std::string& script);

// Whether pdfix's frames are perf's. Where the stack copy ends, perf's libunwind reads a return
// address of 0, or one in no mapping or in anonymous memory, and prints it as a last frame in
// [unknown] or //anon: that frame aside, perf's frames must be pdfix's, which may go on (pdfix
// reads a return address at the very end of the copy that libunwind gives up on) with frames perf
// could place.
bool agree(Sample perf, const Sample& ours);
double same_share(const std::vector<Sample>& a, const std::vector<Sample>& b);

// Judged by the binaries, not by perf: no caller pdfix wrote may be refused by CallSites. Where
// perf's frames differ from pdfix's, which of the two the binaries support is printed.
void expect_call_sites(const std::vector<Sample>& perf, const std::vector<Sample>& ours);

// Of the samples perf shows user frames for, the share that OUT shows user frames for.
double user_covered(const std::vector<Sample>& perf, const std::vector<Sample>& ours);
uint64_t user_frames(const std::vector<Sample>& samples);

struct Judgement {
  size_t samples = 0;  // perf shows user frames for
  size_t as_deep = 0;  // of them, OUT has at least perf's user frames, every caller sound
  size_t callers = 0;  // in OUT
  size_t bad_callers = 0;
  size_t direct_calls = 0;  // callers whose direct call's target was judged against the callee
  std::string example;      // of a sample that is not as deep, or of a bad caller
  double share() const {
    return samples == 0 ? 0 : static_cast<double>(as_deep) / static_cast<double>(samples);
  }
};
// OUT's chains against perf's, sample by sample, only those of `tids` when given; the binaries
// are read under `root`.
Judgement judge(const std::vector<Sample>& perf, const std::vector<Sample>& ours,
                const std::set<uint32_t>* tids = nullptr, const std::string& root = "");
// The thread a sample's header names.
std::optional<uint32_t> tid_of(const Sample& s);
// The threads whose first sample is in the file before the FORK that made them (another CPU's
// buffer was written first), by pdfix dump.
std::set<uint32_t> sampled_before_their_fork(const std::string& path);

// Broken unwinders, for showing that the judge refuses them: each chain cut after its first user
// frame; each chain with a frame after its last that follows no call.
std::vector<Sample> cut_after_first_user_frame(std::vector<Sample> samples);
std::vector<Sample> with_garbage_frame(std::vector<Sample> samples);

}  // namespace pdfix::e2e
