// The fused attention kernel: scaled dot-product attention over every head at once,
// straight from the qkv product. qkv (b, t, 3d) holds each token's query, key and value
// side by side; the output (b, t, d) holds the heads side by side, ready for the out
// projection. No transposes, no copies, one pass for scores, mask, softmax and the weighted
// sum, and a backward that skips the masked half. Every sum runs in an order fixed here:
// dot products in eight lanes over the coordinates, then a fixed tree; weighted sums in
// increasing row order, each product rounded before it is added (-ffp-contract=off).
//
// Plain C++ with no libtorch and no include guard: `attention.cpp` includes it for the
// autograd node, and scripts/ab-attention.cpp includes two versions of it side by side,
// each in a namespace of its own (hence the `::revtx::` names of what it uses).

#define REVTX_LANES 8
#include "lanes.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

// The attention's switches, as the engine's `AttnOptions` describes them: this struct
// crosses the FFI whole (`#[repr(C)] FfiAttention` in kernels.rs mirrors it) and the
// autograd node saves it whole for the backward, so a new switch is one field here.
struct AttnOpts {
  bool scale;         // divide the scores by sqrt(d_k)
  bool causal;        // later keys get exactly zero weight
  bool over_queries;  // the fault: softmax along the query axis
};

// a · b over n coordinates: lane l sums coordinates l, l + 8, ... in order, the lanes meet
// in a fixed tree, and a tail of n mod 8 is added one by one.
inline __attribute__((target("avx2"))) float dot(const float* a, const float* b, int64_t n) {
  __m256 acc = _mm256_setzero_ps();
  int64_t p = 0;
  for (; p + 8 <= n; p += 8)
    acc = _mm256_add_ps(acc, _mm256_mul_ps(_mm256_loadu_ps(a + p), _mm256_loadu_ps(b + p)));
  float s = ::revtx::lanes8::hsum(acc);
  for (; p < n; p++) s = s + a[p] * b[p];
  return s;
}

// dot(a, b_m, n) for the eight vectors b_m = b + m * bs, m < 8, into out[m]: eight chains
// side by side, each the very operations of `dot`, so the same bits. Their eight trees run
// together, two chains to a register, lane for lane the adds of `lanes8::hsum`: lanes l + (l + 4),
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
  __m256 s4[4];  // s4[m]: hsum's s4 of chain m in the low half, of chain m + 4 in the high
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
    const __m256 e = ::revtx::lanes8::exp(_mm256_sub_ps(group_of(x, i, n), m));
    _mm256_storeu_ps(pad + i, e);
    acc = _mm256_add_ps(acc, e);
  }
  const __m256 sum = _mm256_set1_ps(::revtx::lanes8::hsum(acc));
  for (int64_t i = 0; i < n8; i += 8)
    _mm256_maskstore_ps(x + i, lanes_below(n - i), _mm256_div_ps(_mm256_loadu_ps(pad + i), sum));
}

// Softmax of x[0], x[s], ..., x[(n-1)s] in place (the fault's softmax over queries): the
// maximum, the exponentials, their sum in increasing order, one division each.
__attribute__((target("avx2"))) void softmax_strided(float* x, int64_t n, int64_t s) {
  float m = x[0];
  for (int64_t i = 1; i < n; i++) m = std::max(m, x[i * s]);
  for (int64_t i = 0; i < n; i++) x[i * s] = ::revtx::exp1(x[i * s] - m);
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
