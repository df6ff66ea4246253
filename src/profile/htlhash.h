// The OpenTelemetry profiling file id of a binary (process.executable.build_id.htlhash): what the
// eBPF profiler and the services fed by it (devfiler, Elastic, Pyroscope's symbolizer) key an
// executable by. A hash of its head, its tail and its length, taken so because those hold its
// program headers, build-id note and section headers: the first 16 bytes of the SHA-256 of the
// first 4 KiB, the last 4 KiB (the whole of a smaller file, again) and the length as 8 bytes,
// big-endian; 32 hex digits.
#pragma once

#include <optional>
#include <string>

namespace pdfix::profile {

// The file id of the file at `path`; nullopt when it cannot be read.
std::optional<std::string> htlhash_of(const std::string& path);

}  // namespace pdfix::profile
