#include "nvfp4/temp_cleanup.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <system_error>

namespace nvfp4 {

namespace {

constexpr int kSlots = 8;
constexpr size_t kPathMax = 4096;
enum : int { kFree = 0, kClaimed = 1, kArmed = 2 };

struct Slot {
  std::atomic<int> state{kFree};
  bool directory = false;
  char path[kPathMax];
};
static_assert(std::atomic<int>::is_always_lock_free, "the signal handler needs lock-free atomics");

// The process-wide slots (see the header: the one piece of global mutable state, for the handler).
Slot g_slots[kSlots];

// Removes a directory's entries (not recursing: our temporary directories hold files only) and
// the directory. Only async-signal-safe calls.
void remove_dir_signal_safe(const char* path) {
  const int fd = ::open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    alignas(8) char buf[4096];
    for (;;) {
      const long n = ::syscall(SYS_getdents64, fd, buf, sizeof buf);
      if (n <= 0) break;
      for (long off = 0; off < n;) {
        struct Dirent64 {
          uint64_t ino;
          int64_t off;
          unsigned short reclen;
          unsigned char type;
          char name[1];
        };
        const auto* d = reinterpret_cast<const Dirent64*>(buf + off);
        const char* nm = d->name;
        if (!(nm[0] == '.' && (nm[1] == 0 || (nm[1] == '.' && nm[2] == 0)))) ::unlinkat(fd, nm, 0);
        off += d->reclen;
      }
    }
    ::close(fd);
  }
  ::rmdir(path);
}

void on_signal(int sig) {
  for (int pass = 0; pass < 2; ++pass) {  // files first (they may sit in a registered directory)
    for (Slot& s : g_slots) {
      if (s.state.load(std::memory_order_acquire) != kArmed || s.directory != (pass == 1)) continue;
      if (s.directory) remove_dir_signal_safe(s.path);
      else ::unlink(s.path);
    }
  }
  ::_exit(128 + sig);
}

bool all_alnum(const std::string& s, size_t from, size_t n) {
  for (size_t i = from; i < from + n; ++i) {
    if (!std::isalnum(static_cast<unsigned char>(s[i]))) return false;
  }
  return true;
}

// True when no process holds PATH's lock (or it cannot be opened: then it is not ours to judge).
bool unlocked(const std::string& path, bool directory) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | (directory ? O_DIRECTORY : 0));
  if (fd < 0) return false;
  const bool free = ::flock(fd, LOCK_EX | LOCK_NB) == 0;
  ::close(fd);
  return free;
}

}  // namespace

TempRegistration::TempRegistration(const std::string& path, bool directory) {
  if (directory) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd_ >= 0) ::flock(fd_, LOCK_EX | LOCK_NB);
  }
  if (path.size() >= kPathMax) return;
  for (int i = 0; i < kSlots; ++i) {
    int expect = kFree;
    if (!g_slots[i].state.compare_exchange_strong(expect, kClaimed, std::memory_order_acq_rel)) continue;
    std::memcpy(g_slots[i].path, path.c_str(), path.size() + 1);
    g_slots[i].directory = directory;
    g_slots[i].state.store(kArmed, std::memory_order_release);
    slot_ = i;
    return;
  }
}

TempRegistration& TempRegistration::operator=(TempRegistration&& o) noexcept {
  if (this != &o) {
    release();
    slot_ = o.slot_;
    fd_ = o.fd_;
    o.slot_ = o.fd_ = -1;
  }
  return *this;
}

void TempRegistration::release() {
  if (slot_ >= 0) {
    g_slots[slot_].state.store(kFree, std::memory_order_release);
    slot_ = -1;
  }
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
}

void remove_temporaries_on_signal() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  // SIGHUP too: a convert in a terminal that closes (or an ssh session that drops) is ended by it.
  // A signal ignored when the program started (nohup) stays ignored.
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&sa.sa_mask, sig);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
    struct sigaction old {};
    if (sig == SIGHUP && ::sigaction(sig, nullptr, &old) == 0 && old.sa_handler == SIG_IGN) continue;
    ::sigaction(sig, &sa, nullptr);
  }
}

std::vector<StaleTemporary> remove_stale_temporaries(const std::string& target_arg) {
  namespace fs = std::filesystem;
  std::string target = target_arg;
  while (target.size() > 1 && target.back() == '/') target.pop_back();
  const fs::path t(target);
  const std::string base = t.filename().string();
  const fs::path dir = t.has_parent_path() ? t.parent_path() : fs::path(".");
  std::vector<StaleTemporary> out;
  if (base.empty()) return out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string n = it->path().filename().string();
    if (n.size() != 12 + base.size() || n.compare(0, 5, ".tmp-") != 0) continue;
    // AtomicFile: ".tmp-XXXXXX-<base>" (a file); convert's directory: ".tmp-<base>-XXXXXX".
    const bool file_form = n[11] == '-' && all_alnum(n, 5, 6) && n.compare(12, std::string::npos, base) == 0;
    const bool dir_form = n.compare(5, base.size(), base) == 0 && n[5 + base.size()] == '-' && all_alnum(n, 6 + base.size(), 6);
    std::error_code e2;
    const auto st = fs::symlink_status(it->path(), e2);
    if (e2) continue;
    const bool is_dir = fs::is_directory(st), is_file = fs::is_regular_file(st);
    if (!((file_form && is_file) || (dir_form && is_dir))) continue;
    StaleTemporary s{it->path().string(), false};
    if (unlocked(s.path, is_dir)) {
      is_dir ? fs::remove_all(s.path, e2) : fs::remove(s.path, e2);
      s.removed = !e2;
    }
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace nvfp4
