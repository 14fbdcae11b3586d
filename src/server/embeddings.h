// POST /v1/embeddings (OpenAI's shape): each input (a string, strings, token ids or lists of
// them) is run through the model as a prompt, and the final-normed hidden state of its tokens
// (what the head reads) is pooled: the mean over every token (default) or the last token's
// (`"pooling": "last"`, as llama.cpp names it), then scaled to unit L2 norm, as OpenAI's are.
// `"pooling": "none"` (llama.cpp's per-token embeddings): `embedding` is every token's row as the
// head reads it, unscaled, as an array of arrays (base64: the rows end to end).
// `encoding_format` "float" or "base64" (little-endian float32, what the openai client asks
// for); `dimensions` must be the model's own when given. The job runs in the scheduler beside
// the generations (job.h `embed`); in a16q8 and w4a4 its bits do not depend on them.
#pragma once
#include <string>

#include "server/http_server.h"

namespace httplib {
struct Request;
struct Response;
}  // namespace httplib

namespace nvfp4::server {

struct EmbeddingsRequest {
  std::vector<std::string> texts;             // ...
  std::vector<std::vector<int32_t>> id_lists;  // ... or token ids (one of the two)
  bool base64 = false;
  bool last = false;    // pooling: last token (else mean) ...
  bool tokens = false;  // ... or none: every token's row
  int64_t dimensions = -1;
};
// Throws ApiError(400) naming the field.
EmbeddingsRequest parse_embeddings_request(const std::string& body);

void handle_embeddings(const Backend& b, const httplib::Request& req, const std::string& body, httplib::Response& res);

}  // namespace nvfp4::server
