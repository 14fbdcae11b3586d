// Which entry of a quantization configuration a module falls under, by each producer's own rules.
//
// compressed-tensors (utils/match.py, quantization/lifecycle/apply.py): every target of every
// config group goes into one ordered map target -> scheme (a target named by two groups takes the
// later group's scheme); a module's matching targets are ordered as `match_targets` orders them
// (targets sorted by ("re:" in target, target); first those that match the name, a plain target
// by equality and a "re:" one by Python's re.match, anchored at the start only; then those that
// match the class, "Linear" here) and the first one's scheme applies. `ignore` matches by name or
// class the same way.
//
// ModelOpt (hf_quant_config.json MIXED_PRECISION): `quantized_layers` names modules; an entry names
// a module or a parent of it (transformers 5 holds a MoE layer's experts as one fused module,
// "model.layers.0.mlp.experts", while the files hold one tensor per expert); the longest entry wins.
#pragma once
#include <memory>
#include <regex>
#include <string>
#include <vector>

namespace nvfp4 {

// Python's re.match (anchored at the start, not the end) on an ECMAScript regex, which reads the
// patterns producers write (\d, \w, groups, alternation, lazy quantifiers). A pattern std::regex
// cannot read is refused naming the file and the pattern.
class PyRegex {
 public:
  PyRegex(const std::string& pattern, const std::string& file);
  bool match(const std::string& s) const;
  const std::string& pattern() const { return pattern_; }

 private:
  std::string pattern_;
  std::shared_ptr<const std::regex> re_;
};

// One compressed-tensors target ("re:..." regex, a class name, or an exact module name).
struct CtTarget {
  std::string text;
  std::shared_ptr<const PyRegex> re;  // set for "re:" targets
  int payload = 0;                    // the caller's index of the scheme
};

// The targets in compressed-tensors' match order (sorted by ("re:" in text, text)), duplicates
// resolved to the later one: `in` in the order the configuration lists its groups and targets.
std::vector<CtTarget> ct_targets(const std::vector<std::pair<std::string, int>>& in, const std::string& file);
// The first target in compressed-tensors' order that matches a linear module named `module`
// (name matches before the class "Linear"); null when none does.
const CtTarget* ct_first_match(const std::vector<CtTarget>& sorted, const std::string& module);
// compressed-tensors' `ignore` (is_match): a name by equality or re.match, or the class "Linear".
bool ct_ignored(const std::vector<CtTarget>& ignore, const std::string& module);

// ModelOpt: the index of the quantized_layers entry naming `module` or its longest-named parent;
// -1 when none does.
int modelopt_layer_entry(const std::vector<std::string>& names, const std::string& module);

}  // namespace nvfp4
