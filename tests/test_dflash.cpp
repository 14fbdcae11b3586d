// Muse Glimmer's drafter, the DFlash assistant (issues 35 and 33): on a tiny random
// muse_glimmer_assistant (fixtures/muse_glimmer/assistant) for the float target
// (fixtures/muse_glimmer/float), two draft steps of greedy speculation against transformers' own
// DFlashTokenCandidateGenerator (tools/gen_dflash_reference.py: dflash_reference.json / .f32):
// the same drafts, the draft logits within 1e-4 in f32, the context appended across a verify
// step; `--spec dflash` giving the tokens of plain decoding; what is not an assistant refused.
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "arch_fixtures.h"
#include "io/json_config.h"
#include "nvfp4/dflash_draft.h"
#include "nvfp4/generate.h"

using namespace nvfp4;
using namespace nvfp4::test;

namespace {

std::string dir() { return fixture_path("muse_glimmer"); }

std::unique_ptr<Model> load_target(const Checkpoint& ck, Mode mode, bool quantize = false) {
  LoadOptions lo;
  lo.mode = mode;
  lo.quantize = quantize;
  return Model::load(ck, lo);
}

// One target step of `toks` at positions p0.., its taps handed to the proposer; returns the logits.
std::vector<float> step_target(const Model& m, Sequence& seq, Workspace& ws, ThreadPool& pool, DflashProposer& p,
                               const std::vector<int32_t>& toks, int64_t p0) {
  const int64_t nv = m.config().n_vocab, d = m.config().n_embd, n = static_cast<int64_t>(toks.size());
  std::vector<StepToken> step;
  for (int64_t t = 0; t < n; ++t) step.push_back({toks[static_cast<size_t>(t)], &seq, p0 + t, true});
  std::vector<float> logits(static_cast<size_t>(n * nv));
  std::vector<float> taps(static_cast<size_t>(n) * p.drafter().taps().size() * static_cast<size_t>(d));
  forward(m, step, ws, pool, logits.data(), nullptr, LayerTaps{p.drafter().taps(), taps.data()});
  p.observe(p0, taps.data(), n, pool);
  return logits;
}

TEST(Dflash, TwoStepsMatchTransformers) {
  std::ifstream jf(dir() + "/dflash_reference.json");
  ASSERT_TRUE(jf);
  const nlohmann::json j = nlohmann::json::parse(jf);
  std::ifstream bf(dir() + "/dflash_reference.f32", std::ios::binary);
  std::vector<char> raw((std::istreambuf_iterator<char>(bf)), std::istreambuf_iterator<char>());
  std::vector<float> ref(raw.size() / 4);
  std::memcpy(ref.data(), raw.data(), ref.size() * 4);
  ThreadPool pool(2);
  auto ck = Checkpoint::open(dir() + "/float");
  auto m = load_target(*ck, Mode::f32);
  DflashDrafter drafter(dir() + "/assistant", *m);
  const int64_t B = j["block_size"].get<int64_t>(), nv = j["n_vocab"].get<int64_t>();
  ASSERT_EQ(drafter.block_size(), B);
  ASSERT_EQ(m->config().n_vocab, nv);
  EXPECT_NE(drafter.describe().find("2 layers (sliding window 8), block 4, taps [1, 3, 5], BF16"), std::string::npos)
      << drafter.describe();
  Diff diff;
  int prompts = 0;
  for (const auto& p : j["prompts"]) {
    SCOPED_TRACE("prompt " + std::to_string(prompts++));
    const auto ids = p["ids"].get<std::vector<int32_t>>();
    const int64_t n = static_cast<int64_t>(ids.size());
    Sequence seq(*m, 64);
    Workspace ws(*m, 64);
    DflashProposer prop(drafter, 64);
    const std::vector<float> lp = step_target(*m, seq, ws, pool, prop, ids, 0);
    const int32_t anchor = nvfp4::argmax(lp.data() + (n - 1) * nv, nv);
    ASSERT_EQ(anchor, p["anchor"].get<int32_t>());
    std::vector<int32_t> history = ids;
    history.push_back(anchor);
    const auto d1 = prop.propose(history, static_cast<int>(B - 1), pool);
    EXPECT_EQ(d1, p["step1"]["drafts"].get<std::vector<int32_t>>());
    diff.add(prop.last_logits().data(), ref.data() + p["step1"]["offset"].get<size_t>(), static_cast<size_t>(B - 1), nv);
    // The target verifies [anchor, drafts]: greedy, the agreeing prefix and its own next pick.
    std::vector<int32_t> verify = {anchor};
    verify.insert(verify.end(), d1.begin(), d1.end());
    const std::vector<float> lv = step_target(*m, seq, ws, pool, prop, verify, n);
    size_t accepted = 0;
    while (accepted < d1.size() && nvfp4::argmax(lv.data() + accepted * static_cast<size_t>(nv), nv) == d1[accepted]) ++accepted;
    const int32_t bonus = nvfp4::argmax(lv.data() + accepted * static_cast<size_t>(nv), nv);
    EXPECT_EQ(static_cast<int64_t>(accepted), p["accepted"].get<int64_t>());
    EXPECT_EQ(bonus, p["bonus"].get<int32_t>());
    history.insert(history.end(), d1.begin(), d1.begin() + static_cast<std::ptrdiff_t>(accepted));
    history.push_back(bonus);
    seq.truncate(n + 1 + static_cast<int64_t>(accepted));
    const auto d2 = prop.propose(history, static_cast<int>(B - 1), pool);
    EXPECT_EQ(d2, p["step2"]["drafts"].get<std::vector<int32_t>>());
    diff.add(prop.last_logits().data(), ref.data() + p["step2"]["offset"].get<size_t>(), static_cast<size_t>(B - 1), nv);
  }
  EXPECT_EQ(prompts, 2);
  std::printf("dflash logits: max |diff| %.3g, max |ref| %.3g over %d rows\n", diff.max_abs, diff.max_ref, diff.positions);
  EXPECT_LE(diff.max_abs, 1e-4 * std::max(1.0, diff.max_ref)) << "max |ref| " << diff.max_ref;
  EXPECT_EQ(diff.argmax_differ, 0);
}

// z-lab's layout (PyPI dflash's DFlashDraftModel, fixtures/dflash/qwen3 for the Qwen3 fixture:
// tools/gen_dflash_zlab_reference.py): greedy decoding as its own dflash_generate does it, a whole
// block verified each step (shorter at the end, drafted from a shorter block), the same tokens and
// the draft logits of every step within 1e-4 (layer 0 sliding and causal with |q - k| < 6, layer 1
// full; the prompts longer than the window).
TEST(Dflash, ZlabLayoutMatchesItsOwnGenerate) {
  const std::string z = fixture_path("dflash");
  std::ifstream jf(z + "/qwen3_reference.json");
  ASSERT_TRUE(jf);
  const nlohmann::json j = nlohmann::json::parse(jf);
  std::ifstream bf(z + "/qwen3_reference.f32", std::ios::binary);
  std::vector<char> raw((std::istreambuf_iterator<char>(bf)), std::istreambuf_iterator<char>());
  std::vector<float> ref(raw.size() / 4);
  std::memcpy(ref.data(), raw.data(), ref.size() * 4);
  ThreadPool pool(2);
  auto ck = Checkpoint::open(fixture_path("arch/qwen3/float"));
  auto m = load_target(*ck, Mode::f32);
  DflashDrafter drafter(z + "/qwen3", *m);
  const int64_t B = j["block_size"].get<int64_t>(), nv = j["n_vocab"].get<int64_t>();
  ASSERT_EQ(drafter.block_size(), B);
  EXPECT_NE(drafter.describe().find("(DFlashDraftModel): 2 layers (1 sliding, 1 full), block 4, taps [1, 2]"), std::string::npos)
      << drafter.describe();
  Diff diff;
  int steps = 0;
  for (const auto& p : j["prompts"]) {
    const auto ids = p["ids"].get<std::vector<int32_t>>();
    const auto want = p["tokens"].get<std::vector<int32_t>>();
    std::map<int64_t, std::pair<size_t, size_t>> offsets;  // anchor position -> its logits in the .f32, rows
    for (const auto& st : p["steps"])
      offsets[st["start"].get<int64_t>()] = {st["offset"].get<size_t>(), st["rows"].get<size_t>()};
    const int64_t n = static_cast<int64_t>(ids.size()), max_len = n + static_cast<int64_t>(want.size());
    Sequence seq(*m, 64);
    Workspace ws(*m, 64);
    DflashProposer prop(drafter, 64);
    const std::vector<float> lp = step_target(*m, seq, ws, pool, prop, ids, 0);
    std::vector<int32_t> history = ids;
    history.push_back(nvfp4::argmax(lp.data() + (n - 1) * nv, nv));
    while (static_cast<int64_t>(history.size()) < max_len) {
      const int64_t start = static_cast<int64_t>(history.size()) - 1;
      const int64_t verify = std::min<int64_t>(B, max_len - start);  // the block dflash_generate verifies
      const auto d = prop.propose(history, static_cast<int>(verify - 1), pool);
      ASSERT_EQ(static_cast<int64_t>(d.size()), verify - 1);
      const auto it = offsets.find(start);
      ASSERT_NE(it, offsets.end()) << "a draft step at " << start;
      ASSERT_EQ(it->second.second, d.size());
      diff.add(prop.last_logits().data(), ref.data() + it->second.first, d.size(), nv);
      ++steps;
      std::vector<int32_t> block = {history.back()};
      block.insert(block.end(), d.begin(), d.end());
      const std::vector<float> lv = step_target(*m, seq, ws, pool, prop, block, start);
      size_t a = 0;
      while (a < d.size() && nvfp4::argmax(lv.data() + a * static_cast<size_t>(nv), nv) == d[a]) ++a;
      history.insert(history.end(), d.begin(), d.begin() + static_cast<std::ptrdiff_t>(a));
      history.push_back(nvfp4::argmax(lv.data() + a * static_cast<size_t>(nv), nv));
      seq.truncate(start + 1 + static_cast<int64_t>(a));
    }
    history.resize(static_cast<size_t>(max_len));
    EXPECT_EQ(std::vector<int32_t>(history.begin() + n, history.end()), want);
  }
  EXPECT_EQ(steps, 14);
  std::printf("dflash (z-lab layout) logits: max |diff| %.3g, max |ref| %.3g over %d rows\n", diff.max_abs, diff.max_ref, diff.positions);
  EXPECT_LE(diff.max_abs, 1e-4 * std::max(1.0, diff.max_ref)) << "max |ref| " << diff.max_ref;
  EXPECT_EQ(diff.argmax_differ, 0);
}

// --spec dflash in an integer-exact mode: the tokens of plain decoding, greedy and sampled, at one
// and two threads, for both layouts and a hybrid target; a second run on the same proposer drafts
// the same.
TEST(Dflash, SpeculationIsPlainDecoding) {
  // The last pair: a Gated DeltaNet hybrid target (recurrent layers rolled back through snapshots)
  // with the z-lab drafter (made for the Qwen3 fixture, of the same width and vocabulary).
  for (const auto& [tdir, adir] : {std::pair<std::string, std::string>{dir() + "/float", dir() + "/assistant"},
                                   {fixture_path("arch/qwen3/float"), fixture_path("dflash") + "/qwen3"},
                                   {fixture_path("hybrid/qwen3_5/float"), fixture_path("dflash") + "/qwen3"}}) {
  SCOPED_TRACE(adir);
  auto ck = Checkpoint::open(tdir);
  for (const bool sampled : {false, true}) {
    for (const int threads : {1, 2}) {
      SCOPED_TRACE(std::string(sampled ? "sampled" : "greedy") + ", threads " + std::to_string(threads));
      ThreadPool pool(threads);
      auto m = load_target(*ck, Mode::a16q8, true);
      DflashDrafter drafter(adir, *m);
      const std::vector<int32_t> prompt = {5, 17, 99, 4, 250, 31, 8, 77, 120, 3, 6, 6, 40, 41, 42, 43, 44, 45, 9};
      GenerateOptions g;
      g.n_predict = 40;
      if (sampled) {
        g.sampling.temperature = 0.8f;
        g.sampling.seed = 7;
      }
      const auto run = [&](DflashProposer* p) {
        Sequence seq(*m, 80);
        Workspace ws(*m, 16);
        GenerateOptions o = g;
        o.speculative = p != nullptr;
        o.dflash = p;
        o.backoff = false;
        o.draft_max = 3;
        return generate(*m, seq, ws, pool, prompt, o, [](int32_t) { return false; }, nullptr);
      };
      const GenerateResult plain = run(nullptr);
      DflashProposer p(drafter, 80);
      const GenerateResult spec = run(&p);
      EXPECT_EQ(spec.tokens, plain.tokens);
      EXPECT_GT(spec.drafted, 0);
      EXPECT_GT(p.evaluated(), static_cast<int64_t>(prompt.size()));
      const GenerateResult again = run(&p);
      EXPECT_EQ(again.tokens, plain.tokens);
      EXPECT_EQ(again.drafted, spec.drafted);
      EXPECT_EQ(again.accepted, spec.accepted);
    }
  }
  }
}

// serve's slots: several proposers observed and drafting in one pass give each the bits it gets alone
// (a16q8, the drafter's BF16 layers as stored and quantized at load; prompts of different lengths,
// one below the block's window and one past it).
TEST(Dflash, BatchedSlotsDraftAsEachAlone) {
  ThreadPool pool(2);
  for (const bool quantize : {false, true}) {
    SCOPED_TRACE(quantize ? "drafter quantized" : "drafter as stored");
    auto ck = Checkpoint::open(dir() + "/float");
    auto m = load_target(*ck, Mode::a16q8, true);
    DflashDrafter drafter(dir() + "/assistant", *m, quantize);
    const int64_t d = m->config().n_embd, nt = static_cast<int64_t>(drafter.taps().size());
    const std::vector<std::vector<int32_t>> hist = {{5, 17, 99, 4, 250, 31, 8, 77, 120, 3},
                                                    {7, 7, 300, 41, 2, 9, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21}};
    const auto taps_of = [&](const std::vector<int32_t>& h) {
      Sequence seq(*m, 64);
      Workspace ws(*m, 32);
      std::vector<StepToken> step;
      for (size_t t = 0; t + 1 < h.size(); ++t) step.push_back({h[t], &seq, static_cast<int64_t>(t), false});
      std::vector<float> taps(step.size() * static_cast<size_t>(nt * d));
      forward(*m, step, ws, pool, nullptr, nullptr, LayerTaps{drafter.taps(), taps.data()});
      return taps;
    };
    std::vector<std::vector<int32_t>> alone;
    std::vector<std::vector<float>> alone_logits;
    for (const auto& h : hist) {
      DflashProposer one(drafter, 64);
      const auto t = taps_of(h);
      one.observe(0, t.data(), static_cast<int64_t>(h.size()) - 1, pool);
      alone.push_back(one.propose(h, 3, pool));
      alone_logits.push_back(one.last_logits());
      EXPECT_EQ(alone.back().size(), 3u);
    }
    DflashProposer a(drafter, 64), b(drafter, 64);
    const auto ta = taps_of(hist[0]), tb = taps_of(hist[1]);
    const std::vector<DflashProposer::Observed> parts = {{&a, 0, ta.data(), static_cast<int64_t>(hist[0].size()) - 1},
                                                         {&b, 0, tb.data(), static_cast<int64_t>(hist[1].size()) - 1}};
    DflashProposer::observe(parts, pool);
    std::vector<std::vector<int32_t>> out(2);
    const std::vector<DflashProposer::Ask> asks = {{&a, hist[0], 3, &out[0]}, {&b, hist[1], 3, &out[1]}};
    DflashProposer::propose(asks, pool);
    EXPECT_EQ(out[0], alone[0]);
    EXPECT_EQ(out[1], alone[1]);
    EXPECT_EQ(a.last_logits(), alone_logits[0]);
    EXPECT_EQ(b.last_logits(), alone_logits[1]);
    // A slot that takes another's prefix (the prompt cache's copy) drafts as that one would.
    DflashProposer c(drafter, 64);
    c.copy_prefix(b, static_cast<int64_t>(hist[1].size()) - 1);
    EXPECT_EQ(c.propose(hist[1], 3, pool), alone[1]);
  }
}

// A copy of the drafter at `src` whose config.json is edited by `edit`.
std::string with_config(const std::string& src, const std::string& name, const std::function<void(nlohmann::json&)>& edit) {
  namespace fs = std::filesystem;
  const fs::path dst = fs::temp_directory_path() / ("nvfp4_dflash_" + name);
  fs::remove_all(dst);
  fs::create_directories(dst);
  for (const auto& e : fs::directory_iterator(src)) fs::copy(e.path(), dst / e.path().filename());
  std::ifstream f(dst / "config.json");
  std::stringstream ss;
  ss << f.rdbuf();
  nlohmann::json j = parse_config_json(ss.str(), "config.json");
  edit(j);
  std::ofstream(dst / "config.json", std::ios::trunc) << j.dump(1);
  return dst.string();
}

// What loading the drafter at `d` for `target` says ("" when it loads).
std::string load_error(const std::string& d, const Model& target) {
  try {
    DflashDrafter x(d, target);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Dflash, WhatIsNotItsAssistantIsRefused) {
  auto ck = Checkpoint::open(dir() + "/float");
  auto m = load_target(*ck, Mode::f32);
  const std::string a = dir() + "/assistant";
  const auto error = [&](const std::string& name, const std::function<void(nlohmann::json&)>& edit) {
    return load_error(with_config(a, name, edit), *m);
  };
  EXPECT_TRUE(is_dflash_assistant(a));
  EXPECT_FALSE(is_dflash_assistant(dir() + "/float"));
  EXPECT_NE(load_error(dir() + "/float", *m).find("model_type"), std::string::npos) << load_error(dir() + "/float", *m);
  const std::string taps = error("taps", [](nlohmann::json& j) { j["target_layer_ids"] = {1, 3, 7}; });
  EXPECT_NE(taps.find("target_layer_ids"), std::string::npos) << taps;
  const std::string width = error("width", [](nlohmann::json& j) { j["hidden_size"] = 128; });
  EXPECT_NE(width.find("hidden_size"), std::string::npos) << width;
  const std::string rope = error("rope", [](nlohmann::json& j) { j["rope_parameters"]["rope_type"] = "yarn"; });
  EXPECT_NE(rope.find("rope_type"), std::string::npos) << rope;
  const std::string kind = error("kind", [](nlohmann::json& j) { j["layer_types"][1] = "chunked_attention"; });
  EXPECT_NE(kind.find("layer_types[1]"), std::string::npos) << kind;
  const std::string layers = error("layers", [](nlohmann::json& j) {
    j["num_hidden_layers"] = 1;
    j["layer_types"] = {"sliding_attention"};
  });
  EXPECT_NE(layers.find("layers.1."), std::string::npos) << layers;  // a tensor nobody reads
  // z-lab's layout: DFlash2 (a candidate selector, convolutions) is refused by name; a drafter whose
  // taps pass the target's layers is refused by its key.
  auto qck = Checkpoint::open(fixture_path("arch/qwen3/float"));
  auto q = load_target(*qck, Mode::f32);
  const std::string z = fixture_path("dflash") + "/qwen3";
  const auto zerror = [&](const std::string& name, const std::function<void(nlohmann::json&)>& edit) {
    return load_error(with_config(z, "z_" + name, edit), *q);
  };
  EXPECT_TRUE(is_dflash_assistant(z));
  EXPECT_EQ(load_error(z, *q), "");
  const std::string v2 = zerror("v2", [](nlohmann::json& j) { j["architectures"] = {"DFlash2DraftModel"}; });
  EXPECT_NE(v2.find("candidate selector"), std::string::npos) << v2;
  const std::string far = zerror("far", [](nlohmann::json& j) { j["dflash_config"]["target_layer_ids"] = {0, 2}; });
  EXPECT_NE(far.find("target_layer_ids"), std::string::npos) << far;
  // Without target_layer_ids: dflash's own spread over num_target_layers, build_target_layer_ids(2, 2)
  // = [1, -1] here, refused by that key.
  const std::string spread = zerror("spread", [](nlohmann::json& j) { j["dflash_config"].erase("target_layer_ids"); });
  EXPECT_NE(spread.find("target_layer_ids"), std::string::npos) << spread;
}

}  // namespace
