#include "store/libarchive.h"

#include "store/loaded_library.h"

namespace pdfix::store {

absl::StatusOr<LibArchive> load_libarchive() {
  auto lib = LoadedLibrary::open("libarchive.so.13", "libarchive13");
  if (!lib.ok()) return lib.status();
  LibArchive api;
  const bool bound =
      lib->bind("archive_entry_filetype", api.entry_filetype) &&
      lib->bind("archive_entry_free", api.entry_free) &&
      lib->bind("archive_entry_hardlink", api.entry_hardlink) &&
      lib->bind("archive_entry_new", api.entry_new) &&
      lib->bind("archive_entry_pathname", api.entry_pathname) &&
      lib->bind("archive_entry_perm", api.entry_perm) &&
      lib->bind("archive_entry_set_filetype", api.entry_set_filetype) &&
      lib->bind("archive_entry_set_mtime", api.entry_set_mtime) &&
      lib->bind("archive_entry_set_pathname", api.entry_set_pathname) &&
      lib->bind("archive_entry_set_perm", api.entry_set_perm) &&
      lib->bind("archive_entry_set_size", api.entry_set_size) &&
      lib->bind("archive_entry_set_symlink", api.entry_set_symlink) &&
      lib->bind("archive_entry_sparse_add_entry", api.entry_sparse_add_entry) &&
      lib->bind("archive_entry_symlink", api.entry_symlink) &&
      lib->bind("archive_error_string", api.error_string) && lib->bind("archive_free", api.free) &&
      lib->bind("archive_read_data_block", api.read_data_block) &&
      lib->bind("archive_read_data_skip", api.read_data_skip) &&
      lib->bind("archive_read_new", api.read_new) &&
      lib->bind("archive_read_next_header", api.read_next_header) &&
      lib->bind("archive_read_open_fd", api.read_open_fd) &&
      lib->bind("archive_read_open_filename", api.read_open_filename) &&
      lib->bind("archive_read_support_filter_all", api.read_support_filter_all) &&
      lib->bind("archive_read_support_format_tar", api.read_support_format_tar) &&
      lib->bind("archive_set_error", api.set_error) &&
      lib->bind("archive_write_add_filter_zstd", api.write_add_filter_zstd) &&
      lib->bind("archive_write_close", api.write_close) &&
      lib->bind("archive_write_data", api.write_data) &&
      lib->bind("archive_write_data_block", api.write_data_block) &&
      lib->bind("archive_write_disk_new", api.write_disk_new) &&
      lib->bind("archive_write_disk_set_options", api.write_disk_set_options) &&
      lib->bind("archive_write_finish_entry", api.write_finish_entry) &&
      lib->bind("archive_write_free", api.write_free) &&
      lib->bind("archive_write_header", api.write_header) &&
      lib->bind("archive_write_new", api.write_new) &&
      lib->bind("archive_write_open2", api.write_open2) &&
      lib->bind("archive_write_set_bytes_in_last_block", api.write_set_bytes_in_last_block) &&
      lib->bind("archive_write_set_filter_option", api.write_set_filter_option) &&
      lib->bind("archive_write_set_format_pax_restricted", api.write_set_format_pax_restricted);
  if (!bound) return absl::FailedPreconditionError("libarchive.so.13 lacks a function pdfix calls");
  return api;
}

}  // namespace pdfix::store
