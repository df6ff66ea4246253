#include <string>
#include <vector>
namespace pdfix::cli {
int cmd_buildid_list(const std::vector<std::string>&) { return 2; }
}  // namespace pdfix::cli
