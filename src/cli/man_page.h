// --help as a man page: NAME, SYNOPSIS, DESCRIPTION, OPTIONS (from the parser's own options, so
// the text of an option is written once, where it is declared), EXIT STATUS.
#pragma once

#include <string>

#include "CLI/CLI.hpp"
#include "cli/verb.h"

namespace pdfix::cli {

// Words of `text` filled into lines of `width` that start at `column`, the first after `head`.
std::string filled(std::string head, const std::string& text, size_t column, size_t width);

class ManPage : public CLI::FormatterBase {
 public:
  explicit ManPage(Page page) : page_(std::move(page)) {}
  std::string make_help(const CLI::App* app, std::string name,
                        CLI::AppFormatMode mode) const override;
  const Page& page() const { return page_; }

 private:
  Page page_;
};

// pdfix(1) in roff: the root's page, then every verb's, made from the same pages and options as
// --help, so the two cannot disagree. `man -l` renders it; the build installs it.
std::string roff_manual(const CLI::App& root, const std::string& version);

}  // namespace pdfix::cli
