// Routed experts read from disk on demand (LoadOptions::experts_budget, `--experts-budget`): a
// model bigger than RAM keeps its dense weights resident and its NVFP4 experts in a file of the
// kernels' own packed layout, read into a fixed number of slots as the steps route to them.
//
// The file (LoadOptions::experts_file) is a cache of what the load packs: a 4 KiB header, then
// each expert's streams (gate, up, down, those it has; each 64-byte aligned) at 4 KiB-aligned
// offsets in (layer, expert) order, then a table of (offset, size, hash) per expert. At load each
// expert is packed as always, hashed, written unless the file already holds it (the same offset,
// size and hash in a clean table), and its stream released; so a file left by an earlier load of
// the same model is reused without a write, and a stale or torn one is rewritten in place (the
// header says "dirty" from the first write to the last). Whatever the file says, every read is
// checked against the hash this load computed: a mismatch is an nvfp4::Error naming the file.
//
// Slots: budget / the largest expert (rounded up to 4 KiB), at least the experts a token routes
// to. A step's MoE block asks for the experts it routed to (begin): those resident are hits, the
// others are read into free or evicted slots (one pread each, O_DIRECT where the file system
// allows it, by the store's I/O threads) and all are pinned until release. A step pins at most half
// the slots (moe_ffn.cpp: more experts than that run in runs of a quarter, the next run's reads
// under the current run's compute), so the experts it streams through cannot evict the rest. The victim is the unpinned slot whose expert was used least often (counts
// halved as uses pass 8 x the slots: frequency with aging), the least recently on a tie, so a
// prompt that touches every expert once cannot push out the ones decode keeps using.
// The kernels read the same bytes as from a resident stream: results do not depend on the budget.
#pragma once
#include <cstdint>
#include <memory>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <span>
#include <string>
#include <vector>

#include "nvfp4/huge_pages.h"
#include "nvfp4/model.h"
#include "ops/model_impl.h"

namespace nvfp4 {

class ExpertStore {
 public:
  // path: the file (created if absent); read_ahead: prefetch() reads (else it does nothing).
  // Throws nvfp4::Error when the file cannot be opened for writing.
  ExpertStore(std::string path, bool read_ahead);
  ~ExpertStore();
  ExpertStore(const ExpertStore&) = delete;
  ExpertStore& operator=(const ExpertStore&) = delete;

  // At load, layer by layer: each expert's NVFP4 streams go to the file (unless it holds them) and
  // are released; the experts must stay where they are (their Linear is reattached to slots).
  void add_layer(int64_t layer, std::vector<Expert>& experts);
  // After the last layer: the table and a clean header written, budget bytes of slots allocated.
  // Throws nvfp4::Error (with the figures) when the budget holds fewer than min_slots experts.
  void finish(int64_t budget, int64_t min_slots, const std::string& source);
  int64_t slots() const { return n_slots_; }
  // Slots for another budget (`--experts-budget auto` once the caller knows its KV caches), between
  // steps: what is resident goes. The slots' memory is taken at the first step after.
  void set_budget(int64_t budget);

  // Experts ids of `layer` (distinct) pinned, and the missing ones' reads queued for the store's
  // I/O threads (kReaders of them, so reads overlap each other and the caller's compute); wait()
  // returns once they are resident (throwing nvfp4::Error when one read back other bytes; that
  // one is left out of its slot). Every begin is matched by one release of the same ids (after
  // wait, or instead of it), the experts pinned at once at most slots().
  // Returns the reads it queued; queued (when given): 1 for each of ids whose read it queued.
  int64_t begin(int64_t layer, std::span<const int32_t> ids, std::vector<uint8_t>* queued = nullptr);
  void wait(int64_t layer, std::span<const int32_t> ids);
  void release(int64_t layer, std::span<const int32_t> ids);
  // Reads of the experts ids of `layer` queued ahead of the step that will ask for them (the next
  // MoE layer's likely experts: moe_ffn.cpp), into slots no step holds; nothing pinned. A later
  // begin finds them resident or on their way.
  void prefetch(int64_t layer, std::span<const int32_t> ids);
  static constexpr int kReaders = 8;
  ExpertStats stats() const;

 private:
  struct Entry {
    Linear* lin[3] = {};      // gate, up, down (null where the expert has none)
    int64_t part[3] = {};     // offset of each stream within the expert's bytes
    int64_t offset = 0, size = 0;
    uint64_t hash = 0;
    int64_t slot = -1;
    enum State { absent, loading, read, ready, failed } state = absent;  // read: in its slot, not yet attached
    uint32_t freq = 0, pins = 0;
    bool ahead = false;  // read ahead and not yet asked for
    int pieces = 0;      // reads of it still running
    bool bad = false;    // a piece came back short
    uint64_t last = 0;
  };
  Entry& entry(int64_t layer, int32_t id);
  void attach(Entry& e, const uint8_t* base);
  void write_header(bool clean);
  void read_loop();
  int64_t victim() const;                  // a free slot, else the least used unpinned one; -1: none
  void load_into(Entry& e, int64_t slot);  // e's read queued into slot (its owner evicted)
  void size_slots(int64_t budget);  // n_slots_ and owner_ for budget (or nvfp4::Error below min_slots_)

  std::string path_;
  int fd_ = -1, direct_fd_ = -1;  // direct_fd_: O_DIRECT, for the reads of steps
  int64_t min_slots_ = 1;
  std::string source_;
  int64_t n_slots_ = 0, slot_bytes_ = 0, end_ = 0;
  std::vector<std::vector<Entry>> layers_;  // [layer][expert]; empty for a layer without experts
  std::vector<Entry> old_;                  // the file's clean table at open (reuse), by order
  size_t order_ = 0;                        // experts added so far
  bool dirty_ = false;
  HugeVector<uint8_t> slab_;
  std::vector<Entry*> owner_;               // each slot's expert, or null
  mutable std::mutex mu_;
  std::condition_variable work_, done_;  // jobs queued (or stop); reads finished
  struct Job {  // a piece of an expert's read: bytes [at, at + len) of it
    Entry* e;
    int64_t at, len;
  };
  std::deque<Job> jobs_;
  std::vector<std::thread> readers_;
  bool stop_ = false;
  int64_t loading_ = 0;  // entries whose reads are queued or running
  bool read_ahead_ = false;  // LoadOptions::experts_read_ahead
  uint64_t tick_ = 0, since_age_ = 0;
  ExpertStats st_;
};

struct Loader;

// At load (model_load.cpp): whether the experts go to a store, and the store, made when the first
// MoE layer shows how big an expert is (a budget that holds every expert keeps them resident).
struct ExpertPlan {
  bool offload = false;  // asked for (a budget, a MoE model, not Model::check)
  int64_t asked = -1;    // LoadOptions::experts_budget (kExpertsBudgetAuto: what memory allows)
  std::string file;
  bool read_ahead = false;
  std::shared_ptr<ExpertStore> store;
  std::string note;      // for Model::describe
  int64_t budget() const;  // bytes: asked, or auto's figure now
};
ExpertPlan plan_experts(Loader& L, const ModelConfig& c, bool check_only);
// After layer `layer` is in place: its experts written to the store and released.
void offload_experts(ExpertPlan& p, Loader& L, const ModelConfig& c, int64_t layer, std::vector<Expert>& experts);

// "70.0 KiB", "4.5 MiB", "6.00 GiB": the figures in the store's lines and refusals.
std::string bytes_text(int64_t b);

// A fast 64-bit hash of a stream (four multiply-xorshift lanes over 8-byte words, the tail
// byte by byte): the check of every read against what the load packed.
uint64_t expert_hash(const uint8_t* p, size_t n);

}  // namespace nvfp4
