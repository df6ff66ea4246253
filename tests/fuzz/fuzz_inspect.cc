// What the inspecting verbs print, over any bytes: info, dump --json and buildid-list --hits. The
// input's length chooses file or stream, so that the seed recordings stay whole.
#include <sstream>

#include "fuzz_input.h"
#include "inspect/buildid_list.h"
#include "inspect/dump.h"
#include "inspect/info.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const bool stream = size % 2 != 0;
  {
    pdfix::fuzz::FuzzInput f(data, size, stream);
    std::ostringstream out;
    if (f.ok()) (void)pdfix::inspect::dump_records(f.input(), /*json=*/true, out);
  }
  {
    pdfix::fuzz::FuzzInput f(data, size, stream);
    if (f.ok()) (void)pdfix::inspect::list_build_ids(f.input(), {.hits = true});
  }
  {
    pdfix::fuzz::FuzzInput f(data, size, stream);
    std::ostringstream out;
    if (f.ok()) {
      if (auto info = pdfix::inspect::collect_info(f.input()); info.ok()) {
        pdfix::inspect::print_info_json(*info, out);
      }
    }
  }
  return 0;
}
