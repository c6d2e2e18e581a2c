/* A TEST-ONLY plugin of the right ABI version whose table is malformed: its entry's name holds a
 * '/'. Loading it must fail with exit 3, naming the file and the entry. */
#include "gdnbench/kernel.h"

static int launch(const gdn_args* args, void* stream, char* error, size_t error_len) {
  (void)args, (void)stream, (void)error, (void)error_len;
  return 0;
}

static const gdn_variant kVariants[] = {
    {"decode/loop", GDN_OP_DECODE, GDN_BACKEND_CPU, 0, 0, "TEST ONLY: a name with a slash", NULL, launch, NULL, 0}};

static const gdn_kernel_table kTable = {GDNBENCH_KERNEL_ABI_VERSION, 1u, kVariants};

GDNBENCH_EXPORT const gdn_kernel_table* gdnbench_kernels(void) { return &kTable; }
