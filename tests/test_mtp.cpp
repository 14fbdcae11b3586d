// The checkpoint's multi-token-prediction (MTP) layers (issue 35): loaded in their own storage
// from the releases' layout (fixtures/hybrid/<arch>/float-vlm: mtp.* beside the text model),
// their logits against a float32 reference composed from transformers' own Qwen3.5 pieces
// (tools/gen_mtp_reference.py), and `--spec mtp` giving the tokens of plain decoding.
#include "mtp_checks.h"

using namespace nvfp4;
using namespace nvfp4::test;

namespace {

constexpr double kF32Bound = 5e-5;

std::string vlm_dir(const std::string& arch) { return fixture_path("hybrid") + "/" + arch + "/float-vlm"; }

class Mtp : public ::testing::TestWithParam<std::string> {
 protected:
  ThreadPool pool_{2};
};

TEST_P(Mtp, ReadInsteadOfSetAsideOnlyWhenAsked) {
  auto plain = Checkpoint::open(vlm_dir(GetParam()));
  ASSERT_EQ(plain->info().set_aside.size(), 2u);
  EXPECT_EQ(plain->find("blk.4.nextn.eh_proj.weight"), nullptr);
  auto ck = open_mtp(vlm_dir(GetParam()));
  ASSERT_EQ(ck->info().set_aside.size(), 1u);  // the vision tower only
  EXPECT_NE(ck->info().set_aside[0].find("model.visual."), std::string::npos);
  for (const char* n : {"blk.4.nextn.eh_proj.weight", "blk.4.nextn.enorm.weight", "blk.4.nextn.hnorm.weight",
                        "blk.4.nextn.shared_head_norm.weight", "blk.4.attn_q.weight", "blk.4.attn_norm.weight"}) {
    const TensorEntry* e = ck->find(n);
    ASSERT_NE(e, nullptr) << n;
    EXPECT_EQ(e->storage, Storage::bf16) << n;  // its own storage, as the file holds it
  }
  // Opened with its MTP layers, the trunk alone refuses them as unread; with LoadOptions::mtp
  // they are the module.
  LoadOptions lo;
  lo.mode = Mode::f32;
  EXPECT_THROW(Model::load(*ck, lo), Error);
  auto m = load_mtp(*ck, Mode::f32);
  ASSERT_NE(m->mtp(), nullptr);
  EXPECT_EQ(m->mtp()->config().n_layer, 1);
}

TEST_P(Mtp, WithoutMtpLayersSpecMtpIsRefusedByName) {
  auto ck = open_mtp(fixture_path("hybrid") + "/" + GetParam() + "/float");
  try {
    load_mtp(*ck, Mode::f32);
    FAIL() << "loaded an MTP module from a checkpoint without one";
  } catch (const Error& e) {
    const std::string w = e.what();
    EXPECT_NE(w.find("nextn.eh_proj"), std::string::npos) << w;
    EXPECT_NE(w.find("mtp.fc"), std::string::npos) << w;
  }
  auto m = load_in(*ck, Mode::f32);
  EXPECT_THROW(MtpProposer(*m, 32), Error);
}

// The module's logits at every position of each prompt: the trunk's final-normed hidden states
// (forward(..., hidden)) with the next token, one MTP step over the prompt.
TEST_P(Mtp, F32LogitsMatchTheReference) {
  const std::string dir = fixture_path("hybrid") + "/" + GetParam();
  // The release's layout, and llama.cpp's conversion of it (its MTP block appended as blk.4 with
  // nextn.* tensors and the zero-centred norms' 1 added).
  std::vector<std::string> sources = {vlm_dir(GetParam())};
  if (GetParam() == "qwen3_5") sources.push_back(dir + "/llamacpp-float-vlm.gguf");
  for (const std::string& src : sources) {
    SCOPED_TRACE(src);
    const Diff diff = mtp_f32_diff(dir, src, pool_);
    std::printf("%s MTP f32 vs reference: max |diff| %.3g (|logit| <= %.3g), argmax differs %d/%d\n", GetParam().c_str(), diff.max_abs,
                diff.max_ref, diff.argmax_differ, diff.argmax_checked);
    EXPECT_LE(diff.max_abs, kF32Bound);
    EXPECT_EQ(diff.argmax_differ, 0);
    EXPECT_GT(diff.max_ref, 0.1);
  }
}

// --spec mtp in the integer-exact modes: the tokens of plain decoding, greedy and sampled, at one
// and two threads, with the drafts' rejections rolled back through the recurrent snapshots.
TEST_P(Mtp, SpeculationGivesThePlainTokens) { expect_mtp_speculation_is_plain(vlm_dir(GetParam())); }

// serve drafts for all its slots in one MTP step (catch-up and every chained draft): the drafts
// are those each slot gets alone, and a slot that takes another's prefix drafts as that one would.
TEST_P(Mtp, BatchedSlotsDraftAsEachAlone) { expect_batched_slots_draft_as_each_alone(vlm_dir(GetParam())); }

INSTANTIATE_TEST_SUITE_P(Hybrid, Mtp, ::testing::Values("qwen3_5", "qwen3_5_moe"),
                         [](const auto& i) { return i.param; });

}  // namespace
