// `pdfix fix IN... OUTDIR`: a backlog of finished recordings (the chunks of a --switch-output run
// copied off a host, a day's recordings) fixed in one run, each as `pdfix fix IN OUTDIR/NAME`
// would, with what the run found of their binaries used again from one recording to the next.
#pragma once

#include <string>
#include <vector>

#include "cli/fix_run.h"

namespace pdfix::cli {

// Fixes each of `inputs` into `a.out`, a directory, under its own file name. A recording that
// cannot be fixed is reported and the rest go on. Returns 2 when one was not fixed, else 3
// when one was fixed with something missing.
int fix_many(const std::vector<passes::RepairKind*>& kinds, const FixArgs& a,
             const std::vector<std::string>& inputs, const resolve::Host& host);

}  // namespace pdfix::cli
