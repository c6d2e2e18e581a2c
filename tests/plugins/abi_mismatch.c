/* A TEST-ONLY plugin built for a kernel ABI version this gdnbench does not read: loading it must
 * fail with exit 3, naming the file. Written in C99, so the build also proves the header is C. */
#include "gdnbench/kernel.h"

static int launch(const gdn_args* args, void* stream, char* error, size_t error_len) {
  (void)args, (void)stream, (void)error, (void)error_len;
  return 0;
}

static const gdn_variant kVariants[] = {
    {"decode_any", GDN_OP_DECODE, GDN_BACKEND_CPU, 0, 0, "TEST ONLY: a newer ABI", NULL, launch, NULL, 0}};

static const gdn_kernel_table kTable = {GDNBENCH_KERNEL_ABI_VERSION + 1u, 1u, kVariants};

GDNBENCH_EXPORT const gdn_kernel_table* gdnbench_kernels(void) { return &kTable; }
