// mtp: T > 1 draft tokens per row (speculative-decoding verify), docs/method.md 2.3.
//
// As decode with a time axis: q, k [B, T, H, K], v [B, T, HV, V], gate [B, T, HV],
// o [B, T, HV, V]. Options: cache_intermediate writes the state after every token to
// intermediate [B, T, HV, (layout)] in the pool's dtype (padding rows write zeros there too);
// update_state (default on) writes the final state back to the pool slot, off = pool read only.
// Variants take decode::Args (T > 1, intermediate set when caching).
#pragma once

#include "decode/op.h"
