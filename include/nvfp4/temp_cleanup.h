// Temporary outputs (AtomicFile's `.tmp-XXXXXX-<name>` files, convert's `.tmp-<name>-XXXXXX`
// directories) that a SIGINT/SIGTERM/SIGHUP, or a later run, removes.
//
// While a write is in progress its temporary path sits in one of a few fixed slots (a char buffer
// and a lock-free atomic state each). These slots are the only process-wide mutable state, and
// only because a signal handler can reach nothing else: the handler installed by
// remove_temporaries_on_signal() reads the slots' atomics and calls open, getdents64, unlinkat,
// unlink, rmdir, close and _exit, all async-signal-safe; it removes every registered temporary
// and exits with 128 + the signal number (130 for SIGINT, 143 for SIGTERM).
//
// Each temporary is also held under flock(LOCK_EX) by its writer, so remove_stale_temporaries()
// can tell the leftovers of a killed process (no lock) from a write in progress (locked).
#pragma once
#include <string>
#include <vector>

namespace nvfp4 {

// Registers PATH (a file, or a directory whose entries are removed with it) for removal by the
// signal handler until destroyed or release()d. For a directory, also opens it and holds the
// flock. At most a few at once: beyond that the path is not registered (nothing fails).
class TempRegistration {
 public:
  TempRegistration() = default;
  TempRegistration(const std::string& path, bool directory);
  ~TempRegistration() { release(); }
  TempRegistration(const TempRegistration&) = delete;
  TempRegistration& operator=(const TempRegistration&) = delete;
  TempRegistration(TempRegistration&& o) noexcept : slot_(o.slot_), fd_(o.fd_) { o.slot_ = o.fd_ = -1; }
  TempRegistration& operator=(TempRegistration&& o) noexcept;
  void release();  // no longer removed on a signal (committed, or already removed)

 private:
  int slot_ = -1;
  int fd_ = -1;  // directory: the held lock
};

// Installs the SIGINT/SIGTERM/SIGHUP handler (idempotent). For programs (the CLI), not for the library.
void remove_temporaries_on_signal();

struct StaleTemporary {
  std::string path;
  bool removed = false;  // false: in use by a live writer (locked), left alone
};
// The temporaries of writes to TARGET (a file or directory path) in its parent directory, our
// name patterns only: those no process holds are removed (a directory with its contents).
std::vector<StaleTemporary> remove_stale_temporaries(const std::string& target);

}  // namespace nvfp4
