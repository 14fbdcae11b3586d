// The bodies of the API's POST requests, parsed and validated: malformed JSON, a field of the
// wrong type or out of range gets ApiError 400 naming the field; unknown fields are ignored, as
// OpenAI clients expect. No model is needed: the fuzz target runs these alone.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "nvfp4/chat.h"
#include "nvfp4/sampler.h"
#include "server/output_grammar.h"

namespace nvfp4::server {

struct GenRequest {
  bool chat = false;                  // /v1/chat/completions
  std::string model;
  std::vector<ChatMessage> messages;  // chat
  std::string prompt;                 // completions: text ...
  std::vector<int32_t> prompt_ids;    // ... or token ids
  bool prompt_is_ids = false;
  int64_t max_tokens = -1;            // -1: up to the context
  std::string max_tokens_field = "max_tokens";  // or max_completion_tokens: the one the client sent
  std::string prompt_field;           // what errors about the prompt name ("": messages or prompt)
  SamplerOptions sampling{1.0f, 0, 1.0f, 0};  // OpenAI's defaults: temperature 1, top_p 1
  bool seed_set = false;
  std::vector<std::string> stop;      // at most 4, none empty
  bool stream = false, include_usage = false;
  bool return_tokens = false;         // nvfp4 extension: the token ids in the response
  // Chat: logprobs (bool) and top_logprobs (0..20); completions: logprobs (0..20, the number of
  // best tokens). -1: none.
  int top_logprobs = -1;
  bool cache_prompt = true;           // llama.cpp's field: false computes the whole prompt again
  // Chat with tools (request_tools.cpp): the tools, validated, as JSON text ("" : none);
  // tool_choice "none", "auto", "required" or "function" (tool_choice_name: which).
  std::string tools_json;
  std::string tool_choice = "auto", tool_choice_name;
  // Template variables: chat_template_kwargs, enable_thinking, reasoning_effort, tool_choice
  // (name -> JSON text).
  std::map<std::string, std::string> template_vars;
  // response_format, grammar, guided_* (output_grammar.h): the output is constrained to it token
  // by token; null: unconstrained.
  std::shared_ptr<const GrammarSpec> grammar;
};

// Throws ApiError(400) naming the field.
GenRequest parse_gen_request(const std::string& body, bool chat);

struct TokenizeRequest {
  std::string content;
  bool add_special = false, parse_special = true;
};
TokenizeRequest parse_tokenize_request(const std::string& body);
// The token ids of a /detokenize body (range checked against the vocabulary later).
std::vector<int32_t> parse_detokenize_request(const std::string& body);

}  // namespace nvfp4::server
