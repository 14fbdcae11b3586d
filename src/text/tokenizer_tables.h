// The tokenizer's lookup tables, compact: strings in one pool (an offset each), the vocabulary
// index and the merges as open-addressed tables of ids. A 49K vocabulary takes ~4 MB here
// instead of over 10 MB as std::string vectors and node-based maps.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace nvfp4 {

// Strings by index, one after the other in one buffer.
class StringPool {
 public:
  // Throws nvfp4::Error (naming `source`) when the strings total 4 GiB or more.
  void push_back(std::string_view s, const std::string& source);
  void reserve(size_t n, size_t bytes);
  std::string_view operator[](size_t i) const {
    const uint32_t b = i == 0 ? 0 : end_[i - 1];
    return std::string_view(bytes_).substr(b, end_[i] - b);
  }
  size_t size() const { return end_.size(); }

 private:
  std::string bytes_;
  std::vector<uint32_t> end_;
};

// The vocabulary: token strings by id, and the id of a string. The first id wins on duplicates,
// as in HF.
class Vocabulary {
 public:
  void assign(const std::vector<std::string>& tokens, const std::string& source);
  size_t size() const { return tokens_.size(); }
  std::string_view token(int32_t id) const { return tokens_[static_cast<size_t>(id)]; }
  int32_t find(std::string_view s) const;  // -1 when absent

 private:
  StringPool tokens_;
  std::vector<int32_t> slot_;  // ids; -1: empty. Size a power of two, at most half full.
  size_t mask_ = 0;
};

// (left id, right id) -> (rank, merged id). The first rank wins on duplicates.
class MergeTable {
 public:
  struct Merge {
    int32_t rank, id;
  };
  void reserve(size_t n);  // room for n merges without growing
  void insert(int32_t left, int32_t right, int32_t rank, int32_t id);  // ids >= 0
  const Merge* find(int32_t left, int32_t right) const;  // nullptr when absent

 private:
  struct Entry {
    int32_t left, right;
    Merge m;
  };
  size_t at(int32_t left, int32_t right) const;  // the slot of the pair, or the empty one where it would go
  void rehash(size_t slots);
  // The merges in insertion order, and the table: 1 + an index into entries_, 0 for empty; size a
  // power of two, at most half full. 4-byte slots and one 16-byte entry per merge take 1.3 MB for
  // a 49K-merge tokenizer, where 16-byte slots at most half full took 2 MiB.
  std::vector<Entry> entries_;
  std::vector<uint32_t> slot_;
  size_t mask_ = 0;
};

}  // namespace nvfp4
