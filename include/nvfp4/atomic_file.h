// Writing a file so that it either appears whole or not at all: data goes to a temporary file in
// the target's directory, which commit() fsyncs and renames over the target (then fsyncs the
// directory). Destroying an uncommitted AtomicFile removes the temporary file; while it lives, the
// temporary file is flock()ed and registered for removal on SIGINT/SIGTERM/SIGHUP (nvfp4/temp_cleanup.h).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "nvfp4/temp_cleanup.h"

namespace nvfp4 {

class AtomicFile {
 public:
  // Throws nvfp4::Error naming `path` when the temporary file cannot be created.
  explicit AtomicFile(const std::string& path);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(const void* data, size_t n);  // throws nvfp4::Error on a short write
  void zeros(size_t n);                     // n zero bytes (padding)
  uint64_t written() const { return written_; }
  void sync();  // fsync the data so far (the temporary file is complete and readable by path)
  void commit();                            // fsync + rename + fsync(dir); throws on failure
  const std::string& path() const { return path_; }
  const std::string& temp_path() const { return tmp_; }

 private:
  std::string path_;
  std::string tmp_;
  int fd_ = -1;
  uint64_t written_ = 0;
  bool committed_ = false;
  TempRegistration reg_;
};

}  // namespace nvfp4
