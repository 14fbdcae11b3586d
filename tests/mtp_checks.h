// Shared by tests/test_mtp*.cpp: a checkpoint's MTP module (LoadOptions::mtp) against the float32
// reference logits its generator wrote (mtp_logits.json + mtp_logits.f32: tools/gen_mtp_reference.py,
// tools/gen_nemotron_mtp.py), and `--spec mtp` giving the tokens of plain decoding.
#pragma once
#include <cstring>
#include <fstream>

#include "arch_fixtures.h"
#include "nvfp4/generate.h"
#include "nvfp4/mtp_draft.h"

namespace nvfp4::test {

inline std::unique_ptr<Checkpoint> open_mtp(const std::string& dir) {
  Checkpoint::OpenOptions o;
  o.mtp = true;
  return Checkpoint::open(dir, o);
}

inline std::unique_ptr<Model> load_mtp(const Checkpoint& ck, Mode mode, bool quantize = false) {
  LoadOptions lo;
  lo.mode = mode;
  lo.quantize = quantize;
  lo.mtp = true;
  return Model::load(ck, lo);
}

// The module's logits at every position of each prompt of ref_dir/mtp_logits.json, from the
// checkpoint at src: the trunk's final-normed hidden states (forward(..., hidden)) with the next
// token, one MTP step over the prompt.
inline Diff mtp_f32_diff(const std::string& ref_dir, const std::string& src, ThreadPool& pool) {
  std::ifstream jf(ref_dir + "/mtp_logits.json");
  EXPECT_TRUE(jf) << ref_dir << "/mtp_logits.json";
  const nlohmann::json j = nlohmann::json::parse(jf);
  std::ifstream bf(ref_dir + "/mtp_logits.f32", std::ios::binary);
  std::vector<char> raw((std::istreambuf_iterator<char>(bf)), std::istreambuf_iterator<char>());
  std::vector<float> ref(raw.size() / 4);
  std::memcpy(ref.data(), raw.data(), ref.size() * 4);
  auto ck = open_mtp(src);
  auto m = load_mtp(*ck, Mode::f32);
  const Model& mtp = *m->mtp();
  const int64_t nv = m->config().n_vocab, d = m->config().n_embd;
  EXPECT_EQ(nv, j["n_vocab"].get<int64_t>());
  Diff diff;
  for (const auto& p : j["prompts"]) {
    const auto ids = p["ids"].get<std::vector<int32_t>>();
    const int64_t n = static_cast<int64_t>(ids.size()), rows = p["rows"].get<int64_t>();
    EXPECT_EQ(rows, n - 1);
    Sequence seq(*m, 64);
    Workspace ws(*m, 64);
    std::vector<StepToken> step;
    for (int64_t t = 0; t < n; ++t) step.push_back({ids[static_cast<size_t>(t)], &seq, t, false});
    std::vector<float> hidden(static_cast<size_t>(n * d));
    forward(*m, step, ws, pool, nullptr, hidden.data());
    Sequence mseq(mtp, 64);
    Workspace mws(mtp, 64);
    step.clear();
    for (int64_t t = 0; t + 1 < n; ++t) step.push_back({ids[static_cast<size_t>(t + 1)], &mseq, t, true});
    std::vector<float> logits(static_cast<size_t>(rows * nv));
    forward_mtp(mtp, step, hidden.data(), mws, pool, logits.data(), nullptr);
    EXPECT_LE(p["offset"].get<size_t>() + static_cast<size_t>(rows * nv), ref.size());
    diff.add(logits.data(), ref.data() + p["offset"].get<size_t>(), static_cast<size_t>(rows), nv);
  }
  return diff;
}

// --spec mtp in an integer-exact mode (a16q8; quantize: the float weights quantized at load): the
// tokens of plain decoding, greedy and sampled, at one and two threads, the drafts' rejections
// rolled back through the sequence's snapshots; a second run on the same proposer drafts the same.
inline void expect_mtp_speculation_is_plain(const std::string& src, bool quantize = true) {
  auto ck = open_mtp(src);
  for (const bool sampled : {false, true}) {
    for (const int threads : {1, 2}) {
      SCOPED_TRACE(std::string(sampled ? "sampled" : "greedy") + ", threads " + std::to_string(threads));
      ThreadPool pool(threads);
      auto m = load_mtp(*ck, Mode::a16q8, quantize);
      const std::vector<int32_t> prompt = {5, 17, 99, 4, 250, 31, 8, 77, 120, 3};
      GenerateOptions g;
      g.n_predict = 40;
      if (sampled) {
        g.sampling.temperature = 0.8f;
        g.sampling.seed = 7;
      }
      const auto run = [&](MtpProposer* mtp) {
        Sequence seq(*m, 64);
        Workspace ws(*m, 16);
        GenerateOptions o = g;
        o.speculative = mtp != nullptr;
        o.mtp = mtp;
        o.backoff = false;
        o.draft_max = 3;
        return generate(*m, seq, ws, pool, prompt, o, [](int32_t) { return false; }, nullptr);
      };
      const GenerateResult plain = run(nullptr);
      MtpProposer p(*m, 64, 16);
      const GenerateResult spec = run(&p);
      EXPECT_EQ(spec.tokens, plain.tokens);
      EXPECT_GT(spec.drafted, 0);
      EXPECT_GT(p.evaluated(), static_cast<int64_t>(prompt.size()) - 2);
      const GenerateResult again = run(&p);
      EXPECT_EQ(again.tokens, plain.tokens);
      EXPECT_EQ(again.drafted, spec.drafted);
      EXPECT_EQ(again.accepted, spec.accepted);
    }
  }
}

// serve drafts for all its slots in one MTP step (catch-up and every chained draft): the drafts
// are those each slot gets alone (a row's result does not depend on its step, in a16q8), and a
// slot that takes another's prefix (the prompt cache's copy) drafts as that one would.
inline void expect_batched_slots_draft_as_each_alone(const std::string& src) {
  ThreadPool pool(2);
  auto ck = open_mtp(src);
  auto m = load_mtp(*ck, Mode::a16q8, true);
  const int64_t d = m->config().n_embd;
  const std::vector<std::vector<int32_t>> hist = {{5, 17, 99, 4, 250, 31, 8, 77, 120, 3}, {7, 7, 300, 41, 2, 9}};
  // The trunk's rows of each history but its last token (which the trunk runs next).
  const auto rows_of = [&](const std::vector<int32_t>& h) {
    Sequence seq(*m, 64);
    Workspace ws(*m, 16);
    std::vector<StepToken> step;
    for (size_t t = 0; t + 1 < h.size(); ++t) step.push_back({h[t], &seq, static_cast<int64_t>(t), false});
    std::vector<float> hidden(step.size() * static_cast<size_t>(d));
    forward(*m, step, ws, pool, nullptr, hidden.data());
    return hidden;
  };
  std::vector<std::vector<int32_t>> alone;
  for (const auto& h : hist) {
    MtpProposer one(*m, 64, 4);  // catch-up in steps of 4: several per history
    const auto r = rows_of(h);
    one.observe(0, r.data(), static_cast<int64_t>(h.size()) - 1);
    alone.push_back(one.propose(h, 4, pool));
    EXPECT_EQ(alone.back().size(), 4u);
  }
  MtpProposer both(*m, 64, 4, KvType::f32, 2);
  std::vector<std::vector<int32_t>> out(2);
  std::vector<MtpProposer::Ask> asks;
  for (int s = 0; s < 2; ++s) {
    const auto r = rows_of(hist[static_cast<size_t>(s)]);
    both.observe(s, 0, r.data(), static_cast<int64_t>(hist[static_cast<size_t>(s)].size()) - 1);
    asks.push_back({s, hist[static_cast<size_t>(s)], 4, &out[static_cast<size_t>(s)]});
  }
  both.propose(asks, pool);
  EXPECT_EQ(out[0], alone[0]);
  EXPECT_EQ(out[1], alone[1]);
  // Slot 1 takes slot 0's first 8 positions, then slot 0's history: slot 0's drafts.
  both.copy_prefix(1, 0, 8);
  const auto r0 = rows_of(hist[0]);
  both.observe(1, 8, r0.data() + 8 * d, static_cast<int64_t>(hist[0].size()) - 9);
  EXPECT_EQ(both.propose(hist[0], 4, pool).size(), 4u);  // slot 0, run again
  std::vector<int32_t> copied;
  const MtpProposer::Ask a{1, hist[0], 4, &copied};
  both.propose(std::span<const MtpProposer::Ask>(&a, 1), pool);
  EXPECT_EQ(copied, alone[0]);
}

}  // namespace nvfp4::test
