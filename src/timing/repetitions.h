// Repetitions (run --repetitions N, as in Google Benchmark and nvbench): a case measured N times,
// each time with its own warm-up and stopping rule, at different moments of the sweep. The record
// keeps each repetition's median, so `compare` sees the noise between runs, not only inside one.
#pragma once

#include "timing/measure.h"

namespace gdn {

// How many times the case was measured: repetitions.size(), or 1 for a record without them.
std::size_t repetition_count(const Measurement& m);

// The repetitions' medians and their noises, one per repetition (a record without repetitions
// gives its own median and noise).
std::vector<RepetitionStat> repetition_stats(const Measurement& m);

// How far apart the repetitions' medians lie: (slowest - fastest) / fastest; NaN below two.
double repetition_spread(const Measurement& m);

// Appends `next` to `total` as one more repetition: samples pooled and stats recomputed over all
// of them, converged only when every repetition converged (stop_reason that of the first that did
// not), wall time summed. The per-kernel breakdown and SM clock stay the first repetition's.
void add_repetition(Measurement& total, const Measurement& next);

}  // namespace gdn
