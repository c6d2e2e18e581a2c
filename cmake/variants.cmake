# Every kernel variant, one line each. ARCHS are CUDA compute capabilities (CMake syntax:
# 90a-real = sm_90a SASS only; 75 = sm_75 SASS plus compute_75 PTX).

# CPU backend.
gdn_add_variant(kernels/prefill/cpu.cpp)
gdn_add_variant(kernels/decode/cpu.cpp)
gdn_add_variant(kernels/mtp/cpu.cpp)
