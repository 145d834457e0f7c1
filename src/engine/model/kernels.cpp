// The engine's matrix products under the portable profile, each with its own backward.
//
// libtorch sends float32 products to MKL, which picks its code path by CPU vendor. Here:
// - linear layers (96% of a step's arithmetic) run as oneDNN inner products, whose kernels
//   are chosen by instruction set only (capped at AVX2 by the profile);
// - the small batched attention products run in a plain loop whose order of operations is
//   fixed by this source: every output is a sum over k in increasing order, each product
//   rounded, then added (no fused multiply-add, no reassociation: -ffp-contract=off).
// So no product reaches MKL. Called from `kernels.rs`; tensors are tch's `at::Tensor*`.

#include <ATen/ATen.h>
#include <ATen/Version.h>
#include <torch/csrc/autograd/custom_function.h>

#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace at::native {
// Exported by libtorch_cpu (aten/src/ATen/native/mkldnn/Linear.cpp), header not shipped:
// `input @ weight^T + bias` as a oneDNN inner product on dense tensors, without copies
// for a contiguous input and a contiguous or transposed weight.
Tensor mkldnn_linear_pointwise(const Tensor& input, const Tensor& weight,
                               const std::optional<Tensor>& bias, std::string_view attr,
                               c10::List<std::optional<c10::Scalar>> scalars,
                               std::optional<std::string_view> algorithm);
}  // namespace at::native

namespace {

using at::Tensor;
using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

thread_local std::string last_error;

// a @ b^T (+ bias): a (rows, k), b (n, k) → (rows, n), through oneDNN.
Tensor dnn_inner(const Tensor& a, const Tensor& b, const std::optional<Tensor>& bias = std::nullopt) {
  return at::native::mkldnn_linear_pointwise(a, b, bias, "none",
                                             c10::List<std::optional<c10::Scalar>>(), std::nullopt);
}

// y = x @ w^T + b, x: (..., in), w: (out, in), b: (out).
struct Linear : public torch::autograd::Function<Linear> {
  static Tensor forward(AutogradContext* ctx, const Tensor& x, const Tensor& w, const Tensor& b) {
    ctx->save_for_backward({x, w});
    Tensor y = dnn_inner(x.reshape({-1, x.size(-1)}), w, b);  // (rows, out)
    auto shape = x.sizes().vec();
    shape.back() = w.size(0);
    return y.view(shape);  // (..., out)
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    auto saved = ctx->get_saved_variables();
    const Tensor& x = saved[0];
    const Tensor& w = saved[1];
    Tensor g = grads[0].reshape({-1, grads[0].size(-1)}).contiguous();  // (rows, out)
    Tensor x2 = x.reshape({-1, x.size(-1)});                            // (rows, in)
    Tensor gx = dnn_inner(g, w.t()).view(x.sizes());                        // g @ w: (..., in)
    Tensor gw = dnn_inner(g.t().contiguous(), x2.t());                      // g^T @ x: (out, in)
    Tensor gb = g.sum(0);                                               // (out)
    return {gx, gw, gb};
  }
};

// c[z] = a[z] @ b[z] for z over two batch axes: a (Z1, Z2, m, k), b (Z1, Z2, k, n), any
// strides; c contiguous (Z1, Z2, m, n). Every output starts at zero and adds its k products
// in increasing k, each product rounded before the addition: the bits are fixed by this
// order alone. Eight outputs of a row are computed side by side in one AVX register, four
// rows at a time; the lanes never mix.
__attribute__((target("avx2"))) void batched_products(const Tensor& a, const Tensor& b,
                                                      Tensor& c) {
  const int64_t z1 = a.size(0), z2 = a.size(1), m = a.size(2), k = a.size(3), n = b.size(3);
  const int64_t n8 = (n + 7) / 8 * 8;  // rows of packed b, padded with zeros to whole registers
  const int64_t* as = a.strides().data();
  const int64_t* bs = b.strides().data();
  const float* pa = a.data_ptr<float>();
  const float* pb = b.data_ptr<float>();
  float* pc = c.data_ptr<float>();
  std::vector<float> apack(m * k), bpack(k * n8, 0.0f);
  float* __restrict__ ap = apack.data();
  float* __restrict__ bp = bpack.data();
  alignas(32) float tail[4][8];
  for (int64_t i1 = 0; i1 < z1; i1++) {
    for (int64_t i2 = 0; i2 < z2; i2++) {
      const float* az = pa + i1 * as[0] + i2 * as[1];
      const float* bz = pb + i1 * bs[0] + i2 * bs[1];
      for (int64_t i = 0; i < m; i++)
        for (int64_t p = 0; p < k; p++) ap[i * k + p] = az[i * as[2] + p * as[3]];
      for (int64_t p = 0; p < k; p++)
        for (int64_t j = 0; j < n; j++) bp[p * n8 + j] = bz[p * bs[2] + j * bs[3]];
      float* cz = pc + (i1 * z2 + i2) * m * n;
      for (int64_t i0 = 0; i0 < m; i0 += 4) {
        const int64_t rows = std::min<int64_t>(4, m - i0);
        // Rows past m read row i0 again; their sums are computed and thrown away.
        const float* a0 = ap + i0 * k;
        const float* a1 = ap + (i0 + (rows > 1 ? 1 : 0)) * k;
        const float* a2 = ap + (i0 + (rows > 2 ? 2 : 0)) * k;
        const float* a3 = ap + (i0 + (rows > 3 ? 3 : 0)) * k;
        for (int64_t j0 = 0; j0 < n8; j0 += 8) {
          __m256 c0 = _mm256_setzero_ps(), c1 = _mm256_setzero_ps();
          __m256 c2 = _mm256_setzero_ps(), c3 = _mm256_setzero_ps();
          const float* bcol = bp + j0;
          for (int64_t p = 0; p < k; p++) {
            const __m256 bv = _mm256_loadu_ps(bcol + p * n8);
            c0 = _mm256_add_ps(c0, _mm256_mul_ps(_mm256_broadcast_ss(a0 + p), bv));
            c1 = _mm256_add_ps(c1, _mm256_mul_ps(_mm256_broadcast_ss(a1 + p), bv));
            c2 = _mm256_add_ps(c2, _mm256_mul_ps(_mm256_broadcast_ss(a2 + p), bv));
            c3 = _mm256_add_ps(c3, _mm256_mul_ps(_mm256_broadcast_ss(a3 + p), bv));
          }
          _mm256_store_ps(tail[0], c0);
          _mm256_store_ps(tail[1], c1);
          _mm256_store_ps(tail[2], c2);
          _mm256_store_ps(tail[3], c3);
          const int64_t cols = std::min<int64_t>(8, n - j0);
          for (int64_t r = 0; r < rows; r++)
            std::memcpy(cz + (i0 + r) * n + j0, tail[r], cols * sizeof(float));
        }
      }
    }
  }
}

// (..., m, k) @ (..., k, n) with up to two leading axes, as 4-D views.
Tensor products(const Tensor& a, const Tensor& b) {
  auto as4 = [](const Tensor& t) {
    Tensor u = t;
    while (u.dim() < 4) u = u.unsqueeze(0);
    return u;
  };
  Tensor a4 = as4(a), b4 = as4(b);
  TORCH_CHECK(a4.dim() == 4 && b4.dim() == 4 && a4.size(3) == b4.size(2) &&
                  a4.size(0) == b4.size(0) && a4.size(1) == b4.size(1),
              "products: shapes ", a.sizes(), " and ", b.sizes(), " do not match");
  TORCH_CHECK(a.scalar_type() == at::kFloat && b.scalar_type() == at::kFloat,
              "products: float32 only");
  auto shape = a.sizes().vec();
  shape.back() = b.size(-1);
  // Returned as allocated, not as a view, so that callers may modify it in place.
  Tensor c = at::empty(shape, a.options());
  Tensor c4 = c.view({a4.size(0), a4.size(1), a4.size(2), b4.size(3)});
  batched_products(a4, b4, c4);
  return c;
}

struct Matmul : public torch::autograd::Function<Matmul> {
  static Tensor forward(AutogradContext* ctx, const Tensor& a, const Tensor& b) {
    ctx->save_for_backward({a, b});
    return products(a, b);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    auto saved = ctx->get_saved_variables();
    const Tensor& a = saved[0];
    const Tensor& b = saved[1];
    const Tensor& g = grads[0];
    return {products(g, b.transpose(-2, -1)), products(a.transpose(-2, -1), g)};
  }
};

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
  return guarded([&] { return Linear::apply(*x, *w, *b); });
}

at::Tensor* revtx_matmul(const at::Tensor* a, const at::Tensor* b) {
  return guarded([&] { return Matmul::apply(*a, *b); });
}

const char* revtx_last_error() { return last_error.c_str(); }

// Makes `grad` the gradient of `param`: autograd then accumulates into it in place.
void revtx_set_grad(at::Tensor* param, const at::Tensor* grad) { param->mutable_grad() = *grad; }

// The kernel set ATen dispatches to ("DEFAULT", "AVX2", "AVX512"), into `buf`.
void revtx_aten_capability(char* buf, size_t len) {
  std::string c = at::get_cpu_capability();
  std::strncpy(buf, c.c_str(), len - 1);
  buf[len - 1] = 0;
}

}  // extern "C"
