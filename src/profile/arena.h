// The arena a profile's messages are made in. A profile of a million samples is hundreds of
// thousands of messages; protobuf's own blocks grow to 32 KiB at most, each a run of fresh small
// pages to fault in. Blocks of 2 MiB in huge pages (io/huge_pages.h) take one fault each.
#pragma once

#include <google/protobuf/arena.h>

#include "io/huge_pages.h"

namespace pdfix::profile {

inline google::protobuf::ArenaOptions profile_arena() {
  google::protobuf::ArenaOptions options;
  options.start_block_size = io::kHugePage;
  options.max_block_size = io::kHugePage;
  options.block_alloc = io::allocate_huge;
  options.block_dealloc = io::release_huge;
  return options;
}

}  // namespace pdfix::profile
