// What the engine's C++ kernels share: the libtorch side of each unit (an autograd node
// per operation) and the plain kernels they call. The units:
// - gemm.cpp: the matrix product, compiled once per instruction set (plain; gemm.h);
// - linear.cpp: the product's dispatch, linear layers and the batched products;
// - attention.h / attention.cpp: the fused attention kernel (plain) and its node;
// - gelu.cpp: GELU, compiled once per instruction set (plain); mlp.cpp: its node and
//   the fused MLP;
// - layer_norm.cpp; ffi.cpp: the C functions `kernels.rs` calls.
// Every unit is compiled with -ffp-contract=off: the order of every sum and the rounding
// of every product are the source's. No product reaches MKL or oneDNN.

#pragma once

#include <ATen/ATen.h>
#include <torch/csrc/autograd/custom_function.h>

#include <atomic>
#include <optional>
#include <vector>

#include "gemm.h"

struct AttnOpts;

// GELU of gelu.cpp, once per instruction set: y[i] = GELU(x[i]), dy[i] = GELU'(x[i]).
extern "C" void revtx_gelu_avx2(const float* x, float* y, float* dy, int64_t n);
extern "C" void revtx_gelu_avx512(const float* x, float* y, float* dy, int64_t n);

namespace revtx {

using at::Tensor;

// Whether the kernels that have an AVX-512 version use it: the matrix product and GELU.
// Each computes the same bits in either width (one output per lane, the same operations
// per lane). On by default where the CPU has AVX-512; `revtx_kernel_isa` can hold a process
// to AVX2, for the tests that check the bits and the bench of what an AVX2 machine runs.
std::atomic<bool>& wide_kernels();

// (bias + a @ b) * times: a (m, k), b (k, n), bias (n) or none, times (m, n) contiguous or
// none → (m, n), contiguous (linear.cpp).
Tensor gemm(const Tensor& a, const Tensor& b, const std::optional<Tensor>& bias = {},
            const std::optional<Tensor>& times = {});

// The autograd nodes, one per unit.
Tensor linear(const Tensor& x, const Tensor& w, const Tensor& b);
Tensor matmul(const Tensor& a, const Tensor& b);
std::vector<Tensor> attention(const Tensor& qkv, int64_t heads, const AttnOpts& opts);
Tensor gelu(const Tensor& x);
Tensor mlp(const Tensor& x, const Tensor& w1, const Tensor& b1, const Tensor& w2,
           const Tensor& b2);
Tensor layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps);

// GELU and its derivative at the width in use (mlp.cpp).
void gelu_forward(const float* x, float* y, float* dy, int64_t n);

}  // namespace revtx
