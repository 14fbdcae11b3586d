// Sequence state kinds (include/nvfp4/sequence_state.h) with a test-only recurrent "model": two
// layers, each a fixed-size state folded over every token (integer arithmetic in float, so every
// result is exact), the second fed by the first, and logits that depend on every earlier token.
// Speculative rollback (begin_verify / verify_drafts / end_verify, speculate.h, the code `run` and
// `serve` use) and prompt-cache reuse (reusable_prefix, copy_prefix) go through Sequence only; the
// tokens and the final states are == those of a plain run. The full-attention kind keeps what it
// always did (the logit hashes hold its bits; test_step_determinism its truncate and copy_prefix).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "nvfp4/checkpoint.h"
#include "nvfp4/error.h"
#include "nvfp4/speculate.h"
#include "ops/step_impl.h"

using namespace nvfp4;

namespace {

constexpr int64_t kState = 6, kVocab = 13;
constexpr int kMaxDraft = 4;

Sequence toy_sequence(int64_t n_ctx = 128, int snapshots = kMaxDraft) {
  StateSpec r;
  r.kind = StateKind::recurrent;
  r.floats = kState;
  r.max_snapshots = snapshots;
  const std::vector<StateSpec> layers = {r, r};
  return Sequence(layers, n_ctx, KvType::f32, "toy");
}

RecurrentState& rec(Sequence& s, int l) { return dynamic_cast<RecurrentState&>(s.layer(l)); }

// Feeds tokens; returns the logits after each ([n][kVocab]).
std::vector<float> toy_forward(Sequence& seq, std::span<const int32_t> toks) {
  std::vector<float> out;
  for (const int32_t t : toks) {
    if (seq.pos() >= seq.n_ctx()) throw Error("toy", "", "context full", "", "");
    const int64_t n = seq.pos() + 1;
    float in = static_cast<float>(t + 1);
    for (int l = 0; l < 2; ++l) {
      RecurrentState& r = rec(seq, l);
      float* h = r.data();
      for (int64_t i = 0; i < kState; ++i) h[i] = std::fmod(h[i] * static_cast<float>(3 + 2 * i + l) + in * static_cast<float>(i + 1), 1009.0f);
      r.folded(n);
      in = h[0];
    }
    seq.impl().pos = n;
    const float* h = rec(seq, 1).data();
    for (int64_t v = 0; v < kVocab; ++v) {
      float s = 0;
      for (int64_t i = 0; i < kState; ++i) s += std::fmod(h[i] * static_cast<float>(v + 1 + i), 101.0f);
      out.push_back(s);
    }
  }
  return out;
}

int32_t pick(const float* row) { return static_cast<int32_t>(std::max_element(row, row + kVocab) - row); }

std::vector<int32_t> plain(std::span<const int32_t> prompt, int n, Sequence* seq_out = nullptr) {
  Sequence seq = toy_sequence();
  std::vector<float> lg = toy_forward(seq, prompt);
  std::vector<int32_t> out = {pick(lg.data() + lg.size() - kVocab)};
  while (static_cast<int>(out.size()) < n) {
    lg = toy_forward(seq, std::span<const int32_t>(&out.back(), 1));
    out.push_back(pick(lg.data()));
  }
  if (seq_out) *seq_out = std::move(seq);
  return out;
}

bool same_state(Sequence& a, Sequence& b) {
  if (a.pos() != b.pos()) return false;
  for (int l = 0; l < 2; ++l)
    if (std::memcmp(rec(a, l).data(), rec(b, l).data(), kState * sizeof(float)) != 0) return false;
  return true;
}

// Speculative decoding of the toy through speculate.h: drafts are the plain continuation with
// token `wrong` of each draft changed (none when it is past the draft), so every accepted prefix
// length occurs. seq holds `prompt` fed already; `first` is the pick after it.
std::vector<int32_t> speculative(Sequence& seq, std::vector<int32_t> history, int32_t first, int n,
                                 const std::vector<int32_t>& truth, int64_t* drafted_out = nullptr) {
  std::vector<int32_t> out = {first};
  history.push_back(first);
  DraftLength k;
  k.reset(kMaxDraft);
  int64_t step = 0, drafted = 0;
  while (static_cast<int>(out.size()) < n) {
    const int64_t limit = draft_limit(k.k(), seq, n - static_cast<int64_t>(out.size()), 64);
    std::vector<int32_t> draft;
    for (int64_t i = 0; i < limit; ++i) {
      const size_t at = out.size() + static_cast<size_t>(i);
      const int32_t t = truth[at];
      draft.push_back(i == step % (kMaxDraft + 1) ? (t + 1) % kVocab : t);
    }
    ++step;
    drafted += static_cast<int64_t>(draft.size());
    const int64_t p0 = seq.pos();
    begin_verify(seq, draft.size());
    std::vector<int32_t> toks = {history.back()};
    toks.insert(toks.end(), draft.begin(), draft.end());
    const std::vector<float> rows = toy_forward(seq, toks);
    const Verdict v = verify_drafts(draft, [&](size_t i) {
      const int32_t t = pick(rows.data() + i * kVocab);
      out.push_back(t);
      history.push_back(t);
      return Pick{t, true, static_cast<int>(out.size()) < n};
    });
    end_verify(seq, p0, v.kept);
    k.verified(draft.size(), v.kept, kMaxDraft);
    EXPECT_EQ(seq.pos(), p0 + 1 + static_cast<int64_t>(v.kept));
    if (v.ended) break;
  }
  if (drafted_out) *drafted_out = drafted;
  return out;
}

const std::vector<int32_t> kPrompt = {3, 1, 4, 1, 5, 9, 2, 6};

}  // namespace

TEST(SequenceState, RecurrentKindSaysWhatItCanDo) {
  Sequence seq = toy_sequence();
  EXPECT_EQ(seq.layer(0).kind(), StateKind::recurrent);
  EXPECT_FALSE(seq.layer(0).caps().truncate);
  EXPECT_TRUE(seq.layer(0).caps().snapshot);
  EXPECT_FALSE(seq.can_truncate());
  // The snapshots' memory is taken on the first verify step.
  EXPECT_EQ(seq.bytes(), 2 * (kState * sizeof(float) + kMaxDraft * 8));
  toy_forward(seq, kPrompt);
  // No snapshot: only 0 positions or all of them.
  EXPECT_EQ(seq.keepable(5), 0);
  EXPECT_EQ(seq.keepable(8), 8);
  EXPECT_THROW(seq.truncate(5), Error);
  seq.snapshot(3);
  EXPECT_EQ(seq.bytes(), 2 * ((kState + kState * kMaxDraft) * sizeof(float) + kMaxDraft * 8));
  toy_forward(seq, std::vector<int32_t>{7, 7, 7, 7});  // positions 9..12: snapshots at 9, 10, 11
  EXPECT_EQ(rec(seq, 0).snapshots(), (std::vector<int64_t>{9, 10, 11}));
  EXPECT_EQ(seq.keepable(10), 10);
  EXPECT_EQ(seq.keepable(8), 0);  // before the snapshots: nothing kept of it
  EXPECT_THROW(seq.snapshot(kMaxDraft + 1), Error);  // more than it was made for
  // Going back to 10 is the state a plain run of those 10 tokens has.
  seq.truncate(10);
  Sequence ref = toy_sequence();
  toy_forward(ref, kPrompt);
  toy_forward(ref, std::vector<int32_t>{7, 7});
  EXPECT_TRUE(same_state(seq, ref));
  // 11 is gone with what followed; 10's slot became the state (swapped, not copied): 10 is all it
  // holds now, keepable as such.
  EXPECT_EQ(rec(seq, 0).snapshots(), (std::vector<int64_t>{9}));
  EXPECT_EQ(seq.keepable(10), 10);
  EXPECT_EQ(seq.keepable(9), 9);
  seq.truncate(0);
  EXPECT_EQ(seq.pos(), 0);
  EXPECT_TRUE(rec(seq, 1).snapshots().empty());
  for (int64_t i = 0; i < kState; ++i) EXPECT_EQ(rec(seq, 1).data()[i], 0.0f);
}

TEST(SequenceState, SpeculativeRollbackThroughTheInterfaceEqualsPlainRun) {
  constexpr int n = 40;
  Sequence plain_seq = toy_sequence();
  const std::vector<int32_t> truth = plain(kPrompt, n + kMaxDraft + 1, nullptr);
  const std::vector<int32_t> ref = plain(kPrompt, n, &plain_seq);
  Sequence seq = toy_sequence();
  const std::vector<float> lg = toy_forward(seq, kPrompt);
  int64_t drafted = 0;
  const std::vector<int32_t> got = speculative(seq, kPrompt, pick(lg.data() + lg.size() - kVocab), n, truth, &drafted);
  EXPECT_EQ(got, ref);
  EXPECT_GT(drafted, n / 2);
  // The state after the last token plain decoding fed (it feeds all but the last pick).
  EXPECT_EQ(seq.pos(), plain_seq.pos());
  EXPECT_TRUE(same_state(seq, plain_seq));
}

TEST(SequenceState, PromptCacheReusesARecurrentPrefixOnlyWhereItCanGoBack) {
  constexpr int n = 24;
  const std::vector<int32_t> truth = plain(kPrompt, n + kMaxDraft + 1);
  Sequence a = toy_sequence();
  const std::vector<float> lg = toy_forward(a, kPrompt);
  const std::vector<int32_t> gen = speculative(a, kPrompt, pick(lg.data() + lg.size() - kVocab), n, truth);
  std::vector<int32_t> held = kPrompt;
  held.insert(held.end(), gen.begin(), gen.end() - 1);  // the last pick was never fed
  ASSERT_EQ(static_cast<int64_t>(held.size()), a.pos());
  const std::vector<int64_t> snaps = rec(a, 0).snapshots();
  ASSERT_FALSE(snaps.empty());
  const int64_t s = snaps.front();
  ASSERT_GE(s, 2);
  // A prompt that shares held's first s - 1 tokens, before any snapshot: a KV cache would reuse
  // them, the recurrent state cannot go back there, so nothing is reused.
  std::vector<int32_t> prompt3(held.begin(), held.begin() + s - 1);
  prompt3.push_back((held[static_cast<size_t>(s - 1)] + 5) % kVocab);
  prompt3.push_back(12);
  EXPECT_EQ(reusable_prefix(a, held, prompt3), 0);
  EXPECT_THROW(Sequence(toy_sequence()).copy_prefix(a, s - 1), Error);
  // One that shares its first s + 1 tokens: reused up to the last snapshot at or before s + 1.
  std::vector<int32_t> prompt2(held.begin(), held.begin() + s + 1);
  prompt2.push_back((held[static_cast<size_t>(s + 1)] + 5) % kVocab);
  prompt2.push_back(11);
  const int64_t expect = std::count(snaps.begin(), snaps.end(), s + 1) || a.pos() == s + 1 ? s + 1 : s;
  ASSERT_EQ(reusable_prefix(a, held, prompt2), expect);
  // Another sequence takes that prefix by copy_prefix; a sequence goes back to it by truncate.
  Sequence b = toy_sequence();
  b.copy_prefix(a, expect);
  std::vector<int32_t> held_a = held;
  EXPECT_EQ(keep_reusable_prefix(a, held_a, prompt2), expect);
  EXPECT_EQ(held_a.size(), static_cast<size_t>(expect));
  const std::vector<int32_t> rest(prompt2.begin() + expect, prompt2.end());
  const std::vector<float> la = toy_forward(a, rest), lb = toy_forward(b, rest);
  Sequence fresh = toy_sequence();
  const std::vector<float> lf = toy_forward(fresh, prompt2);
  EXPECT_TRUE(same_state(a, fresh));
  EXPECT_TRUE(same_state(b, fresh));
  EXPECT_EQ(std::vector<float>(la.end() - kVocab, la.end()), std::vector<float>(lf.end() - kVocab, lf.end()));
  EXPECT_EQ(std::vector<float>(lb.end() - kVocab, lb.end()), std::vector<float>(lf.end() - kVocab, lf.end()));
}

TEST(SequenceState, RefusesStatesOfAnotherKindOrShape) {
  Sequence a = toy_sequence(), b = toy_sequence(128, 2), c = toy_sequence(64);
  toy_forward(a, kPrompt);
  EXPECT_THROW(b.copy_prefix(a, 8), Error);  // other snapshot count: another shape
  EXPECT_THROW(c.copy_prefix(a, 8), Error);  // other context
  try {
    a.truncate(3);
    ADD_FAILURE() << "truncate of a recurrent state without a snapshot";
  } catch (const Error& e) {
    EXPECT_EQ(e.file(), "toy");
    EXPECT_NE(std::string(e.what()).find("layer 0 (recurrent"), std::string::npos) << e.what();
  }
}

// A model's sequence: a full-attention state per layer, views of the one KV cache (the same
// bytes as before), which can go back to any prefix; forward() refuses a sequence of other states.
TEST(SequenceState, ModelSequenceIsFullAttentionPerLayer) {
  auto ck = Checkpoint::open(std::string(NVFP4_FIXTURES) + "/arch/llama/modelopt-nvfp4");
  auto model = Model::load(*ck, LoadOptions{});
  const ModelConfig& c = model->config();
  for (const KvType kv : {KvType::f32, KvType::f16, KvType::fp8}) {
    Sequence seq(*model, 40, kv);
    ASSERT_EQ(seq.n_layer(), c.n_layer);
    for (int64_t l = 0; l < c.n_layer; ++l) {
      EXPECT_EQ(seq.layer(l).kind(), StateKind::full_attention);
      EXPECT_TRUE(seq.layer(l).caps().truncate);
      EXPECT_TRUE(seq.layer(l).caps().copy_prefix);
    }
    EXPECT_TRUE(seq.can_truncate());
    const int64_t tiles = (40 + kKeyTile - 1) / kKeyTile;
    EXPECT_EQ(seq.bytes(), seq.impl().kv.bytes());
    EXPECT_EQ(seq.bytes(), static_cast<size_t>(c.n_layer * c.n_head_kv * c.head_dim * (tiles * kKeyTile + 40)) *
                               (kv == KvType::f32 ? 4u : kv == KvType::f16 ? 2u : 1u));
    ThreadPool pool(1);
    Workspace ws(*model, 8);
    std::vector<float> logits(static_cast<size_t>(c.n_vocab));
    forward(*model, std::vector<StepToken>{{1, &seq, 0, false}, {2, &seq, 1, false}, {3, &seq, 2, true}}, ws, pool,
            logits.data());
    EXPECT_EQ(seq.keepable(1), 1);
    seq.snapshot(2);  // nothing to keep: it can truncate
    seq.truncate(1);
    EXPECT_EQ(seq.pos(), 1);
    Sequence toy = toy_sequence();
    EXPECT_THROW(forward(*model, std::vector<StepToken>{{1, &toy, 0, true}}, ws, pool, logits.data()), Error);
  }
}

TEST(SequenceState, ALayersRefusalNamesTheFileAndTheLayer) {
  Sequence a = toy_sequence();
  try {
    a.snapshot(kMaxDraft + 1);
    ADD_FAILURE() << "more snapshots than the recurrent state was made for";
  } catch (const Error& e) {
    EXPECT_EQ(e.file(), "toy");
    EXPECT_EQ(e.rule().rfind("layer 0: ", 0), 0u) << e.what();
  }
}

// A sequence of full-attention and recurrent layers: each kind answers for itself, the sequence
// for all of them (the recurrent layer decides what the whole can go back to).
TEST(SequenceState, MixedLayersGoBackOnlyWhereEveryKindCan) {
  StateSpec kv, r;
  kv.n_kv = 2;
  kv.head_dim = 16;
  r.kind = StateKind::recurrent;
  r.floats = 4;
  r.max_snapshots = 2;
  const std::vector<StateSpec> layers = {kv, r, kv};
  Sequence seq(layers, 32, KvType::f16, "mixed");
  EXPECT_EQ(seq.layer(0).kind(), StateKind::full_attention);
  EXPECT_EQ(seq.layer(1).kind(), StateKind::recurrent);
  EXPECT_EQ(seq.impl().kv.bytes(), seq.layer(0).bytes() + seq.layer(2).bytes());
  EXPECT_EQ(seq.bytes(), seq.impl().kv.bytes() + seq.layer(1).bytes());
  auto& rs = dynamic_cast<RecurrentState&>(seq.layer(1));
  seq.snapshot(2);
  for (int64_t n = 1; n <= 3; ++n) {
    rs.data()[0] += 1.0f;
    rs.folded(n);
    seq.impl().pos = n;
  }
  EXPECT_EQ(seq.layer(0).keepable(2, 3), 2);
  EXPECT_EQ(seq.keepable(2), 2);
  EXPECT_EQ(seq.keepable(0), 0);
  seq.truncate(1);
  EXPECT_EQ(rs.data()[0], 1.0f);
  // Layers of two KV shapes (Gemma 4's sliding and global layers): a cache for each shape.
  StateSpec other = kv;
  other.head_dim = 8;
  const std::vector<StateSpec> two_shapes = {kv, other, kv};
  Sequence two(two_shapes, 32);
  ASSERT_EQ(two.impl().kv_more.size(), 1u);
  EXPECT_NE(two.layer(0).shape(), two.layer(1).shape());
  EXPECT_EQ(two.layer(0).shape(), two.layer(2).shape());
  EXPECT_EQ(two.bytes(), two.impl().kv.bytes() + two.impl().kv_more[0].bytes());
  // A sliding-window layer of no window is refused.
  StateSpec bad = kv;
  bad.kind = StateKind::sliding_window;
  EXPECT_THROW(Sequence(std::vector<StateSpec>{bad}, 32), Error);
}
