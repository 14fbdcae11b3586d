// Gemma 4's per-layer embeddings (E2B / E4B; transformers' Gemma4TextModel.get_per_layer_inputs,
// project_per_layer_inputs and the end of Gemma4TextDecoderLayer), P = hidden_size_per_layer_input:
//   tok[l]  = T[token][l P .. (l + 1) P] * sqrt(P)                     (T: [vocab][n_layer P])
//   proj[l] = norm_P((M e) * n_embd^-0.5)[l P .. (l + 1) P]              (e: the scaled embedding)
//   in[l]   = (proj[l] + tok[l]) * 2^-0.5
// and after layer l's FFN residual, before its scalar:
//   x += post_norm(proj_l(gelu_tanh(gate_l(x)) * in[l]))
// each product and sum in float32 as transformers' float32 model takes them. The table is read
// where the checkpoint's file holds it (ops/row_table.h), one row per token of a step.
#include <cmath>

#include "models/gemma4.h"
#include "models/loader.h"

namespace nvfp4 {

void gemma4_load_ple(const Loader& L, const ModelConfig& c, Model::Impl& m) {
  const int64_t P = c.n_embd_per_layer, width = c.n_layer * P;
  const std::string name = "per_layer_token_embd.weight";
  const TensorEntry* e = L.ck.find(name);
  if (!e) throw Error(L.path, name, "missing tensor (per-layer embeddings: embedding_length_per_layer_input > 0)", "present", "absent");
  // Every token id indexes it (transformers' text model has no fallback for ids past its rows).
  L.shaped(name, {c.n_vocab, width});
  DType dt;
  const void* data = nullptr;
  std::shared_ptr<const void> keep;
  if (L.ck.raw_float(name, dt, data) && (keep = L.ck.mapping(name))) {
    m.ple_table = RowTable::mapped(dt, data, c.n_vocab, width, std::move(keep));
    L.ck.release(name);  // its pages come back as rows are read
  } else {
    m.ple_table = RowTable::held(L.head_tensor(name, c.n_vocab, width, false, true));
  }
  m.ple_model_proj = L.linear("per_layer_model_proj", width, c.n_embd);
  m.ple_norm = L.norm("per_layer_proj_norm.weight", P);
}

void gemma4_load_ple_layer(const Loader& L, const std::string& b, const ModelConfig& c, LayerWeights& w) {
  const int64_t P = c.n_embd_per_layer;
  w.ple_gate = L.linear(b + "inp_gate", P, c.n_embd);
  w.ple_proj = L.linear(b + "proj", c.n_embd, P);
  w.ple_post_norm = L.norm(b + "post_norm.weight", c.n_embd);
}

void gemma4_ple_inputs(StepRun& s) {
  const Model::Impl& m = s.m;
  const ModelConfig& c = m.cfg;
  Workspace::Impl& w = s.ws;
  const int64_t n = s.n, P = c.n_embd_per_layer, width = c.n_layer * P;
  w.ple.resize(static_cast<size_t>(s.ws.n_batch * width));
  float* in = w.ple.data();
  s.run(m.ple_model_proj, w.x.data(), in);
  const float pscale = static_cast<float>(std::pow(static_cast<double>(c.n_embd), -0.5));  // hidden ** -0.5
  const float tscale = static_cast<float>(std::sqrt(static_cast<double>(P)));                // float32(P ** 0.5)
  const float mix = static_cast<float>(std::pow(2.0, -0.5));                                 // 2.0 ** -0.5
  for (int64_t i = 0; i < n * width; ++i) in[i] *= pscale;
  s.rmsnorm(in, m.ple_norm, in, n * c.n_layer, P);
  s.parallel(n, [&](int64_t t0, int64_t t1) {
    std::vector<float> row(static_cast<size_t>(width));
    for (int64_t t = t0; t < t1; ++t) {
      m.ple_table.row(w.token_ids[static_cast<size_t>(t)], row.data());
      float* o = in + t * width;
      for (int64_t i = 0; i < width; ++i) o[i] = (o[i] + row[static_cast<size_t>(i)] * tscale) * mix;
    }
  });
}

void gemma4_ple_layer(StepRun& s, const LayerWeights& L, int64_t l) {
  const ModelConfig& c = s.m.cfg;
  Workspace::Impl& w = s.ws;
  const int64_t n = s.n, d = c.n_embd, P = c.n_embd_per_layer, width = c.n_layer * P;
  s.run(L.ple_gate, w.x.data(), w.g.data());
  for (int64_t t = 0; t < n; ++t) {
    float* g = w.g.data() + t * P;
    const float* in = w.ple.data() + t * width + l * P;
    geglu_rows(g, in, P);
  }
  s.run(L.ple_proj, w.g.data(), w.o.data());
  s.rmsnorm(w.o.data(), L.ple_post_norm, w.o.data(), n, d);
  s.residual(w.x.data(), w.o.data(), d);
}

}  // namespace nvfp4
