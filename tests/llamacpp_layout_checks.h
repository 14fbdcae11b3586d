// Checks shared by the tests of llama.cpp's GGUF layouts (test_hybrid_gguf.cpp,
// test_nemotron_gguf.cpp): a refusal caught, and our file's tensors against llama.cpp's own.
#pragma once
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "nvfp4/error.h"
#include "nvfp4/ggml_types.h"
#include "nvfp4/gguf.h"

namespace nvfp4::test {

// The Error `f` throws (a failure when it throws none).
template <class F>
Error refused(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "accepted";
  return Error("", "", "", "", "");
}

// Every tensor of llama.cpp's file is in ours with its shape, type and bytes (the same count);
// blk.N.ssm_a (-exp(A_log): torch's float exp there, exp in double rounded once here) within one
// ulp. Returns how many ssm_a tensors there were.
inline int expect_llamacpp_tensors(const gguf::File& theirs, const gguf::File& mine) {
  EXPECT_EQ(theirs.tensors().size(), mine.tensors().size());
  int ssm_a = 0;
  for (const auto& t : theirs.tensors()) {
    const gguf::TensorInfo* m = mine.find_tensor(t.name);
    if (!m) {
      ADD_FAILURE() << t.name << " is in llama.cpp's file, not in ours";
      continue;
    }
    EXPECT_EQ(t.ne, m->ne) << t.name;
    EXPECT_EQ(ggml_type_name(t.type), ggml_type_name(m->type)) << t.name;
    if (t.nbytes != m->nbytes) {
      ADD_FAILURE() << t.name << ": " << t.nbytes << " bytes in llama.cpp's file, " << m->nbytes << " in ours";
      continue;
    }
    if (t.name.size() > 6 && t.name.substr(t.name.size() - 6) == ".ssm_a") {
      ++ssm_a;
      for (int64_t i = 0; i < t.elements(); ++i) {
        float x, y;
        std::memcpy(&x, t.data + 4 * i, 4);
        std::memcpy(&y, m->data + 4 * i, 4);
        EXPECT_LE(std::abs(static_cast<int64_t>(std::bit_cast<uint32_t>(x)) - static_cast<int64_t>(std::bit_cast<uint32_t>(y))), 1)
            << t.name << "[" << i << "]: " << x << " vs " << y;
      }
      continue;
    }
    EXPECT_EQ(std::memcmp(t.data, m->data, static_cast<size_t>(t.nbytes)), 0) << t.name << ": bytes differ";
  }
  return ssm_a;
}

}  // namespace nvfp4::test
