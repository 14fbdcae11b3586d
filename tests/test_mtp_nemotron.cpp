// Nemotron 3's multi-token-prediction (MTP) module (issues 35 and 34): one step of the layers
// mtp_hybrid_override_pattern names ("*E": attention, then MoE), the first holding enorm / hnorm /
// eh_proj, the last final_layernorm (vLLM's nemotron_h_mtp.py). On a Super-shaped release with
// its MTP layers (fixtures/nemotron_h/nemotron3_latent/float-mtp, tools/gen_nemotron_mtp.py): the
// names read, the logits against a float32 reference composed from transformers' own NemotronH
// blocks, `--spec mtp` giving the tokens of plain decoding through the Mamba-2 layers' snapshots,
// and what the engine does not run refused by the config key.
#include <filesystem>
#include <functional>
#include <sstream>

#include "io/json_config.h"
#include "mtp_checks.h"
#include "nvfp4/safetensors.h"

using namespace nvfp4;
using namespace nvfp4::test;

namespace {

std::string arch_dir() { return fixture_path("nemotron_h") + "/nemotron3_latent"; }
std::string mtp_dir() { return arch_dir() + "/float-mtp"; }

// A copy of float-mtp whose config.json is edited by `edit`.
std::string with_config(const std::string& name, const std::function<void(nlohmann::json&)>& edit) {
  namespace fs = std::filesystem;
  const fs::path dst = fs::temp_directory_path() / ("nvfp4_nemotron_mtp_" + name);
  fs::remove_all(dst);
  fs::create_directories(dst);
  for (const auto& e : fs::directory_iterator(mtp_dir())) fs::copy(e.path(), dst / e.path().filename());
  std::ifstream f(dst / "config.json");
  std::stringstream ss;
  ss << f.rdbuf();
  nlohmann::json j = parse_config_json(ss.str(), "config.json");
  j["time_step_limit"][1] = 1e30;  // (json::dump writes an infinity as null)
  edit(j);
  std::ofstream(dst / "config.json", std::ios::trunc) << j.dump(1);
  return dst.string();
}

std::string load_error(const std::string& dir) {
  try {
    auto ck = open_mtp(dir);
    load_mtp(*ck, Mode::f32);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(NemotronMtp, ReadAsTheModuleOnlyWhenAsked) {
  auto plain = Checkpoint::open(mtp_dir());
  ASSERT_EQ(plain->info().set_aside.size(), 1u);
  EXPECT_NE(plain->info().set_aside[0].find("mtp."), std::string::npos) << plain->info().set_aside[0];
  EXPECT_EQ(plain->find("blk.6.nextn.eh_proj.weight"), nullptr);
  auto ck = open_mtp(mtp_dir());
  EXPECT_TRUE(ck->info().set_aside.empty());
  // The first MTP layer (block 6 after the trunk's 6) holds the input side and the attention, the
  // second (block 7) the MoE layer and the final norm.
  for (const char* n : {"blk.6.nextn.eh_proj.weight", "blk.6.nextn.enorm.weight", "blk.6.nextn.hnorm.weight", "blk.6.attn_q.weight",
                        "blk.6.attn_norm.weight", "blk.7.nextn.shared_head_norm.weight", "blk.7.ffn_up_exps.3.weight",
                        "blk.7.ffn_latent_in.weight", "blk.7.ffn_gate_inp.e_score_correction_bias", "blk.7.attn_norm.weight"}) {
    const TensorEntry* e = ck->find(n);
    ASSERT_NE(e, nullptr) << n;
    EXPECT_EQ(e->storage, Storage::bf16) << n;  // its own storage, as the file holds it
  }
  LoadOptions lo;
  lo.mode = Mode::f32;
  EXPECT_THROW(Model::load(*ck, lo), Error);  // the trunk alone: the module's tensors unread
  auto m = load_mtp(*ck, Mode::f32);
  ASSERT_NE(m->mtp(), nullptr);
  EXPECT_EQ(m->mtp()->config().n_layer, 2);
  EXPECT_EQ(m->mtp()->config().pattern, "*E");
  EXPECT_EQ(m->config().n_layer, 6);
  bool listed = false;
  for (const std::string& s : m->describe()) listed |= s.find("MTP module: 2 layers (*E)") != std::string::npos;
  EXPECT_TRUE(listed);
  // The trunk without --spec mtp: its logits are the float fixture's (the module changes nothing).
  auto f = Checkpoint::open(arch_dir() + "/float");
  auto a = load_in(*f, Mode::f32), b = load_in(*plain, Mode::f32);
  ThreadPool pool(2);
  const std::vector<int32_t> ids = {5, 17, 99, 4, 250};
  EXPECT_EQ(eval_all(*a, ids, pool), eval_all(*b, ids, pool));
}

TEST(NemotronMtp, F32LogitsMatchTheReference) {
  ThreadPool pool(2);
  const Diff diff = mtp_f32_diff(arch_dir(), mtp_dir(), pool);
  std::printf("nemotron3_latent MTP f32 vs reference: max |diff| %.3g (|logit| <= %.3g), argmax differs %d/%d\n", diff.max_abs, diff.max_ref,
              diff.argmax_differ, diff.argmax_checked);
  EXPECT_LE(diff.max_abs, 5e-5);
  EXPECT_EQ(diff.argmax_differ, 0);
  EXPECT_GT(diff.max_ref, 0.1);
  EXPECT_EQ(diff.positions, 4 + 16 + 39);
}

TEST(NemotronMtp, SpeculationGivesThePlainTokens) { expect_mtp_speculation_is_plain(mtp_dir()); }

// serve's one MTP step for every slot: each slot's drafts as it gets them alone.
TEST(NemotronMtp, BatchedSlotsDraftAsEachAlone) { expect_batched_slots_draft_as_each_alone(mtp_dir()); }

// As NVIDIA ships Nemotron 3 Super: the trunk mixed precision (ModelOpt MIXED_PRECISION: FP8
// Mamba, attention and shared-expert linears, NVFP4 routed experts), the MTP layers BF16 beside
// it, not in quantized_layers. Each read in its own storage; --spec mtp gives the plain tokens.
TEST(NemotronMtp, MixedReleaseKeepsItsBf16MtpLayers) {
  namespace fs = std::filesystem;
  const fs::path src = fixture_path("mixed") + "/nemotron_h_latent/modelopt-mixed", dst = fs::temp_directory_path() / "nvfp4_nemotron_mtp_mixed";
  fs::remove_all(dst);
  fs::create_directories(dst);
  for (const auto& e : fs::directory_iterator(src))
    if (e.path().filename() != "model.safetensors" && e.path().filename() != "config.json") fs::copy(e.path(), dst / e.path().filename());
  {
    std::ifstream f(src / "config.json");
    std::stringstream ss;
    ss << f.rdbuf();
    nlohmann::json j = parse_config_json(ss.str(), "config.json");
    if (j.contains("time_step_limit")) j["time_step_limit"][1] = 1e30;
    j["num_nextn_predict_layers"] = 1;
    j["mtp_hybrid_override_pattern"] = "*E";
    std::ofstream(dst / "config.json") << j.dump(1);
  }
  const auto trunk = safetensors::File::open((src / "model.safetensors").string());
  const auto mtp = safetensors::File::open(mtp_dir() + "/model.safetensors");
  std::vector<safetensors::WriteTensor> ts;
  for (const auto& t : trunk.tensors()) ts.push_back({t.name, t.dtype, t.shape, t.data, static_cast<size_t>(t.nbytes())});
  int n_mtp = 0;
  for (const auto& t : mtp.tensors())
    if (t.name.rfind("mtp.", 0) == 0) {
      ts.push_back({t.name, t.dtype, t.shape, t.data, static_cast<size_t>(t.nbytes())});
      ++n_mtp;
    }
  ASSERT_GT(n_mtp, 20);
  safetensors::write((dst / "model.safetensors").string(), ts);
  auto ck = open_mtp(dst.string());
  EXPECT_EQ(ck->find("blk.6.attn_q.weight")->storage, Storage::bf16);
  EXPECT_EQ(ck->find("blk.7.ffn_up_exps.0.weight")->storage, Storage::bf16);
  auto m = load_mtp(*ck, Mode::a16q8);
  bool listed = false;
  for (const std::string& s : m->describe()) listed |= s.find("MTP module: 2 layers (*E) of the nemotron_h block, 0 NVFP4 and 25 float") != std::string::npos;
  EXPECT_TRUE(listed);
  expect_mtp_speculation_is_plain(dst.string(), false);
}

// transformers 5's spelling of the module's layers (mtp_layers_block_type) reads the same.
TEST(NemotronMtp, LayersBlockTypeSpellingReadsTheSame) {
  const std::string dir = with_config("block_type", [](nlohmann::json& j) {
    j.erase("mtp_hybrid_override_pattern");
    j["mtp_layers_block_type"] = {"attention", "moe"};
  });
  auto ck = open_mtp(dir);
  auto m = load_mtp(*ck, Mode::f32);
  EXPECT_EQ(m->mtp()->config().pattern, "*E");
}

TEST(NemotronMtp, WhatItDoesNotRunIsRefusedByTheKey) {
  std::string w = load_error(with_config("steps", [](nlohmann::json& j) { j["num_nextn_predict_layers"] = 2; }));
  EXPECT_NE(w.find("num_nextn_predict_layers"), std::string::npos) << w;
  w = load_error(with_config("mamba", [](nlohmann::json& j) { j["mtp_hybrid_override_pattern"] = "*M"; }));
  EXPECT_NE(w.find("mtp_hybrid_override_pattern[1]"), std::string::npos) << w;
  w = load_error(with_config("short", [](nlohmann::json& j) { j["mtp_hybrid_override_pattern"] = "*"; }));
  EXPECT_NE(w.find("nextn_predict_layers"), std::string::npos) << w;
  EXPECT_NE(w.find("\"*\""), std::string::npos) << w;
  // The kinds swapped: the first layer read as a MoE layer, its router missing under the file's name.
  w = load_error(with_config("swapped", [](nlohmann::json& j) { j["mtp_hybrid_override_pattern"] = "E*"; }));
  EXPECT_NE(w.find("mtp.layers.0.mixer.gate.weight"), std::string::npos) << w;
  // The trunk of each still runs without --spec mtp.
  auto ck = Checkpoint::open(with_config("mamba2", [](nlohmann::json& j) { j["mtp_hybrid_override_pattern"] = "*M"; }));
  EXPECT_NO_THROW(load_in(*ck, Mode::f32));
  // A checkpoint without MTP layers refuses --spec mtp by name.
  auto none = open_mtp(arch_dir() + "/float");
  w = "";
  try {
    load_mtp(*none, Mode::f32);
  } catch (const Error& e) {
    w = e.what();
  }
  EXPECT_NE(w.find("mtp.layers.0.eh_proj"), std::string::npos) << w;
}

}  // namespace
