// The header and feature-section parsers over any bytes, in either byte order (by the input's
// length).
#include <span>

#include "format/event_desc.h"
#include "format/feature.h"
#include "format/file_header.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> bytes(data, size);
  if (auto header = pdfix::format::parse_file_header(bytes); header.ok() && !header->pipe) {
    (void)pdfix::format::parse_feature_table(bytes, *header);
  }
  const pdfix::format::FeatureBytes f{
      bytes, size % 2 != 0 ? pdfix::format::Endian::swapped() : pdfix::format::Endian::host(), 0};
  (void)pdfix::format::decode_build_id_table(f);
  (void)pdfix::format::decode_build_id_table_6_12_0(f);
  (void)pdfix::format::decode_string_feature(f);
  (void)pdfix::format::decode_cmdline(f);
  (void)pdfix::format::decode_nrcpus(f);
  (void)pdfix::format::decode_event_desc(f);
  (void)pdfix::format::decode_compressed(f);
  (void)pdfix::format::decode_auxtrace_index(f);
  (void)pdfix::format::decode_clock_data(f);
  return 0;
}
