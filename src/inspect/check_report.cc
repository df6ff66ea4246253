#include <algorithm>
#include <ostream>

#include "format/utf8.h"
#include "inspect/check.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_os_ostream.h"

namespace pdfix::inspect {
namespace {

using Severity = Finding::Severity;

const char* severity_name(Severity s) { return s == Severity::kError ? "error" : "note"; }

}  // namespace

uint64_t CheckReport::errors() const {
  return std::count_if(findings.begin(), findings.end(),
                       [](const Finding& f) { return f.severity == Severity::kError; });
}

uint64_t CheckReport::notes() const { return findings.size() - errors(); }

CheckReport::Verdict CheckReport::verdict() const {
  auto any = [&](auto pred) { return std::any_of(findings.begin(), findings.end(), pred); };
  if (any([](const Finding& f) { return f.unrecoverable; })) return Verdict::kUnrecoverable;
  if (any([](const Finding& f) { return !f.fixed_by.empty(); })) return Verdict::kFixable;
  return Verdict::kReady;
}

const char* verdict_name(CheckReport::Verdict v) {
  switch (v) {
    case CheckReport::Verdict::kFixable:
      return "fixable";
    case CheckReport::Verdict::kUnrecoverable:
      return "unrecoverable";
    case CheckReport::Verdict::kReady:
      break;
  }
  return "ready";
}

void print_check_text(const CheckReport& report, std::ostream& os) {
  for (const Finding& f : report.findings) {
    os << severity_name(f.severity) << " at " << (f.file.empty() ? "" : f.file + ":") << "0x"
       << std::hex << f.offset << std::dec;
    if (!f.record.empty()) os << " " << f.record;
    if (f.count > 1) os << " (and " << f.count - 1 << " more alike)";
    os << ": " << f.what;
    os << (f.fixed_by.empty() ? " [no pass repairs this]" : " [fixed by " + f.fixed_by + "]")
       << "\n";
  }
  os << report.errors() << " error(s), " << report.notes() << " note(s): ";
  switch (report.verdict()) {
    case CheckReport::Verdict::kReady:
      os << "ready to archive\n";
      break;
    case CheckReport::Verdict::kFixable:
      os << "not ready to archive; pdfix fix repairs what was found\n";
      break;
    case CheckReport::Verdict::kUnrecoverable: {
      const auto n = std::count_if(report.findings.begin(), report.findings.end(),
                                   [](const Finding& f) { return f.unrecoverable; });
      os << "not ready to archive; " << n << " of the findings stay after pdfix fix\n";
      break;
    }
  }
}

void print_check_json(const CheckReport& report, std::ostream& os) {
  llvm::json::Array findings;
  for (const Finding& f : report.findings) {
    findings.push_back(llvm::json::Object{{"severity", severity_name(f.severity)},
                                          {"file", f.file},
                                          {"offset", static_cast<int64_t>(f.offset)},
                                          {"record", f.record},
                                          {"what", format::escape_invalid_utf8(f.what)},
                                          {"fixed_by", f.fixed_by},
                                          {"count", static_cast<int64_t>(f.count)},
                                          {"unrecoverable", f.unrecoverable}});
  }
  llvm::raw_os_ostream out(os);
  out << llvm::formatv("{0:2}", llvm::json::Value(llvm::json::Object{
                                    {"errors", static_cast<int64_t>(report.errors())},
                                    {"notes", static_cast<int64_t>(report.notes())},
                                    {"verdict", verdict_name(report.verdict())},
                                    {"findings", std::move(findings)}}))
      << "\n";
}

}  // namespace pdfix::inspect
