// nvfp4 inspect PATH [--json] [--experts]: what the checkpoint is (container, producer, algorithm,
// modes it can serve, file bytes) and its tensors (a MoE layer's experts on one line per stacked
// tensor unless --experts), then the checks `run` makes before it serves it (the tokenizer against
// the embedding, every tensor the family reads present and shaped, nothing left unread), by loading
// it as `run` would without preparing any weight (skipped with --no-check). Exit 0 when it can run, 1 when opening or those checks
// refuse it (the error on stderr, after what could be shown), 2 for usage.
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <map>

#include "cli/model_setup.h"
#include "cli/registry.h"
#include "io/hf_names.h"
#include "nvfp4/checkpoint.h"
#include "nvfp4/dflash_draft.h"
#include "nvfp4/gemma4_assistant.h"
#include "nvfp4/error.h"
#include "nvfp4/model.h"
#include "nvfp4/tokenizer.h"

namespace nvfp4::cli {
namespace {

std::vector<std::string> modes(const Checkpoint& ck) {
  bool nv = false;
  for (const auto& t : ck.tensors()) nv = nv || t.storage == Storage::nvfp4;
  if (!nv) return {};
  std::vector<std::string> m = {"a16q8", "a16", "f32", "f64"};  // a8 (ggml parity) is not built yet
  if (ck.info().has_input_scales) m.insert(m.begin() + 2, "w4a4");
  return m;
}

// `run`'s checks without its memory: the tokenizer against the embedding (as load_model makes it),
// then Model::check (every tensor the family reads present and shaped, nothing unread). Empty when
// they pass; else the refusal.
std::string run_check(const Checkpoint& ck) {
  try {
    const Tokenizer tok = Tokenizer::from_checkpoint(ck);
    check_tokenizer_fits(ck, tok);
    Model::check(ck, LoadOptions{});
    return "";
  } catch (const Error& e) {
    return e.what();
  }
}

std::string shape_str(const std::vector<int64_t>& s) {
  std::string o = "[";
  for (size_t k = 0; k < s.size(); ++k) o += (k ? ", " : "") + std::to_string(s[k]);
  return o + "]";
}

// Bytes of the checkpoint's files: the .gguf, or an HF directory's (or file's) .safetensors.
uint64_t file_bytes(const std::string& path) {
  namespace fs = std::filesystem;
  if (!fs::is_directory(path)) return fs::file_size(path);
  uint64_t b = 0;
  for (const auto& e : fs::directory_iterator(path))
    if (e.path().extension() == ".safetensors") b += fs::file_size(e.path());
  return b;
}

std::string scales_str(float s2_lo, float s2_hi, float in_lo, float in_hi) {
  char b[96];
  std::string sc;
  std::snprintf(b, sizeof b, s2_lo == s2_hi ? "%.6g" : "%.6g..%.6g", static_cast<double>(s2_lo), static_cast<double>(s2_hi));
  sc = b;
  if (in_hi > 0) {
    std::snprintf(b, sizeof b, in_lo == in_hi ? " / %.6g" : " / %.6g..%.6g", static_cast<double>(in_lo), static_cast<double>(in_hi));
    sc += b;
  }
  return sc;
}

// The head's storage: output.weight, or the tied token_embd.weight (convert --head f16|q8|nvfp4).
std::string head_line(const Checkpoint& ck) {
  const TensorEntry* h = ck.find("output.weight");
  const bool tied = h == nullptr;
  if (tied) h = ck.find("token_embd.weight");
  if (!h) return "none";
  return h->storage_name + (tied ? " (tied: token_embd.weight)" : " (output.weight)");
}

Registrar reg("inspect", "Show what a checkpoint is (producer, algorithm, modes it can serve) and its tensors",
              [](CLI::App& sub) {
                auto path = std::make_shared<std::string>();
                auto json = std::make_shared<bool>(false);
                auto experts = std::make_shared<bool>(false);
                auto no_check = std::make_shared<bool>(false);
                sub.add_option("PATH", *path, "checkpoint (.gguf, .safetensors or HF directory)")->required()->check(CLI::ExistingPath);
                sub.add_flag("--json", *json, "print JSON");
                sub.add_flag("--experts", *experts, "list every expert's tensors (default: one line per stacked tensor)");
                sub.add_flag("--no-check", *no_check,
                             "do not make run's checks (tokenizer, every tensor read and shaped): exit 0 no longer means run accepts it");
                return [path, json, experts, no_check]() {
                  // A drafter runs as its target's draft (--spec dflash; a Gemma 4 assistant: --spec mtp), not alone.
                  const bool assistant = is_gemma4_assistant(*path);
                  Checkpoint::OpenOptions oo;
                  if (assistant) {  // its tensors by their names, its token_ordering indices read
                    oo.raw_names = true;
                    oo.index_tensors = {"masked_embedding.token_ordering"};
                  }
                  const auto ck = Checkpoint::open(*path, oo);
                  const auto& in = ck->info();
                  const auto m = modes(*ck);
                  const std::string drafter = assistant ? gemma4_assistant_type(*path) : dflash_format(*path);
                  const std::string refused = *no_check           ? ""
                                              : assistant         ? gemma4_assistant_refusal(*path)
                                              : !drafter.empty()  ? dflash_run_alone_refusal(*path)
                                                                  : run_check(*ck);
                  const int rc = refused.empty() ? 0 : 1;
                  if (!refused.empty()) std::cerr << "error: run refuses it: " << refused << "\n";
                  if (*json) {
                    nlohmann::json j;
                    j["path"] = in.path;
                    j["container"] = in.container;
                    j["producer"] = in.producer;
                    j["algorithm"] = in.algorithm;
                    j["modes"] = m;
                    j["file_bytes"] = file_bytes(*path);
                    j["head"] = head_line(*ck);
                    j["set_aside"] = in.set_aside;  // a release's vision tower and MTP layers: not run
                    if (!drafter.empty()) j[assistant ? "assistant_drafter" : "dflash_drafter"] = drafter;
                    if (*no_check) j["check"] = {{"made", false}};
                    else if (refused.empty()) j["check"] = {{"made", true}, {"ok", true}};
                    else j["check"] = {{"made", true}, {"ok", false}, {"error", refused}};
                    j["tensors"] = nlohmann::json::array();
                    for (const auto& t : ck->tensors()) {
                      nlohmann::json e = {{"name", t.name}, {"shape", t.shape}, {"storage", t.storage_name},
                                          {"bits_per_weight", t.bits_per_weight}};
                      if (t.storage == Storage::nvfp4) {
                        e["scale2"] = t.scale2;
                        if (t.input_scale > 0) e["input_scale"] = t.input_scale;
                      }
                      j["tensors"].push_back(e);
                    }
                    std::cout << j.dump(1) << "\n";
                    return rc;
                  }
                  std::cout << "path:      " << in.path << "\ncontainer: " << in.container << "\nproducer:  "
                            << in.producer << "\nalgorithm: " << in.algorithm << "\nmodes:     ";
                  if (m.empty())
                    std::cout << "f32 (float weights; NVFP4 modes after `nvfp4 convert`, or with `run --quantize`)";
                  for (size_t k = 0; k < m.size(); ++k) std::cout << (k ? ", " : "") << m[k];
                  std::cout << "\ncheck:     "
                            << (*no_check ? "not made (--no-check)"
                                : refused.empty() ? "run's checks pass (tokenizer, every tensor read and shaped)"
                                                  : "run refuses it (on stderr): nothing can run");
                  std::cout << "\nhead:      " << head_line(*ck);
                  std::cout << "\ntensors:   " << ck->tensors().size() << "\nfile:      " << file_bytes(*path) << " bytes\n";
                  for (const auto& line : in.set_aside) std::cout << "set aside: " << line << "\n";
                  if (assistant)
                    std::cout << "drafter:   Gemma 4 assistant (" << drafter << "): run its target with --spec mtp --model-draft " << *path << "\n";
                  else if (!drafter.empty())
                    std::cout << "drafter:   DFlash (" << drafter << "): run its target with --spec dflash --model-draft " << *path << "\n";
                  std::cout << "\n";
                  std::printf("%-40s %-16s %-8s %6s  %s\n", "name", "shape", "storage", "bits", "scale2 / input_scale");
                  double bits = 0, values = 0;
                  // Experts (blk.N.ffn_*_exps.E.*) on one line per stacked tensor unless --experts.
                  struct Stack {
                    const TensorEntry* first = nullptr;
                    int64_t count = 0;
                    float s2_lo = 0, s2_hi = 0, in_lo = 0, in_hi = 0;
                  };
                  std::map<std::string, Stack> stacks;
                  for (const auto& t : ck->tensors()) {
                    std::string st;
                    int64_t e = 0;
                    if (*experts || !hf::split_expert_name(t.name, st, e)) continue;
                    Stack& k = stacks[st];
                    if (!k.first) k = {&t, 0, t.scale2, t.scale2, t.input_scale, t.input_scale};
                    ++k.count;
                    k.s2_lo = std::min(k.s2_lo, t.scale2), k.s2_hi = std::max(k.s2_hi, t.scale2);
                    k.in_lo = std::min(k.in_lo, t.input_scale), k.in_hi = std::max(k.in_hi, t.input_scale);
                  }
                  for (const auto& t : ck->tensors()) {
                    double n = 1;
                    for (int64_t d : t.shape) n *= static_cast<double>(d);
                    bits += n * t.bits_per_weight;
                    values += n;
                    std::string st;
                    int64_t e = 0;
                    if (!*experts && hf::split_expert_name(t.name, st, e)) {
                      const Stack& k = stacks[st];
                      if (k.first != &t) continue;  // printed with the first expert of its stack
                      const std::string sc = t.storage == Storage::nvfp4 ? scales_str(k.s2_lo, k.s2_hi, k.in_lo, k.in_hi) : "";
                      std::printf("%-40s %-16s %-8s %6.3g  %s\n", (st + " (" + std::to_string(k.count) + " experts)").c_str(),
                                  (std::to_string(k.count) + " x " + shape_str(t.shape)).c_str(), t.storage_name.c_str(),
                                  t.bits_per_weight, sc.c_str());
                      continue;
                    }
                    std::string sc;
                    if (t.storage == Storage::nvfp4) {
                      char b[64];
                      std::snprintf(b, sizeof b, "%.6g", static_cast<double>(t.scale2));
                      sc = b;
                      if (t.input_scale > 0) {
                        std::snprintf(b, sizeof b, " / %.6g", static_cast<double>(t.input_scale));
                        sc += b;
                      }
                    }
                    std::printf("%-40s %-16s %-8s %6.3g  %s\n", t.name.c_str(), shape_str(t.shape).c_str(),
                                t.storage_name.c_str(), t.bits_per_weight, sc.c_str());
                  }
                  std::printf("\n%.0f values, %.3f bits per value on average\n", values, values > 0 ? bits / values : 0.0);
                  return rc;
                };
              });

}  // namespace
}  // namespace nvfp4::cli
