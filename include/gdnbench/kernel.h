/* gdnbench kernel plugin ABI: a shared library that implements Gated DeltaNet kernels for
 * gdnbench to verify and time, without a fork (docs/plugins.md).
 *
 * The library exports one C function, gdnbench_kernels(), returning a table of variants. Each
 * variant is one op (prefill, decode or mtp) on one backend (the host CPU, or CUDA); gdnbench
 * calls its supports() for every sweep point and its launch() to run the op once. Tensors are
 * dense, contiguous and row-major in the layouts of docs/method.md section 2, listed per op below.
 *
 * C99; no C++ and no CUDA types, so any toolchain can implement it. The table's first member is
 * the ABI version the library was built with: gdnbench refuses a library whose version is not
 * GDNBENCH_KERNEL_ABI_VERSION. Any change to a struct or enum below bumps the version.
 */
#ifndef GDNBENCH_KERNEL_H
#define GDNBENCH_KERNEL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GDNBENCH_KERNEL_ABI_VERSION 1u

/* Marks the entry point exported (a library built with -fvisibility=hidden still exports it). */
#if defined(__GNUC__)
#define GDNBENCH_EXPORT __attribute__((visibility("default")))
#else
#define GDNBENCH_EXPORT
#endif

typedef enum { GDN_OP_PREFILL = 0, GDN_OP_DECODE = 1, GDN_OP_MTP = 2 } gdn_op;
typedef enum { GDN_BACKEND_CPU = 0, GDN_BACKEND_CUDA = 1 } gdn_backend;
/* bf16 and f16 values are passed as their 16-bit patterns (uint16_t). */
typedef enum { GDN_DTYPE_F32 = 0, GDN_DTYPE_BF16 = 1, GDN_DTYPE_F16 = 2, GDN_DTYPE_I32 = 3, GDN_DTYPE_I64 = 4 } gdn_dtype;
/* Per value head: VK = [V][K] (K contiguous), KV = [K][V] (V contiguous). */
typedef enum { GDN_LAYOUT_VK = 0, GDN_LAYOUT_KV = 1 } gdn_layout;
/* LOG: g and beta given; RAW: A_log, a, dt_bias, b given, g = -exp(A_log) softplus(a + dt_bias),
 * beta = sigmoid(b) (softplus(x) = x above 20). */
typedef enum { GDN_GATE_LOG = 0, GDN_GATE_RAW = 1 } gdn_gate_form;

/* One problem. Fields an op does not use are zero. Valid for the duration of the call only. */
typedef struct {
  int32_t op;           /* gdn_op */
  int32_t h_qk;         /* H: q/k heads */
  int32_t h_v;          /* HV: value heads, a multiple of H; value head h reads q/k head h / (HV / H) */
  int32_t dk;           /* K: q/k head dim */
  int32_t dv;           /* V: value head dim */
  int32_t input_dtype;  /* gdn_dtype of q, k, v, o: BF16 or F16 */
  int32_t gate;         /* gdn_gate_form */
  int32_t l2norm;       /* 1: q and k are L2-normalised first, x / sqrt(sum(x^2) + 1e-6) */
  float scale;          /* applied to the output read, S^T q; never 0 (the default K^-1/2 is filled in) */
  int32_t layout;       /* gdn_layout of every state (h0, ht, pool, intermediate) */
  int32_t state_dtype;  /* gdn_dtype of the pool and intermediate: F32 or BF16 (h0, ht: always F32) */
  int32_t index_dtype;  /* gdn_dtype of indices: I64 or I32 */
  int64_t pool_slots;   /* P: slots of the pool; 0 in prefill's dense form (h0 / ht) */
  /* prefill */
  int64_t num_seqs;        /* N */
  int64_t total_tokens;    /* T: the sum of seqlens */
  const int64_t* seqlens;  /* [N], host memory */
  int32_t has_h0;          /* dense form: 1 when h0 is given, else every sequence starts from 0 */
  /* decode / mtp */
  int32_t tokens;             /* T per row: 1 for decode, 2..64 for mtp */
  int64_t batch;              /* B: rows */
  int32_t cache_intermediate; /* mtp: write the state after every token to intermediate */
  int32_t update_state;       /* mtp: 1 writes the final state back to the slot; 0 leaves the pool untouched */
  int32_t rollback;           /* mtp: row b starts from intermediate[b, accepted[b] - 1] when accepted[b] > 0 */
} gdn_shape;

/* One launch: the shape, the tensors and what the backend offers. Pointers are device memory for
 * a CUDA variant and host memory for a CPU variant, except those marked "host". A tensor the
 * problem does not have is NULL.
 *
 * prefill (T tokens, N sequences packed back to back):
 *   q, k [T, H, K]; v, o [T, HV, V]; gate rows = T; cu_seqlens [N + 1] int32 (cu[0] = 0, cu[N] = T)
 *   dense form: h0 [N, HV, S] fp32 (NULL when has_h0 is 0), ht [N, HV, S] fp32 (out)
 *   pool form (pool_slots > 0): pool [P, HV, S] state_dtype, read and written in place;
 *     indices [N]: sequence n starts from slot indices[n] and writes its final state there; -1
 *     starts from zero and writes nothing
 * decode (B rows): q, k [B, H, K]; v, o [B, HV, V]; gate rows = B; pool [P, HV, S]; indices [B]:
 *   row i reads and writes slot indices[i]; -1 is a padding row: o = 0, no slot touched
 * mtp (B rows of T tokens): as decode with [B, T, ...] for q, k, v, o and the gate;
 *   intermediate [B, T, HV, S] state_dtype (cache_intermediate; written for padding rows as zeros);
 *   accepted [B] int32 (rollback)
 * S is [V, K] for GDN_LAYOUT_VK and [K, V] for GDN_LAYOUT_KV. Slots no row names must stay
 * bit-identical. Pool offsets exceed 2^31 elements: index them in 64 bits.
 */
typedef struct {
  const gdn_shape* shape;
  const void* q;
  const void* k;
  const void* v;
  /* gate, GDN_GATE_LOG: g (log decay <= 0) and beta, [rows, HV] fp32 */
  const float* g;
  const float* beta;
  /* gate, GDN_GATE_RAW: A_log [HV] fp32, a [rows, HV] bf16, dt_bias [HV] fp32, b [rows, HV] bf16 */
  const float* A_log;
  const uint16_t* a;
  const float* dt_bias;
  const uint16_t* b;
  const int32_t* cu_seqlens;       /* prefill */
  const int32_t* cu_seqlens_host;  /* prefill, host: the same values, for launch planning */
  const float* h0;
  float* ht;
  void* pool;
  const void* indices;
  void* intermediate;
  const int32_t* accepted;
  void* o;
  int32_t num_threads; /* CPU: the worker threads gdnbench was given (--threads; all cores by default) */
  int32_t sm_count;    /* CUDA: multiprocessors of the current device */
} gdn_args;

/* A tighter verification threshold than the op's default for one output tensor ("o", "ht",
 * "pool", "intermediate"): relative L2 error. A looser one has no effect. */
typedef struct {
  const char* tensor;
  double rel_l2;
} gdn_tolerance;

typedef struct {
  /* [A-Za-z0-9_.+-], at most 64 bytes, unique in the library; gdnbench names the variant
   * "plugin:<library>/<name>", <library> being the file name without "lib" and ".so". */
  const char* name;
  int32_t op;       /* gdn_op */
  int32_t backend;  /* gdn_backend */
  /* CUDA: compute capability range as major*10+minor (90 = sm_90); max 0 means no upper bound.
   * Ignored for CPU variants. */
  int32_t min_arch;
  int32_t max_arch;
  const char* description; /* one line for `gdnbench list`; may be NULL */
  /* 1 when the variant runs this shape; 0 with a short reason written (NUL-terminated, at most
   * reason_len bytes) into reason, shown as the case's skip. NULL: every shape the op accepts. */
  int (*supports)(const gdn_shape* shape, char* reason, size_t reason_len);
  /* Runs the op once. CPU: returns when the outputs are written (stream is NULL). CUDA: only
   * enqueues work on stream (a cudaStream_t) and never synchronises, allocates or uses another
   * stream. 0 on success; otherwise a message in error (as reason above) and the case is an error. */
  int (*launch)(const gdn_args* args, void* stream, char* error, size_t error_len);
  const gdn_tolerance* tolerances; /* optional: num_tolerances entries */
  uint32_t num_tolerances;
} gdn_variant;

typedef struct {
  uint32_t abi_version; /* GDNBENCH_KERNEL_ABI_VERSION the library was compiled with: keep first */
  uint32_t num_variants;
  const gdn_variant* variants;
} gdn_kernel_table;

/* The one symbol gdnbench looks up. The table and every string in it must stay valid while the
 * library is loaded (static storage). */
typedef const gdn_kernel_table* (*gdnbench_kernels_fn)(void);
GDNBENCH_EXPORT const gdn_kernel_table* gdnbench_kernels(void);

#ifdef __cplusplus
}
#endif

#endif /* GDNBENCH_KERNEL_H */
