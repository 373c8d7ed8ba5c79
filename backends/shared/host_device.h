#pragma once
// TG_HOST_DEVICE marks a function that both backends run: __host__ __device__ under nvcc, nothing
// under a host compiler (the CPU backend and the CUDA emulation). Headers in backends/shared use
// it so that one definition serves the CPU kernels, the GPU kernels and the emulation.
#if defined(__CUDACC__)
#define TG_HOST_DEVICE __host__ __device__
#else
#define TG_HOST_DEVICE
#endif
