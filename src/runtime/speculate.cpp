#include "nvfp4/speculate.h"

#include <algorithm>

namespace nvfp4 {

void DraftLength::verified(size_t drafted, size_t kept, int max) {
  if (drafted == 0) return;
  if (kept == drafted) k_ = std::min(max, 2 * k_);
  else if (kept == 0) k_ = std::max(1, k_ / 2);
}

int64_t draft_limit(int64_t k, const Sequence& seq, int64_t remaining, int64_t budget) {
  return std::min<int64_t>({k, budget, seq.n_ctx() - seq.pos() - 1, remaining - 1, seq.max_draft()});
}

void begin_verify(Sequence& seq, size_t n_draft) { seq.snapshot(static_cast<int64_t>(n_draft)); }

Verdict verify_drafts(std::span<const int32_t> draft, const std::function<Pick(size_t)>& pick) {
  Verdict v;
  for (size_t i = 0; i <= draft.size(); ++i) {
    const Pick p = pick(i);
    const bool match = p.emitted && i < draft.size() && p.token == draft[i];
    if (match) ++v.accepted;
    if (!p.more) {
      v.ended = true;
      break;
    }
    if (!match) {
      v.next = p.token;
      break;
    }
    ++v.kept;
  }
  return v;
}

void end_verify(Sequence& seq, int64_t p0, size_t kept) { seq.truncate(p0 + 1 + static_cast<int64_t>(kept)); }

int64_t reusable_prefix(const Sequence& seq, std::span<const int32_t> held, std::span<const int32_t> want) {
  if (want.empty()) return 0;
  const size_t c = static_cast<size_t>(std::mismatch(held.begin(), held.end(), want.begin(), want.end()).first - held.begin());
  return seq.keepable(static_cast<int64_t>(std::min({c, want.size() - 1, static_cast<size_t>(seq.pos())})));
}

int64_t keep_reusable_prefix(Sequence& seq, std::vector<int32_t>& held, std::span<const int32_t> want) {
  const int64_t c = reusable_prefix(seq, held, want);
  seq.truncate(c);
  held.resize(static_cast<size_t>(c));
  return c;
}

}  // namespace nvfp4
