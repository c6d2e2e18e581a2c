# Every kernel family and every variant, one line each. ARCHS are CUDA compute capabilities
# (CMake syntax: 90a-real = sm_90a SASS only; 75 = sm_75 SASS plus compute_75 PTX).

# Kernel families compiled once, for the architectures they run on (kernels/<family>/).
gdn_add_kernels(step SOURCES kernels/step/launch.cu kernels/step/plan.cpp kernels/step/step.cpp
                ARCHS 80 90 100 120 RESOURCE_USAGE)

# CPU backend (kernels/cpu/).
gdn_add_variant(kernels/prefill/cpu.cpp)
gdn_add_variant(kernels/decode/cpu.cpp)
gdn_add_variant(kernels/mtp/cpu.cpp)

# Simple CUDA baselines (kernels/simple/: token recurrence on CUDA cores, any GPU from Turing on).
gdn_add_variant(kernels/prefill/cuda_recurrent.cu ARCHS 75 80 90 100 120)
gdn_add_variant(kernels/decode/cuda_simple.cu ARCHS 75 80 90 100 120)
gdn_add_variant(kernels/mtp/cuda_simple.cu ARCHS 75 80 90 100 120)

# Bandwidth-bound production decode / mtp (the step family: Ampere and newer, cp.async staging).
gdn_add_variant(kernels/decode/fast.cpp)
gdn_add_variant(kernels/mtp/fast.cpp)

# Recurrent prefill on CUDA cores for Turing and later (kernels/prefill/sm75_legacy/; one binary:
# sm_75 SASS plus compute_75 PTX).
gdn_add_variant(kernels/prefill/sm75_legacy.cu ARCHS 75)

# Chunked prefill on tensor cores for Hopper (kernels/prefill/sm90/; sm_90a SASS only).
gdn_add_kernels(prefill_sm90 SOURCES kernels/prefill/sm90/launch.cu kernels/prefill/sm90/plan.cpp
                kernels/prefill/sm90/cp_plan.cpp kernels/prefill/sm90/workspace_buffer.cpp ARCHS 90a-real RESOURCE_USAGE)
gdn_add_variant(kernels/prefill/sm90.cpp)

# Chunked prefill on mma.sync tensor cores for every GPU without wgmma (kernels/prefill/sm80/; sm_80
# SASS plus compute_80 PTX, which newer GPUs JIT-compile). It runs prefill/sm90's two-pass device
# code, so it links that family's host objects (workspace, batch).
gdn_add_kernels(prefill_sm80 SOURCES kernels/prefill/sm80/launch.cu kernels/prefill/sm80/plan.cpp ARCHS 80 86-real 89-real 120-real RESOURCE_USAGE)
gdn_add_variant(kernels/prefill/sm80.cpp)

