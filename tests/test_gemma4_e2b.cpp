// Gemma 4 E2B-like (fixtures/gemma4-e2b/<form>/, tools/gen_gemma4_fixtures.py --variant e2b): the
// base fixture's shapes with KV sharing (num_kv_shared_layers 2: layer 4, sliding, reads layer 3's
// keys and values; layer 5, global, reads layer 2's), the shared layers' double-wide MLP, and
// per-layer embeddings (hidden_size_per_layer_input 16: the table [503, 6 x 16], its projection and
// norm, each layer's gate, projection and norm), from transformers 5.17 and exported by ModelOpt
// and llm-compressor (its basic pipeline: the sequential one runs a shared layer without its
// source's KV). Checked against transformers' float32
// logits on prompts longer than the window, the shared layers holding no KV, and the integer-exact
// modes for the same bits under every way of stepping a prompt (tests/step_checks.h).
#include <cstring>
#include <filesystem>
#include <unistd.h>

#include "arch_fixtures.h"
#include "ops/model_impl.h"
#include "step_checks.h"

using namespace nvfp4;
using namespace nvfp4::test;

namespace {

std::string root() { return fixture_path("gemma4-e2b"); }
std::string dir_of(const std::string& form) { return root() + "/" + form; }
ArchOracle oracle() { return ArchOracle("", root()); }

class Gemma4E2b : public ::testing::Test {
 protected:
  ThreadPool pool_{2};
};

TEST_F(Gemma4E2b, SharedLayersReadTheLastEarlierLayerOfTheirType) {
  for (const char* form : {"float", "modelopt-nvfp4", "ct-nvfp4"}) {
    SCOPED_TRACE(form);
    auto ck = Checkpoint::open(dir_of(form));
    auto m = load_in(*ck, Mode::f32);
    const ModelConfig& c = m->config();
    ASSERT_EQ(c.attn_layers.size(), 6u);
    for (int l = 0; l < 6; ++l) EXPECT_EQ(c.attn_layers[static_cast<size_t>(l)].kv_from, l == 4 ? 3 : l == 5 ? 2 : -1) << l;
    EXPECT_FALSE(c.attn_layers[5].k_eq_v);
    EXPECT_EQ(c.n_ff, 128);
    EXPECT_EQ(c.n_ff_kv_shared, 256);  // use_double_wide_mlp
    EXPECT_EQ(c.n_embd_per_layer, 16);
    const Model::Impl& mi = m->impl();
    EXPECT_EQ(mi.layers[3].gate.n_out, 128);
    EXPECT_EQ(mi.layers[4].gate.n_out, 256);
    EXPECT_EQ(mi.layers[4].k.n_out, 0);  // no k/v projections of their own
    EXPECT_EQ(mi.layers[5].v.n_out, 0);
    // The table read where the file holds it, as stored (BF16), one row per token.
    EXPECT_TRUE(mi.ple_table.in_place());
    EXPECT_EQ(mi.ple_table.type_name(), "BF16");
    EXPECT_EQ(mi.ple_table.rows(), c.n_vocab);
    EXPECT_EQ(mi.ple_table.cols(), 6 * 16);
    EXPECT_EQ(mi.ple_model_proj.nvfp4, std::string(form) != "float");
    // Each shared layer reads its source's cache layer.
    EXPECT_EQ(mi.kv_group[4], mi.kv_group[3]);
    EXPECT_EQ(mi.kv_layer[4], mi.kv_layer[3]);
    EXPECT_EQ(mi.kv_group[5], mi.kv_group[2]);
    EXPECT_EQ(mi.kv_layer[5], mi.kv_layer[2]);
  }
}

TEST_F(Gemma4E2b, SharedLayersHoldNoKv) {
  auto ck = Checkpoint::open(dir_of("float"));
  auto m = load_in(*ck, Mode::f32);
  for (int64_t n_ctx : {30, 200, 2000}) {
    SCOPED_TRACE(n_ctx);
    Sequence seq(*m, n_ctx);
    for (int64_t l : {4, 5}) {
      EXPECT_EQ(seq.layer(l).kind(), StateKind::shared_kv);
      EXPECT_EQ(seq.layer(l).bytes(), 0u);
    }
    EXPECT_EQ(seq.layer(0).kind(), StateKind::sliding_window);
    EXPECT_EQ(seq.layer(2).kind(), StateKind::full_attention);
    // Three sliding rings and one global cache: without sharing it would be four and two.
    const size_t ring = seq.layer(0).bytes(), full = seq.layer(2).bytes();
    EXPECT_GT(ring, 0u);
    EXPECT_EQ(seq.layer(3).bytes(), ring);
    EXPECT_EQ(seq.bytes(), 3 * ring + full);
  }
}

TEST_F(Gemma4E2b, F32MatchesTransformers) {
  const ArchOracle o = oracle();
  auto ck = Checkpoint::open(dir_of("float"));
  auto m = load_in(*ck, Mode::f32);
  expect_f32_matches_transformers(o, *m, "gemma4-e2b", pool_, Feed::stepped, 0);
}

TEST_F(Gemma4E2b, ModelOptFormRunsNearItsFakeQuant) {
  const ArchOracle o = oracle();
  Diff float_vs;
  for (size_t p = 0; p < o.prompts(); ++p) float_vs.add(o.logits(p, "float"), o.logits(p, "modelopt_nvfp4"), o.ids(p).size(), o.nv);
  auto ck = Checkpoint::open(dir_of("modelopt-nvfp4"));
  for (Mode mode : {Mode::w4a4, Mode::a16q8, Mode::f32}) {
    auto m = load_in(*ck, mode);
    Diff d;
    against_stepped(o, *m, "modelopt_nvfp4", pool_, d);
    std::printf("gemma4-e2b modelopt-nvfp4 %s vs modelopt_nvfp4: max |diff| %.3g, median %.3g, first positions %.3g (float model: median %.3g)\n",
                std::string(mode_name(mode)).c_str(), d.max_abs, d.median(), d.first_max, float_vs.median());
    // Nearer ModelOpt's fake-quantized model than the float model is; not within float noise at a
    // prompt's first position as the base fixture is (0.49 there, 6e-4 on the base fixture): the
    // fake-quantized model departs from ModelOpt's own export here (next test, and
    // fixtures/gemma4-e2b/README.md).
    if (mode == Mode::w4a4) { EXPECT_LT(d.median(), 0.6 * float_vs.median()); }
  }
}

// The export's own weights run by transformers without activation quantization (set
// modelopt_export): the engine's f32 and a16 runs of the export within float noise, so the first
// positions' distance above is ModelOpt's fake-quantized model departing from its export (as on
// Muse Glimmer and fixtures/gemma4-unified: the global layers' v_proj).
TEST_F(Gemma4E2b, ModelOptExportRunsAsTransformersRunsItsWeights) {
  const ArchOracle o = oracle();
  auto ck = Checkpoint::open(dir_of("modelopt-nvfp4"));
  for (Mode mode : {Mode::f32, Mode::a16}) {
    auto m = load_in(*ck, mode);
    Diff d;
    against_stepped(o, *m, "modelopt_export", pool_, d);
    std::printf("gemma4-e2b modelopt-nvfp4 %s vs modelopt_export: max |diff| %.3g (|logit| <= %.3g)\n", std::string(mode_name(mode)).c_str(),
                d.max_abs, d.max_ref);
    EXPECT_LE(d.max_abs, 1e-4);
  }
}

TEST_F(Gemma4E2b, IntegerModesGiveTheSameBitsHoweverAPromptIsStepped) {
  const ArchOracle o = oracle();
  const auto ids = long_ids(o);
  for (const char* form : {"modelopt-nvfp4", "ct-nvfp4"}) {
    for (Mode mode : {Mode::a16q8, Mode::w4a4}) {
      SCOPED_TRACE(std::string(form) + " " + std::string(mode_name(mode)));
      auto ck = Checkpoint::open(dir_of(form));
      auto m = load_in(*ck, mode);
      ThreadPool one(1);
      const int64_t n = static_cast<int64_t>(ids.size());
      const auto ref = stepped(*m, ids, {n}, one);  // one step of 162: run in waves of 64
      EXPECT_TRUE(same_bits(stepped(*m, ids, {n}, pool_), ref)) << "2 threads";
      EXPECT_TRUE(same_bits(stepped(*m, ids, {1}, pool_), ref)) << "token by token";
      EXPECT_TRUE(same_bits(stepped(*m, ids, {7, 3, 11, 1, 5, 16}, pool_), ref)) << "chunks";
      EXPECT_TRUE(same_bits(stepped(*m, ids, {9, 2, 100}, one, 3 * n), ref)) << "a longer context";
      EXPECT_TRUE(same_bits(stepped_beside_others(*m, ids, pool_, {12, 50, 20, 7}), ref)) << "beside other sequences";
    }
  }
}

// A shared layer without an earlier layer of its type to read (4 shared: layers 2..5, and layer 2
// is the first global one) is refused naming the key.
TEST_F(Gemma4E2b, SharingWithoutASourceIsRefused) {
  namespace fs = std::filesystem;
  const fs::path tmp = fs::temp_directory_path() / ("nvfp4_gemma4_e2b_" + std::to_string(::getpid()));
  fs::remove_all(tmp);
  fs::create_directories(tmp);
  for (const auto& e : fs::directory_iterator(dir_of("float"))) fs::copy(e.path(), tmp / e.path().filename());
  std::ifstream in(tmp / "config.json");
  nlohmann::json cfg = nlohmann::json::parse(in);
  in.close();
  cfg["num_kv_shared_layers"] = 4;
  std::ofstream(tmp / "config.json") << cfg.dump(1);
  try {
    auto ck = Checkpoint::open(tmp.string());
    auto m = load_in(*ck, Mode::f32);
    ADD_FAILURE() << "loaded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("shared_kv_layers"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("layer 2"), std::string::npos) << e.what();
  }
  fs::remove_all(tmp);
}

TEST_F(Gemma4E2b, SpeculativeRollbackLeavesThePlainState) {
  const ArchOracle o = oracle();
  const auto ids = long_ids(o);
  auto ck = Checkpoint::open(dir_of("modelopt-nvfp4"));
  auto m = load_in(*ck, Mode::a16q8);
  const auto ref = stepped(*m, ids, {1}, pool_);
  for (int64_t start : {5, 100, 140})
    for (size_t kept : {0u, 2u, 5u}) expect_rollback_leaves_plain_state(*m, ids, ref, start, kept, pool_);
}

}  // namespace
