// GELU and its derivative, written once and compiled per register width: build.rs compiles
// this file with REVTX_LANES=8 (AVX2) and 16 (AVX-512), naming the entry point
// REVTX_GELU_NAME; `mlp.cpp` picks one at run time. Plain C++, no libtorch.
//
// GELU(x) = x Φ(x), with Φ the standard normal distribution function. For z = |x| / √2,
// Φ(-|x|) = erfc(z) / 2 and erfc(z) = t P(t) e^(-z²) with t = 1 / (1 + 0.4 z): the form of
// Abramowitz and Stegun's 7.1.26, with seven coefficients fitted here (absolute error on
// erfc under 2.2e-8, against their 1.5e-7). e^(-z²) = e^(-x²/2) is also the normal's, so
// one exponential gives both Φ(x) and the derivative Φ(x) + x φ(x), which the forward
// writes for the backward: the backward is then one product.

#include "lanes.h"

namespace {

using namespace revtx::REVTX_LANES_NS;

constexpr float kErfc[7] = {0.2405044698f,  0.09695769692f, 0.6711142315f, -0.7069409906f,
                            1.020294724f,   -0.3529856832f, 0.03105555052f};

// y = GELU(x) and dy = GELU'(x), one element per lane.
REVTX_INLINE void gelu(V x, V* y, V* dy) {
  const V one = set1(1.0f);
  const V z = mul(abs(x), set1(0.707106781186547524f));  // |x| / √2
  const V t = div(one, add(one, mul(set1(0.4f), z)));
  V p = set1(kErfc[6]);
  for (int i = 5; i >= 0; i--) p = add(mul(p, t), set1(kErfc[i]));
  const V e = exp(mul(mul(x, x), set1(-0.5f)));  // e^(-z²)
  const V tail = mul(set1(0.5f), mul(mul(t, p), e));
  const V cdf = select_nonneg(x, tail, sub(one, tail));
  const V pdf = mul(e, set1(0.398942280401432678f));  // φ(x)
  *y = mul(x, cdf);
  *dy = add(cdf, mul(x, pdf));
}

}  // namespace

// y[i] = GELU(x[i]) and dy[i] = GELU'(x[i]) for i < n; y may be x. The last n mod W in one
// zero-padded register, so every element takes the same operations.
extern "C" REVTX_TARGET void REVTX_GELU_NAME(const float* x, float* y, float* dy, int64_t n) {
  int64_t i = 0;
  V a, b;
  for (; i + W <= n; i += W) {
    gelu(loadu(x + i), &a, &b);
    storeu(y + i, a);
    storeu(dy + i, b);
  }
  if (i < n) {
    float buf[W] = {}, dbuf[W];
    std::memcpy(buf, x + i, (n - i) * sizeof(float));
    gelu(loadu(buf), &a, &b);
    storeu(buf, a);
    storeu(dbuf, b);
    std::memcpy(y + i, buf, (n - i) * sizeof(float));
    std::memcpy(dy + i, dbuf, (n - i) * sizeof(float));
  }
}
