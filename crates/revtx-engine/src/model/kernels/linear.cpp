// The linear layers and the batched products. Linear layers (96% of a step's arithmetic)
// run on the engine's matrix product (gemm.cpp), one fused multiply-add chain per output in
// a fixed order, which computes the same bits in its AVX-512 and its AVX2 kernel. The
// batched products (the attention reference's) run in a plain loop of fixed order.

#include "kernels.h"

namespace revtx {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// y = x @ w^T + b, x: (..., in), w: (out, in), b: (out).
struct Linear : public torch::autograd::Function<Linear> {
  static Tensor forward(AutogradContext* ctx, const Tensor& x, const Tensor& w, const Tensor& b) {
    ctx->save_for_backward({x, w});
    Tensor y = gemm(x.reshape({-1, x.size(-1)}), w.t(), b);  // (rows, out)
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
    Tensor gx = gemm(g, w).view(x.sizes());                             // g @ w: (..., in)
    return {gx, gemm(g.t(), x2), g.sum(0)};                             // g^T @ x: (out, in)
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

}  // namespace

// (bias + a @ b) * times: a (m, k), b (k, n), bias (n) or none, times (m, n) contiguous or
// none → (m, n), contiguous. The kernel takes a with contiguous rows or contiguous columns
// (anything else is copied first), b with any strides.
Tensor gemm(const Tensor& a_in, const Tensor& b, const std::optional<Tensor>& bias_in,
            const std::optional<Tensor>& times) {
  TORCH_CHECK(a_in.dim() == 2 && b.dim() == 2 && a_in.size(1) == b.size(0) &&
                  a_in.scalar_type() == at::kFloat && b.scalar_type() == at::kFloat,
              "gemm: want float32 matrices (m, k) and (k, n), got ", a_in.sizes(), " and ",
              b.sizes());
  const Tensor a = a_in.stride(1) == 1 || a_in.stride(0) == 1 ? a_in : a_in.contiguous();
  const int64_t m = a.size(0), k = a.size(1), n = b.size(1);
  Tensor bias;
  if (bias_in) {
    bias = bias_in->contiguous();
    TORCH_CHECK(bias.numel() == n && bias.scalar_type() == at::kFloat, "gemm: want ", n,
                " float32 biases, got ", bias.sizes());
  }
  if (times)
    TORCH_CHECK(times->is_contiguous() && times->scalar_type() == at::kFloat &&
                    times->dim() == 2 && times->size(0) == m && times->size(1) == n,
                "gemm: want contiguous float32 factors (", m, ", ", n, "), got ", times->sizes());
  Tensor c = at::empty({m, n}, a.options());
  // Along a length-one axis a stride means nothing: read such an a by rows.
  const bool by_rows = a.stride(1) == 1 || k == 1;
  const auto kernel = wide_kernels().load(std::memory_order_relaxed) ? revtx_gemm_avx512
                                                                     : revtx_gemm_avx2;
  kernel(m, n, k, a.data_ptr<float>(), by_rows ? a.stride(0) : 1, by_rows ? 1 : a.stride(1),
         b.data_ptr<float>(), b.stride(0), b.stride(1),
         bias.defined() ? bias.data_ptr<float>() : nullptr,
         times ? times->data_ptr<float>() : nullptr, c.data_ptr<float>(), n);
  return c;
}

Tensor linear(const Tensor& x, const Tensor& w, const Tensor& b) { return Linear::apply(x, w, b); }

Tensor matmul(const Tensor& a, const Tensor& b) { return Matmul::apply(a, b); }

}  // namespace revtx
