// The engine's matrix product, c = (bias + a @ b) * times, for the linear layers under the
// portable profile (times: an optional matrix the shape of c, multiplied elementwise).
// build.rs compiles this file twice: with AVX2 and FMA (8 lanes), and with AVX-512 (16
// lanes); `linear.cpp` picks the widest the CPU has.
//
// Both compute the same bits. Every output starts at its bias (or zero) and adds its k
// products in increasing k, each with one fused multiply-add, so it is rounded once per
// step: c = fma(a[i][p], b[p][j], c). That order alone fixes the result. A lane holds one
// output column and lanes never mix, so the width of a register changes how many outputs
// are computed at once, never how one is computed. The tests in `tests/kernels.rs` hold
// both kernels to the same chain in scalar code (`f32::mul_add`), bit for bit.
//
// `times` is GELU's derivative in the MLP's backward: each output is multiplied once its
// sum is complete, one rounding, so the bits are those of a separate elementwise product,
// without a second pass over the matrix.
//
// Layout: the sums run in blocks of KC products. In each block, b is packed into panels of
// NR columns (kc rows of NR, zero-padded past n), all of them in one pass over b's rows,
// so the tile's loads are contiguous and a panel stays in L1; a is read in place when its
// rows are contiguous (a_cs == 1), and otherwise packed tile by tile (a_rs == 1: the
// weight gradients); its elements are broadcast one at a time. A tile of MR rows by NR
// columns lives in registers for the whole block. When a block of a read in place is
// larger than FAR, each tile also prefetches the next tile's rows while it computes.

#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

namespace {

#if defined(REVTX_GEMM_AVX512)
using V = __m512;
constexpr int W = 16;  // floats per register
constexpr int MR = 8;  // rows per tile: 8 x 2 accumulators, 2 loads of b, 1 broadcast
inline V vload(const float* p) { return _mm512_loadu_ps(p); }
inline V vset1(float x) { return _mm512_set1_ps(x); }
inline V vfma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
inline V vmul(V a, V b) { return _mm512_mul_ps(a, b); }
inline void vstore(float* p, V v) { _mm512_storeu_ps(p, v); }
#elif defined(REVTX_GEMM_AVX2)
using V = __m256;
constexpr int W = 8;
constexpr int MR = 6;  // 6 x 2 accumulators, 2 loads of b, 1 broadcast: 15 of 16 registers
inline V vload(const float* p) { return _mm256_loadu_ps(p); }
inline V vset1(float x) { return _mm256_set1_ps(x); }
inline V vfma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
inline V vmul(V a, V b) { return _mm256_mul_ps(a, b); }
inline void vstore(float* p, V v) { _mm256_storeu_ps(p, v); }
#else
#error "define REVTX_GEMM_AVX2 or REVTX_GEMM_AVX512"
#endif

constexpr int NR = 2 * W;  // columns per tile: two registers
constexpr int64_t KC = 256;  // products per block: a panel of b (kc x NR) then fits in L1
// Bytes of a in one block beyond which its rows are prefetched a tile ahead: the whole L2
// of an AMD Zen 2 or 3 core. Below it prefetching costs about what it saves (the reference
// model's products: 1.004 and 0.988 of the old time); above it, on a Xeon, exercise 1's
// wide model's products take 3.6% (AVX-512) and 6.4% (AVX2) less time in all, its qkv and
// up input gradients 8-17% less (scripts/ab-gemm.sh, 1,088 rows).
constexpr int64_t FAR = 512 << 10;

// One tile, c[i][j] for i < MR, j < NR: from start values (init, NR of them, or c itself
// when `more`: a later block of the same sums), add the products of a tile of a (element
// (i, p) at a[i * ld + p] when `RowsOfA`, else at a[p * ld + i]) and a packed panel bp
// (kc rows of NR), p in increasing order. With `times` (row stride ldc, as c), the last
// block multiplies each sum by its factor before the store. With `Prefetch`, `next` is the
// next tile of a (as a, RowsOfA only): its rows are fetched into L1 sixteen columns at a
// time, which moves no data the arithmetic reads and changes no bit.
template <bool RowsOfA, bool Prefetch = false>
inline void tile(int64_t kc, const float* a, int64_t ld, const float* bp, const float* init,
                 bool more, const float* times, float* c, int64_t ldc,
                 const float* next = nullptr) {
  V c0[MR], c1[MR];
#pragma GCC unroll 16
  for (int i = 0; i < MR; i++) {
    c0[i] = vload(more ? c + i * ldc : init);
    c1[i] = vload(more ? c + i * ldc + W : init + W);
  }
  for (int64_t p = 0; p < kc; p++) {
    if (Prefetch && p % 16 == 0)  // one cache line of each of the next tile's rows
#pragma GCC unroll 16
      for (int i = 0; i < MR; i++)
        _mm_prefetch(reinterpret_cast<const char*>(next + i * ld + p), _MM_HINT_T0);
    const V b0 = vload(bp + p * NR), b1 = vload(bp + p * NR + W);
#pragma GCC unroll 16
    for (int i = 0; i < MR; i++) {
      const V ai = vset1(RowsOfA ? a[i * ld + p] : a[p * ld + i]);
      c0[i] = vfma(ai, b0, c0[i]);
      c1[i] = vfma(ai, b1, c1[i]);
    }
  }
  if (times != nullptr) {
#pragma GCC unroll 16
    for (int i = 0; i < MR; i++) {
      c0[i] = vmul(c0[i], vload(times + i * ldc));
      c1[i] = vmul(c1[i], vload(times + i * ldc + W));
    }
  }
#pragma GCC unroll 16
  for (int i = 0; i < MR; i++) {
    vstore(c + i * ldc, c0[i]);
    vstore(c + i * ldc + W, c1[i]);
  }
}

// Rows [0, kc) and columns [j0, j0 + NR) of b (element (p, j) at b[p * rs + j * cs]) into
// bp, kc rows of NR, zero past column n. For a b whose rows are not contiguous.
void pack_panel(const float* b, int64_t rs, int64_t cs, int64_t kc, int64_t n, int64_t j0,
                float* bp) {
  const int64_t cols = std::min<int64_t>(NR, n - j0);
  for (int64_t j = 0; j < NR; j++)
    for (int64_t p = 0; p < kc; p++)
      bp[p * NR + j] = j < cols ? b[p * rs + (j0 + j) * cs] : 0.0f;
}

// Rows [0, kc) of b into panels: panel q (columns [q NR, q NR + NR)) at bp + q * kc * NR,
// each kc rows of NR, zero past column n. When b's rows are contiguous they are read one
// after the other, each once: packing panel by panel would read NR floats of every row per
// pass, a strided walk whose loads missed the cache (85% of the packing's samples on an
// AMD EPYC, `perf annotate`).
void pack_block(const float* b, int64_t rs, int64_t cs, int64_t kc, int64_t n, float* bp) {
  const int64_t whole = n / NR, panels = (n + NR - 1) / NR;
  if (cs != 1) {
    for (int64_t q = 0; q < panels; q++) pack_panel(b, rs, cs, kc, n, q * NR, bp + q * kc * NR);
    return;
  }
  const int64_t rest = n - whole * NR;
  for (int64_t p = 0; p < kc; p++) {
    const float* row = b + p * rs;
    for (int64_t q = 0; q < whole; q++)  // a copy of constant size: register moves, no call
      std::memcpy(bp + (q * kc + p) * NR, row + q * NR, NR * sizeof(float));
    if (rest > 0) {
      float* dst = bp + (whole * kc + p) * NR;
      std::memcpy(dst, row + whole * NR, rest * sizeof(float));
      std::fill(dst + rest, dst + NR, 0.0f);
    }
  }
}

// At least n floats of a scratch buffer whose contents are not kept. It only grows: a
// vector resized up zeroes the new part, and the products' shapes change from call to
// call, so resizing to each call's size zeroed memory on most calls (memset, 1.2-1.4% of
// a reference step in `perf`) that the packing then overwrote.
float* scratch(std::vector<float>& v, int64_t n) {
  if (v.size() < static_cast<size_t>(n)) v.resize(n);
  return v.data();
}

// The product in blocks of KC along k; a tile's sums carry over in c from one block to
// the next, exactly as in registers (a float stored is the float loaded), so blocking
// changes no bit. Within a block, b is packed once, then one panel at a time (it stays in
// L1) meets every tile of a. a is read in place when its rows are contiguous; otherwise the
// block's columns of a are packed once, tile by tile (kc rows of MR), for all the panels.
// The last block multiplies by `times`: in registers for whole tiles, on the way out of
// the edge tile for the others.
template <bool RowsOfA>
void product(int64_t m, int64_t n, int64_t k, const float* a, int64_t ld, const float* b,
             int64_t b_rs, int64_t b_cs, const float* bias, const float* times, float* c,
             int64_t ldc) {
  thread_local std::vector<float> panel, apack;
  const int64_t tiles = (m + MR - 1) / MR;
  alignas(64) float init[NR];
  alignas(64) float edge[MR * NR];
  for (int64_t k0 = 0; k0 == 0 || k0 < k; k0 += KC) {
    const int64_t kc = std::min<int64_t>(KC, k - k0);
    const bool more = k0 > 0;
    const bool far = m * kc * static_cast<int64_t>(sizeof(float)) > FAR;
    const float* last_times = k0 + kc >= k ? times : nullptr;  // null until the last block
    // Packed tiles of a: all of them, or only the last, partial one when a is read in place.
    const int64_t first_packed = RowsOfA ? (m / MR) : 0;
    float* const packed = scratch(apack, (tiles - first_packed) * kc * MR);
    for (int64_t t = first_packed; t < tiles; t++) {
      const int64_t i0 = t * MR, rows = std::min<int64_t>(MR, m - i0);
      float* ap = packed + (t - first_packed) * kc * MR;
      for (int64_t p = 0; p < kc; p++) {
        if (RowsOfA)
          for (int64_t i = 0; i < rows; i++) ap[p * MR + i] = a[(i0 + i) * ld + k0 + p];
        else if (rows == MR)  // constant size: register moves, no call
          std::memcpy(ap + p * MR, a + (k0 + p) * ld + i0, MR * sizeof(float));
        else
          std::memcpy(ap + p * MR, a + (k0 + p) * ld + i0, rows * sizeof(float));
        std::fill(ap + p * MR + rows, ap + (p + 1) * MR, 0.0f);  // sums thrown away
      }
    }
    float* const panels = scratch(panel, (n + NR - 1) / NR * kc * NR);
    pack_block(b + k0 * b_rs, b_rs, b_cs, kc, n, panels);
    for (int64_t j0 = 0; j0 < n; j0 += NR) {
      const int64_t cols = std::min<int64_t>(NR, n - j0);
      const float* bp = panels + j0 / NR * kc * NR;
      for (int64_t j = 0; j < NR; j++) init[j] = bias != nullptr && j < cols ? bias[j0 + j] : 0.0f;
      for (int64_t t = 0; t < tiles; t++) {
        const int64_t i0 = t * MR, rows = std::min<int64_t>(MR, m - i0);
        float* ct = c + i0 * ldc + j0;
        const float* tt = last_times != nullptr ? last_times + i0 * ldc + j0 : nullptr;
        const bool whole = rows == MR && cols == NR;
        float* out = whole ? ct : edge;
        const int64_t ldo = whole ? ldc : NR;
        if (!whole && more)  // the sums so far, into the edge tile
          for (int64_t i = 0; i < rows; i++)
            std::memcpy(edge + i * NR, ct + i * ldc, cols * sizeof(float));
        const float* tile_times = whole ? tt : nullptr;
        if (far && t + 1 < first_packed)
          tile<true, true>(kc, a + i0 * ld + k0, ld, bp, init, more, tile_times, out, ldo,
                           a + (i0 + MR) * ld + k0);
        else if (t < first_packed)
          tile<true>(kc, a + i0 * ld + k0, ld, bp, init, more, tile_times, out, ldo);
        else
          tile<false>(kc, packed + (t - first_packed) * kc * MR, MR, bp, init, more,
                      tile_times, out, ldo);
        if (!whole && tt != nullptr)
          for (int64_t i = 0; i < rows; i++)
            for (int64_t j = 0; j < cols; j++)
              ct[i * ldc + j] = edge[i * NR + j] * tt[i * ldc + j];
        else if (!whole)
          for (int64_t i = 0; i < rows; i++)
            std::memcpy(ct + i * ldc, edge + i * NR, cols * sizeof(float));
      }
    }
  }
}

}  // namespace

// c (m, n), row stride ldc, = (bias (n, or null for zero) + a (m, k) @ b (k, n)) * times
// (m, n, row stride ldc, or null for none), elementwise. Element (i, p) of a is
// a[i * a_rs + p * a_cs], with a_cs == 1 or a_rs == 1; element (p, j) of b is
// b[p * b_rs + j * b_cs], any strides.
extern "C" void REVTX_GEMM_NAME(int64_t m, int64_t n, int64_t k, const float* a, int64_t a_rs,
                                int64_t a_cs, const float* b, int64_t b_rs, int64_t b_cs,
                                const float* bias, const float* times, float* c, int64_t ldc) {
  if (a_cs == 1)
    product<true>(m, n, k, a, a_rs, b, b_rs, b_cs, bias, times, c, ldc);
  else
    product<false>(m, n, k, a, a_cs, b, b_rs, b_cs, bias, times, c, ldc);
}
