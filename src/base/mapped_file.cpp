#include "nvfp4/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "nvfp4/error.h"

namespace nvfp4 {

MappedFile::MappedFile(const std::string& path) : path_(path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error(path, "", "cannot open file", "a readable file", std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw Error(path, "", "not a regular file", "a regular file", "something else");
  }
  size_ = static_cast<size_t>(st.st_size);
  if (size_ > 0) {
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      const int err = errno;
      ::close(fd);
      throw Error(path, "", "cannot map file", "mmap to succeed", std::strerror(err));
    }
    data_ = static_cast<const uint8_t*>(p);
  }
  ::close(fd);
}

void MappedFile::release() {
  if (data_) ::munmap(const_cast<uint8_t*>(data_), size_);
  data_ = nullptr;
  size_ = 0;
}

void MappedFile::drop(const void* p, size_t n) const {
  const auto* b = static_cast<const uint8_t*>(p);
  if (!data_ || b < data_ || b + n > data_ + size_ || n == 0) return;
  const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const uintptr_t lo = (reinterpret_cast<uintptr_t>(b) + page - 1) / page * page;
  const uintptr_t hi = (reinterpret_cast<uintptr_t>(b) + n) / page * page;
  if (hi > lo) ::madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_DONTNEED);
}

void MappedFile::drop_all() const {
  if (!data_ || size_ == 0) return;
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  ::madvise(const_cast<uint8_t*>(data_), (size_ + page - 1) / page * page, MADV_DONTNEED);
}

MappedFile::~MappedFile() { release(); }

MappedFile::MappedFile(MappedFile&& o) noexcept : data_(o.data_), size_(o.size_), path_(std::move(o.path_)) {
  o.data_ = nullptr;
  o.size_ = 0;
}

MappedFile& MappedFile::operator=(MappedFile&& o) noexcept {
  if (this != &o) {
    release();
    data_ = o.data_;
    size_ = o.size_;
    path_ = std::move(o.path_);
    o.data_ = nullptr;
    o.size_ = 0;
  }
  return *this;
}

}  // namespace nvfp4
