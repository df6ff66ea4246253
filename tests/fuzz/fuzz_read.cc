// The reader over any bytes, as a file and as a stream: every record framed, compressed data
// expanded, or an error.
#include "fuzz_input.h"
#include "transform/open_session.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  for (bool stream : {false, true}) {
    pdfix::fuzz::FuzzInput f(data, size, stream);
    if (!f.ok()) continue;
    auto session = pdfix::transform::open_session(f.input());
    if (!session.ok()) continue;
    auto reader = pdfix::transform::make_reader(f.input(), *session, {.expand_compressed = true});
    while (true) {
      auto r = reader->next();
      if (!r.ok() || !r->has_value()) break;
    }
  }
  return 0;
}
