// Each repair pass, `fix` (all of them) and `check` over any bytes, on a host that is another
// machine. The input's length chooses which, and whether it is read as a file or a stream, so that
// every byte is the recording's and the seed recordings stay whole.
#include <fstream>

#include "fixture/fake_host.h"
#include "fuzz_input.h"
#include "inspect/check.h"
#include "passes/repair.h"
#include "transform/pipeline.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const pdfix::testing::FakeHost host;
  const auto kinds = pdfix::passes::repair_kinds();
  const size_t choice = size % (kinds.size() + 2);
  pdfix::fuzz::FuzzInput f(data, size, (size / (kinds.size() + 2)) % 2 != 0);
  if (!f.ok()) return 0;
  std::vector<pdfix::passes::RepairKind*> all;
  for (const auto& k : kinds) all.push_back(k.get());
  const pdfix::passes::Common common = pdfix::passes::common_for(&f.input(), "", {}, host, all);
  auto chain = [&] {
    pdfix::transform::PassChain c;
    for (size_t i = 0; i < kinds.size(); ++i) {
      if (choice >= kinds.size() || i == choice) c.push_back(kinds[i]->make(common));
    }
    return c;
  };
  if (choice == kinds.size() + 1) {
    (void)pdfix::inspect::check(f.input(), chain(), {});
  } else {
    (void)pdfix::transform::run_pipeline(f.input(), "/dev/null", chain, {});
  }
  return 0;
}
