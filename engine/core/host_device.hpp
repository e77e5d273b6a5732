#pragma once
// Functions marked LIVEDRP_HD compile for the host and, under nvcc, for the device too. Every
// stage's per-pixel and per-block math is written once with this marker and called by both
// backends, so the CPU backend is the reference for the CUDA backend.
#if defined(__CUDACC__)
#define LIVEDRP_HD __host__ __device__ __forceinline__
#else
#define LIVEDRP_HD inline
#endif
