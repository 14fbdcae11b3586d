// `nvfp4 convert` to a directory in ModelOpt's export layout (see convert_modelopt.cpp).
#pragma once
#include <string>

#include "nvfp4/checkpoint.h"
#include "nvfp4/convert.h"

namespace nvfp4 {
ConvertReport convert_to_modelopt_dir(const Checkpoint& ck, const std::string& out, const ConvertOptions& opt);
}  // namespace nvfp4
