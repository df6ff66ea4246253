#include "format/perf_version.h"

#include <array>
#include <charconv>

#include "absl/strings/str_cat.h"
#include "format/record_type.h"

namespace pdfix::format {
namespace {

// The first perf to read MMAP2 (which every recording of the last decade holds): the oldest
// reader pdfix writes for.
constexpr PerfVersion kOldest{3, 13};

// A threshold: from `since` on, perf reads up to `value`.
struct Step {
  PerfVersion since;
  uint32_t value;
};

// perf_event_attr sizes (PERF_ATTR_SIZE_VER2 .. VER9).
constexpr std::array<Step, 8> kAttrSizes = {{{{7, 0}, 144},
                                             {{6, 3}, 136},
                                             {{5, 13}, 128},
                                             {{5, 5}, 120},
                                             {{4, 1}, 112},
                                             {{3, 19}, 104},
                                             {{3, 7}, 96},
                                             {{3, 4}, 80}}};
// One past the last kernel record type: AUX_OUTPUT_HW_ID (21) came with 5.16, and so on down.
constexpr std::array<Step, 8> kKernelTypesEnd = {{{{6, 19}, 23},
                                                  {{5, 16}, 22},
                                                  {{5, 9}, 21},
                                                  {{5, 7}, 20},
                                                  {{5, 1}, 19},
                                                  {{4, 12}, 17},
                                                  {{4, 3}, 16},
                                                  {{4, 1}, 14}}};
// One past the last user record type: SCHEDSTAT_* (85, 86) with 7.0, COMPRESSED2 and
// BPF_METADATA with 6.16, FINISHED_INIT 5.19, COMPRESSED 5.2, HEADER_FEATURE 4.18, TIME_CONV
// 4.10, THREAD_MAP .. EVENT_UPDATE 4.7, AUXTRACE* 4.1, ID_INDEX 3.19.
constexpr std::array<Step, 9> kUserTypesEnd = {{{{7, 0}, 87},
                                                {{6, 16}, 85},
                                                {{5, 19}, 83},
                                                {{5, 2}, 82},
                                                {{4, 18}, 81},
                                                {{4, 10}, 80},
                                                {{4, 7}, 79},
                                                {{4, 1}, 73},
                                                {{3, 19}, 70}}};
// HEADER_LAST_FEATURE.
constexpr std::array<Step, 11> kFeaturesEnd = {{{{7, 1}, 35},
                                                {{7, 0}, 33},
                                                {{6, 0}, 32},
                                                {{5, 13}, 31},
                                                {{5, 10}, 30},
                                                {{5, 6}, 29},
                                                {{5, 2}, 28},
                                                {{5, 1}, 27},
                                                {{4, 19}, 24},
                                                {{4, 7}, 21},
                                                {{4, 1}, 19}}};

// The perf releases pdfix knows what they read: each major version's last minor one (Linux 3.19,
// 4.20, 5.19, 6.19), up to the newest whose formats the tables above describe.
constexpr std::array<PerfVersion, 5> kLastMinor = {{{3, 19}, {4, 20}, {5, 19}, {6, 19}, {7, 1}}};

bool known(PerfVersion v) {
  for (const PerfVersion& last : kLastMinor) {
    if (v.major == last.major) return v >= kOldest && v.minor <= last.minor;
  }
  return false;
}

std::string known_versions() {
  std::string out = absl::StrCat(kOldest.text(), " to ", kLastMinor[0].text());
  for (size_t i = 1; i < kLastMinor.size(); ++i) {
    absl::StrAppend(&out, ", ", kLastMinor[i].major, ".0 to ", kLastMinor[i].text());
  }
  return out + ", or oldest";
}

template <size_t N>
uint32_t at(const std::array<Step, N>& steps, PerfVersion v, uint32_t before) {
  for (const Step& s : steps) {
    if (v >= s.since) return s.value;
  }
  return before;
}

}  // namespace

std::string PerfVersion::text() const { return absl::StrCat(major, ".", minor); }

bool ReaderProfile::knows_type(uint32_t type) const {
  if (type >= kHeaderAttr) return type < user_types_end;
  return type >= 1 && type < kernel_types_end;
}

absl::StatusOr<ReaderProfile> reader_profile(std::string_view text) {
  PerfVersion v = kOldest;
  if (text != "oldest") {
    const char* begin = text.begin();
    const char* end = text.end();
    auto [p, ec] = std::from_chars(begin, end, v.major);
    if (ec == std::errc() && p != end && *p == '.') {
      auto [q, ec2] = std::from_chars(p + 1, end, v.minor);
      ec = ec2;
      p = q;
    } else {
      v.minor = 0;
    }
    // A kernel release ("5.10.0-21-amd64") names its perf by its first two numbers.
    if (ec != std::errc() || p == begin || (p != end && *p != '.' && *p != '-')) {
      return absl::InvalidArgumentError(
          absl::StrCat("'", std::string(text), "' is no perf version; known: ", known_versions()));
    }
    if (v < kOldest) {
      return absl::InvalidArgumentError(
          absl::StrCat("perf ", v.text(), ": perf before ", kOldest.text(),
                       " reads no MMAP2 records, which every recording since holds"));
    }
    if (!known(v)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "perf ", v.text(), " is no perf release pdfix knows; known: ", known_versions()));
    }
  }
  ReaderProfile r;
  r.version = v;
  r.attr_size = attr_size_read_by(v);
  r.kernel_types_end = at(kKernelTypesEnd, v, kAux);
  r.user_types_end = at(kUserTypesEnd, v, kIdIndex);
  r.features_end = static_cast<int>(at(kFeaturesEnd, v, 18));
  r.compressed = v >= PerfVersion{5, 2};
  r.compressed2 = v >= PerfVersion{6, 16};
  // COMPRESSED2 exists because COMPRESSED left a stream's records unaligned.
  r.compressed_in_pipe = r.compressed2;
  r.build_id_mmap2 = v >= PerfVersion{5, 12};
  return r;
}

uint32_t attr_size_read_by(PerfVersion v) { return at(kAttrSizes, v, 72); }

}  // namespace pdfix::format
