// The recurrent layers' token mixers over a step (Gated DeltaNet, Mamba-2; builders.h).
#include "models/builders.h"

namespace nvfp4 {

void fold_groups(StepRun& s, int64_t layer, int64_t groups, int64_t scratch_floats, const GroupFold& fold,
                 const GroupCopy& copy_part) {
  Workspace::Impl& w = s.ws;
  // Each sequence's state for this layer (forward() checked its kind and size).
  std::vector<RecurrentState*> st;
  for (const auto& q : w.seqs) st.push_back(static_cast<RecurrentState*>(q.seq->impl().layers[static_cast<size_t>(layer)].get()));
  const auto run_items = [&](int64_t i0, int64_t i1) {
    std::vector<float> scratch(static_cast<size_t>(scratch_floats));
    for (int64_t it = i0; it < i1; ++it) {
      const size_t si = static_cast<size_t>(it / groups);
      const int64_t g = it % groups;
      float* state = st[si]->data();
      for (const int64_t t : w.seqs[si].tok) {
        fold(state, g, t, scratch.data());
        if (float* slot = st[si]->slot_for(w.step.tok[static_cast<size_t>(t)].pos + 1)) copy_part(state, slot, g);
      }
    }
  };
  const int64_t items = static_cast<int64_t>(w.seqs.size()) * groups;
  if (items < 2) run_items(0, items);
  else s.parallel(items, run_items);
  for (size_t si = 0; si < w.seqs.size(); ++si)
    for (const int64_t t : w.seqs[si].tok) st[si]->copied(w.step.tok[static_cast<size_t>(t)].pos + 1);
}

}  // namespace nvfp4
