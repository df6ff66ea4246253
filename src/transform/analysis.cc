#include "transform/analysis.h"

#include "transform/open_session.h"

namespace pdfix::transform {

void analyze(io::Input& in, std::span<Analysis* const> analyses) {
  if (in.mapped == nullptr || analyses.empty()) return;
  auto session = open_session(in);
  if (!session.ok()) return;
  std::bitset<128> wanted;
  for (const Analysis* a : analyses) wanted |= a->wanted();
  auto reader = make_reader(in, *session, {.expand_compressed = true});
  while (true) {
    reader->skip_unwanted(wanted);
    auto r = reader->next();
    if (!r.ok() || !*r) return;
    const uint32_t type = (*r)->header.type;
    if (type >= wanted.size() || !wanted.test(type)) continue;
    for (Analysis* a : analyses) {
      if (a->wanted().test(type)) a->see(**r, *session);
    }
  }
}

bool SweptOnce::sweep(Analysis& a) {
  if (in_.mapped == nullptr) return false;
  if (!swept_) {
    swept_ = true;
    Analysis* one = &a;
    analyze(in_, {&one, 1});
  }
  return true;
}

}  // namespace pdfix::transform
