// A forward step over a flat list of tokens of any sequences, and the objects around it:
// Sequence (a KV cache), Workspace (scratch), Context (one sequence, stepped n_batch at a time).
// Nothing mixes tokens but attention, which reads each token's own sequence: a token's result
// does not depend on the step it came in (docs/DETERMINISM.md).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>

#include "nvfp4/error.h"
#include "kernels/pinned_math.h"
#include "ops/step_impl.h"

namespace nvfp4 {

// ---- Workspace --------------------------------------------------------------------------------

Workspace::Workspace(const Model& model, int64_t n_batch) {
  if (n_batch < 1) throw Error(model.impl().source, "Workspace n_batch", "batch size (--batch)", ">= 1", std::to_string(n_batch));
  impl_ = std::make_unique<Impl>(model.impl(), n_batch);
}
Workspace::~Workspace() = default;
Workspace::Workspace(Workspace&&) noexcept = default;
Workspace& Workspace::operator=(Workspace&&) noexcept = default;
int64_t Workspace::n_batch() const { return impl_->n_batch; }
void Workspace::set_observer(Observer obs) { impl_->obs = std::move(obs); }
void Workspace::set_profile(StepProfile* p) { impl_->prof = p; }

size_t Workspace::bytes() const {
  const Impl& w = *impl_;
  size_t b = w.rope.bytes() + (w.arena.size() + w.attn_scratch.size() + w.pre.size()) * 4;
  for (const auto* v : {&w.qgate, &w.gate_att, &w.lin_qkv, &w.lin_z, &w.lin_b, &w.lin_a, &w.lin_fused, &w.lin_fused_ba, &w.lin_y})
    b += v->size() * 4;
  for (const auto* v : {&w.moe_logits, &w.moe_w, &w.moe_x, &w.moe_y, &w.moe_g, &w.moe_u})
    b += v->size() * 4;
  for (const RopeTable& r : w.ropes) b += r.bytes();
  b += w.moe_sel.size() * 4 + (w.moe_count.size() + w.moe_pairs.size()) * 8;
  b += w.ple.size() * 4 + w.token_ids.size() * 4;
  return b;
}

// ---- the step ---------------------------------------------------------------------------------

namespace {
// A sequence made for this model: a state per layer of the kind the layer asks for, the
// full-attention layers' KV cache of the model's shape.
void check_sequence(const Model::Impl& m, const Sequence& seq) {
  const ModelConfig& c = m.cfg;
  const auto refuse = [&](const std::string& found) {
    throw Error(m.source, "StepToken.seq", "step token's sequence: one made for this model (its states per layer)",
                std::to_string(c.n_layer) + " layers (" + std::to_string(m.n_kv_layer) + " full attention)", found);
  };
  if (seq.n_layer() != c.n_layer) refuse(std::to_string(seq.n_layer()) + " layers");
  if (seq.impl().kv_more.size() + (m.kv_groups.empty() ? 0 : 1) != m.kv_groups.size()) refuse("another KV cache shape");
  for (size_t g = 0; g < m.kv_groups.size(); ++g) {
    const KvGroup& kg = m.kv_groups[g];
    if (!seq.impl().kv_group(static_cast<int>(g)).fits(kg.layers, kg.spec.n_kv, kg.spec.head_dim)) refuse("another KV cache shape");
  }
  for (int64_t l = 0; l < c.n_layer; ++l) {
    const LayerState& st = seq.layer(l);
    if (c.mixer(l) == MixerKind::attention) {
      const AttnLayerConfig* a = c.attn_layers.empty() ? nullptr : &c.attn_layers[static_cast<size_t>(l)];
      const StateKind want = a && a->kv_from >= 0 ? StateKind::shared_kv : a && a->window > 0 ? StateKind::sliding_window : StateKind::full_attention;
      if (st.kind() != want)
        refuse("layer " + std::to_string(l) + ": " + state_kind_name(st.kind()));
    } else if (c.mixer(l) == MixerKind::none) {
      if (st.kind() != StateKind::none) refuse("layer " + std::to_string(l) + ": " + state_kind_name(st.kind()));
    } else {
      const auto* r = dynamic_cast<const RecurrentState*>(&st);
      if (!r || r->size() != c.recurrent_floats(l))
        refuse("layer " + std::to_string(l) + ": " + state_kind_name(st.kind()) + ", " + st.shape());
    }
  }
}
}  // namespace

void finish_logits(const ModelConfig& c, float* logits, int64_t n) {
  if (c.logit_scale != 0.0f)  // Muse Glimmer: the logits times output_multiplier, in float, before the cap
    for (int64_t i = 0; i < n; ++i) logits[i] *= c.logit_scale;
  if (c.final_softcap != 0.0f) {  // Gemma: cap * tanh(logit / cap), the tanh in double from the pinned exp
    const double cap = c.final_softcap;
    for (int64_t i = 0; i < n; ++i) logits[i] = static_cast<float>(cap * pinned::tanh(static_cast<double>(logits[i]) / cap));
  }
}

namespace {
// An MTP step's input rows: x[t] = eh_proj(concat(RMSNorm(embed(token)) * enorm, RMSNorm(h_in[t]) * hnorm)).
void mtp_input(const StepRun& run, std::span<const StepToken> tokens, const float* h_in) {
  const Model::Impl& m = run.m;
  Workspace::Impl& ws = run.ws;
  const int64_t n = run.n, d = m.cfg.n_embd;
  if (ws.mtp_cat.size() < static_cast<size_t>(n * 2 * d)) ws.mtp_cat.resize(static_cast<size_t>(n * 2 * d));
  for (int64_t t = 0; t < n; ++t) m.embedding().row(tokens[static_cast<size_t>(t)].token, ws.xn.data() + t * d);
  run.rmsnorm(ws.xn.data(), m.nextn.enorm, ws.xn.data(), n, d);  // in place: a row is read before it is written
  for (int64_t t = 0; t < n; ++t) std::memcpy(ws.mtp_cat.data() + t * 2 * d, ws.xn.data() + t * d, static_cast<size_t>(d) * 4);
  run.rmsnorm(h_in, m.nextn.hnorm, ws.xn.data(), n, d);
  for (int64_t t = 0; t < n; ++t) std::memcpy(ws.mtp_cat.data() + t * 2 * d + d, ws.xn.data() + t * d, static_cast<size_t>(d) * 4);
  run.run(m.nextn.eh_proj, ws.mtp_cat.data(), ws.x.data());
}

// Rows of ws.x (n tokens) into tap k of `taps` (out[n][K][d]).
void write_tap(const LayerTaps& taps, size_t k, const float* x, int64_t n, int64_t d) {
  const size_t K = taps.layers.size();
  for (int64_t t = 0; t < n; ++t) std::memcpy(taps.out + (static_cast<size_t>(t) * K + k) * static_cast<size_t>(d), x + t * d, static_cast<size_t>(d) * 4);
}

void step(const Model& model, std::span<const StepToken> tokens, const float* h_in, Workspace& workspace, ThreadPool& pool,
          float* logits, float* hidden, const LayerTaps* taps = nullptr) {
  const Model::Impl& m = model.impl();
  Workspace::Impl& ws = workspace.impl();
  const ModelConfig& c = m.cfg;
  const int64_t n = static_cast<int64_t>(tokens.size());
  if (&ws.m != &m) throw Error(m.source, "forward workspace", "workspace of another model", "one made for this model", "another");
  if (n > ws.n_batch) throw Error(m.source, "forward tokens", "tokens in one step", "at most the workspace's " + std::to_string(ws.n_batch), std::to_string(n));
  if (n == 0) return;
  // Validate everything before computing: positions continue each sequence, in step order.
  std::vector<AttnToken> at(static_cast<size_t>(n));
  std::vector<std::pair<Sequence*, int64_t>> next;  // sequence -> its next expected position
  int64_t max_pos = 0;
  ws.seqs.clear();
  for (int64_t t = 0; t < n; ++t) {
    const StepToken& s = tokens[static_cast<size_t>(t)];
    if (!s.seq) throw Error(m.source, "StepToken.seq", "step token without a sequence", "a sequence", "null");
    if (s.token < 0 || s.token >= c.n_vocab)
      throw Error(m.source, "StepToken.token", "token id out of range", "0 .. " + std::to_string(c.n_vocab - 1), std::to_string(s.token));
    auto it = std::find_if(next.begin(), next.end(), [&](const auto& p) { return p.first == s.seq; });
    if (it == next.end()) {
      check_sequence(m, *s.seq);
      it = next.insert(next.end(), {s.seq, s.seq->pos()});
      ws.seqs.push_back({s.seq, {}});
    }
    if (s.pos != it->second)
      throw Error(m.source, "StepToken.pos", "step token position (a sequence's tokens continue it in step order)", std::to_string(it->second),
                  std::to_string(s.pos));
    if (s.pos >= s.seq->n_ctx())
      throw Error(m.source, "StepToken.pos", "context full", "at most " + std::to_string(s.seq->n_ctx()) + " positions", std::to_string(s.pos + 1));
    ++it->second;
    ws.seqs[static_cast<size_t>(it - next.begin())].tok.push_back(t);
    at[static_cast<size_t>(t)] = AttnToken{&s.seq->impl().kv, s.pos, s.seq->impl().kv_more.data()};
    max_pos = std::max(max_pos, s.pos);
  }
  const auto t_start = std::chrono::steady_clock::now();
  struct StepTotal {  // the whole step into prof->total, however it returns
    StepProfile* p;
    std::chrono::steady_clock::time_point t0;
    int64_t n;
    ~StepTotal() {
      if (!p) return;
      p->total += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      ++p->steps;
      p->tokens += n;
    }
  } step_total{ws.prof, t_start, n};
  ws.step.set(at);
  ws.rope.reserve(max_pos + 1);
  for (RopeTable& r : ws.ropes) r.reserve(max_pos + 1);
  StepRun run{m, ws, pool, n};
  const int64_t d = c.n_embd;
  if (h_in) {
    mtp_input(run, tokens, h_in);
  } else {
    for (int64_t t = 0; t < n; ++t) m.embd.row(tokens[static_cast<size_t>(t)].token, ws.x.data() + t * d);
    ws.token_ids.resize(static_cast<size_t>(n));
    for (int64_t t = 0; t < n; ++t) ws.token_ids[static_cast<size_t>(t)] = tokens[static_cast<size_t>(t)].token;
    if (c.embd_scale != 0.0f)  // Gemma: the embedding times sqrt(n_embd), in float
      for (int64_t i = 0; i < n * d; ++i) ws.x.data()[i] *= c.embd_scale;
    if (c.embd_norm) run.rmsnorm(ws.x.data(), m.embd_norm, ws.x.data(), n, d);  // Muse Glimmer: weightless
  }
  const auto tap = [&](int64_t l) {
    if (!taps) return;
    for (size_t k = 0; k < taps->layers.size(); ++k)
      if (taps->layers[k] == l) write_tap(*taps, k, ws.x.data(), n, d);
  };
  for (int64_t l = 0; l < c.n_layer; ++l) {
    tap(l);
    m.block(run, l);  // the family's block (src/models/<family>.cpp)
  }
  for (const auto& [seq, pos] : next) seq->impl().pos = pos;
  // Every row's final norm when the hidden states are asked for (a row's norm is its own: the
  // rows the head reads are the same bits either way).
  if (hidden) run.rmsnorm(ws.x.data(), m.output_norm, hidden, n, d);
  if (taps && std::find(taps->layers.begin(), taps->layers.end(), c.n_layer) != taps->layers.end()) {
    // Tap n_layer: the final-normed rows, as transformers' last hidden_states entry.
    const float* normed = hidden;
    if (!normed) {
      run.rmsnorm(ws.x.data(), m.output_norm, ws.xn.data(), n, d);
      normed = ws.xn.data();
    }
    for (size_t k = 0; k < taps->layers.size(); ++k)
      if (taps->layers[k] == c.n_layer) write_tap(*taps, k, normed, n, d);
  }
  if (!logits) return;
  // The final norm and the head for the tokens that want logits, gathered in step order.
  int64_t rows = 0;
  for (int64_t t = 0; t < n; ++t)
    if (tokens[static_cast<size_t>(t)].logits) {
      std::memcpy(ws.xn.data() + rows * d, (hidden ? hidden : ws.x.data()) + t * d, static_cast<size_t>(d) * 4);
      ++rows;
    }
  if (rows == 0) return;
  PartTimer timer(ws.prof, StepProfile::head, static_cast<double>(m.head().bytes()));
  if (!hidden) run.rmsnorm(ws.xn.data(), m.output_norm, ws.xn.data(), rows, d);  // in place: a row is read before it is written
  m.head().forward(m.mode, ws.xn.data(), rows, logits, pool);
  finish_logits(c, logits, rows * c.n_vocab);
}

// A layer that reads a sliding layer's keys and values (Gemma 4's KV sharing) runs after its source
// stored the whole step: the source's ring must then hold every token's window at once. Such a
// model's steps run in waves of at most kSlidingSlack tokens of each sequence (contiguous runs of
// the step, each a step of its own): a token's result does not depend on the step it came in.
void step_waves(const Model& model, std::span<const StepToken> tokens, Workspace& ws, ThreadPool& pool, float* logits, float* hidden,
                const LayerTaps* taps = nullptr) {
  const ModelConfig& c = model.config();
  if (taps)
    for (const int l : taps->layers)
      if (l < 0 || l > c.n_layer)
        throw Error(model.impl().source, "LayerTaps.layers", "a hidden state between layers (transformers' hidden_states index)",
                    "0 .. " + std::to_string(c.n_layer), std::to_string(l));
  const bool waves = std::any_of(c.attn_layers.begin(), c.attn_layers.end(), [](const AttnLayerConfig& a) { return a.kv_from >= 0 && a.window > 0; });
  if (!waves) return step(model, tokens, nullptr, ws, pool, logits, hidden, taps);
  std::vector<std::pair<const Sequence*, int64_t>> count;
  std::vector<size_t> ends;
  for (size_t t = 0; t < tokens.size(); ++t) {
    auto it = std::find_if(count.begin(), count.end(), [&](const auto& p) { return p.first == tokens[t].seq; });
    if (it == count.end()) it = count.insert(count.end(), {tokens[t].seq, 0});
    if (++it->second > kSlidingSlack) {
      ends.push_back(t);
      count.assign(1, {tokens[t].seq, 1});
    }
  }
  ends.push_back(tokens.size());
  if (ends.size() > 1) {
    // Nothing runs before the whole step is known good (step() checks each wave again, in full).
    std::vector<std::pair<const Sequence*, int64_t>> next;
    for (const StepToken& s : tokens) {
      auto it = std::find_if(next.begin(), next.end(), [&](const auto& p) { return p.first == s.seq; });
      if (it == next.end() && s.seq) it = next.insert(next.end(), {s.seq, s.seq->pos()});
      if (!s.seq || s.token < 0 || s.token >= c.n_vocab || s.pos != it->second || s.pos >= s.seq->n_ctx())
        return step(model, tokens, nullptr, ws, pool, logits, hidden, taps);  // refused there, naming what is wrong
      ++it->second;
    }
  }
  size_t t0 = 0, rows = 0;
  for (const size_t t1 : ends) {
    LayerTaps wave;
    if (taps) wave = {taps->layers, taps->out + t0 * taps->layers.size() * static_cast<size_t>(c.n_embd)};
    step(model, tokens.subspan(t0, t1 - t0), nullptr, ws, pool, logits ? logits + rows * static_cast<size_t>(c.n_vocab) : nullptr,
         hidden ? hidden + t0 * static_cast<size_t>(c.n_embd) : nullptr, taps ? &wave : nullptr);
    for (size_t t = t0; t < t1; ++t) rows += tokens[t].logits;
    t0 = t1;
  }
}
}  // namespace

void forward(const Model& model, std::span<const StepToken> tokens, Workspace& ws, ThreadPool& pool, float* logits) {
  step_waves(model, tokens, ws, pool, logits, nullptr);
}

void forward(const Model& model, std::span<const StepToken> tokens, Workspace& ws, ThreadPool& pool, float* logits, float* hidden) {
  step_waves(model, tokens, ws, pool, logits, hidden);
}

void forward(const Model& model, std::span<const StepToken> tokens, Workspace& ws, ThreadPool& pool, float* logits, float* hidden,
             const LayerTaps& taps) {
  if (!taps.out && !taps.layers.empty()) throw Error(model.impl().source, "LayerTaps.out", "where the taps go", "a buffer", "null");
  step_waves(model, tokens, ws, pool, logits, hidden, &taps);
}

void forward_mtp(const Model& mtp, std::span<const StepToken> tokens, const float* h_in, Workspace& ws, ThreadPool& pool,
                 float* logits, float* hidden) {
  if (!mtp.impl().trunk)
    throw Error(mtp.impl().source, "forward_mtp", "an MTP module's step (Model::mtp())", "an MTP module", "a trunk model");
  if (!h_in && !tokens.empty()) throw Error(mtp.impl().source, "forward_mtp", "the trunk's hidden states", "present", "null");
  step(mtp, tokens, h_in, ws, pool, logits, hidden);
}

// ---- Context ----------------------------------------------------------------------------------

struct Context::Impl {
  const Model& model;
  ThreadPool& pool;
  Sequence seq;
  Workspace ws;
  std::vector<StepToken> step;
  Impl(const Model& m, const ContextOptions& o, ThreadPool& p)
      : model(m), pool(p), seq(m, o.n_ctx, o.kv), ws(m, std::min(o.n_batch, o.n_ctx)) {}
};

Context::Context(const Model& model, const ContextOptions& opt, ThreadPool& pool) {
  if (opt.n_ctx < 1 || opt.n_batch < 1)
    throw Error(model.impl().source, "ContextOptions n_ctx, n_batch", "context size and batch (--ctx, --batch)", ">= 1", std::to_string(opt.n_ctx) + ", " + std::to_string(opt.n_batch));
  impl_ = std::make_unique<Impl>(model, opt, pool);
}
Context::~Context() = default;

void Context::eval(const int32_t* tokens, int64_t n, float* logits, bool all) {
  Impl& c = *impl_;
  if (n < 1) return;
  if (c.seq.pos() + n > c.seq.n_ctx())
    throw Error(c.model.impl().source, "Context::eval n", "context full", "at most " + std::to_string(c.seq.n_ctx()) + " positions", std::to_string(c.seq.pos() + n));
  const int64_t nv = c.model.config().n_vocab;
  for (int64_t i = 0; i < n; ++i)
    if (tokens[i] < 0 || tokens[i] >= nv)
      throw Error(c.model.impl().source, "Context::eval tokens", "token id out of range", "0 .. " + std::to_string(nv - 1), std::to_string(tokens[i]));
  const int64_t nb = c.ws.n_batch();
  for (int64_t s = 0; s < n; s += nb) {
    const int64_t k = std::min(nb, n - s);
    const bool last = s + k == n;
    c.step.clear();
    for (int64_t i = 0; i < k; ++i)
      c.step.push_back(StepToken{tokens[s + i], &c.seq, c.seq.pos() + i, logits && (all || (last && i == k - 1))});
    float* out = !logits ? nullptr : all ? logits + s * nv : (last ? logits : nullptr);
    forward(c.model, c.step, c.ws, c.pool, out);
  }
}

int64_t Context::pos() const { return impl_->seq.pos(); }
int64_t Context::n_ctx() const { return impl_->seq.n_ctx(); }
void Context::reset() { impl_->seq.truncate(0); }
void Context::set_observer(Observer obs) { impl_->ws.set_observer(std::move(obs)); }
void Context::set_profile(StepProfile* p) { impl_->ws.set_profile(p); }
Sequence& Context::sequence() { return impl_->seq; }
size_t Context::bytes() const { return impl_->seq.bytes() + impl_->ws.bytes(); }

}  // namespace nvfp4
