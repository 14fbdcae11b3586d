#include "text/tokenizer_tables.h"

#include <functional>
#include <limits>

#include "nvfp4/error.h"

namespace nvfp4 {

namespace {

size_t pow2_at_least(size_t n) {
  size_t p = 16;
  while (p < n) p *= 2;
  return p;
}

// splitmix64's finalizer: the pair keys are two small ids side by side.
uint64_t mix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace

void StringPool::push_back(std::string_view s, const std::string& source) {
  if (s.size() > std::numeric_limits<uint32_t>::max() - bytes_.size()) {
    throw Error(source, "", "vocabulary strings in total", "under 4 GiB", "more");
  }
  bytes_.append(s);
  end_.push_back(static_cast<uint32_t>(bytes_.size()));
}

void StringPool::reserve(size_t n, size_t bytes) {
  end_.reserve(n);
  bytes_.reserve(bytes);
}

void Vocabulary::assign(const std::vector<std::string>& tokens, const std::string& source) {
  size_t bytes = 0;
  for (const std::string& t : tokens) bytes += t.size();
  tokens_ = StringPool();
  tokens_.reserve(tokens.size(), bytes);
  for (const std::string& t : tokens) tokens_.push_back(t, source);
  slot_.assign(pow2_at_least(tokens.size() * 2), -1);
  mask_ = slot_.size() - 1;
  for (size_t id = 0; id < tokens_.size(); ++id) {
    const std::string_view s = tokens_[id];
    size_t k = std::hash<std::string_view>{}(s) & mask_;
    while (slot_[k] >= 0 && tokens_[static_cast<size_t>(slot_[k])] != s) k = (k + 1) & mask_;
    if (slot_[k] < 0) slot_[k] = static_cast<int32_t>(id);  // else: a duplicate, the first id stays
  }
}

int32_t Vocabulary::find(std::string_view s) const {
  if (slot_.empty()) return -1;
  size_t k = std::hash<std::string_view>{}(s) & mask_;
  while (slot_[k] >= 0) {
    if (tokens_[static_cast<size_t>(slot_[k])] == s) return slot_[k];
    k = (k + 1) & mask_;
  }
  return -1;
}

void MergeTable::reserve(size_t n) {
  entries_.reserve(n);
  if (pow2_at_least(n * 2) > slot_.size()) rehash(pow2_at_least(n * 2));
}

void MergeTable::rehash(size_t slots) {
  slot_.assign(slots, 0);
  mask_ = slots - 1;
  for (size_t i = 0; i < entries_.size(); ++i) slot_[at(entries_[i].left, entries_[i].right)] = static_cast<uint32_t>(i + 1);
}

size_t MergeTable::at(int32_t left, int32_t right) const {
  const uint64_t key = (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
  size_t k = mix(key) & mask_;
  while (slot_[k] != 0) {
    const Entry& e = entries_[slot_[k] - 1];
    if (e.left == left && e.right == right) break;
    k = (k + 1) & mask_;
  }
  return k;
}

void MergeTable::insert(int32_t left, int32_t right, int32_t rank, int32_t id) {
  if (2 * (entries_.size() + 1) > slot_.size()) rehash(pow2_at_least(2 * (entries_.size() + 1)));
  const size_t k = at(left, right);
  if (slot_[k] != 0) return;  // the first rank wins
  entries_.push_back(Entry{left, right, {rank, id}});
  slot_[k] = static_cast<uint32_t>(entries_.size());
}

const MergeTable::Merge* MergeTable::find(int32_t left, int32_t right) const {
  if (slot_.empty()) return nullptr;
  const uint32_t s = slot_[at(left, right)];
  return s != 0 ? &entries_[s - 1].m : nullptr;
}

}  // namespace nvfp4
