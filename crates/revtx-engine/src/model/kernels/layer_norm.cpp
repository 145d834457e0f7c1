// Layer norm and its backward, as one autograd node.
// Over the last axis of n: y = (x - mean) / sqrt(var + eps) * gamma + beta, var biased.
// Mean and variance in two passes, each summed as `dot` sums: lane l takes coordinates l,
// l + 8, ..., the lanes meet in a fixed tree, a tail of n mod 8 is added one by one.

#define REVTX_LANES 8
#include "lanes.h"

#include "kernels.h"

namespace revtx {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

inline __attribute__((target("avx2"))) float row_sum(const float* x, int64_t n) {
  __m256 acc = _mm256_setzero_ps();
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) acc = _mm256_add_ps(acc, _mm256_loadu_ps(x + j));
  float s = lanes8::hsum(acc);
  for (; j < n; j++) s = s + x[j];
  return s;
}

// out[j] = (x[j] - mean) * rstd: the normalised row, the same operations in both passes.
inline __attribute__((target("avx2"))) void normalise(const float* x, float mean, float rstd,
                                                     float* out, int64_t n) {
  const __m256 m = _mm256_set1_ps(mean), r = _mm256_set1_ps(rstd);
  int64_t j = 0;
  for (; j + 8 <= n; j += 8)
    _mm256_storeu_ps(out + j, _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(x + j), m), r));
  for (; j < n; j++) out[j] = (x[j] - mean) * rstd;
}

// y (rows, n) from x (rows, n); mean and rstd (rows) saved for the backward.
__attribute__((target("avx2"))) void layer_norm_forward(const float* x, const float* gamma,
                                                        const float* beta, float eps, float* y,
                                                        float* mean, float* rstd, int64_t rows,
                                                        int64_t n) {
  std::vector<float> dev(n);
  for (int64_t r = 0; r < rows; r++) {
    const float* xr = x + r * n;
    const float mu = row_sum(xr, n) / static_cast<float>(n);
    for (int64_t j = 0; j < n; j++) dev[j] = (xr[j] - mu) * (xr[j] - mu);
    const float var = row_sum(dev.data(), n) / static_cast<float>(n);
    const float rs = 1.0f / std::sqrt(var + eps);
    mean[r] = mu;
    rstd[r] = rs;
    float* yr = y + r * n;
    normalise(xr, mu, rs, yr, n);
    for (int64_t j = 0; j < n; j++) yr[j] = yr[j] * gamma[j] + beta[j];
  }
}

// dx (rows, n), and dgamma, dbeta (n) summed over the rows in increasing order:
// with x̂ the normalised row and g = dy * gamma,
// dx = (g - sum(g) / n - x̂ * sum(g x̂) / n) * rstd.
__attribute__((target("avx2"))) void layer_norm_backward(const float* dy, const float* x,
                                                         const float* gamma, const float* mean,
                                                         const float* rstd, float* dx,
                                                         float* dgamma, float* dbeta,
                                                         int64_t rows, int64_t n) {
  std::vector<float> xhat(n), g(n), gx(n);
  std::fill(dgamma, dgamma + n, 0.0f);
  std::fill(dbeta, dbeta + n, 0.0f);
  for (int64_t r = 0; r < rows; r++) {
    const float* dyr = dy + r * n;
    normalise(x + r * n, mean[r], rstd[r], xhat.data(), n);
    for (int64_t j = 0; j < n; j++) {
      g[j] = dyr[j] * gamma[j];
      gx[j] = g[j] * xhat[j];
      dgamma[j] = dgamma[j] + dyr[j] * xhat[j];
      dbeta[j] = dbeta[j] + dyr[j];
    }
    const float a = row_sum(g.data(), n) / static_cast<float>(n);
    const float b = row_sum(gx.data(), n) / static_cast<float>(n);
    float* dxr = dx + r * n;
    for (int64_t j = 0; j < n; j++) dxr[j] = (g[j] - a - xhat[j] * b) * rstd[r];
  }
}

// Layer norm of x (rows, n) as tensors: y and the statistics (2, rows): mean, rstd.
std::pair<Tensor, Tensor> ln_forward(const Tensor& x, const Tensor& gamma_in,
                                     const Tensor& beta_in, double eps) {
  const int64_t n = x.size(-1);
  TORCH_CHECK(x.scalar_type() == at::kFloat && x.is_contiguous() && gamma_in.numel() == n &&
                  beta_in.numel() == n,
              "layer_norm: want float32 (..., n) with n weights and biases, got ", x.sizes(),
              ", ", gamma_in.sizes(), ", ", beta_in.sizes());
  const Tensor gamma = gamma_in.contiguous(), beta = beta_in.contiguous();
  const int64_t rows = x.numel() / n;
  Tensor y = at::empty_like(x);
  Tensor stats = at::empty({2, rows}, x.options());
  layer_norm_forward(x.data_ptr<float>(), gamma.data_ptr<float>(), beta.data_ptr<float>(),
                     static_cast<float>(eps), y.data_ptr<float>(), stats[0].data_ptr<float>(),
                     stats[1].data_ptr<float>(), rows, n);
  return {y, stats};
}

// dx, dgamma, dbeta from dy, given the forward's x and statistics.
std::tuple<Tensor, Tensor, Tensor> ln_backward(const Tensor& dy_in, const Tensor& x,
                                               const Tensor& gamma_in, const Tensor& stats) {
  const Tensor dy = dy_in.contiguous(), gamma = gamma_in.contiguous();
  const int64_t n = x.size(-1), rows = x.numel() / n;
  Tensor dx = at::empty_like(x), dgamma = at::empty_like(gamma), dbeta = at::empty_like(gamma);
  layer_norm_backward(dy.data_ptr<float>(), x.data_ptr<float>(), gamma.data_ptr<float>(),
                      stats[0].data_ptr<float>(), stats[1].data_ptr<float>(),
                      dx.data_ptr<float>(), dgamma.data_ptr<float>(), dbeta.data_ptr<float>(),
                      rows, n);
  return {dx, dgamma, dbeta};
}

struct LayerNorm : public torch::autograd::Function<LayerNorm> {
  static Tensor forward(AutogradContext* ctx, const Tensor& x_in, const Tensor& gamma,
                        const Tensor& beta, double eps) {
    const Tensor x = x_in.contiguous();
    auto [y, stats] = ln_forward(x, gamma, beta, eps);
    ctx->save_for_backward({x, gamma, stats});
    return y;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    auto saved = ctx->get_saved_variables();
    auto [dx, dgamma, dbeta] = ln_backward(grads[0], saved[0], saved[1], saved[2]);
    return {dx, dgamma, dbeta, Tensor()};
  }
};

}  // namespace

Tensor layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps) {
  return LayerNorm::apply(x, gamma, beta, eps);
}

}  // namespace revtx
