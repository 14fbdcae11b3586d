// Our codecs against code we did not write: ml_dtypes (E2M1, E4M3FN, bfloat16) and numpy
// (float16), through the fixtures of tools/gen_codec_fixtures.py (format: fixtures/codec/README.md).
// Every decoder is compared on every code; every encoder on sweeps that hold every midpoint
// between adjacent values, the float32 neighbours on both sides of it, overflow, subnormals,
// specials and random values, both signs. Byte for byte, except where a test below names the
// documented difference (docs/FORMAT.md, "Differences from ml_dtypes"):
//   - E2M1 of -0.0: ml_dtypes keeps the sign (code 8); SPEC section 4 and ModelOpt take the sign
//     from v < 0, so ours gives code 0. (-0.1 and other negatives that round to zero: both 8.)
//   - E2M1 of NaN: the format has no NaN; ml_dtypes gives 0 or 8, ours gives 7 like ModelOpt's
//     searchsorted (NaN sorts last, NaN < 0 is false). The quantizer refuses NaN before this.
//   - float16 NaN payloads: numpy keeps a signalling NaN signalling; ours sets the quiet bit and
//     keeps sign and payload, as x86 F16C does. Non-NaN values: equal, both directions.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "fixture_manifest.h"
#include "nvfp4/codec.h"
#include "test_util.h"

using namespace nvfp4;
using test::check_against_manifest;

namespace {

const std::map<std::string, test::ManifestEntry>& manifest() {
  static const auto m = test::read_manifest("codec/manifest.txt");
  return m;
}

// Loads fixtures/codec/<key>.<ext> and checks it against the manifest.
template <typename T>
std::vector<T> load(const std::string& key, const char* ext) {
  auto v = test::read_fixture<T>("codec/" + key + "." + ext);
  check_against_manifest(manifest(), key, v);
  return v;
}

uint32_t bits(float f) { return std::bit_cast<uint32_t>(f); }
bool is_nan_bits(uint32_t b) { return (b & 0x7FFFFFFFu) > 0x7F800000u; }
float negate(float f) { return std::bit_cast<float>(bits(f) ^ 0x80000000u); }

// The midpoint sweep rule of the generator: for adjacent (a, b): a, nextafter(m, a), m,
// nextafter(m, b); positives first, then the same list negated.
std::vector<float> sweep(const std::vector<float>& pos_values, float top_next) {
  std::vector<float> out;
  for (size_t i = 0; i < pos_values.size(); ++i) {
    const float a = pos_values[i];
    const float b = i + 1 < pos_values.size() ? pos_values[i + 1] : top_next;
    const float m = static_cast<float>((static_cast<double>(a) + b) / 2);
    out.insert(out.end(), {a, std::nextafter(m, a), m, std::nextafter(m, b)});
  }
  const size_t n = out.size();
  for (size_t i = 0; i < n; ++i) out.push_back(negate(out[i]));
  return out;
}

std::vector<float> half_sweep_inputs() {
  const auto dec = load<float>("half_decode", "f32");
  return sweep(std::vector<float>(dec.begin(), dec.begin() + 0x7C00), 65536.0f);
}

std::vector<float> bf16_sweep_inputs() {
  std::vector<uint32_t> pos;
  for (uint32_t h = 0; h < 0x7F80; ++h) {
    const uint32_t m = (h << 16) + 0x8000;
    pos.insert(pos.end(), {h << 16, m - 1, m, m + 1});
  }
  std::vector<float> out;
  for (uint32_t b : pos) out.push_back(std::bit_cast<float>(b));
  for (uint32_t b : pos) out.push_back(std::bit_cast<float>(b | 0x80000000u));
  return out;
}

// Half encodings may differ from numpy only in a NaN's quiet bit (see the header comment).
void expect_half_encoding(const std::vector<float>& in, const std::vector<uint16_t>& want,
                          const char* what) {
  ASSERT_EQ(in.size(), want.size());
  size_t nan_inputs = 0, differ = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    const uint16_t got = float_to_half(in[i]);
    if (is_nan_bits(bits(in[i]))) {
      ++nan_inputs;
      ASSERT_EQ(got & 0x7C00, 0x7C00) << what << " " << i;
      ASSERT_NE(got & 0x03FF, 0) << what << " " << i;
      ASSERT_EQ(got & 0x8000, want[i] & 0x8000) << what << " " << i;
      ASSERT_NE(got & 0x0200, 0) << "ours is quiet " << i;
      if (want[i] & 0x0200) {  // numpy's NaN is quiet: the same bits
        ASSERT_EQ(got, want[i]) << what << " " << i;
      }
      differ += got != want[i];
      continue;
    }
    ASSERT_EQ(got, want[i]) << what << " input " << i << " bits 0x" << std::hex << bits(in[i]);
  }
  std::printf("[ numpy   ] float16 %s: %zu inputs, %zu NaN (%zu with a signalling-NaN "
              "difference), all others equal\n", what, in.size(), nan_inputs, differ);
}

}  // namespace

TEST(MlDtypes, ManifestListsEveryArray) {
  EXPECT_EQ(manifest().size(), 16u);
  EXPECT_EQ(manifest().at("half_decode").count, 65536u);
  EXPECT_GT(manifest().at("half_sweep_in").count, 250000u);
}

TEST(MlDtypes, E2M1DecodeEqualsForAll16Codes) {
  const auto want = load<float>("e2m1_decode", "f32");
  for (int c = 0; c < 16; ++c) EXPECT_EQ(bits(e2m1_to_float(c)), bits(want[c])) << c;
}

TEST(MlDtypes, E4M3DecodeEqualsForAll256Bytes) {
  const auto want = load<float>("e4m3_decode", "f32");
  for (int b = 0; b < 256; ++b) EXPECT_EQ(bits(e4m3_to_float(b)), bits(want[b])) << b;  // NaNs too
}

TEST(MlDtypes, HalfDecodeEqualsForAll65536Halves) {
  const auto want = load<float>("half_decode", "f32");
  int signalling = 0;
  for (uint32_t h = 0; h < 65536; ++h) {
    const uint32_t got = bits(half_to_float(static_cast<uint16_t>(h)));
    if (got != bits(want[h])) {
      // Only a signalling NaN may differ, and only by the quiet bit ours sets.
      ASSERT_TRUE(is_nan_bits(bits(want[h])) && !(bits(want[h]) & 0x00400000u)) << h;
      ASSERT_EQ(got, bits(want[h]) | 0x00400000u) << h;
      ++signalling;
    }
  }
  EXPECT_EQ(signalling, 2 * 511);  // exponent 31, quiet bit clear, payload != 0, both signs
}

TEST(MlDtypes, Bf16DecodeEqualsForAll65536Values) {
  const auto want = load<float>("bf16_decode", "f32");
  for (uint32_t b = 0; b < 65536; ++b) ASSERT_EQ(bits(bf16_to_float(b)), bits(want[b])) << b;
}

TEST(MlDtypes, E2M1EncodeEqualsOnEveryMidpointAndRandomValues) {
  const auto in = load<float>("e2m1_enc_in", "f32");
  const auto want = load<uint8_t>("e2m1_enc_out", "u8");
  ASSERT_EQ(in.size(), want.size());
  size_t compared = 0, neg_zero = 0, nans = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    const uint8_t got = float_to_e2m1(in[i]);
    if (std::isnan(in[i])) {  // documented: ours (and ModelOpt) give 7
      EXPECT_EQ(got, 7) << i;
      ++nans;
    } else if (bits(in[i]) == 0x80000000u) {  // documented: -0.0 -> +0 (sign from v < 0)
      EXPECT_EQ(want[i], 8) << i;
      EXPECT_EQ(got, 0) << i;
      ++neg_zero;
    } else {
      ASSERT_EQ(got, want[i]) << "input " << in[i] << " (index " << i << ")";
      ++compared;
    }
  }
  EXPECT_GT(neg_zero, 0u);
  EXPECT_GT(nans, 0u);
  std::printf("[ ml_dtypes ] E2M1: %zu equal, %zu -0.0 and %zu NaN inputs per SPEC\n", compared,
              neg_zero, nans);
}

TEST(MlDtypes, E2M1SpecDiffersOnlyOnNegativeZeroAndNaN) {
  // SPEC section 4: the sign comes from v < 0; ml_dtypes keeps the sign of -0.0.
  EXPECT_EQ(float_to_e2m1(-0.0f), 0);
  EXPECT_EQ(float_to_e2m1(-0.1f), 8);       // a negative that rounds to zero keeps its sign
  EXPECT_EQ(float_to_e2m1(-1e-45f), 8);
  EXPECT_EQ(float_to_e2m1(NAN), 7);
  EXPECT_EQ(float_to_e2m1(-INFINITY), 15);  // saturates like ml_dtypes
  EXPECT_EQ(float_to_e2m1(7.0f), 7);        // the midpoint to the absent 8 saturates too
}

TEST(MlDtypes, E4M3EncodeEqualsOnEveryMidpointOverflowAndRandomValues) {
  const auto in = load<float>("e4m3_enc_in", "f32");
  const auto want = load<uint8_t>("e4m3_enc_out", "u8");
  ASSERT_EQ(in.size(), want.size());
  size_t nan_out = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    ASSERT_EQ(float_to_e4m3(in[i]), want[i]) << "input " << in[i] << " (index " << i << ")";
    nan_out += e4m3_is_nan(want[i]);
  }
  EXPECT_GT(nan_out, 4u);  // overflow past 464, Inf and NaN all give NaN in both
  std::printf("[ ml_dtypes ] E4M3: %zu inputs equal (%zu encode to NaN)\n", in.size(), nan_out);
}

TEST(MlDtypes, HalfEncodeEqualsOnEveryMidpoint) {
  const auto in = half_sweep_inputs();
  check_against_manifest(manifest(), "half_sweep_in", in);
  expect_half_encoding(in, load<uint16_t>("half_sweep_out", "u16"), "sweep");
}

TEST(MlDtypes, HalfEncodeEqualsOnRandomAndSpecialValues) {
  expect_half_encoding(load<float>("half_enc_in", "f32"), load<uint16_t>("half_enc_out", "u16"),
                       "random");
}

TEST(MlDtypes, Bf16EncodeEqualsOnEveryMidpoint) {
  const auto in = bf16_sweep_inputs();
  check_against_manifest(manifest(), "bf16_sweep_in", in);
  const auto want = load<uint16_t>("bf16_sweep_out", "u16");
  for (size_t i = 0; i < in.size(); ++i) ASSERT_EQ(float_to_bf16(in[i]), want[i]) << i;
}

TEST(MlDtypes, Bf16EncodeEqualsOnRandomBitPatternsAndNaN) {
  const auto in = load<float>("bf16_enc_in", "f32");
  const auto want = load<uint16_t>("bf16_enc_out", "u16");
  size_t nans = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    ASSERT_EQ(float_to_bf16(in[i]), want[i]) << "bits 0x" << std::hex << bits(in[i]);
    nans += std::isnan(in[i]);
  }
  EXPECT_GT(nans, 4u);  // canonical quiet NaN with the input's sign, as ml_dtypes
}
