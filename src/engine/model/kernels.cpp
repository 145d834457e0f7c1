// The engine's matrix products under the portable profile, each with its own backward.
//
// libtorch sends float32 products to MKL, which picks its code path by CPU vendor. Here:
// - linear layers (96% of a step's arithmetic) run on the engine's own matrix product
//   (gemm.cpp), one fused multiply-add chain per output in a fixed order, which computes
//   the same bits in its AVX-512 and its AVX2 kernel;
// - attention runs as one fused kernel per batch (scores, mask, softmax with its own
//   exponential, weighted sums, and the backward of all of it), and the standalone batched
//   products in a plain loop; in both, the order of every sum is fixed by this source,
//   each product rounded, then added (no fused multiply-add, no reassociation:
//   -ffp-contract=off).
// So no product reaches MKL or oneDNN. Called from `kernels.rs`; tensors are tch's
// `at::Tensor*`.

#include <ATen/ATen.h>
#include <ATen/Version.h>
#include <torch/csrc/autograd/custom_function.h>

#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

// The matrix product of gemm.cpp, compiled once per instruction set (see build.rs).
extern "C" {
void revtx_gemm_avx2(int64_t m, int64_t n, int64_t k, const float* a, int64_t a_rs, int64_t a_cs,
                     const float* b, int64_t b_rs, int64_t b_cs, const float* bias,
                     const float* times, float* c, int64_t ldc);
void revtx_gemm_avx512(int64_t m, int64_t n, int64_t k, const float* a, int64_t a_rs,
                       int64_t a_cs, const float* b, int64_t b_rs, int64_t b_cs,
                       const float* bias, const float* times, float* c, int64_t ldc);
}

namespace {

using at::Tensor;
using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

thread_local std::string last_error;

// Whether the kernels that have an AVX-512 version use it: the matrix product and GELU.
// Each computes the same bits in either width (one output per lane, the same operations
// per lane). On by default where the CPU has AVX-512; `revtx_kernel_isa` can hold a process
// to AVX2, for the tests that check the bits and the bench of what an AVX2 machine runs.
std::atomic<bool>& wide_kernels() {
  static std::atomic<bool> wide{__builtin_cpu_supports("avx512f") != 0};
  return wide;
}

// (bias + a @ b) * times: a (m, k), b (k, n), bias (n) or none, times (m, n) contiguous or
// none → (m, n), contiguous. The kernel takes a with contiguous rows or contiguous columns
// (anything else is copied first), b with any strides.
Tensor gemm(const Tensor& a_in, const Tensor& b, const std::optional<Tensor>& bias_in = {},
            const std::optional<Tensor>& times = {}) {
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

// ---- Fused attention ----------------------------------------------------------------
// Scaled dot-product attention over every head at once, straight from the qkv product:
// qkv (b, t, 3d) holds each token's query, key and value side by side; the output
// (b, t, d) holds the heads side by side, ready for the out projection. No transposes,
// no copies, one pass for scores, mask, softmax and the weighted sum, and a backward that
// skips the masked half. Every sum runs in an order fixed here: dot products in eight
// lanes over the coordinates, then a fixed tree; weighted sums in increasing row order,
// each product rounded before it is added.

struct AttnOpts {
  bool scale;         // divide the scores by sqrt(d_k)
  bool causal;        // later keys get exactly zero weight
  bool over_queries;  // the fault: softmax along the query axis
};

inline __attribute__((target("avx2"))) float hsum8(__m256 v) {
  __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
  return _mm_cvtss_f32(_mm_add_ss(s2, _mm_shuffle_ps(s2, s2, 1)));
}

// a · b over n coordinates: lane l sums coordinates l, l + 8, ... in order, the lanes meet
// in a fixed tree, and a tail of n mod 8 is added one by one.
inline __attribute__((target("avx2"))) float dot(const float* a, const float* b, int64_t n) {
  __m256 acc = _mm256_setzero_ps();
  int64_t p = 0;
  for (; p + 8 <= n; p += 8)
    acc = _mm256_add_ps(acc, _mm256_mul_ps(_mm256_loadu_ps(a + p), _mm256_loadu_ps(b + p)));
  float s = hsum8(acc);
  for (; p < n; p++) s = s + a[p] * b[p];
  return s;
}

// dot(a, b_m, n) for the eight vectors b_m = b + m * bs, m < 8, into out[m]: eight chains
// side by side, each the very operations of `dot`, so the same bits. Their eight trees run
// together, two chains to a register, lane for lane the adds of `hsum8`: lanes l + (l + 4),
// then (0 + 2) and (1 + 3), then those two.
// Always inlined: as a call of its own, GCC zeroed acc on the stack with `rep stos`, which
// doubled the dot products' time (`perf annotate`).
inline __attribute__((target("avx2"), always_inline)) void dot8(const float* a, const float* b,
                                                               int64_t bs, int64_t n,
                                                               float* out) {
  __m256 acc[8];
  for (int m = 0; m < 8; m++) acc[m] = _mm256_setzero_ps();
  int64_t p = 0;
  for (; p + 8 <= n; p += 8) {
    const __m256 av = _mm256_loadu_ps(a + p);
    for (int m = 0; m < 8; m++)
      acc[m] = _mm256_add_ps(acc[m], _mm256_mul_ps(av, _mm256_loadu_ps(b + m * bs + p)));
  }
  __m256 s4[4];  // s4[m]: hsum8's s4 of chain m in the low half, of chain m + 4 in the high
  for (int m = 0; m < 4; m++)
    s4[m] = _mm256_add_ps(_mm256_permute2f128_ps(acc[m], acc[m + 4], 0x20),
                          _mm256_permute2f128_ps(acc[m], acc[m + 4], 0x31));
  // s2[0]: the s2 of chains 0, 1 (low half) and 4, 5 (high); s2[1]: of 2, 3 and 6, 7.
  __m256 s2[2];
  for (int m = 0; m < 2; m++)
    s2[m] = _mm256_add_ps(_mm256_shuffle_ps(s4[2 * m], s4[2 * m + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                          _mm256_shuffle_ps(s4[2 * m], s4[2 * m + 1], _MM_SHUFFLE(3, 2, 3, 2)));
  _mm256_storeu_ps(out, _mm256_hadd_ps(s2[0], s2[1]));  // chains 0..7 in order
  if (p < n)
    for (int m = 0; m < 8; m++) {
      float s = out[m];
      for (int64_t q = p; q < n; q++) s = s + a[q] * b[m * bs + q];
      out[m] = s;
    }
}

// out[j] = dot(a, b + j * bs, dk) for j < n, where b holds t >= n rows: eight at a time,
// straight into out, the last eight shifted back to end within the t rows (the keys
// computed twice get the same bits twice). out holds t floats; entries from n on may be
// written too, and every caller overwrites them (masked weights are exactly zero). Under
// eight rows, one at a time.
inline __attribute__((target("avx2"))) void dots(const float* a, const float* b, int64_t bs,
                                                int64_t dk, int64_t n, int64_t t, float* out) {
  if (t < 8) {
    for (int64_t j = 0; j < n; j++) out[j] = dot(a, b + j * bs, dk);
    return;
  }
  for (int64_t j = 0; j < n; j += 8) {
    const int64_t j0 = std::min(j, t - 8);
    dot8(a, b + j0 * bs, bs, dk, out + j0);
  }
}

// out[c] = sum over r in [r0, r1) of coef[r * cs] * rows[r * rs + c], for c < n, adding
// in increasing r from zero. Overwrites out. Columns are independent, so doing 32 of them
// per pass over the rows (a head's width) changes no bit, only the number of passes.
inline __attribute__((target("avx2"))) void weighted_rows(float* out, const float* coef,
                                                         int64_t cs, const float* rows,
                                                         int64_t rs, int64_t r0, int64_t r1,
                                                         int64_t n) {
  int64_t c = 0;
  for (; c + 32 <= n; c += 32) {
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
    __m256 a2 = _mm256_setzero_ps(), a3 = _mm256_setzero_ps();
    for (int64_t r = r0; r < r1; r++) {
      const __m256 w = _mm256_broadcast_ss(coef + r * cs);
      const float* row = rows + r * rs + c;
      a0 = _mm256_add_ps(a0, _mm256_mul_ps(w, _mm256_loadu_ps(row)));
      a1 = _mm256_add_ps(a1, _mm256_mul_ps(w, _mm256_loadu_ps(row + 8)));
      a2 = _mm256_add_ps(a2, _mm256_mul_ps(w, _mm256_loadu_ps(row + 16)));
      a3 = _mm256_add_ps(a3, _mm256_mul_ps(w, _mm256_loadu_ps(row + 24)));
    }
    _mm256_storeu_ps(out + c, a0);
    _mm256_storeu_ps(out + c + 8, a1);
    _mm256_storeu_ps(out + c + 16, a2);
    _mm256_storeu_ps(out + c + 24, a3);
  }
  for (; c + 16 <= n; c += 16) {
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
    for (int64_t r = r0; r < r1; r++) {
      const __m256 w = _mm256_broadcast_ss(coef + r * cs);
      a0 = _mm256_add_ps(a0, _mm256_mul_ps(w, _mm256_loadu_ps(rows + r * rs + c)));
      a1 = _mm256_add_ps(a1, _mm256_mul_ps(w, _mm256_loadu_ps(rows + r * rs + c + 8)));
    }
    _mm256_storeu_ps(out + c, a0);
    _mm256_storeu_ps(out + c + 8, a1);
  }
  for (; c + 8 <= n; c += 8) {
    __m256 a0 = _mm256_setzero_ps();
    for (int64_t r = r0; r < r1; r++)
      a0 = _mm256_add_ps(a0, _mm256_mul_ps(_mm256_broadcast_ss(coef + r * cs),
                                           _mm256_loadu_ps(rows + r * rs + c)));
    _mm256_storeu_ps(out + c, a0);
  }
  for (; c < n; c++) {
    float a = 0.0f;
    for (int64_t r = r0; r < r1; r++) a = a + coef[r * cs] * rows[r * rs + c];
    out[c] = a;
  }
}

// acc[u] += w * row[8u .. 8u + 8) for u < 4: one row's step of a 32-column pass.
inline __attribute__((target("avx2"), always_inline)) void add_row32(__m256* acc, float w,
                                                                     const float* row) {
  const __m256 wv = _mm256_set1_ps(w);
  for (int u = 0; u < 4; u++)
    acc[u] = _mm256_add_ps(acc[u], _mm256_mul_ps(wv, _mm256_loadu_ps(row + 8 * u)));
}

// weighted_rows for two outputs that share their rows: out_a over rows [a0, a1) with
// coefficients coef_a, out_b over [b0, b1) with coef_b. Each output gets the adds that
// weighted_rows gives it, in the same order; on the rows both read, one load serves both.
// For widths of whole 32-column passes whose ranges overlap; others go one at a time.
inline __attribute__((target("avx2"))) void weighted_rows2(
    float* out_a, const float* coef_a, int64_t a0, int64_t a1, float* out_b,
    const float* coef_b, int64_t b0, int64_t b1, int64_t cs, const float* rows, int64_t rs,
    int64_t n) {
  const int64_t lo = std::max(a0, b0), hi = std::min(a1, b1);
  if (n % 32 != 0 || lo >= hi) {
    weighted_rows(out_a, coef_a, cs, rows, rs, a0, a1, n);
    weighted_rows(out_b, coef_b, cs, rows, rs, b0, b1, n);
    return;
  }
  for (int64_t c = 0; c < n; c += 32) {
    __m256 a[4], b[4];
    for (int u = 0; u < 4; u++) a[u] = b[u] = _mm256_setzero_ps();
    const float* col = rows + c;
    for (int64_t r = a0; r < lo; r++) add_row32(a, coef_a[r * cs], col + r * rs);
    for (int64_t r = b0; r < lo; r++) add_row32(b, coef_b[r * cs], col + r * rs);
    for (int64_t r = lo; r < hi; r++) {
      add_row32(a, coef_a[r * cs], col + r * rs);
      add_row32(b, coef_b[r * cs], col + r * rs);
    }
    for (int64_t r = hi; r < a1; r++) add_row32(a, coef_a[r * cs], col + r * rs);
    for (int64_t r = hi; r < b1; r++) add_row32(b, coef_b[r * cs], col + r * rs);
    for (int u = 0; u < 4; u++) {
      _mm256_storeu_ps(out_a + c + 8 * u, a[u]);
      _mm256_storeu_ps(out_b + c + 8 * u, b[u]);
    }
  }
}

// weighted_rows for t outputs, out + u * os with coefficients coef + u * us (each strided
// by cs) over the rows range(u) = [first, last), two at a time.
template <class Range>
inline void weighted_rows_each(int64_t t, float* out, int64_t os, const float* coef, int64_t us,
                               int64_t cs, const float* rows, int64_t rs, int64_t n,
                               Range range) {
  int64_t u = 0;
  for (; u + 2 <= t; u += 2) {
    const auto [a0, a1] = range(u);
    const auto [b0, b1] = range(u + 1);
    weighted_rows2(out + u * os, coef + u * us, a0, a1, out + (u + 1) * os, coef + (u + 1) * us,
                   b0, b1, cs, rows, rs, n);
  }
  if (u < t) {
    const auto [a0, a1] = range(u);
    weighted_rows(out + u * os, coef + u * us, cs, rows, rs, a0, a1, n);
  }
}

// e^x for the softmax, whose arguments are at most zero: Cody-Waite reduction by ln 2 and
// Cephes' degree-5 polynomial, about one ulp; below -87 (under 2^-125) it returns zero.
// Lane for lane the same operations as the scalar version below.
inline __attribute__((target("avx2"), always_inline)) __m256 exp8(__m256 x) {
  const __m256 n = _mm256_floor_ps(
      _mm256_add_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)), _mm256_set1_ps(0.5f)));
  __m256 r = _mm256_sub_ps(x, _mm256_mul_ps(n, _mm256_set1_ps(0.693359375f)));
  r = _mm256_sub_ps(r, _mm256_mul_ps(n, _mm256_set1_ps(-2.12194440e-4f)));
  const __m256 z = _mm256_mul_ps(r, r);
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(5.0000001201e-1f));
  const __m256 y = _mm256_add_ps(_mm256_add_ps(_mm256_mul_ps(p, z), r), _mm256_set1_ps(1.0f));
  const __m256i e =
      _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  const __m256 under = _mm256_cmp_ps(x, _mm256_set1_ps(-87.0f), _CMP_LT_OQ);
  return _mm256_andnot_ps(under, _mm256_mul_ps(y, _mm256_castsi256_ps(e)));
}

inline float exp1(float x) {
  if (x < -87.0f) return 0.0f;
  const float n = std::floor(x * 1.44269504088896341f + 0.5f);
  float r = x - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  const float z = r * r;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float y = p * z + r + 1.0f;
  int32_t bits = (static_cast<int32_t>(n) + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return y * scale;
}

inline __attribute__((target("avx2"))) float hmax8(__m256 v) {
  __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  __m128 m2 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
  return _mm_cvtss_f32(_mm_max_ss(m2, _mm_shuffle_ps(m2, m2, 1)));
}

// Lanes l < n of eight, as a mask for maskload and maskstore.
inline __attribute__((target("avx2"), always_inline)) __m256i lanes_below(int64_t n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(std::min<int64_t>(n, 8))),
                            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// Entries i .. i + 7 of x[0..n); those from n on are not read, and count as -inf.
inline __attribute__((target("avx2"), always_inline)) __m256 group_of(const float* x,
                                                                      int64_t i, int64_t n) {
  const __m256i in = lanes_below(n - i);
  return _mm256_blendv_ps(_mm256_set1_ps(-INFINITY), _mm256_maskload_ps(x + i, in),
                          _mm256_castsi256_ps(in));
}

// Softmax of x[0..n) in place, in registers, eight entries at a time: the last group is
// loaded under a mask and its missing lanes set to -inf, whose exponential is exactly zero
// (no copy of the row, no call). The maximum, the exponentials (kept in `pad`, room for n
// rounded up to 8), their sum in eight lanes (lane l adds entries l, l + 8, ...) meeting in
// a fixed tree, and one division each, stored under the same mask.
__attribute__((target("avx2"))) void softmax_row(float* x, int64_t n, float* pad) {
  const int64_t n8 = (n + 7) / 8 * 8;
  __m256 mv = group_of(x, 0, n);
  for (int64_t i = 8; i < n8; i += 8) mv = _mm256_max_ps(mv, group_of(x, i, n));
  const __m256 m = _mm256_set1_ps(hmax8(mv));
  __m256 acc = _mm256_setzero_ps();
  for (int64_t i = 0; i < n8; i += 8) {
    const __m256 e = exp8(_mm256_sub_ps(group_of(x, i, n), m));
    _mm256_storeu_ps(pad + i, e);
    acc = _mm256_add_ps(acc, e);
  }
  const __m256 sum = _mm256_set1_ps(hsum8(acc));
  for (int64_t i = 0; i < n8; i += 8)
    _mm256_maskstore_ps(x + i, lanes_below(n - i), _mm256_div_ps(_mm256_loadu_ps(pad + i), sum));
}

// Softmax of x[0], x[s], ..., x[(n-1)s] in place (the fault's softmax over queries): the
// maximum, the exponentials, their sum in increasing order, one division each.
__attribute__((target("avx2"))) void softmax_strided(float* x, int64_t n, int64_t s) {
  float m = x[0];
  for (int64_t i = 1; i < n; i++) m = std::max(m, x[i * s]);
  for (int64_t i = 0; i < n; i++) x[i * s] = exp1(x[i * s] - m);
  float sum = 0.0f;
  for (int64_t j = 0; j < n; j++) sum = sum + x[j * s];
  for (int64_t j = 0; j < n; j++) x[j * s] = x[j * s] / sum;
}

// Rows of keys query i may see: [0, i] under the mask, all t otherwise.
inline int64_t keys_seen(const AttnOpts& o, int64_t i, int64_t t) { return o.causal ? i + 1 : t; }
// Rows of queries that see key j: [j, t) under the mask, all t otherwise.
inline int64_t first_query(const AttnOpts& o, int64_t j) { return o.causal ? j : 0; }
// The same as ranges of rows, [first, last), for weighted_rows_each.
inline auto key_rows(const AttnOpts& o, int64_t t) {
  return [o, t](int64_t i) { return std::pair<int64_t, int64_t>{0, keys_seen(o, i, t)}; };
}
inline auto query_rows(const AttnOpts& o, int64_t t) {
  return [o, t](int64_t j) { return std::pair<int64_t, int64_t>{first_query(o, j), t}; };
}

// y (b, t, d) and w (b, h, t, t) from qkv (b, t, 3d).
void attention_forward(const float* qkv, float* y, float* w, int64_t b, int64_t t, int64_t d,
                       int64_t h, AttnOpts o) {
  const int64_t dk = d / h, rs = 3 * d;
  const float root = std::sqrt(static_cast<float>(dk));
  std::vector<float> pad((t + 7) / 8 * 8);  // softmax_row's registers
  for (int64_t z = 0; z < b; z++) {
    for (int64_t hh = 0; hh < h; hh++) {
      const float* q = qkv + z * t * rs + hh * dk;
      const float* k = q + d;
      const float* v = q + 2 * d;
      float* wz = w + (z * h + hh) * t * t;  // (queries, keys)
      for (int64_t i = 0; i < t; i++) {
        const int64_t n = keys_seen(o, i, t);
        float* row = wz + i * t;
        dots(q + i * rs, k, rs, dk, n, t, row);
        if (o.scale)
          for (int64_t j = 0; j < n; j++) row[j] = row[j] / root;
        for (int64_t j = n; j < t; j++) row[j] = 0.0f;  // masked: weight exactly zero
        if (!o.over_queries) softmax_row(row, n, pad.data());
      }
      if (o.over_queries)
        for (int64_t j = 0; j < t; j++) {
          const int64_t i0 = first_query(o, j);
          softmax_strided(wz + i0 * t + j, t - i0, t);
        }
      weighted_rows_each(t, y + z * t * d + hh * dk, d, wz, t, 1, v, rs, dk, key_rows(o, t));
    }
  }
}

// dqkv (b, t, 3d) from dy (b, t, d), given the forward's qkv and weights w.
void attention_backward(const float* qkv, const float* w, const float* dy, float* dqkv,
                        int64_t b, int64_t t, int64_t d, int64_t h, AttnOpts o) {
  const int64_t dk = d / h, rs = 3 * d;
  const float root = std::sqrt(static_cast<float>(dk));
  std::vector<float> ds(t * t);  // dL/dw, then dL/d(score)
  std::vector<float> rsum(t);
  for (int64_t z = 0; z < b; z++) {
    for (int64_t hh = 0; hh < h; hh++) {
      const float* q = qkv + z * t * rs + hh * dk;
      const float* k = q + d;
      const float* v = q + 2 * d;
      const float* wz = w + (z * h + hh) * t * t;
      const float* g = dy + z * t * d + hh * dk;  // rows of stride d
      float* dq = dqkv + z * t * rs + hh * dk;
      float* dkey = dq + d;
      float* dv = dq + 2 * d;
      // dv_j = sum_i w_ij dy_i over the queries that see key j.
      weighted_rows_each(t, dv, rs, wz, 1, t, g, d, dk, query_rows(o, t));
      // dw_ij = dy_i . v_j; masked entries stay zero.
      for (int64_t i = 0; i < t; i++) {
        const int64_t n = keys_seen(o, i, t);
        dots(g + i * d, v, rs, dk, n, t, ds.data() + i * t);
        for (int64_t j = n; j < t; j++) ds[i * t + j] = 0.0f;
      }
      // Through the softmax: ds_ij = w_ij (dw_ij - sum over its softmax group of w dw).
      if (!o.over_queries) {
        for (int64_t i = 0; i < t; i++) {
          const int64_t n = keys_seen(o, i, t);
          float r = 0.0f;
          for (int64_t j = 0; j < n; j++) r = r + wz[i * t + j] * ds[i * t + j];
          for (int64_t j = 0; j < n; j++) ds[i * t + j] = wz[i * t + j] * (ds[i * t + j] - r);
        }
      } else {
        for (int64_t j = 0; j < t; j++) {
          float r = 0.0f;
          for (int64_t i = first_query(o, j); i < t; i++) r = r + wz[i * t + j] * ds[i * t + j];
          rsum[j] = r;
        }
        for (int64_t i = 0; i < t; i++)
          for (int64_t j = 0; j < keys_seen(o, i, t); j++)
            ds[i * t + j] = wz[i * t + j] * (ds[i * t + j] - rsum[j]);
      }
      if (o.scale)
        for (int64_t i = 0; i < t; i++)
          for (int64_t j = 0; j < keys_seen(o, i, t); j++) ds[i * t + j] = ds[i * t + j] / root;
      // dq_i = sum_j ds_ij k_j; dk_j = sum_i ds_ij q_i.
      weighted_rows_each(t, dq, rs, ds.data(), t, 1, k, rs, dk, key_rows(o, t));
      weighted_rows_each(t, dkey, rs, ds.data(), 1, t, q, rs, dk, query_rows(o, t));
    }
  }
}

struct Attention : public torch::autograd::Function<Attention> {
  // qkv (b, t, 3d) → y (b, t, d), heads side by side, and the weights (b, h, t, t).
  static variable_list forward(AutogradContext* ctx, const Tensor& qkv_in, int64_t heads,
                               bool scale, bool causal, bool over_queries) {
    TORCH_CHECK(qkv_in.dim() == 3 && qkv_in.scalar_type() == at::kFloat,
                "attention: qkv must be float32 (batch, tokens, 3 d_model), got ", qkv_in.sizes());
    const Tensor qkv = qkv_in.contiguous();
    const int64_t b = qkv.size(0), t = qkv.size(1), d = qkv.size(2) / 3;
    TORCH_CHECK(qkv.size(2) == 3 * d && d % heads == 0, "attention: ", qkv.size(2),
                " columns do not split into q, k, v of ", heads, " heads");
    Tensor y = at::empty({b, t, d}, qkv.options());
    Tensor w = at::empty({b, heads, t, t}, qkv.options());
    const AttnOpts o{scale, causal, over_queries};
    attention_forward(qkv.data_ptr<float>(), y.data_ptr<float>(), w.data_ptr<float>(), b, t, d,
                      heads, o);
    ctx->save_for_backward({qkv, w});
    ctx->saved_data["heads"] = heads;
    ctx->saved_data["opts"] = static_cast<int64_t>(scale) | static_cast<int64_t>(causal) << 1 |
                              static_cast<int64_t>(over_queries) << 2;
    ctx->mark_non_differentiable({w});
    return {y, w};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    auto saved = ctx->get_saved_variables();
    const Tensor& qkv = saved[0];
    const Tensor& w = saved[1];
    const int64_t heads = ctx->saved_data["heads"].toInt();
    const int64_t bits = ctx->saved_data["opts"].toInt();
    const AttnOpts o{(bits & 1) != 0, (bits & 2) != 0, (bits & 4) != 0};
    if (!grads[0].defined()) return {at::zeros_like(qkv), Tensor(), Tensor(), Tensor(), Tensor()};
    const Tensor dy = grads[0].contiguous();
    Tensor dqkv = at::empty_like(qkv);
    attention_backward(qkv.data_ptr<float>(), w.data_ptr<float>(), dy.data_ptr<float>(),
                       dqkv.data_ptr<float>(), qkv.size(0), qkv.size(1), qkv.size(2) / 3, heads,
                       o);
    return {dqkv, Tensor(), Tensor(), Tensor(), Tensor()};
  }
};

// ---- GELU ----------------------------------------------------------------------------
// GELU(x) = x Φ(x), with Φ the standard normal distribution function. For z = |x| / √2,
// Φ(-|x|) = erfc(z) / 2 and erfc(z) = t P(t) e^(-z²) with t = 1 / (1 + 0.4 z): the form of
// Abramowitz and Stegun's 7.1.26, with seven coefficients fitted here (error under 2.2e-8
// on erfc, against their 1.5e-7). e^(-z²) = e^(-x²/2) is also the normal density's, so
// one exponential gives both Φ(x) and the derivative Φ(x) + x φ(x), which the forward
// writes for the backward: the backward is then one product.

constexpr float kErfc[7] = {0.2405044698f,  0.09695769692f, 0.6711142315f, -0.7069409906f,
                            1.020294724f,   -0.3529856832f, 0.03105555052f};

// y = GELU(x) and dy = GELU'(x), eight lanes at once.
inline __attribute__((target("avx2"))) void gelu8(__m256 x, __m256* y, __m256* dy) {
  const __m256 one = _mm256_set1_ps(1.0f);
  const __m256 z = _mm256_mul_ps(_mm256_andnot_ps(_mm256_set1_ps(-0.0f), x),
                                 _mm256_set1_ps(0.707106781186547524f));  // |x| / √2
  const __m256 t = _mm256_div_ps(one, _mm256_add_ps(one, _mm256_mul_ps(_mm256_set1_ps(0.4f), z)));
  __m256 p = _mm256_set1_ps(kErfc[6]);
  for (int i = 5; i >= 0; i--) p = _mm256_add_ps(_mm256_mul_ps(p, t), _mm256_set1_ps(kErfc[i]));
  const __m256 e = exp8(_mm256_mul_ps(_mm256_mul_ps(x, x), _mm256_set1_ps(-0.5f)));  // e^(-z²)
  const __m256 tail = _mm256_mul_ps(_mm256_set1_ps(0.5f), _mm256_mul_ps(_mm256_mul_ps(t, p), e));
  const __m256 cdf = _mm256_blendv_ps(tail, _mm256_sub_ps(one, tail),
                                      _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_GE_OQ));
  const __m256 pdf = _mm256_mul_ps(e, _mm256_set1_ps(0.398942280401432678f));  // φ(x)
  *y = _mm256_mul_ps(x, cdf);
  *dy = _mm256_add_ps(cdf, _mm256_mul_ps(x, pdf));
}

// exp8 in sixteen lanes: the same operations, lane for lane (floor as a rounding toward
// minus infinity, the select of zero below -87 as a mask).
inline __attribute__((target("avx512f"), always_inline)) __m512 exp16(__m512 x) {
  const __m512 n = _mm512_roundscale_ps(
      _mm512_add_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)), _mm512_set1_ps(0.5f)),
      _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_sub_ps(x, _mm512_mul_ps(n, _mm512_set1_ps(0.693359375f)));
  r = _mm512_sub_ps(r, _mm512_mul_ps(n, _mm512_set1_ps(-2.12194440e-4f)));
  const __m512 z = _mm512_mul_ps(r, r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_add_ps(_mm512_mul_ps(p, r), _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_add_ps(_mm512_mul_ps(p, r), _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_add_ps(_mm512_mul_ps(p, r), _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_add_ps(_mm512_mul_ps(p, r), _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_add_ps(_mm512_mul_ps(p, r), _mm512_set1_ps(5.0000001201e-1f));
  const __m512 y = _mm512_add_ps(_mm512_add_ps(_mm512_mul_ps(p, z), r), _mm512_set1_ps(1.0f));
  const __m512i e =
      _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23);
  const __mmask16 under = _mm512_cmp_ps_mask(x, _mm512_set1_ps(-87.0f), _CMP_LT_OQ);
  return _mm512_maskz_mov_ps(static_cast<__mmask16>(~under),
                             _mm512_mul_ps(y, _mm512_castsi512_ps(e)));
}

// gelu8 in sixteen lanes, the same operations lane for lane.
inline __attribute__((target("avx512f"))) void gelu16(__m512 x, __m512* y, __m512* dy) {
  const __m512 one = _mm512_set1_ps(1.0f);
  const __m512 z = _mm512_mul_ps(_mm512_abs_ps(x), _mm512_set1_ps(0.707106781186547524f));
  const __m512 t = _mm512_div_ps(one, _mm512_add_ps(one, _mm512_mul_ps(_mm512_set1_ps(0.4f), z)));
  __m512 p = _mm512_set1_ps(kErfc[6]);
  for (int i = 5; i >= 0; i--) p = _mm512_add_ps(_mm512_mul_ps(p, t), _mm512_set1_ps(kErfc[i]));
  const __m512 e = exp16(_mm512_mul_ps(_mm512_mul_ps(x, x), _mm512_set1_ps(-0.5f)));
  const __m512 tail = _mm512_mul_ps(_mm512_set1_ps(0.5f), _mm512_mul_ps(_mm512_mul_ps(t, p), e));
  const __m512 cdf = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_GE_OQ),
                                          tail, _mm512_sub_ps(one, tail));
  const __m512 pdf = _mm512_mul_ps(e, _mm512_set1_ps(0.398942280401432678f));
  *y = _mm512_mul_ps(x, cdf);
  *dy = _mm512_add_ps(cdf, _mm512_mul_ps(x, pdf));
}

// y[i] = GELU(x[i]) and dy[i] = GELU'(x[i]) for i < n; the last n mod 8 in one padded
// register, so every element takes the same operations.
__attribute__((target("avx2"))) void gelu_forward8(const float* x, float* y, float* dy,
                                                   int64_t n) {
  int64_t i = 0;
  __m256 a, b;
  for (; i + 8 <= n; i += 8) {
    gelu8(_mm256_loadu_ps(x + i), &a, &b);
    _mm256_storeu_ps(y + i, a);
    _mm256_storeu_ps(dy + i, b);
  }
  if (i < n) {
    alignas(32) float buf[8] = {}, dbuf[8];
    std::memcpy(buf, x + i, (n - i) * sizeof(float));
    gelu8(_mm256_load_ps(buf), &a, &b);
    _mm256_store_ps(buf, a);
    _mm256_store_ps(dbuf, b);
    std::memcpy(y + i, buf, (n - i) * sizeof(float));
    std::memcpy(dy + i, dbuf, (n - i) * sizeof(float));
  }
}

// The same in sixteen lanes, the last n mod 16 in one padded register.
__attribute__((target("avx512f"))) void gelu_forward16(const float* x, float* y, float* dy,
                                                       int64_t n) {
  int64_t i = 0;
  __m512 a, b;
  for (; i + 16 <= n; i += 16) {
    gelu16(_mm512_loadu_ps(x + i), &a, &b);
    _mm512_storeu_ps(y + i, a);
    _mm512_storeu_ps(dy + i, b);
  }
  if (i < n) {
    alignas(64) float buf[16] = {}, dbuf[16];
    std::memcpy(buf, x + i, (n - i) * sizeof(float));
    gelu16(_mm512_load_ps(buf), &a, &b);
    _mm512_store_ps(buf, a);
    _mm512_store_ps(dbuf, b);
    std::memcpy(y + i, buf, (n - i) * sizeof(float));
    std::memcpy(dy + i, dbuf, (n - i) * sizeof(float));
  }
}

void gelu_forward(const float* x, float* y, float* dy, int64_t n) {
  if (wide_kernels().load(std::memory_order_relaxed))
    gelu_forward16(x, y, dy, n);
  else
    gelu_forward8(x, y, dy, n);
}

struct Gelu : public torch::autograd::Function<Gelu> {
  static Tensor forward(AutogradContext* ctx, const Tensor& x_in) {
    TORCH_CHECK(x_in.scalar_type() == at::kFloat, "gelu: float32 only");
    const Tensor x = x_in.contiguous();
    Tensor y = at::empty_like(x), dy = at::empty_like(x);
    gelu_forward(x.data_ptr<float>(), y.data_ptr<float>(), dy.data_ptr<float>(), x.numel());
    ctx->save_for_backward({dy});
    return y;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    return {grads[0] * ctx->get_saved_variables()[0]};
  }
};

// ---- The MLP -------------------------------------------------------------------------
// down(GELU(up(x))) as one autograd node, the operations of Linear, Gelu and Linear in
// turn. What it saves: the GELU writes over the up product in place, and in the backward
// the product with GELU's derivative happens as the gradient's matrix product stores each
// output (gemm's `times`), rather than in a pass of its own. One rounding either way, so
// the same bits as the three nodes.
struct Mlp : public torch::autograd::Function<Mlp> {
  static Tensor forward(AutogradContext* ctx, const Tensor& x, const Tensor& w1, const Tensor& b1,
                        const Tensor& w2, const Tensor& b2) {
    TORCH_CHECK(x.scalar_type() == at::kFloat, "mlp: float32 only");
    const Tensor x2 = x.reshape({-1, x.size(-1)});  // (rows, in)
    Tensor h = gemm(x2, w1.t(), b1);                 // (rows, hidden)
    Tensor dh = at::empty_like(h);                   // GELU'(up), for the backward
    gelu_forward(h.data_ptr<float>(), h.data_ptr<float>(), dh.data_ptr<float>(), h.numel());
    ctx->save_for_backward({x2, w1, w2, h, dh});  // h now holds GELU(up)
    auto shape = x.sizes().vec();
    shape.back() = w2.size(0);
    return gemm(h, w2.t(), b2).view(shape);  // (..., out)
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    auto saved = ctx->get_saved_variables();
    const Tensor &x2 = saved[0], &w1 = saved[1], &w2 = saved[2], &h = saved[3], &dh = saved[4];
    Tensor g = grads[0].reshape({-1, grads[0].size(-1)}).contiguous();  // (rows, out)
    Tensor gh = gemm(g, w2, {}, dh);  // (g @ w2) * GELU'(up): (rows, hidden)
    auto shape = grads[0].sizes().vec();
    shape.back() = w1.size(1);
    return {gemm(gh, w1).view(shape), gemm(gh.t(), x2), gh.sum(0), gemm(g.t(), h), g.sum(0)};
  }
};

// ---- Layer norm ----------------------------------------------------------------------
// Over the last axis of n: y = (x - mean) / sqrt(var + eps) * gamma + beta, var biased.
// Mean and variance in two passes, each summed as `dot` sums: lane l takes coordinates l,
// l + 8, ..., the lanes meet in a fixed tree, a tail of n mod 8 is added one by one.

inline __attribute__((target("avx2"))) float row_sum(const float* x, int64_t n) {
  __m256 acc = _mm256_setzero_ps();
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) acc = _mm256_add_ps(acc, _mm256_loadu_ps(x + j));
  float s = hsum8(acc);
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

// Fused attention: `out[0]` = y (b, t, d), `out[1]` = weights (b, h, t, t). 0 on success.
int revtx_attention(const at::Tensor* qkv, int64_t heads, bool scale, bool causal,
                    bool over_queries, at::Tensor** out) {
  try {
    auto r = Attention::apply(*qkv, heads, scale, causal, over_queries);
    out[0] = new at::Tensor(r[0]);
    out[1] = new at::Tensor(r[1]);
    return 0;
  } catch (const std::exception& e) {
    last_error = e.what();
    return 1;
  }
}

at::Tensor* revtx_gelu(const at::Tensor* x) {
  return guarded([&] { return Gelu::apply(*x); });
}

at::Tensor* revtx_mlp(const at::Tensor* x, const at::Tensor* w1, const at::Tensor* b1,
                      const at::Tensor* w2, const at::Tensor* b2) {
  return guarded([&] { return Mlp::apply(*x, *w1, *b1, *w2, *b2); });
}

at::Tensor* revtx_layer_norm(const at::Tensor* x, const at::Tensor* gamma, const at::Tensor* beta,
                             double eps) {
  return guarded([&] { return LayerNorm::apply(*x, *gamma, *beta, eps); });
}

const char* revtx_last_error() { return last_error.c_str(); }

// The kernels' vector width: `want` "avx2" holds this process to the AVX2 kernels,
// "avx512" moves it to the AVX-512 ones if the CPU has them, "widest" to the widest the CPU
// has; anything else changes nothing. Returns the width now in use ("avx2" or "avx512").
const char* revtx_kernel_isa(const char* want) {
  const std::string_view w = want != nullptr ? want : "";
  const bool can = __builtin_cpu_supports("avx512f") != 0;
  if (w == "avx2") wide_kernels().store(false);
  if (w == "avx512" || w == "widest") wide_kernels().store(can);
  return wide_kernels().load() ? "avx512" : "avx2";
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
