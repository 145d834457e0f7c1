// The matrix product of gemm.cpp as build.rs compiles it, once per vector width:
// c (m, n) = (bias + a @ b) * times, strides as gemm.cpp documents them. Plain C++: the
// engine's kernels and the bench and A/B programs in scripts/ include it.
#pragma once
#include <cstdint>

extern "C" void revtx_gemm_avx2(int64_t m, int64_t n, int64_t k, const float* a, int64_t a_rs,
                                int64_t a_cs, const float* b, int64_t b_rs, int64_t b_cs,
                                const float* bias, const float* times, float* c, int64_t ldc);
extern "C" void revtx_gemm_avx512(int64_t m, int64_t n, int64_t k, const float* a,
                                  int64_t a_rs, int64_t a_cs, const float* b, int64_t b_rs,
                                  int64_t b_cs, const float* bias, const float* times, float* c,
                                  int64_t ldc);
