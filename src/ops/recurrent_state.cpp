// The recurrent kind of sequence state (include/nvfp4/sequence_state.h), and the kinds' names.
// In ops, below runtime: the blocks (src/models) fold tokens into it.
#include <algorithm>

#include "nvfp4/error.h"
#include "nvfp4/sequence_state.h"

namespace nvfp4 {

const char* state_kind_name(StateKind k) {
  switch (k) {
    case StateKind::full_attention: return "full attention (KV cache)";
    case StateKind::recurrent: return "recurrent";
    case StateKind::sliding_window: return "sliding window (a ring of KV positions)";
    case StateKind::shared_kv: return "shared KV (reads an earlier layer's keys and values)";
    case StateKind::none: return "none (a layer without a token mixer)";
  }
  return "?";
}

RecurrentState::RecurrentState(int64_t floats, int max_snapshots) {
  if (floats < 1 || max_snapshots < 0)
    throw Error("", "recurrent state", "a recurrent state's size and snapshots", ">= 1 floats, >= 0 snapshots",
                std::to_string(floats) + " floats, " + std::to_string(max_snapshots) + " snapshots");
  state_.assign(static_cast<size_t>(floats), 0.0f);
  snap_pos_.assign(static_cast<size_t>(max_snapshots), -1);
}

std::string RecurrentState::shape() const {
  return std::to_string(state_.size()) + " floats, " + std::to_string(snap_pos_.size()) + " snapshots";
}

std::vector<int64_t> RecurrentState::snapshots() const {
  std::vector<int64_t> p;
  for (const int64_t s : snap_pos_)
    if (s >= 0) p.push_back(s);
  std::sort(p.begin(), p.end());
  return p;
}

float* RecurrentState::slot_for(int64_t n) {
  if (n <= armed_from_ || n > armed_to_) return nullptr;
  return snaps_[static_cast<size_t>(n - armed_from_ - 1)].data();
}

void RecurrentState::copied(int64_t n) {
  if (n <= armed_from_ || n > armed_to_) return;
  snap_pos_[static_cast<size_t>(n - armed_from_ - 1)] = n;
}

void RecurrentState::folded(int64_t n) {
  if (float* slot = slot_for(n)) std::copy(state_.begin(), state_.end(), slot);
  copied(n);
}

int64_t RecurrentState::keepable(int64_t n, int64_t held) const {
  if (n >= held) return held;
  int64_t best = 0;
  for (const int64_t s : snap_pos_)
    if (s >= 0 && s <= n && s <= held) best = std::max(best, s);
  return best;
}

void RecurrentState::forget_after(int64_t n) {
  for (int64_t& s : snap_pos_)
    if (s > n) s = -1;
  armed_from_ = 0;
  armed_to_ = -1;
}

void RecurrentState::go_back(int64_t n, int64_t held) {
  if (n < 0 || n > held || keepable(n, held) != n) {
    std::string held_at = "0, " + std::to_string(held);
    for (const int64_t s : snapshots()) held_at += ", " + std::to_string(s);
    throw Error("", "recurrent state", "a recurrent layer goes back only to 0 positions, all it holds, or a snapshot", held_at,
                std::to_string(n));
  }
  if (n == held) {
    forget_after(n);
    return;
  }
  if (n == 0) {
    std::fill(state_.begin(), state_.end(), 0.0f);
  } else {
    // The snapshot becomes the state; its slot, now holding the state given up, is emptied.
    const size_t slot = static_cast<size_t>(std::find(snap_pos_.begin(), snap_pos_.end(), n) - snap_pos_.begin());
    state_.swap(snaps_[slot]);
    snap_pos_[slot] = -1;
  }
  forget_after(n);
}

void RecurrentState::snapshot(int64_t held, int64_t k) {
  if (k < 0 || k > max_snapshots())
    throw Error("", "recurrent state", "snapshots a recurrent layer keeps for one verify step (its drafts)",
                "at most " + std::to_string(max_snapshots()), std::to_string(k));
  // The slots' memory is taken on the first verify step (a sequence that never speculates
  // holds only its state).
  if (k > 0 && snaps_.empty()) snaps_.assign(snap_pos_.size(), std::vector<float>(state_.size(), 0.0f));
  // The slots are reused: one of a position the step is about to pass is taken again.
  for (int64_t& s : snap_pos_)
    if (s > held) s = -1;
  // The slots the step fills are slot j <- position held + 1 + j: older snapshots there go.
  for (int64_t j = 0; j < k; ++j) snap_pos_[static_cast<size_t>(j)] = -1;
  armed_from_ = held;
  armed_to_ = held + k;
}

void RecurrentState::copy_prefix(const LayerState& from, int64_t n, int64_t from_held) {
  const auto* f = dynamic_cast<const RecurrentState*>(&from);
  if (!f || f->state_.size() != state_.size())
    throw Error("", "recurrent state", "copy a recurrent layer's state from a recurrent layer of the same size", shape(),
                std::string(state_kind_name(from.kind())) + ", " + from.shape());
  if (n < 0 || n > from_held || f->keepable(n, from_held) != n)
    throw Error("", "recurrent state", "copy a recurrent layer's prefix: 0 positions, all it holds, or a snapshot",
                "one of those of " + std::to_string(from_held), std::to_string(n));
  if (n == 0) std::fill(state_.begin(), state_.end(), 0.0f);
  else if (n == from_held) state_ = f->state_;
  else {
    const size_t slot = static_cast<size_t>(std::find(f->snap_pos_.begin(), f->snap_pos_.end(), n) - f->snap_pos_.begin());
    std::copy_n(f->snap(slot), state_.size(), state_.begin());
  }
  std::fill(snap_pos_.begin(), snap_pos_.end(), -1);
  armed_from_ = 0;
  armed_to_ = -1;
}

void StatelessState::copy_prefix(const LayerState& from, int64_t n, int64_t from_held) {
  if (from.kind() != StateKind::none || n < 0 || n > from_held)
    throw Error("", "layer state", "copy a stateless layer's prefix from a stateless layer", "none, 0 .. " + std::to_string(from_held),
                std::string(state_kind_name(from.kind())) + ", " + std::to_string(n));
}

}  // namespace nvfp4
