// pdfix unpack over any bytes as a bundle: refused or unpacked, never a crash, and never anything
// beside the directory it was given.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "store/bundle.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace fs = std::filesystem;
  std::string base = (fs::temp_directory_path() / "pdfix-fuzz-unpack-XXXXXX").string();
  if (::mkdtemp(base.data()) == nullptr) return 0;
  const std::string bundle = base + "/bundle";
  if (std::FILE* f = std::fopen(bundle.c_str(), "wb")) {
    std::fwrite(data, 1, size, f);
    std::fclose(f);
  }
  (void)pdfix::store::unpack_bundle(bundle, base + "/u", {});
  for (const auto& e : fs::directory_iterator(base)) {
    const std::string name = e.path().filename().string();
    if (name != "bundle" && name != "u") {
      std::fprintf(stderr, "unpack wrote %s beside its directory\n", name.c_str());
      std::abort();
    }
  }
  std::error_code ec;
  fs::remove_all(base, ec);
  return 0;
}
