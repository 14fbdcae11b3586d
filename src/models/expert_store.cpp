// The expert store (expert_store.h): the file written at load, the slots, begin, wait and release.
#include "models/expert_store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <exception>

#include "nvfp4/error.h"

namespace nvfp4 {

namespace {
constexpr char kMagic[8] = {'N', 'V', 'F', 'P', '4', 'E', 'X', 'P'};
constexpr uint32_t kVersion = 1;
constexpr int64_t kPage = 4096, kHeader = 4096, kEntryBytes = 24;
constexpr int64_t kPiece = int64_t{1} << 20;  // the I/O threads' read size (a multiple of kPage)

int64_t round_up(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

struct Header {  // the file's first bytes, little-endian as the machine
  char magic[8];
  uint32_t version, clean;
  uint64_t count, table;
};

void write_all(int fd, const void* p, int64_t n, int64_t off, const std::string& path) {
  const char* c = static_cast<const char*>(p);
  while (n > 0) {
    const ssize_t w = ::pwrite(fd, c, static_cast<size_t>(n), off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) throw Error(path, "", "writing the expert file (--experts-file)", "every byte written", std::strerror(errno));
    c += w, n -= w, off += w;
  }
}

// Bytes read (fewer at the end of the file).
int64_t read_all(int fd, void* p, int64_t n, int64_t off) {
  char* c = static_cast<char*>(p);
  int64_t got = 0;
  while (got < n) {
    const ssize_t r = ::pread(fd, c + got, static_cast<size_t>(n - got), off + got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += r;
  }
  return got;
}

std::string hex(uint64_t v) {
  char b[24];
  std::snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(v));
  return b;
}

}  // namespace

std::string bytes_text(int64_t b) {
  char s[32];
  if (b < (int64_t{1} << 20)) std::snprintf(s, sizeof s, "%.1f KiB", static_cast<double>(b) / 1024);
  else if (b < (int64_t{1} << 30)) std::snprintf(s, sizeof s, "%.1f MiB", static_cast<double>(b) / (1 << 20));
  else std::snprintf(s, sizeof s, "%.2f GiB", static_cast<double>(b) / (1 << 30));
  return s;
}

uint64_t expert_hash(const uint8_t* p, size_t n) {
  constexpr uint64_t kMul = 0x9E3779B97F4A7C15ull;
  uint64_t h[4] = {1, 2, 3, 4};
  size_t i = 0;
  for (; i + 32 <= n; i += 32)
    for (int l = 0; l < 4; ++l) {
      uint64_t w;
      std::memcpy(&w, p + i + 8 * l, 8);
      h[l] = (h[l] ^ w) * kMul;
      h[l] ^= h[l] >> 29;
    }
  uint64_t r = static_cast<uint64_t>(n);
  for (int l = 0; l < 4; ++l) r = (r ^ h[l]) * kMul, r ^= r >> 31;
  for (; i < n; ++i) r = (r ^ p[i]) * kMul;
  return r ^ (r >> 29);
}

ExpertStore::ExpertStore(std::string path, bool read_ahead) : path_(std::move(path)), read_ahead_(read_ahead) {
  fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0)
    throw Error(path_, "", "the expert file (--experts-file, beside the model by default) opened for reading and writing",
                "a writable path", std::strerror(errno));
  st_.file = path_;
  // NVFP4_EXPERTS_DIRECT=0: reads through the page cache (to time what O_DIRECT gives).
  if (const char* v = std::getenv("NVFP4_EXPERTS_DIRECT"); !v || std::string(v) != "0")
    direct_fd_ = ::open(path_.c_str(), O_RDONLY | O_DIRECT | O_CLOEXEC);  // -1 where the file system refuses it
  end_ = kHeader;
  // A clean table from an earlier load: the experts it holds need no write.
  Header h{};
  struct stat sb{};
  if (::fstat(fd_, &sb) == 0 && read_all(fd_, &h, sizeof h, 0) == static_cast<int64_t>(sizeof h) &&
      std::memcmp(h.magic, kMagic, 8) == 0 && h.version == kVersion && h.clean == 1 &&
      h.count < (uint64_t{1} << 32) && h.table + h.count * kEntryBytes == static_cast<uint64_t>(sb.st_size)) {
    std::vector<uint64_t> t(h.count * 3);
    if (read_all(fd_, t.data(), static_cast<int64_t>(h.count) * kEntryBytes, static_cast<int64_t>(h.table)) ==
        static_cast<int64_t>(h.count) * kEntryBytes) {
      old_.resize(h.count);
      for (size_t i = 0; i < h.count; ++i) {
        old_[i].offset = static_cast<int64_t>(t[3 * i]);
        old_[i].size = static_cast<int64_t>(t[3 * i + 1]);
        old_[i].hash = t[3 * i + 2];
      }
    }
  }
}

ExpertStore::~ExpertStore() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  work_.notify_all();
  for (std::thread& t : readers_) t.join();
  if (fd_ >= 0) ::close(fd_);
  if (direct_fd_ >= 0) ::close(direct_fd_);
}

void ExpertStore::write_header(bool clean) {
  Header h{};
  std::memcpy(h.magic, kMagic, 8);
  h.version = kVersion;
  h.clean = clean ? 1 : 0;
  h.count = order_;
  h.table = static_cast<uint64_t>(end_);
  write_all(fd_, &h, sizeof h, 0, path_);
}

void ExpertStore::add_layer(int64_t layer, std::vector<Expert>& experts) {
  if (static_cast<int64_t>(layers_.size()) <= layer) layers_.resize(static_cast<size_t>(layer) + 1);
  std::vector<Entry>& es = layers_[static_cast<size_t>(layer)];
  es.assign(experts.size(), Entry{});
  std::vector<uint8_t> buf;
  for (size_t x = 0; x < experts.size(); ++x) {
    Entry& e = es[x];
    MatMul* mm[3] = {&experts[x].gate, &experts[x].up, &experts[x].down};
    int64_t size = 0;
    for (int j = 0; j < 3; ++j) {
      if (mm[j]->n_out == 0) continue;  // no gate (Nemotron-H's squared-ReLU experts)
      if (!mm[j]->nvfp4)
        throw Error("", mm[j]->name + ".weight", "experts read from disk (--experts-budget) are NVFP4", "NVFP4",
                    "another storage (run without --experts-budget)");
      e.lin[j] = &mm[j]->lin;
      e.part[j] = round_up(size, 64);
      size = e.part[j] + static_cast<int64_t>(e.lin[j]->stream().size());
    }
    e.size = size;
    e.offset = round_up(end_, kPage);
    buf.assign(static_cast<size_t>(size), 0);
    for (int j = 0; j < 3; ++j)
      if (e.lin[j]) {
        const std::span<const uint8_t> s = e.lin[j]->stream();
        std::memcpy(buf.data() + e.part[j], s.data(), s.size());
      }
    e.hash = expert_hash(buf.data(), buf.size());
    const bool held = order_ < old_.size() && old_[order_].offset == e.offset && old_[order_].size == e.size &&
                      old_[order_].hash == e.hash;
    if (!held) {
      if (!dirty_) write_header(false), dirty_ = true;
      write_all(fd_, buf.data(), size, e.offset, path_);
      st_.written += size;
    }
    for (Linear* l : e.lin)
      if (l) l->release_stream();
    end_ = e.offset + size;
    ++order_;
  }
}

void ExpertStore::finish(int64_t budget, int64_t min_slots, const std::string& source) {
  end_ = round_up(end_, kPage);
  const bool same_count = order_ == old_.size();
  if (dirty_ || !same_count) {
    if (!dirty_) write_header(false), dirty_ = true;
    std::vector<uint64_t> t;
    t.reserve(order_ * 3);
    for (const auto& es : layers_)
      for (const Entry& e : es) t.insert(t.end(), {static_cast<uint64_t>(e.offset), static_cast<uint64_t>(e.size), e.hash});
    write_all(fd_, t.data(), static_cast<int64_t>(t.size() * 8), end_, path_);
    if (::ftruncate(fd_, end_ + static_cast<int64_t>(t.size() * 8)) != 0)
      throw Error(path_, "", "sizing the expert file", "its table's end", std::strerror(errno));
    write_header(true);
  }
  int64_t largest = 0;
  for (const auto& es : layers_)
    for (const Entry& e : es) largest = std::max(largest, e.size);
  slot_bytes_ = round_up(std::max<int64_t>(largest, 1), kPage);
  min_slots_ = min_slots;
  source_ = source;
  size_slots(budget);
  for (int i = 0; i < kReaders; ++i) readers_.emplace_back([this] { read_loop(); });
  st_.slot_bytes = slot_bytes_;
  st_.experts = static_cast<int64_t>(order_);
  old_.clear();
  old_.shrink_to_fit();
}

void ExpertStore::size_slots(int64_t budget) {
  const int64_t n = std::min<int64_t>(budget / slot_bytes_, static_cast<int64_t>(order_));
  if (n < min_slots_)
    throw Error(source_, "", "--experts-budget: room for the experts one token routes to (" + std::to_string(min_slots_) + " of " +
                                 bytes_text(slot_bytes_) + ")",
                ">= " + bytes_text(min_slots_ * slot_bytes_), bytes_text(budget));
  n_slots_ = n;
  slab_ = HugeVector<uint8_t>();  // taken at the first step
  owner_.assign(static_cast<size_t>(n_slots_), nullptr);
  st_.slots = n_slots_;
}

void ExpertStore::set_budget(int64_t budget) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& es : layers_)
    for (const Entry& e : es)
      if (e.pins > 0 || e.state == Entry::loading)
        throw Error(path_, "", "the experts' budget changed between steps", "no expert in use", "a step's experts pinned");
  for (auto& es : layers_)
    for (Entry& e : es) {
      if (e.slot >= 0) attach(e, nullptr);
      e.slot = -1;
      e.state = Entry::absent;
      e.ahead = false;
    }
  size_slots(budget);
}

ExpertStore::Entry& ExpertStore::entry(int64_t layer, int32_t id) {
  if (layer < 0 || layer >= static_cast<int64_t>(layers_.size()) || id < 0 ||
      id >= static_cast<int32_t>(layers_[static_cast<size_t>(layer)].size()))
    throw Error(path_, "", "an expert the store holds", "layer " + std::to_string(layer) + "'s experts",
                "expert " + std::to_string(id));
  return layers_[static_cast<size_t>(layer)][static_cast<size_t>(id)];
}

void ExpertStore::attach(Entry& e, const uint8_t* base) {
  for (int j = 0; j < 3; ++j)
    if (e.lin[j]) e.lin[j]->attach_stream(base ? base + e.part[j] : nullptr);
}

int64_t ExpertStore::begin(int64_t layer, std::span<const int32_t> ids, std::vector<uint8_t>* queued_out) {
  std::unique_lock<std::mutex> lock(mu_);
  // At least 2 MiB, so that it is a mapping of its own, page-aligned for O_DIRECT (nvfp4/huge_pages.h).
  if (slab_.empty()) slab_ = HugeVector<uint8_t>(static_cast<size_t>(std::max<int64_t>(n_slots_ * slot_bytes_, int64_t{2} << 20)));
  ++tick_;
  for (int32_t id : ids) {
    Entry& e = entry(layer, id);
    e.freq = e.freq + 1 == 0 ? e.freq : e.freq + 1;
    e.last = tick_;
    ++e.pins;
  }
  int64_t queued = 0;
  if (queued_out) queued_out->assign(ids.size(), 0);
  for (size_t i = 0; i < ids.size(); ++i) {
    Entry& e = entry(layer, ids[i]);
    if (e.slot >= 0) {
      ++st_.hits;
      if (e.ahead) ++st_.prefetch_used, e.ahead = false;
      continue;
    }
    int64_t best = victim();
    while (best < 0 && loading_ > 0) {  // every other slot on its way in: one becomes evictable when read
      done_.wait(lock);
      best = victim();
    }
    if (best < 0) {
      for (int32_t x : ids) --entry(layer, x).pins;
      throw Error(path_, "", "a free or unpinned slot for each expert a step asks for", std::to_string(n_slots_) + " slots",
                  "all pinned");
    }
    load_into(e, best);
    ++st_.misses;
    ++queued;
    if (queued_out) (*queued_out)[i] = 1;
  }
  if (queued > 0) work_.notify_all();
  return queued;
}

int64_t ExpertStore::victim() const {
  int64_t best = -1;
  for (int64_t s = 0; s < n_slots_; ++s) {
    const Entry* o = owner_[static_cast<size_t>(s)];
    if (!o) return s;
    if (o->pins > 0 || o->state == Entry::loading) continue;  // (loading: an I/O thread writes its slot)
    const Entry* b = best < 0 ? nullptr : owner_[static_cast<size_t>(best)];
    if (!b || o->freq < b->freq || (o->freq == b->freq && o->last < b->last)) best = s;
  }
  return best;
}

void ExpertStore::load_into(Entry& e, int64_t slot) {
  Entry* gone = owner_[static_cast<size_t>(slot)];
  if (gone) attach(*gone, nullptr), gone->slot = -1, gone->state = Entry::absent, gone->ahead = false;
  owner_[static_cast<size_t>(slot)] = &e;
  e.slot = slot;
  e.state = Entry::loading;
  // In pieces of kPiece, so that the I/O threads read one expert side by side (a step that misses
  // one or two experts a layer would otherwise keep one read in flight).
  const int64_t rounded = round_up(e.size, kPage);
  e.pieces = static_cast<int>((rounded + kPiece - 1) / kPiece);
  e.bad = false;
  for (int64_t at = 0; at < rounded; at += kPiece) jobs_.push_back(Job{&e, at, std::min(kPiece, rounded - at)});
  ++loading_;
  st_.bytes_read += e.size;
}

void ExpertStore::prefetch(int64_t layer, std::span<const int32_t> ids) {
  std::lock_guard<std::mutex> lock(mu_);
  if (slab_.empty() || !read_ahead_) return;
  bool queued = false;
  for (int32_t id : ids) {
    Entry& e = entry(layer, id);
    if (e.slot >= 0) continue;
    const int64_t s = victim();
    if (s < 0) break;
    load_into(e, s);
    e.ahead = true;
    ++st_.prefetched;
    queued = true;
  }
  if (queued) work_.notify_all();
}

void ExpertStore::wait(int64_t layer, std::span<const int32_t> ids) {
  std::unique_lock<std::mutex> lock(mu_);
  const auto t0 = std::chrono::steady_clock::now();
  const auto pending = [&] {
    for (int32_t id : ids)
      if (entry(layer, id).state == Entry::loading) return true;
    return false;
  };
  if (pending()) {
    done_.wait(lock, [&] { return !pending(); });
    st_.read_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  const Entry* bad = nullptr;
  for (int32_t id : ids) {
    Entry& e = entry(layer, id);
    if (e.state == Entry::failed) {
      bad = &e;
      owner_[static_cast<size_t>(e.slot)] = nullptr;
      e.slot = -1;
      e.state = Entry::absent;
    } else if (e.state == Entry::read) {
      attach(e, slab_.data() + e.slot * slot_bytes_);
      e.state = Entry::ready;
    }
  }
  if (bad) {
    const int64_t x = bad - layers_[static_cast<size_t>(layer)].data();
    throw Error(path_, "blk." + std::to_string(layer) + " expert " + std::to_string(x),
                "an expert read back from the file as this load packed it (delete the file to have it rewritten)",
                std::to_string(bad->size) + " bytes hashing to " + hex(bad->hash), "other bytes (a short read or a changed file)");
  }
  since_age_ += ids.size();
  if (since_age_ > static_cast<uint64_t>(8 * n_slots_)) {
    since_age_ = 0;
    for (auto& es : layers_)
      for (Entry& e : es) e.freq >>= 1;
  }
}

// An I/O thread: reads queued experts into their slots (a slot being read is pinned, so nothing
// else touches it), checks each against its hash, and wakes the waiters.
void ExpertStore::read_loop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    work_.wait(lock, [&] { return stop_ || !jobs_.empty(); });
    if (stop_) return;
    const Job job = jobs_.front();
    jobs_.pop_front();
    Entry* e = job.e;
    uint8_t* dst = slab_.data() + e->slot * slot_bytes_ + job.at;
    const int64_t size = e->size, offset = e->offset + job.at;
    const int64_t want = std::min(job.len, size - job.at);  // the expert's bytes in this piece
    lock.unlock();
    // O_DIRECT where the file system allows it: whole 4 KiB pages (the slot, the offset and the
    // piece are aligned, the slot holds the rounded size), past the page cache, which in a memory
    // cgroup would hold a second copy of what the slots hold. Else through the page cache.
    int64_t got = -1;
    if (direct_fd_ >= 0 && reinterpret_cast<uintptr_t>(dst) % kPage == 0) got = read_all(direct_fd_, dst, job.len, offset);
    if (got < want) got = read_all(fd_, dst, want, offset);  // (a file system that refused the direct read)
    lock.lock();
    if (got < want) e->bad = true;
    if (--e->pieces > 0) continue;
    // The last piece in: the whole expert checked against the load's hash.
    const bool read_ok = !e->bad;
    const uint64_t hash = e->hash;
    const uint8_t* whole = slab_.data() + e->slot * slot_bytes_;
    lock.unlock();
    const bool ok = read_ok && expert_hash(whole, static_cast<size_t>(size)) == hash;
    lock.lock();
    e->state = ok ? Entry::read : Entry::failed;
    --loading_;
    done_.notify_all();
  }
}

void ExpertStore::release(int64_t layer, std::span<const int32_t> ids) {
  std::lock_guard<std::mutex> lock(mu_);
  for (int32_t id : ids) {
    Entry& e = entry(layer, id);
    if (e.pins > 0) --e.pins;
  }
}

ExpertStats ExpertStore::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return st_;
}

}  // namespace nvfp4
