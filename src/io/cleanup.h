// What pdfix leaves behind when it is stopped: nothing. Temporary outputs are registered here while
// they exist; SIGINT, SIGTERM and SIGHUP remove them before pdfix dies of the signal, and SIGBUS (a
// mapped input that shrank under the reader) removes them and exits with status 2.
//
// A signal handler can reach only process-wide state, so this is the one place pdfix keeps any: a
// fixed table of paths, written before a path is created and cleared after it is renamed.
#pragma once

#include <string>

namespace pdfix::io {

// Installs the handlers; main() calls it once, before any output is made.
void install_cleanup_handlers();

// Registers `path` (a file, or with `directory` an empty-once-its-files-are-gone directory) to be
// removed if pdfix is stopped; returns a slot for forget(), or -1 when the table is full.
int remember_temp(const std::string& path, bool directory = false);
void forget_temp(int slot);

}  // namespace pdfix::io
