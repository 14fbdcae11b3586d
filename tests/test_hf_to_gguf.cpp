// HF (safetensors) directories to GGUF: metadata under llama.cpp's keys, NVFP4 repacked losslessly,
// the tokenizer writer's round trip, Llama 3 RoPE factors, and the temporaries' cleanup.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <cstring>
#include <fstream>

#include "nvfp4/arch.h"
#include "nvfp4/model.h"
#include "nvfp4/thread_pool.h"
#include "text/tokenizer_gguf_writer.h"
#include "io_test_util.h"
#include "model_path.h"
#include "nvfp4/atomic_file.h"
#include "nvfp4/checkpoint.h"
#include "nvfp4/convert.h"
#include "nvfp4/error.h"
#include "nvfp4/gguf.h"
#include "nvfp4/gguf_writer.h"
#include "nvfp4/temp_cleanup.h"
#include "nvfp4/tokenizer.h"
#include "nvfp4/verify.h"
#include "test_util.h"

using namespace nvfp4;

namespace {

int64_t meta_int(const Checkpoint& ck, const std::string& k) {
  const gguf::Value* v = ck.meta(k);
  return v ? v->as_int(k) : -1;
}

}  // namespace

TEST(HfToGguf, CheckpointListsItsMetadataKeys) {
  const auto ck = Checkpoint::open(test::fixture_path("hf/float"));
  const auto keys = ck->meta_keys();
  ASSERT_FALSE(keys.empty());
  EXPECT_EQ(keys.front(), "general.architecture");
  for (const auto& k : keys) EXPECT_NE(ck->meta(k), nullptr) << k;
  const auto g = Checkpoint::open(test::fixture_path("io/py.gguf"));
  const auto f = gguf::File::open(test::fixture_path("io/py.gguf"));
  ASSERT_EQ(g->meta_keys().size(), f.metadata().size());
  for (size_t i = 0; i < f.metadata().size(); ++i) EXPECT_EQ(g->meta_keys()[i], f.metadata()[i].first);
}

TEST(HfToGguf, EveryTinyFormConvertsWithHyperparametersAndLosslessNvfp4) {
  for (const char* form : {"float", "modelopt", "ct"}) {
    SCOPED_TRACE(form);
    test::ScratchDir dir;
    const std::string in = test::fixture_path(std::string("hf/") + form);
    const std::string out = dir.path + "/o.gguf";
    ConvertOptions opt;
    opt.verify = true;
    opt.threads = 2;
    const ConvertReport r = convert(in, out, opt);
    EXPECT_TRUE(r.verified);
    const auto src = Checkpoint::open(in);
    const auto dst = Checkpoint::open(out);
    const auto f = gguf::File::open(out);
    ASSERT_GT(f.metadata().size(), 0u);
    EXPECT_EQ(f.metadata().front().first, "general.architecture");
    EXPECT_EQ(f.get("general.architecture").as_string(), "llama");
    EXPECT_EQ(f.get("general.file_type").as_int(), 39);
    // Every hyperparameter the input presents, with the same value.
    for (const auto& k : src->meta_keys()) {
      const gguf::Value* v = f.find(k);
      ASSERT_NE(v, nullptr) << k;
      if (v->is_integer()) {
        EXPECT_EQ(v->as_int(k), src->meta(k)->as_int(k)) << k;
      } else if (v->type == gguf::ValueType::f32) {
        EXPECT_EQ(v->f, src->meta(k)->f) << k;
      }
    }
    EXPECT_EQ(meta_int(*dst, "llama.block_count"), 1);
    EXPECT_EQ(meta_int(*dst, "llama.attention.head_count_kv"), 2);
    // No tokenizer in the fixtures: llama.cpp's "no vocabulary" model.
    EXPECT_EQ(f.get("tokenizer.ggml.model").as_string(), "none");
    // Same tensors under the same names; NVFP4 bit for bit.
    EXPECT_EQ(dst->tensors().size(), src->tensors().size());
    for (const auto& e : src->tensors()) {
      ASSERT_NE(dst->find(e.name), nullptr) << e.name;
      EXPECT_EQ(dst->find(e.name)->shape, e.shape) << e.name;
    }
    if (std::string(form) != "float") {
      EXPECT_GT(r.repacked, 0);
      const VerifyResult v = verify_checkpoints(in, out);
      EXPECT_TRUE(v.same) << v.difference;
      EXPECT_EQ(v.tensors, r.repacked);
    } else {
      EXPECT_GT(r.quantized, 0);
    }
  }
}

TEST(HfToGguf, FloatKeptExactlyNormsAsF32) {
  // --keep '*': every float tensor keeps its values; matrices their type (q/k too, although their
  // rows are reordered), 1-D tensors widened to F32 as llama.cpp's converter writes them.
  test::ScratchDir dir;
  const std::string in = test::fixture_path("hf/float");
  ConvertOptions opt;
  opt.keep = {"*"};
  opt.verify = true;
  const ConvertReport r = convert(in, dir.path + "/k.gguf", opt);
  EXPECT_EQ(r.quantized + r.repacked + r.retyped, 0);
  const auto src = Checkpoint::open(in);
  const auto dst = Checkpoint::open(dir.path + "/k.gguf");
  for (const auto& e : src->tensors()) {
    const TensorEntry& o = dst->tensor(e.name);
    EXPECT_EQ(o.storage_name, e.shape.size() <= 1 ? std::string("F32") : e.storage_name) << e.name;
    EXPECT_EQ(dst->to_f32(e.name), src->to_f32(e.name)) << e.name;
  }
}

TEST(HfToGguf, TokenizerWriterRoundTrip) {
  NVFP4_REQUIRE_SMOLLM2(path);
  const auto src = gguf::File::open(path);
  const TokenizerData d = tokenizer_data_from_gguf(src);
  gguf::Writer w;
  write_tokenizer_gguf(d, w);
  const std::vector<uint8_t> bytes = w.serialize();
  const auto back = gguf::File::parse(bytes.data(), bytes.size(), "roundtrip");
  const TokenizerData e = tokenizer_data_from_gguf(back);
  EXPECT_EQ(e.model, d.model);
  EXPECT_EQ(e.pre, d.pre);
  EXPECT_EQ(e.tokens, d.tokens);
  EXPECT_EQ(e.token_types, d.token_types);
  EXPECT_EQ(e.merges, d.merges);
  EXPECT_EQ(e.bos, d.bos);
  EXPECT_EQ(e.eos, d.eos);
  EXPECT_EQ(e.pad, d.pad);
  EXPECT_EQ(e.unk, d.unk);
  EXPECT_EQ(e.add_bos, d.add_bos);
  EXPECT_EQ(e.chat_template, d.chat_template);
  EXPECT_GT(e.tokens.size(), 40000u);
  EXPECT_FALSE(e.merges.empty());
  // Each key has the type llama.cpp's loader (and gguf-py's writer) uses.
  for (const char* k : {"tokenizer.ggml.tokens", "tokenizer.ggml.merges", "tokenizer.ggml.token_type"}) {
    EXPECT_EQ(back.get(k).type, src.get(k).type) << k;
    EXPECT_EQ(back.get(k).arr.elem_type(), src.get(k).arr.elem_type()) << k;
  }
  EXPECT_EQ(back.get("tokenizer.ggml.bos_token_id").type, gguf::ValueType::u32);
  // The same encoding from both.
  const Tokenizer a = Tokenizer::from_gguf(src), b = Tokenizer::from_gguf(back);
  const std::string text = "Hello, world! <|im_start|>user\nÜber 123 tokens";
  EXPECT_EQ(a.encode(text), b.encode(text));
}

TEST(HfToGguf, HfTokenizersThroughGgufKeysGiveTheOracleIds) {
  // Each HF tokenizer fixture (tokenizer.json + config) written as GGUF keys and read back encodes
  // every text as HF `tokenizers` did (ids.json), or is refused by the writer, by name.
  namespace fs = std::filesystem;
  size_t written = 0;
  for (const auto& e : fs::directory_iterator(test::fixture_path("tokenizers"))) {
    if (!e.is_directory() || !fs::exists(e.path() / "ids.json")) continue;
    SCOPED_TRACE(e.path().string());
    const TokenizerData d = tokenizer_data_from_hf(e.path().string());
    gguf::Writer w;
    try {
      write_tokenizer_gguf(d, w);
    } catch (const Error& err) {
      std::printf("[ gguf keys ] %s refused: %s\n", e.path().filename().c_str(), err.what());
      continue;
    }
    const std::vector<uint8_t> bytes = w.serialize();
    const auto f = gguf::File::parse(bytes.data(), bytes.size(), "keys");
    const Tokenizer tok = Tokenizer::from_gguf(f);
    std::ifstream in(e.path() / "ids.json");
    const auto j = nlohmann::json::parse(in);
    size_t compared = 0;
    for (const auto& c : j["cases"]) {
      const std::string text = c["text"];
      // NFC (Qwen) is not kept in GGUF: compare the ASCII texts there (NFC leaves them alone).
      if (d.nfc && !std::all_of(text.begin(), text.end(), [](char ch) { return static_cast<unsigned char>(ch) < 128; })) continue;
      EXPECT_EQ(tok.encode(text), c["ids"].get<std::vector<int32_t>>()) << text;
      ++compared;
    }
    EXPECT_GT(compared, 10u);
    ++written;
  }
  EXPECT_GE(written, 3u);  // smollm2, llama3.2, qwen3 (byte-level BPE)
}

TEST(HfToGguf, TokenizerWriterRefusesWhatTheRuntimeRefuses) {
  TokenizerData d;
  d.tokens = {"a", "b"};
  d.merges = {"a c"};  // c is not in the vocabulary
  d.source = "bad";
  gguf::Writer w;
  EXPECT_THROW(write_tokenizer_gguf(d, w), Error);
  EXPECT_EQ(w.find("tokenizer.ggml.model"), nullptr);
}

TEST(HfToGguf, TokenizerFromAGgufFileMustFitTheEmbedding) {
  // --tokenizer: the tokenizer keys come from the named GGUF.
  test::ScratchDir dir;
  ConvertOptions opt;
  opt.tokenizer = test::fixture_path("hf/tokenizer32.gguf");
  convert(test::fixture_path("hf/modelopt"), dir.path + "/t.gguf", opt);
  const auto f = gguf::File::open(dir.path + "/t.gguf");
  const auto t = gguf::File::open(opt.tokenizer);
  ASSERT_EQ(f.get("tokenizer.ggml.tokens").arr.size(), 32u);
  for (size_t i = 0; i < 32; ++i) EXPECT_EQ(f.get("tokenizer.ggml.tokens").arr.str(i), t.get("tokenizer.ggml.tokens").arr.str(i));
  EXPECT_EQ(f.get("tokenizer.ggml.merges").arr.size(), t.get("tokenizer.ggml.merges").arr.size());
  const auto ck = Checkpoint::open(dir.path + "/t.gguf");
  const Tokenizer tok = Tokenizer::from_checkpoint(*ck);
  EXPECT_EQ(tok.encode("ab a"), (std::vector<int32_t>{30, 31}));  // the merges "a b" and "Ġ a"
  // A tokenizer larger than the embedding (SmolLM2's 49152 tokens on a 32-row model) is refused.
  NVFP4_REQUIRE_SMOLLM2(path);
  opt.tokenizer = path;
  try {
    convert(test::fixture_path("hf/modelopt"), dir.path + "/u.gguf", opt);
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("49152"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(test::exists(dir.path + "/u.gguf"));
}

TEST(HfToGguf, Llama3RopeScalingWritesRopeFreqs) {
  test::ScratchDir dir;
  const std::string d = dir.path + "/m";
  std::filesystem::create_directories(d);
  std::filesystem::copy_file(test::fixture_path("hf/float/model.safetensors"), d + "/model.safetensors");
  {
    std::ifstream in(test::fixture_path("hf/float/config.json"));
    auto j = nlohmann::json::parse(in);
    j["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", 32.0}, {"low_freq_factor", 1.0},
                         {"high_freq_factor", 4.0}, {"original_max_position_embeddings", 64}};
    std::ofstream(d + "/config.json") << j.dump();
  }
  ConvertOptions opt;
  opt.verify = true;
  opt.keep = {"*"};  // float, so that both models compute the same
  convert(d, dir.path + "/r.gguf", opt);
  const auto f = gguf::File::open(dir.path + "/r.gguf");
  EXPECT_EQ(f.tensors().front().name, "rope_freqs.weight");
  const gguf::TensorInfo& t = f.tensor("rope_freqs.weight");
  ASSERT_EQ(t.ne, std::vector<int64_t>{8});  // head_dim 16 / 2
  std::vector<float> got(8);
  std::memcpy(got.data(), t.data, 32);
  EXPECT_EQ(got, rope_freq_factors_llama3(16, 10000.0, 32.0, 1.0, 4.0, 64.0));
  EXPECT_NE(got.front(), got.back());
  // llama.cpp's form: no rope.scaling keys beside the tensor.
  for (const auto& [k, v] : f.metadata()) EXPECT_EQ(k.find("rope.scaling"), std::string::npos) << k;
  // Our runtime computes the same from the HF directory (metadata) and from the GGUF (tensor).
  const auto hf = Checkpoint::open(d);
  const auto gg = Checkpoint::open(dir.path + "/r.gguf");
  LoadOptions lo;
  lo.mode = Mode::f32;
  const auto m1 = Model::load(*hf, lo);
  const auto m2 = Model::load(*gg, lo);
  ThreadPool pool(1);
  ContextOptions co;
  co.n_ctx = 128;
  Context c1(*m1, co, pool), c2(*m2, co, pool);
  std::vector<int32_t> ids;
  for (int i = 0; i < 100; ++i) ids.push_back((i * 7 + 3) % 32);  // past original_max_position_embeddings = 64
  std::vector<float> l1(32 * ids.size()), l2(32 * ids.size());
  c1.eval(ids.data(), static_cast<int64_t>(ids.size()), l1.data(), true);
  c2.eval(ids.data(), static_cast<int64_t>(ids.size()), l2.data(), true);
  EXPECT_EQ(l1, l2);
  std::filesystem::remove_all(d);
}

TEST(TempCleanup, StaleTemporariesRemovedLiveOnesKept) {
  test::ScratchDir dir;
  const std::string target = dir.path + "/out.gguf";
  std::ofstream(dir.path + "/.tmp-AbC123-out.gguf") << "x";        // a killed AtomicFile's
  std::ofstream(dir.path + "/.tmp-AbC123-other.gguf") << "x";      // another target's
  std::ofstream(dir.path + "/.tmp-AbC12-out.gguf") << "x";         // not our pattern
  std::filesystem::create_directories(dir.path + "/.tmp-out.gguf-xY9zQ1");  // a killed directory write
  std::ofstream(dir.path + "/.tmp-out.gguf-xY9zQ1/model.safetensors") << "x";
  {
    AtomicFile live(target);  // a write in progress: locked
    const auto s = remove_stale_temporaries(target);
    ASSERT_EQ(s.size(), 3u);
    int removed = 0;
    for (const auto& t : s) {
      if (t.path == live.temp_path()) {
        EXPECT_FALSE(t.removed);
      } else {
        EXPECT_TRUE(t.removed) << t.path;
        ++removed;
      }
    }
    EXPECT_EQ(removed, 2);
    EXPECT_TRUE(test::exists(live.temp_path()));
  }
  auto e = dir.entries();
  std::sort(e.begin(), e.end());
  EXPECT_EQ(e, (std::vector<std::string>{".tmp-AbC12-out.gguf", ".tmp-AbC123-other.gguf"}));
}
