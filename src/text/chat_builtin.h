// The built-in chat templates: fixtures/chat_templates/builtins.txt, embedded by CMakeLists.txt.
#pragma once
#include <string>
#include <vector>

namespace nvfp4 {

struct BuiltinChatTemplate {
  std::string name, fixture, text;
};
std::vector<BuiltinChatTemplate> builtin_chat_templates();

}  // namespace nvfp4
