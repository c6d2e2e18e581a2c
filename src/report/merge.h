// `gdnbench merge`: the reports of one sweep's shards (run --shard I/N, run on other machines or
// by a job array) joined into the report one unsharded run would have written.
#pragma once

#include <string>
#include <vector>

#include "report/report.h"

namespace gdn {

struct ShardReport {
  std::string path;  // named in every message
  RunReport report;
};

// Checks that the inputs are shards of one run: the same command, config (hash), timing mode and
// gdnbench build (version and commit), the same shard count, each shard once, no case in two
// files, and, unless `allow_partial`, every shard present and complete. An unsharded report
// counts as shard 0 of 1. input_error (exit 3) naming the file(s) otherwise.
// The result: the first input's metadata without the shard, the cases dealt back in plan order
// (shard 0's first, shard 1's first, ...), every device seen, the earliest start and the latest
// finish; complete only when every shard is present and complete.
RunReport merge_shard_reports(const std::vector<ShardReport>& inputs, bool allow_partial);

}  // namespace gdn
