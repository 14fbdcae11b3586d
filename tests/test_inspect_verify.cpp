// nvfp4 inspect and nvfp4 verify: exit codes, JSON, and verify's first difference for each kind of
// change (a code, a block scale byte, a tensor scale, a missing tensor).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstring>

#include "io_test_util.h"
#include "nvfp4/convert.h"
#include "nvfp4/gguf.h"
#include "nvfp4/verify.h"
#include "test_util.h"

using namespace nvfp4;

namespace {
struct Run {
  int rc;
  std::string out;
};
Run run(const std::string& args) {
  Run r{-1, ""};
  FILE* p = ::popen((std::string(NVFP4_BINARY) + " " + args + " 2>/dev/null").c_str(), "r");
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int st = ::pclose(p);
  r.rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

// A copy of `src` with the byte at (tensor data + offset) xor'ed with `x`.
std::string patched(const test::ScratchDir& dir, const std::string& src, const std::string& tensor, int64_t offset,
                    uint8_t x, const std::string& name) {
  const auto f = gguf::File::open(src);
  auto bytes = test::file_bytes(src);
  const auto& t = f.tensor(tensor);
  bytes[static_cast<size_t>(f.data_offset() + t.offset + offset)] ^= x;
  test::write_bytes(dir / name, bytes);
  return dir / name;
}
}  // namespace

TEST(Inspect, ExitCodesAndJson) {
  // nvfp4_good.gguf holds valid NVFP4 tensors but no model (no tokenizer, no block_count): listed, then exit 1
  // because run refuses it; --no-check lists it with exit 0.
  const auto refused = run("inspect " + test::fixture_path("gguf/nvfp4_good.gguf") + " --json");
  EXPECT_EQ(refused.rc, 1);
  const auto jr = nlohmann::json::parse(refused.out);
  EXPECT_EQ(jr["check"]["ok"], false);
  EXPECT_NE(jr["check"]["error"].get<std::string>().find("missing"), std::string::npos) << refused.out;
  const auto r = run("inspect " + test::fixture_path("gguf/nvfp4_good.gguf") + " --json --no-check");
  ASSERT_EQ(r.rc, 0);
  EXPECT_EQ(nlohmann::json::parse(r.out)["check"]["made"], false);
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["algorithm"], "NVFP4");
  EXPECT_EQ(j["producer"], "llama.cpp");
  EXPECT_NE(std::find(j["modes"].begin(), j["modes"].end(), "w4a4"), j["modes"].end());
  EXPECT_EQ(j["tensors"][0]["name"], "blk.0.ffn_up.weight");
  EXPECT_EQ(j["tensors"][0]["storage"], "NVFP4");
  EXPECT_EQ(j["tensors"][0]["scale2"].get<float>(), 0.0125f);
  const auto w = run("inspect " + test::fixture_path("gguf/nvfp4_no_scale.gguf") + " --json --no-check");
  ASSERT_EQ(w.rc, 0);
  const auto jw = nlohmann::json::parse(w.out);
  EXPECT_EQ(std::find(jw["modes"].begin(), jw["modes"].end(), "w4a4"), jw["modes"].end());  // no input scales
  const auto t = run("inspect " + test::fixture_path("gguf/nvfp4_good.gguf") + " --no-check");
  EXPECT_EQ(t.rc, 0);
  EXPECT_NE(t.out.find("blk.0.ffn_up.weight"), std::string::npos);
  EXPECT_EQ(run("inspect " + test::fixture_path("gguf/bad_scale_zero.gguf")).rc, 1);
  EXPECT_EQ(run("inspect " + test::fixture_path("io/py.safetensors.missing")).rc, 2);
  EXPECT_EQ(run("inspect").rc, 2);
}

TEST(Verify, SameWeightsAndEachKindOfFirstDifference) {
  test::ScratchDir dir;
  const std::string a = dir / "a.gguf";
  convert(test::fixture_path("io/py.gguf"), a, ConvertOptions{});
  const auto same = verify_checkpoints(a, a);
  EXPECT_TRUE(same.same);
  EXPECT_EQ(same.tensors, 2);
  EXPECT_EQ(same.values, 2 * 64 + 2 * 128);
  EXPECT_EQ(run("verify " + a + " " + a).rc, 0);

  // Block 0 of row 1 of ffn_up: bytes 36..39 scales, 40.. codes. Element 0 and 8 share qs[0].
  const auto code = verify_checkpoints(a, patched(dir, a, "blk.0.ffn_up.weight", 40, 0x01, "code.gguf"));
  EXPECT_FALSE(code.same);
  EXPECT_EQ(code.difference.rfind("blk.0.ffn_up.weight: code of [1][0]", 0), 0u) << code.difference;
  const auto hi = verify_checkpoints(a, patched(dir, a, "blk.0.ffn_up.weight", 40, 0x10, "hi.gguf"));
  EXPECT_EQ(hi.difference.rfind("blk.0.ffn_up.weight: code of [1][8]", 0), 0u) << hi.difference;
  const auto scale = verify_checkpoints(a, patched(dir, a, "blk.0.ffn_up.weight", 37, 0x08, "scale.gguf"));
  EXPECT_EQ(scale.difference.rfind("blk.0.ffn_up.weight: block scale of row 1, inputs 16..31", 0), 0u) << scale.difference;
  const auto s2 = verify_checkpoints(a, patched(dir, a, "blk.0.ffn_down.scale", 0, 0x01, "s2.gguf"));
  EXPECT_EQ(s2.difference.rfind("blk.0.ffn_down.weight: tensor scale", 0), 0u) << s2.difference;
  EXPECT_EQ(run("verify " + a + " " + (dir / "s2.gguf")).rc, 1);

  // Against the source, where ffn_up is still Q8_0.
  const auto src = verify_checkpoints(a, test::fixture_path("io/py.gguf"));
  EXPECT_EQ(src.difference, "blk.0.ffn_up.weight: NVFP4 in A, Q8_0 in B");
  // A refused checkpoint is an error (exit 1), not a difference.
  EXPECT_EQ(run("verify " + a + " " + test::fixture_path("gguf/bad_byte_nan.gguf")).rc, 1);
  EXPECT_EQ(run("verify " + a).rc, 2);
}
