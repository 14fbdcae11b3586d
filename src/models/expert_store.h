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
// to. A step's MoE block asks for the experts it routed to (acquire): those resident are hits,
// the others are read into free or evicted slots (one pread each, on the pool's threads) and
// pinned until release. The victim is the unpinned slot whose expert was used least often (counts
// halved as uses pass 8 x the slots: frequency with aging), the least recently on a tie, so a
// prompt that touches every expert once cannot push out the ones decode keeps using.
// The kernels read the same bytes as from a resident stream: results do not depend on the budget.
#pragma once
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "nvfp4/huge_pages.h"
#include "nvfp4/model.h"
#include "nvfp4/thread_pool.h"
#include "ops/model_impl.h"

namespace nvfp4 {

class ExpertStore {
 public:
  // path: the file (created if absent). Throws nvfp4::Error when it cannot be opened for writing.
  explicit ExpertStore(std::string path);
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

  // Experts ids of `layer` resident and pinned on return (at most slots() distinct ones); the
  // missing ones read on the pool's threads. Every acquire is matched by a release of the same ids.
  void acquire(int64_t layer, std::span<const int32_t> ids, ThreadPool& pool);
  void release(int64_t layer, std::span<const int32_t> ids);
  ExpertStats stats() const;

 private:
  struct Entry {
    Linear* lin[3] = {};      // gate, up, down (null where the expert has none)
    int64_t part[3] = {};     // offset of each stream within the expert's bytes
    int64_t offset = 0, size = 0;
    uint64_t hash = 0;
    int64_t slot = -1;
    uint32_t freq = 0, pins = 0;
    uint64_t last = 0;
  };
  Entry& entry(int64_t layer, int32_t id);
  void attach(Entry& e, const uint8_t* base);
  void write_header(bool clean);

  std::string path_;
  int fd_ = -1;
  int64_t n_slots_ = 0, slot_bytes_ = 0, end_ = 0;
  std::vector<std::vector<Entry>> layers_;  // [layer][expert]; empty for a layer without experts
  std::vector<Entry> old_;                  // the file's clean table at open (reuse), by order
  size_t order_ = 0;                        // experts added so far
  bool dirty_ = false;
  HugeVector<uint8_t> slab_;
  std::vector<Entry*> owner_;               // each slot's expert, or null
  mutable std::mutex mu_;
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
  std::shared_ptr<ExpertStore> store;
  std::string note;      // for Model::describe
  int64_t budget() const;  // bytes: asked, or auto's figure now
};
ExpertPlan plan_experts(Loader& L, const ModelConfig& c, bool check_only);
// After layer `layer` is in place: its experts written to the store and released.
void offload_experts(ExpertPlan& p, const ModelConfig& c, int64_t layer, std::vector<Expert>& experts);

// "70.0 KiB", "4.5 MiB", "6.00 GiB": the figures in the store's lines and refusals.
std::string bytes_text(int64_t b);

// A fast 64-bit hash of a stream (four multiply-xorshift lanes over 8-byte words, the tail
// byte by byte): the check of every read against what the load packed.
uint64_t expert_hash(const uint8_t* p, size_t n);

}  // namespace nvfp4
