// POST /v1/embeddings (see embeddings.h).
#include "server/embeddings.h"

#include <httplib.h>

#include <cmath>
#include <cstring>

#include "server/chat_run.h"
#include "server/openai_json.h"

namespace nvfp4::server {
namespace {

using json = nlohmann::json;

[[noreturn]] void bad(const std::string& field, const std::string& msg, const char* code = "invalid_value") {
  throw ApiError(400, "'" + field + "' " + msg, field, code);
}

std::vector<int32_t> ids_of(const json& a, const std::string& field) {
  std::vector<int32_t> ids;
  for (const json& e : a) {
    if (!e.is_number_integer() || e.get<int64_t>() < 0 || e.get<int64_t>() > INT32_MAX)
      bad(field, "must hold non-negative integer token ids");
    ids.push_back(static_cast<int32_t>(e.get<int64_t>()));
  }
  return ids;
}

std::string base64(const std::vector<float>& v) {
  static constexpr char k[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string bytes(v.size() * 4, '\0');
  for (size_t i = 0; i < v.size(); ++i) {  // little-endian float32
    uint32_t u;
    std::memcpy(&u, &v[i], 4);
    for (int b = 0; b < 4; ++b) bytes[i * 4 + static_cast<size_t>(b)] = static_cast<char>(u >> (8 * b) & 0xFF);
  }
  std::string o;
  for (size_t i = 0; i < bytes.size(); i += 3) {
    const uint32_t n = static_cast<uint32_t>(static_cast<uint8_t>(bytes[i])) << 16 |
                       (i + 1 < bytes.size() ? static_cast<uint32_t>(static_cast<uint8_t>(bytes[i + 1])) << 8 : 0) |
                       (i + 2 < bytes.size() ? static_cast<uint32_t>(static_cast<uint8_t>(bytes[i + 2])) : 0);
    o += k[n >> 18 & 63];
    o += k[n >> 12 & 63];
    o += i + 1 < bytes.size() ? k[n >> 6 & 63] : '=';
    o += i + 2 < bytes.size() ? k[n & 63] : '=';
  }
  return o;
}

}  // namespace

EmbeddingsRequest parse_embeddings_request(const std::string& body) {
  const json j = json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) throw ApiError(400, "the request body is not valid JSON", "", "invalid_json");
  EmbeddingsRequest r;
  const auto it = j.find("input");
  if (it == j.end() || it->is_null()) bad("input", "is required", "missing_field");
  const json& in = *it;
  if (in.is_string()) {
    r.texts.push_back(in.get<std::string>());
  } else if (in.is_array() && !in.empty() && in[0].is_string()) {
    for (size_t i = 0; i < in.size(); ++i) {
      if (!in[i].is_string()) bad("input[" + std::to_string(i) + "]", "must be a string", "invalid_type");
      r.texts.push_back(in[i].get<std::string>());
    }
  } else if (in.is_array() && !in.empty() && in[0].is_array()) {
    for (size_t i = 0; i < in.size(); ++i) {
      if (!in[i].is_array()) bad("input[" + std::to_string(i) + "]", "must be an array of token ids", "invalid_type");
      r.id_lists.push_back(ids_of(in[i], "input[" + std::to_string(i) + "]"));
    }
  } else if (in.is_array() && !in.empty()) {
    r.id_lists.push_back(ids_of(in, "input"));
  } else {
    bad("input", "must be a string, an array of strings, or token ids (not empty)", "invalid_type");
  }
  if (r.texts.size() + r.id_lists.size() > 256) bad("input", "may hold at most 256 inputs");
  for (size_t i = 0; i < r.texts.size(); ++i)
    if (r.texts[i].empty()) bad(in.is_string() ? "input" : "input[" + std::to_string(i) + "]", "must not be empty");
  for (size_t i = 0; i < r.id_lists.size(); ++i)
    if (r.id_lists[i].empty()) bad("input[" + std::to_string(i) + "]", "must not be empty");
  if (const auto f = j.find("encoding_format"); f != j.end() && !f->is_null()) {
    if (!f->is_string() || (*f != "float" && *f != "base64")) bad("encoding_format", "must be \"float\" or \"base64\"");
    r.base64 = *f == "base64";
  }
  if (const auto p = j.find("pooling"); p != j.end() && !p->is_null()) {
    if (!p->is_string() || (*p != "mean" && *p != "last" && *p != "none"))
      bad("pooling", "must be \"mean\", \"last\" or \"none\"");
    r.last = *p == "last";
    r.tokens = *p == "none";
  }
  if (const auto d = j.find("dimensions"); d != j.end() && !d->is_null()) {
    if (!d->is_number_integer()) bad("dimensions", "must be an integer", "invalid_type");
    r.dimensions = d->get<int64_t>();
  }
  return r;
}

void handle_embeddings(const Backend& b, const httplib::Request& req, const std::string& body, httplib::Response& res) {
  const EmbeddingsRequest r = parse_embeddings_request(body);
  const Tokenizer& tok = *b.tok;
  std::vector<std::vector<int32_t>> prompts;
  for (const std::string& t : r.texts) {
    std::vector<int32_t> ids;
    if (tok.add_bos() && tok.bos() >= 0) ids.push_back(tok.bos());
    for (int32_t id : tok.encode(t, false)) ids.push_back(id);
    prompts.push_back(std::move(ids));
  }
  for (const auto& l : r.id_lists) prompts.push_back(l);
  for (size_t i = 0; i < prompts.size(); ++i) {
    const std::string f = prompts.size() == 1 && r.texts.size() + r.id_lists.size() == 1 ? "input"
                                                                                          : "input[" + std::to_string(i) + "]";
    for (int32_t id : prompts[i])
      if (id >= tok.n_vocab()) bad(f, "holds token id " + std::to_string(id) + ", outside the vocabulary");
    if (static_cast<int64_t>(prompts[i].size()) > b.n_ctx)
      throw ApiError(400, "'" + f + "' has " + std::to_string(prompts[i].size()) + " tokens; this model's context is " +
                              std::to_string(b.n_ctx), f, "context_length_exceeded");
  }
  if (r.dimensions >= 0 && r.dimensions != b.n_embd)
    bad("dimensions", "must be this model's " + std::to_string(b.n_embd) + " (embeddings are not shortened)");
  // Every input queued at once (the scheduler runs them side by side), then waited for in order.
  std::vector<std::shared_ptr<Job>> jobs;
  int64_t n_tokens = 0;
  for (auto& p : prompts) {
    auto j = std::make_shared<Job>();
    n_tokens += static_cast<int64_t>(p.size());
    j->prompt = std::move(p);
    j->max_tokens = 0;
    j->embed = r.tokens ? Job::Embed::Tokens : r.last ? Job::Embed::Last : Job::Embed::Mean;
    j->cache_prompt = false;  // every token's hidden state is needed
    b.sched->submit(j);
    jobs.push_back(std::move(j));
  }
  json data = json::array();
  for (size_t i = 0; i < jobs.size(); ++i) {
    try {
      (void)wait_whole(*jobs[i], req);
    } catch (...) {
      for (auto& j : jobs) j->cancelled = true;
      throw;
    }
    std::vector<float> v;
    {
      std::lock_guard lk(jobs[i]->mu);
      v = std::move(jobs[i]->embedding);
    }
    if (r.tokens) {  // the rows as they are
      json e;
      if (r.base64) {
        e = base64(v);
      } else {
        e = json::array();
        for (size_t at = 0; at < v.size(); at += static_cast<size_t>(b.n_embd))
          e.push_back(std::vector<float>(v.begin() + static_cast<std::ptrdiff_t>(at),
                                         v.begin() + static_cast<std::ptrdiff_t>(at + static_cast<size_t>(b.n_embd))));
      }
      data.push_back({{"object", "embedding"}, {"index", i}, {"embedding", std::move(e)}});
      continue;
    }
    double norm = 0;
    for (float x : v) norm += static_cast<double>(x) * x;
    norm = std::sqrt(norm);
    if (norm > 0)
      for (float& x : v) x = static_cast<float>(x / norm);
    data.push_back({{"object", "embedding"}, {"index", i}, {"embedding", r.base64 ? json(base64(v)) : json(v)}});
  }
  res.set_content(dump({{"object", "list"}, {"data", data}, {"model", b.model_name},
                        {"usage", {{"prompt_tokens", n_tokens}, {"total_tokens", n_tokens}}}}),
                  "application/json");
}

}  // namespace nvfp4::server
