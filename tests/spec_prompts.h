// The prompts of the speculative identity tests (test_generate.cpp, test_draft.cpp): 10 bases
// (code to edit, text to quote, chat, lists) times 5 endings; lookup pays on most of them.
#pragma once
#include <string>
#include <vector>

namespace nvfp4::test {

inline std::vector<std::string> spec_prompts() {
  const char* bases[] = {
      "def add(a, b):\n    return a + b\n\ndef sub(a, b):\n    return a - b\n",
      "The quick brown fox jumps over the lazy dog. The quick brown fox",
      "for (int i = 0; i < n; ++i) {\n  sum += x[i];\n}\nfor (int i = 0; i < n; ++i) {\n",
      "Paris is the capital of France. Berlin is the capital of Germany. Rome is the capital of",
      "<|im_start|>user\nRepeat after me: one two three four five<|im_end|>\n<|im_start|>assistant\n",
      "SELECT name, age FROM users WHERE age > 30; SELECT name, age FROM",
      "import numpy as np\nimport numpy as np\nx = np.zeros(3)\ny = np.zeros(",
      "Quote the text: \"To be, or not to be, that is the question.\" The quote: \"To be,",
      "1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12,",
      "red green blue red green blue red green",
  };
  std::vector<std::string> out;
  const char* suffixes[] = {"", " ", "\n", " Again:", " And then"};
  for (const char* s : suffixes)
    for (const char* b : bases) out.push_back(std::string(b) + s);
  return out;
}

}  // namespace nvfp4::test
