#include "nvfp4/atomic_file.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "nvfp4/error.h"

namespace nvfp4 {

namespace {
std::string dir_of(const std::string& path) {
  const auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}
std::string base_of(const std::string& path) {
  const auto slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}
}  // namespace

AtomicFile::AtomicFile(const std::string& path) : path_(path) {
  if (path.empty() || path.back() == '/') {
    throw Error(path, "", "output path names no file", "a file name", "'" + path + "'");
  }
  // ".tmp-XXXXXX-<name>": hidden, unique, and with the target's extension (readers pick by it).
  std::string suffix = "-";
  suffix += base_of(path);
  std::string tmpl = dir_of(path) + "/.tmp-XXXXXX" + suffix;
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  fd_ = ::mkstemps(buf.data(), static_cast<int>(suffix.size()));
  if (fd_ < 0) {
    throw Error(path, "", "cannot create the output's temporary file", "a writable directory",
                std::strerror(errno));
  }
  tmp_ = buf.data();
  ::fchmod(fd_, 0644);
  ::flock(fd_, LOCK_EX | LOCK_NB);  // marks a write in progress (remove_stale_temporaries)
  reg_ = TempRegistration(tmp_, false);
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_ && !tmp_.empty()) ::unlink(tmp_.c_str());
  reg_.release();
}

void AtomicFile::write(const void* data, size_t n) {
  const auto* p = static_cast<const uint8_t*>(data);
  while (n > 0) {
    const ssize_t k = ::write(fd_, p, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) {
      throw Error(path_, "", "cannot write the output", std::to_string(n) + " more bytes",
                  k < 0 ? std::strerror(errno) : "a short write");
    }
    p += k;
    n -= static_cast<size_t>(k);
    written_ += static_cast<uint64_t>(k);
  }
}

void AtomicFile::zeros(size_t n) {
  static const uint8_t z[256] = {};
  while (n > 0) {
    const size_t k = n < sizeof z ? n : sizeof z;
    write(z, k);
    n -= k;
  }
}

void AtomicFile::sync() {
  if (fd_ >= 0 && ::fsync(fd_) != 0) throw Error(path_, "", "cannot fsync the output", "fsync to succeed", std::strerror(errno));
}

void AtomicFile::commit() {
  if (committed_) return;
  if (::fsync(fd_) != 0) throw Error(path_, "", "cannot fsync the output", "fsync to succeed", std::strerror(errno));
  if (::close(fd_) != 0) {
    fd_ = -1;
    throw Error(path_, "", "cannot close the output", "close to succeed", std::strerror(errno));
  }
  fd_ = -1;
  if (::rename(tmp_.c_str(), path_.c_str()) != 0) {
    throw Error(path_, "", "cannot rename the temporary file onto the output", "rename to succeed",
                std::strerror(errno));
  }
  committed_ = true;
  reg_.release();
  const int dfd = ::open(dir_of(path_).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

}  // namespace nvfp4
