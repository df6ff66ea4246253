#include "cli/man_page.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
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

std::string option_line(const CLI::Option* opt) {
  std::vector<std::string> names;
  for (const auto& s : opt->get_snames()) names.push_back("-" + s);
  for (const auto& l : opt->get_lnames()) names.push_back("--" + l);
  std::string head = "    " + absl::StrJoin(names, ", ");
  if (!opt->get_type_name().empty() && opt->get_expected_max() > 0) {
    absl::StrAppend(&head, " ", opt->get_type_name());
  }
  return filled(head, opt->get_description(), kOptionColumn, kWidth);
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

}  // namespace pdfix::cli
