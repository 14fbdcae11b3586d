// A read-only memory map of a whole file (zero-copy reads of checkpoints).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace nvfp4 {

// Opens PATH for reading only when it is a regular file: a FIFO, a device or a socket is refused
// (naming the path and what it is) without blocking, as a plain open() of a FIFO would until a
// writer comes. The descriptor is blocking again on return. Throws nvfp4::Error.
int open_regular_file(const std::string& path);
// The whole content of a regular file (config.json, tokenizer.json, a chat template, ...), read
// through open_regular_file(). Throws nvfp4::Error.
std::string read_regular_file(const std::string& path);

class MappedFile {
 public:
  MappedFile() = default;
  // Throws nvfp4::Error naming the path when the file cannot be opened or mapped.
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(MappedFile&& o) noexcept;
  MappedFile& operator=(MappedFile&& o) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }
  // Hands the pages wholly inside [p, p + n) back to the kernel (madvise MADV_DONTNEED): they
  // leave the resident set and are read from the file again if touched. Ranges outside the map
  // are ignored. For weights copied into another layout at load.
  void drop(const void* p, size_t n) const;
  // drop() of every page of the map, the file's last partial page included.
  void drop_all() const;

 private:
  void release();
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  std::string path_;
};

}  // namespace nvfp4
