// Where the build and the tree are: the one unit compiled with them (tests/CMakeLists.txt: why).
#include "e2e/harness.h"

namespace pdfix::e2e {

std::string pdfix_binary() { return PDFIX_BINARY; }
std::string source_dir() { return PDFIX_SOURCE_DIR; }
std::string corpus_dir() { return PDFIX_CORPUS; }
std::string foreign_corpus_dir() { return PDFIX_FOREIGN_CORPUS; }

}  // namespace pdfix::e2e
