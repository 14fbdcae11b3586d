// What one layer of a sequence keeps between steps, behind one interface (as llama.cpp's
// llama_memory_i with its KV, iSWA, recurrent and hybrid memories, and vLLM's KVCacheSpec with
// FullAttentionSpec, SlidingWindowSpec and MambaSpec). A Sequence (model.h) holds one LayerState
// per layer, of the kind the model's layer asks for; the prompt cache, copy_prefix, the server's
// slots and speculative rollback (speculate.h) reach the states only through Sequence, which asks
// each layer what it can do. docs/DESIGN.md, "Sequence state", shows the kinds side by side.
//
// A state does not count positions: its Sequence does (pos()) and passes what it holds.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace nvfp4 {

enum class StateKind {
  // Keys and values of every position (the KV cache, F32 or F16): any prefix can be kept.
  full_attention,
  // A fixed-size state folded over every token (linear attention, Mamba): what it held before the
  // last token is gone, so it goes back only to 0 positions or to a snapshot it kept.
  recurrent,
  // The keys and values of a sliding-window layer's last `ring` positions (window - 1 + a slack
  // of kSlidingSlack, model.h), position p in slot p % ring: it goes back only as far as the
  // slack (the window before the new end is still held) or to 0 (runtime/kv_state.h).
  sliding_window,
  // A layer that reads another layer's keys and values (Gemma 4's KV sharing,
  // num_kv_shared_layers) and keeps nothing of its own: what its source can do, it can.
  shared_kv,
  // Nothing (a layer without a token mixer: Nemotron-H's MLP and MoE layers): any prefix.
  none,
  // Room for, not built: latent (MLA's compressed KV: as full_attention).
};
const char* state_kind_name(StateKind k);

// What a layer asks its sequence to keep (as vLLM's KVCacheSpec per layer): the kind and its
// sizes. A family says it per layer (sequence.cpp's layer_state_spec: every layer of today's
// families is full attention); Sequence builds the states from it.
struct StateSpec {
  StateKind kind = StateKind::full_attention;
  int64_t n_kv = 0, head_dim = 0;  // full_attention: KV heads and their size (the type and
                                   // positions are the sequence's)
  int64_t window = 0;              // sliding_window: the positions attention reads (the last
                                   // `window`, its own included); layers of one kind, shape and
                                   // window share a cache
  int64_t source = -1;             // shared_kv: the (earlier) layer whose keys and values it reads
  int64_t floats = 0;              // recurrent: the state's size
  int max_snapshots = 0;           // recurrent: the longest draft a verify step may carry
};

// What a kind can do (vLLM keeps this in the spec's type; llama.cpp answers seq_rm with false).
struct StateCaps {
  bool truncate = false;     // go back to any prefix of what it holds
  bool snapshot = false;     // keep its state at chosen positions, and restore one of them
  bool copy_prefix = false;  // take any prefix of another sequence's state (else only one that
                             // the other could go back to: 0, all of it, or a snapshot's)
};

class LayerState {
 public:
  virtual ~LayerState() = default;
  virtual StateKind kind() const = 0;
  virtual StateCaps caps() const = 0;
  virtual size_t bytes() const = 0;          // what it holds for the sequence, snapshots included
  virtual std::string shape() const = 0;     // for messages: "3 KV heads of 64, 256 positions, F16"

  // The longest prefix of at most n positions (n <= held) this state can go back to.
  virtual int64_t keepable(int64_t n, int64_t held) const = 0;
  // Goes back to n positions: a kind that can truncate, any n <= held; one that keeps snapshots,
  // n = keepable(n, held) (0, held, or a snapshot's position; the snapshot becomes the state, so
  // its slot is free again: n is then all the layer holds). Anything else throws nvfp4::Error.
  virtual void go_back(int64_t n, int64_t held) = 0;
  // Called before a step that appends up to 1 + k positions to the `held` ones, any prefix of
  // which the caller may keep (a speculative verify step of k drafts). A kind that can truncate
  // has nothing to do; a recurrent one keeps its state after each of positions held + 1 ..
  // held + k as the step passes them (vLLM's num_speculative_blocks); more than it was made for
  // throws nvfp4::Error.
  virtual void snapshot(int64_t held, int64_t k) = 0;
  // Becomes the first n positions of `from` (which holds from_held): the same kind and shape,
  // and n = from.keepable(n, from_held), else nvfp4::Error.
  virtual void copy_prefix(const LayerState& from, int64_t n, int64_t from_held) = 0;
};

// The recurrent kind: `floats` values per sequence (a layer's convolution window and its heads'
// matrices, laid out as the layer likes), zero before the first token, and room for
// `max_snapshots` snapshots (the longest draft a verify step may carry). The layer folds each
// token into data() and then calls folded(n) with the positions it now holds, so that the
// snapshots snapshot() asked for are taken.
class RecurrentState final : public LayerState {
 public:
  RecurrentState(int64_t floats, int max_snapshots);

  float* data() { return state_.data(); }
  const float* data() const { return state_.data(); }
  int64_t size() const { return static_cast<int64_t>(state_.size()); }
  int max_snapshots() const { return static_cast<int>(snap_pos_.size()); }
  // data() now holds the state after n positions.
  void folded(int64_t n);
  // The snapshot slot (size() floats) that position n goes to, when snapshot() asked for n; else
  // null. A layer that folds its state in independent parts, each on its own thread, copies each
  // part there itself as it passes n, then calls copied(n) (folded(n) = the whole copy + copied).
  float* slot_for(int64_t n);
  void copied(int64_t n);
  // Positions with a snapshot, ascending.
  std::vector<int64_t> snapshots() const;

  StateKind kind() const override { return StateKind::recurrent; }
  StateCaps caps() const override { return {false, true, false}; }
  size_t bytes() const override { return (state_.size() * (1 + snaps_.size())) * sizeof(float) + snap_pos_.size() * 8; }
  std::string shape() const override;
  int64_t keepable(int64_t n, int64_t held) const override;
  void go_back(int64_t n, int64_t held) override;
  void snapshot(int64_t held, int64_t k) override;
  void copy_prefix(const LayerState& from, int64_t n, int64_t from_held) override;

 private:
  const float* snap(size_t slot) const { return snaps_[slot].data(); }
  void forget_after(int64_t n);  // drops snapshots of positions past n, and any not yet taken

  std::vector<float> state_;
  // [max_snapshots][floats], allocated by the first snapshot(). A slot of its own each: going back
  // to a snapshot swaps it with state_ (no copy of the state).
  std::vector<std::vector<float>> snaps_;
  std::vector<int64_t> snap_pos_; // each slot's position; -1: empty
  int64_t armed_from_ = 0, armed_to_ = -1;  // snapshot() asked for positions (armed_from_, armed_to_]
};

// The kind of a layer that keeps nothing (StateKind::none): any prefix, no bytes.
class StatelessState final : public LayerState {
 public:
  StateKind kind() const override { return StateKind::none; }
  StateCaps caps() const override { return {true, false, true}; }
  size_t bytes() const override { return 0; }
  std::string shape() const override { return "no state"; }
  int64_t keepable(int64_t n, int64_t held) const override { return n < held ? n : held; }
  void go_back(int64_t, int64_t) override {}
  void snapshot(int64_t, int64_t) override {}
  void copy_prefix(const LayerState& from, int64_t n, int64_t from_held) override;
};

}  // namespace nvfp4
