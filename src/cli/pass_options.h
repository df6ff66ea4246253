// What the verbs that run repair passes share: the passes' options on a command line, and the
// settings every pass reads for one recording.
#pragma once

#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "io/input.h"
#include "passes/repair.h"
#include "resolve/host.h"
#include "transform/pipeline.h"

namespace pdfix::cli {

// Pass options onto the command line of one verb.
class CliOptions : public passes::Options {
 public:
  explicit CliOptions(CLI::App& cmd) : cmd_(cmd) {}
  void value(const std::string& name, const std::string& value_name, const std::string& help,
             std::function<absl::Status(const std::string&)> set) override;
  void each_value(const std::string& name, const std::string& value_name, const std::string& help,
                  std::function<absl::Status(const std::string&)> add) override;
  void directory(const std::string& name, const std::string& help, std::string& target) override;

 private:
  CLI::App& cmd_;
};

// --search DIR, repeatable, onto a verb's command line.
void add_search_option(CLI::App& cmd, std::vector<std::string>& search);

// A fresh chain of `kinds`, in order, each made from `common` (which must outlive the chains).
transform::MakeChain chain_of(const std::vector<passes::RepairKind*>& kinds,
                              const passes::Common& common);

}  // namespace pdfix::cli
