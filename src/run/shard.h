// --shard INDEX/COUNT: a stable split of a sweep's plan for job arrays. Entry k of the plan (the
// run order: each point of each case, and each of its variants in registry order) belongs to
// shard k % COUNT, so COUNT jobs given 0/COUNT .. COUNT-1/COUNT run every entry exactly once.
// Entries, not points, are dealt: the shards stay even when one point has many variants.
#pragma once

#include <cstddef>
#include <string>

namespace gdn {

struct Shard {
  std::size_t index = 0, count = 1;  // count 1: the whole plan
  bool holds(std::size_t entry) const { return entry % count == index; }
};

// "INDEX/COUNT", 0 <= INDEX < COUNT <= 100000 (a 0-based index, as Slurm's
// SLURM_ARRAY_TASK_ID from --array=0-N and Kubernetes' JOB_COMPLETION_INDEX give). input_error
// (exit 3) naming --shard and the text otherwise.
Shard parse_shard(const std::string& text);

}  // namespace gdn
