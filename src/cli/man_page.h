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

 private:
  Page page_;
};

}  // namespace pdfix::cli
