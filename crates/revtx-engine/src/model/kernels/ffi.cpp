// The C functions `kernels.rs` calls: each runs one unit's autograd node on tch's
// `at::Tensor*`s and turns a C++ exception into a null result (or 1) with the message in
// `revtx_last_error`, and the switches of the process (the kernels' width).

#include <ATen/Version.h>

#include <cstring>
#include <string>
#include <string_view>

#include "kernels.h"

std::atomic<bool>& revtx::wide_kernels() {
  static std::atomic<bool> wide{__builtin_cpu_supports("avx512f") != 0};
  return wide;
}

namespace {

thread_local std::string last_error;

template <typename F>
at::Tensor* guarded(F f) {
  try {
    return new at::Tensor(f());
  } catch (const std::exception& e) {
    last_error = e.what();
    return nullptr;
  }
}

}  // namespace

extern "C" {

// A new tensor, or null with the message in `revtx_last_error`.
at::Tensor* revtx_linear(const at::Tensor* x, const at::Tensor* w, const at::Tensor* b) {
  return guarded([&] { return revtx::linear(*x, *w, *b); });
}

at::Tensor* revtx_matmul(const at::Tensor* a, const at::Tensor* b) {
  return guarded([&] { return revtx::matmul(*a, *b); });
}

// Fused attention: `out[0]` = y (b, t, d), `out[1]` = weights (b, h, t, t). 0 on success.
int revtx_attention(const at::Tensor* qkv, int64_t heads, const AttnOpts* opts,
                    at::Tensor** out) {
  try {
    auto r = revtx::attention(*qkv, heads, *opts);
    out[0] = new at::Tensor(r[0]);
    out[1] = new at::Tensor(r[1]);
    return 0;
  } catch (const std::exception& e) {
    last_error = e.what();
    return 1;
  }
}

at::Tensor* revtx_gelu(const at::Tensor* x) {
  return guarded([&] { return revtx::gelu(*x); });
}

at::Tensor* revtx_mlp(const at::Tensor* x, const at::Tensor* w1, const at::Tensor* b1,
                      const at::Tensor* w2, const at::Tensor* b2) {
  return guarded([&] { return revtx::mlp(*x, *w1, *b1, *w2, *b2); });
}

at::Tensor* revtx_layer_norm(const at::Tensor* x, const at::Tensor* gamma, const at::Tensor* beta,
                             double eps) {
  return guarded([&] { return revtx::layer_norm(*x, *gamma, *beta, eps); });
}

const char* revtx_last_error() { return last_error.c_str(); }

// The kernels' vector width: `want` "avx2" holds this process to the AVX2 kernels,
// "avx512" moves it to the AVX-512 ones if the CPU has them, "widest" to the widest the CPU
// has; anything else changes nothing. Returns the width now in use ("avx2" or "avx512").
const char* revtx_kernel_isa(const char* want) {
  const std::string_view w = want != nullptr ? want : "";
  const bool can = __builtin_cpu_supports("avx512f") != 0;
  if (w == "avx2") revtx::wide_kernels().store(false);
  if (w == "avx512" || w == "widest") revtx::wide_kernels().store(can);
  return revtx::wide_kernels().load() ? "avx512" : "avx2";
}

// Makes `grad` the gradient of `param`: autograd then accumulates into it in place.
void revtx_set_grad(at::Tensor* param, const at::Tensor* grad) { param->mutable_grad() = *grad; }

// The kernel set ATen dispatches to ("DEFAULT", "AVX2", "AVX512"), into `buf`.
void revtx_aten_capability(char* buf, size_t len) {
  std::string c = at::get_cpu_capability();
  std::strncpy(buf, c.c_str(), len - 1);
  buf[len - 1] = 0;
}

}  // extern "C"