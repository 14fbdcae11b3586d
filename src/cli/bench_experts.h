// `bench model` with an expert store (--experts-budget): the store's figures over a timed part,
// and the disk's sequential read beside them, so that generation can be put against the disk bound.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "nvfp4/model.h"

namespace nvfp4::cli {

// b - a, field by field (the counters a timed part added).
ExpertStats experts_delta(const ExpertStats& a, const ExpertStats& b);
// Sequential reads of up to `bytes` of the file in 4 MiB pieces, O_DIRECT where the file system
// allows it (so the page cache does not answer), GB/s; 0 when it cannot be read.
double disk_read_gbps(const std::string& path, int64_t bytes);
// A timed part's figures: hit rate, MB read from disk per token, the share of `seconds` spent
// waiting on reads.
nlohmann::json experts_part_json(const ExpertStats& d, int64_t tokens, double seconds);

}  // namespace nvfp4::cli
