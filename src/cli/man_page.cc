#include "cli/man_page.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"

namespace pdfix::cli {
namespace {

constexpr size_t kWidth = 100;
constexpr size_t kOptionColumn = 31;

std::string indented(const std::string& text, const std::string& indent) {
  std::string out;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    absl::StrAppend(&out, line.empty() ? "" : indent, line, "\n");
  }
  return out;
}

}  // namespace

std::string filled(std::string head, const std::string& text, size_t column, size_t width) {
  std::string out = std::move(head);
  size_t at = out.size();
  if (at + 1 > column) {
    out += "\n";
    at = 0;
  }
  bool first = true;
  for (absl::string_view word : absl::StrSplit(text, ' ', absl::SkipEmpty())) {
    if (at < column) {
      out.append(column - at, ' ');
      at = column;
    } else if (!first && at + 1 + word.size() > width) {
      out += "\n" + std::string(column, ' ');
      at = column;
    } else if (!first) {
      out += " ";
      ++at;
    }
    absl::StrAppend(&out, word);
    at += word.size();
    first = false;
  }
  return out + "\n";
}

namespace {

// "-v, --verbose", "--sysroot DIR": the value's name only. CLI11 appends what its checks say
// ("DIR:DIR", "N:INT in [1 - 19]"); ranges are given in words in the description instead.
std::string option_names(const CLI::Option* opt) {
  std::vector<std::string> names;
  for (const auto& s : opt->get_snames()) names.push_back("-" + s);
  for (const auto& l : opt->get_lnames()) names.push_back("--" + l);
  std::string out = absl::StrJoin(names, ", ");
  const std::string type = opt->get_type_name();
  if (!type.empty() && opt->get_expected_max() > 0) {
    absl::StrAppend(&out, " ", type.substr(0, type.find(':')));
  }
  return out;
}

std::string option_line(const CLI::Option* opt) {
  return filled("    " + option_names(opt), opt->get_description(), kOptionColumn, kWidth);
}

// Text as roff shows it: backslashes escaped, and no line taken for a request.
std::string roff_text(const std::string& text) {
  std::string out;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    std::string l = absl::StrReplaceAll(line, {{"\\", "\\e"}});
    if (!l.empty() && (l.front() == '.' || l.front() == '\'')) l.insert(0, "\\&");
    absl::StrAppend(&out, l, "\n");
  }
  return out;
}

// A page's sections: .SH sections for the root; for a verb, one .SS under VERBS with paragraphs.
std::string roff_sections(const CLI::App& app, const Page& page, bool verb) {
  std::string out;
  if (verb) {
    absl::StrAppend(&out, ".SS ", page.name, "\n", roff_text(page.summary), ".PP\n");
  }
  absl::StrAppend(&out, verb ? ".PP\nSynopsis:\n" : ".SH SYNOPSIS\n", ".nf\n",
                  roff_text(page.synopsis), ".fi\n");
  if (!page.description.empty()) {
    absl::StrAppend(&out, verb ? ".PP\n" : ".SH DESCRIPTION\n", ".nf\n",
                    roff_text(page.description), ".fi\n");
  }
  std::string options;
  for (const CLI::Option* opt : app.get_options()) {
    if (opt->get_positional()) continue;
    absl::StrAppend(&options, ".TP\n.B ", roff_text(option_names(opt)),
                    roff_text(opt->get_description()));
  }
  if (!options.empty()) {
    absl::StrAppend(&out, verb ? ".PP\nOptions:\n" : ".SH OPTIONS\n", options);
  }
  absl::StrAppend(&out, verb ? ".PP\nExit status:\n" : ".SH \"EXIT STATUS\"\n", ".nf\n",
                  roff_text(page.exit_status), ".fi\n");
  return out;
}

const Page* page_of(const CLI::App& app) {
  auto* man = dynamic_cast<const ManPage*>(app.get_formatter().get());
  return man != nullptr ? &man->page() : nullptr;
}

}  // namespace

std::string ManPage::make_help(const CLI::App* app, std::string /*name*/,
                               CLI::AppFormatMode /*mode*/) const {
  std::string out = absl::StrCat("NAME\n    ", page_.name, " - ", page_.summary, "\n\nSYNOPSIS\n",
                                 indented(page_.synopsis, "    "));
  if (!page_.description.empty()) {
    absl::StrAppend(&out, "\nDESCRIPTION\n", indented(page_.description, "    "));
  }
  std::string verbs;
  for (const CLI::App* sub : app->get_subcommands({})) {
    verbs += filled("    " + sub->get_name(), sub->get_description(), 24, kWidth);
  }
  if (!verbs.empty()) absl::StrAppend(&out, "\nVERBS\n", verbs);
  std::string options;
  for (const CLI::Option* opt : app->get_options()) {
    if (opt->get_positional()) continue;
    options += option_line(opt);
  }
  if (!options.empty()) absl::StrAppend(&out, "\nOPTIONS\n", options);
  absl::StrAppend(&out, "\nEXIT STATUS\n", indented(page_.exit_status, "    "));
  return out;
}

std::string roff_manual(const CLI::App& root, const std::string& version) {
  const Page* page = page_of(root);
  if (page == nullptr) return "";
  std::string out =
      absl::StrCat(".TH PDFIX 1 \"\" \"pdfix ", version,
                   "\" \"User Commands\"\n.SH NAME\npdfix \\- ", roff_text(page->summary));
  absl::StrAppend(&out, roff_sections(root, *page, /*verb=*/false));
  absl::StrAppend(&out, ".SH VERBS\n");
  for (const CLI::App* sub : root.get_subcommands({})) {
    if (const Page* p = page_of(*sub)) absl::StrAppend(&out, roff_sections(*sub, *p, true));
  }
  return out;
}

}  // namespace pdfix::cli
