#include "server/spec_slot.h"

#include <algorithm>
#include <cstdio>

#include "nvfp4/error.h"
#include "nvfp4/kernels_ref.h"

namespace nvfp4::server {

std::string SpecOptions::describe() const {
  if (!on()) return "off";
  char p_min[32];
  std::snprintf(p_min, sizeof p_min, "%g", static_cast<double>(draft_p_min));
  const std::string what =
      mtp ? "the checkpoint's MTP module " + mtp_name + " (greedy, one MTP sequence per slot, draft-p-min " + p_min +
                (draft_vocab > 0 ? ", draft vocabulary " + std::to_string(draft_vocab) : std::string()) + ")"
      : dflash ? dflash->describe() + " (greedy, one context per slot, draft-p-min " + p_min + ")"
      : assistant ? assistant->describe() + " (greedy, every slot's draft step in one pass, draft-p-min " + p_min + ")"
      : draft ? "draft model " + draft_name + " (" + std::string(mode_name(draft->mode())) +
                  ", greedy, one draft sequence per slot, draft-p-min " + p_min + ")"
            : "prompt lookup (n-gram " + std::to_string(lookup.n_min) + ".." + std::to_string(lookup.n_max) + ")";
  char backoff[160];
  if (min_speedup > 0)
    std::snprintf(backoff, sizeof backoff, "; backs off below an estimated %gx speed-up over windows of %d requests",
                  min_speedup, window);
  else
    std::snprintf(backoff, sizeof backoff, "; never backs off");
  return what + ", drafts of " + std::to_string(std::max(1, draft_min)) + ".." + std::to_string(draft_max) +
         " tokens verified in the slot's step" + (allow_drift ? " (drift allowed)" : " (bit-identical to plain decoding)") +
         backoff;
}

void check_spec_mode(const SpecOptions& o, Mode mode) {
  if (!o.on() || o.allow_drift || mode == Mode::a16q8 || mode == Mode::w4a4) return;
  throw Error("", "--spec",
              "--spec: speculative decoding in precision " + std::string(mode_name(mode)) +
                  ": its logits may change with the step's composition, so output could drift from plain decoding",
              "--precision a16q8 or w4a4 (bit-identical), or --spec-allow-drift", std::string(mode_name(mode)));
}

void SpecSlot::lookup(const SpecOptions& o, std::span<const int32_t> history, int64_t n) {
  set(o, n > 0 ? o.lookup.propose(history, static_cast<int>(n)) : std::vector<int32_t>{});
}

void SpecSlot::set(const SpecOptions& o, std::vector<int32_t> draft) {
  draft_ = std::move(draft);
  if (static_cast<int>(draft_.size()) < o.draft_min) draft_.clear();
}

void SpecSlot::verified(const SpecOptions& o, size_t kept) {
  k_.verified(draft_.size(), kept, o.draft_max);
  draft_.clear();
}

}  // namespace nvfp4::server
