// Loading with an expert store (expert_store.h): the plan, the budget (auto: what memory allows),
// and each MoE layer's experts handed to the store as it is loaded, so that the packed experts
// never sit in memory all at once.
#include <algorithm>
#include <filesystem>

#include "models/expert_store.h"
#include "models/loader.h"
#include "nvfp4/error.h"
#include "nvfp4/memory_info.h"

namespace nvfp4 {

namespace {

// The bytes one expert takes in the file and a slot (expert_store.cpp's layout).
int64_t expert_bytes(const Expert& e) {
  int64_t size = 0;
  for (const MatMul* mm : {&e.gate, &e.up, &e.down})
    if (mm->n_out > 0 && mm->nvfp4) size = (size + 63) / 64 * 64 + static_cast<int64_t>(mm->lin.stream().size());
  return (size + 4095) / 4096 * 4096;
}
}  // namespace

int64_t ExpertPlan::budget() const {
  if (asked != kExpertsBudgetAuto) return asked;
  const int64_t a = memory_info().available();
  if (a < 0) return 0;
  return std::max<int64_t>(a - (int64_t{256} << 20) - a / 20, 0);
}

ExpertPlan plan_experts(Loader& L, const ModelConfig& c, bool check_only) {
  ExpertPlan p;
  p.asked = L.opt.experts_budget;
  p.offload = !check_only && c.n_expert > 0 && (p.asked >= 0 || p.asked == kExpertsBudgetAuto);
  if (!p.offload) return p;
  p.file = L.opt.experts_file;
  p.read_ahead = L.opt.experts_read_ahead;
  if (p.file.empty()) {
    std::error_code ec;
    p.file = std::filesystem::is_directory(L.path, ec) ? L.path + "/nvfp4.experts" : L.path + ".experts";
  }
  L.experts_own = true;
  return p;
}

void offload_experts(ExpertPlan& p, Loader& L, const ModelConfig& c, int64_t layer, std::vector<Expert>& experts) {
  for (const Expert& e : experts)
    for (const MatMul* mm : {&e.gate, &e.up, &e.down})
      if (mm->n_out > 0 && !mm->nvfp4)
        throw Error("", mm->name + ".weight", "experts read from disk (--experts-budget) are NVFP4", "NVFP4",
                    "another storage (run without --experts-budget)");
  if (!p.store) {
    const int64_t moe_layers = c.pattern.empty() ? c.n_layer : std::count(c.pattern.begin(), c.pattern.end(), 'E');
    const int64_t all = expert_bytes(experts[0]) * c.n_expert * moe_layers, budget = p.budget();
    if (budget >= all) {
      p.offload = false;
      L.experts_own = false;  // the rest go where the dense weights go
      p.note = "experts: all " + std::to_string(c.n_expert * moe_layers) + " resident (" + bytes_text(all) +
               "; the experts budget of " + bytes_text(budget) + " holds them)";
      return;
    }
    p.store = std::make_shared<ExpertStore>(p.file, p.read_ahead);
  }
  p.store->add_layer(layer, experts);
  // The layer's streams were carved from an arena of their own: with them written and released, it
  // goes (its pages unmapped), and the next layer's experts get a fresh one. (Freed to the heap,
  // streams of 1-2 MiB left holes that the next layer's aligned blocks did not fit: the heap grew
  // by a layer of experts per layer.)
  L.expert_arena = std::make_shared<HugeArena>();
}

}  // namespace nvfp4
