// GDN_HD marks a small function that host code and CUDA kernels both call: __host__ __device__
// and forced inline under nvcc, a plain inline function elsewhere (core stays CUDA-free).
#pragma once

#if defined(__CUDACC__)
#define GDN_HD __host__ __device__ __forceinline__
#else
#define GDN_HD inline
#endif
