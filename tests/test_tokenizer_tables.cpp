// The tokenizer's compact tables (a string pool, the vocabulary index, the merge table), and a
// bound on what a built tokenizer holds for the real SmolLM2 vocabulary.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "heap_in_use.h"
#include "nvfp4/gguf.h"
#include "nvfp4/tokenizer.h"
#include "text/tokenizer_tables.h"

using namespace nvfp4;

TEST(TokenizerTables, VocabularyFindsEveryTokenAndTheFirstOfDuplicates) {
  std::vector<std::string> tokens;
  for (int k = 0; k < 5000; ++k) tokens.push_back("t" + std::to_string(k));
  tokens.push_back("");
  tokens.push_back("t17");  // a duplicate: id 17 stays
  Vocabulary v;
  v.assign(tokens, "test");
  ASSERT_EQ(v.size(), tokens.size());
  for (int k = 0; k < 5000; ++k) {
    EXPECT_EQ(v.find(tokens[static_cast<size_t>(k)]), k);
    EXPECT_EQ(v.token(k), tokens[static_cast<size_t>(k)]);
  }
  EXPECT_EQ(v.find(""), 5000);
  EXPECT_EQ(v.find("t17"), 17);
  EXPECT_EQ(v.token(5001), "t17");
  EXPECT_EQ(v.find("t5000"), -1);
  EXPECT_EQ(v.find("t1"), 1);
  EXPECT_EQ(Vocabulary().find("x"), -1);
}

TEST(TokenizerTables, MergeTableKeepsTheFirstRankAndGrows) {
  MergeTable m;
  EXPECT_EQ(m.find(1, 2), nullptr);
  m.reserve(4);
  for (int32_t k = 0; k < 3000; ++k) m.insert(k, k + 1, k, 100000 + k);  // past the reservation
  m.insert(5, 6, 9999, 1);                                               // a later rank: ignored
  for (int32_t k = 0; k < 3000; ++k) {
    const auto* e = m.find(k, k + 1);
    ASSERT_NE(e, nullptr) << k;
    EXPECT_EQ(e->rank, k);
    EXPECT_EQ(e->id, 100000 + k);
  }
  EXPECT_EQ(m.find(6, 5), nullptr);  // order matters
  EXPECT_EQ(m.find(0, 2), nullptr);
}

TEST(TokenizerTables, SmolLM2TokenizerHoldsFewMegabytes) {
  const char* path = std::getenv("NVFP4_SMOLLM2_GGUF");
  if (!path) GTEST_SKIP() << "NVFP4_SMOLLM2_GGUF not set (scripts/test.sh sets it)";
  const auto f = gguf::File::open(path);
  const size_t before = test::heap_in_use();
  const Tokenizer tok = Tokenizer::from_gguf(f);
  const size_t held = test::heap_in_use() - before;
  ASSERT_EQ(tok.n_vocab(), 49152);
  // 49152 tokens and 48900 merges: the token strings twice (as written, decoded) with an offset
  // each, a vocabulary index of 2^17 4-byte slots and a merge table of 2^17 16-byte slots: 3.9 MB.
  // Strings in vectors and node-based maps took over 10 MB.
  EXPECT_LE(held, size_t{5} << 20) << held << " bytes";
  EXPECT_GE(held, size_t{1} << 20) << held << " bytes";  // the measure sees the build at all
}
