// Vector arithmetic, one lane per output, for the kernels that are written once and compiled
// for more than one register width (GELU; the softmax's exponential). Define REVTX_LANES as
// 8 (AVX2) or 16 (AVX-512) before including; the operations then live in
// `revtx::REVTX_LANES_NS` (lanes8 or lanes16) and carry their instruction set as a target
// attribute, so a file compiled without -m flags can include this header. Plain C++: no
// libtorch, for the A/B and bench programs in scripts/ too.
//
// Every operation is one IEEE operation per lane (or exact: floor, select, the exponent
// shift), so a kernel written with them computes the same bits at either width.

#ifndef REVTX_LANES_H_INCLUDED
#define REVTX_LANES_H_INCLUDED

#include <immintrin.h>

#include <cmath>
#include <cstdint>
#include <cstring>

#if REVTX_LANES == 16
#define REVTX_LANES_NS lanes16
#define REVTX_TARGET __attribute__((target("avx512f")))
#define REVTX_INLINE inline __attribute__((target("avx512f"), always_inline))
namespace revtx::lanes16 {
using V = __m512;
constexpr int W = 16;
REVTX_INLINE V set1(float x) { return _mm512_set1_ps(x); }
REVTX_INLINE V zero() { return _mm512_setzero_ps(); }
REVTX_INLINE V loadu(const float* p) { return _mm512_loadu_ps(p); }
REVTX_INLINE void storeu(float* p, V v) { _mm512_storeu_ps(p, v); }
REVTX_INLINE V add(V a, V b) { return _mm512_add_ps(a, b); }
REVTX_INLINE V sub(V a, V b) { return _mm512_sub_ps(a, b); }
REVTX_INLINE V mul(V a, V b) { return _mm512_mul_ps(a, b); }
REVTX_INLINE V div(V a, V b) { return _mm512_div_ps(a, b); }
REVTX_INLINE V abs(V x) { return _mm512_abs_ps(x); }
REVTX_INLINE V floor(V x) {
  return _mm512_roundscale_ps(x, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
}
// 2^n for whole-numbered n in the normal range, built in the exponent field.
REVTX_INLINE V pow2(V n) {
  return _mm512_castsi512_ps(
      _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23));
}
// v where x >= c, zero where x < c.
REVTX_INLINE V zero_below(V x, float c, V v) {
  const __mmask16 under = _mm512_cmp_ps_mask(x, _mm512_set1_ps(c), _CMP_LT_OQ);
  return _mm512_maskz_mov_ps(static_cast<__mmask16>(~under), v);
}
// `nonneg` where x >= 0, `neg` elsewhere.
REVTX_INLINE V select_nonneg(V x, V neg, V nonneg) {
  return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_GE_OQ), neg,
                              nonneg);
}
}  // namespace revtx::lanes16
#elif REVTX_LANES == 8
#define REVTX_LANES_NS lanes8
#define REVTX_TARGET __attribute__((target("avx2")))
#define REVTX_INLINE inline __attribute__((target("avx2"), always_inline))
namespace revtx::lanes8 {
using V = __m256;
constexpr int W = 8;
REVTX_INLINE V set1(float x) { return _mm256_set1_ps(x); }
REVTX_INLINE V zero() { return _mm256_setzero_ps(); }
REVTX_INLINE V loadu(const float* p) { return _mm256_loadu_ps(p); }
REVTX_INLINE void storeu(float* p, V v) { _mm256_storeu_ps(p, v); }
REVTX_INLINE V add(V a, V b) { return _mm256_add_ps(a, b); }
REVTX_INLINE V sub(V a, V b) { return _mm256_sub_ps(a, b); }
REVTX_INLINE V mul(V a, V b) { return _mm256_mul_ps(a, b); }
REVTX_INLINE V div(V a, V b) { return _mm256_div_ps(a, b); }
REVTX_INLINE V abs(V x) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), x); }
REVTX_INLINE V floor(V x) { return _mm256_floor_ps(x); }
REVTX_INLINE V pow2(V n) {
  return _mm256_castsi256_ps(
      _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23));
}
REVTX_INLINE V zero_below(V x, float c, V v) {
  return _mm256_andnot_ps(_mm256_cmp_ps(x, _mm256_set1_ps(c), _CMP_LT_OQ), v);
}
REVTX_INLINE V select_nonneg(V x, V neg, V nonneg) {
  return _mm256_blendv_ps(neg, nonneg, _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_GE_OQ));
}
// The sum of the eight lanes in a fixed tree: l + (l + 4), then (0 + 2) and (1 + 3), then
// those two. Attention's dot products and layer norm's sums end here.
REVTX_INLINE float hsum(V v) {
  __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
  return _mm_cvtss_f32(_mm_add_ss(s2, _mm_shuffle_ps(s2, s2, 1)));
}
}  // namespace revtx::lanes8
#else
#error "define REVTX_LANES as 8 or 16"
#endif

namespace revtx::REVTX_LANES_NS {

// e^x for arguments at most zero (the softmax's, GELU's -x²/2): Cody-Waite reduction by
// ln 2 and Cephes' degree-5 polynomial, about one ulp; below -87 (under 2^-125) zero.
REVTX_INLINE V exp(V x) {
  const V n = floor(add(mul(x, set1(1.44269504088896341f)), set1(0.5f)));
  V r = sub(x, mul(n, set1(0.693359375f)));
  r = sub(r, mul(n, set1(-2.12194440e-4f)));
  const V z = mul(r, r);
  V p = set1(1.9875691500e-4f);
  p = add(mul(p, r), set1(1.3981999507e-3f));
  p = add(mul(p, r), set1(8.3334519073e-3f));
  p = add(mul(p, r), set1(4.1665795894e-2f));
  p = add(mul(p, r), set1(1.6666665459e-1f));
  p = add(mul(p, r), set1(5.0000001201e-1f));
  const V y = add(add(mul(p, z), r), set1(1.0f));
  return zero_below(x, -87.0f, mul(y, pow2(n)));
}

}  // namespace revtx::REVTX_LANES_NS

namespace revtx {

// `exp` in one lane, the same operations: the softmax over queries, which reads a strided
// column, calls it.
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

}  // namespace revtx

#endif  // REVTX_LANES_H_INCLUDED
