// The 27 matrix products of one reference training step, as the engine calls them: each
// in step order, with the step's own buffers, and each alone, repeated until its data is
// in the cache. The difference is what the rest of a step costs the products through the
// cache. Built and run by `scripts/bench-gemm.sh step`; prints per layer and direction the
// median over rounds of each kind's time, in milliseconds a step and GFLOP/s, and the
// median of the rounds' ratios (in step order / alone).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "gemm.h"  // the engine's prototypes (crates/revtx-engine/src/model/kernels)

using Kernel = decltype(&revtx_gemm_avx2);

namespace {

using Clock = std::chrono::steady_clock;
using Buf = std::vector<float>;

// One call of the product: c (m, n) = (bias + a @ b) * times, strides as in gemm.cpp.
struct Call {
  std::string name;  // layer and direction, e.g. "up dx"
  int64_t m, n, k;
  const float* a;
  int64_t a_rs, a_cs;
  const float* b;
  int64_t b_rs, b_cs;
  const float* bias;
  const float* times;
  float* c;
  int64_t ldc;
  double flop() const { return 2.0 * m * n * k; }
};

std::mt19937 rng(1);
Buf random(int64_t n) {
  std::normal_distribution<float> normal;
  Buf v(n);
  for (float& e : v) e = normal(rng);
  return v;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  // The widest kernel the CPU has, or the AVX2 one when asked (what an AVX2 machine runs).
  const bool wide =
      __builtin_cpu_supports("avx512f") && !(argc > 1 && std::string(argv[1]) == "avx2");
  const Kernel product = wide ? revtx_gemm_avx512 : revtx_gemm_avx2;
  // The reference model on a trimmed batch: 1,088 rows, d_model 64, d_mlp 256, 12 symbols.
  const int64_t rows = 1088, d = 64, mlp = 256, vocab = 12, blocks = 2;
  // Every buffer the step's products touch, one per tensor, as the step has them.
  std::vector<Buf> store;
  store.reserve(64);
  const auto buf = [&](int64_t n) -> float* { return store.emplace_back(random(n)).data(); };
  std::vector<Call> forward, backward;
  // y = x @ w^T + b, and its two gradients: dx = g @ w, dw = g^T @ x.
  const auto layer = [&](const std::string& name, const float* x, int64_t in, int64_t out,
                         const float* gelu_slope, float* y) {
    float *w = buf(out * in), *b = buf(out), *g = buf(rows * out);
    forward.push_back({name + " y", rows, out, in, x, in, 1, w, 1, in, b, nullptr, y, out});
    backward.push_back({name + " dx", rows, in, out, g, out, 1, w, in, 1, nullptr, gelu_slope,
                        buf(rows * in), in});
    backward.push_back(
        {name + " dw", out, in, rows, g, 1, out, x, in, 1, nullptr, nullptr, buf(out * in), in});
  };
  for (int64_t blk = 0; blk < blocks; blk++) {
    float *ln1 = buf(rows * d), *qkv = buf(rows * 3 * d), *heads = buf(rows * d);
    float *ln2 = buf(rows * d), *h = buf(rows * mlp), *slope = buf(rows * mlp);
    layer("qkv", ln1, d, 3 * d, nullptr, qkv);
    layer("out", heads, d, d, nullptr, buf(rows * d));
    layer("up", ln2, d, mlp, nullptr, h);
    layer("down", h, mlp, d, slope, buf(rows * d));  // its dx is times GELU's slope
  }
  layer("head", buf(rows * d), d, vocab, nullptr, buf(rows * vocab));
  std::vector<Call> step(forward);
  step.insert(step.end(), backward.rbegin(), backward.rend());  // the backward runs last first
  const auto run = [&](const Call& c) {
    product(c.m, c.n, c.k, c.a, c.a_rs, c.a_cs, c.b, c.b_rs, c.b_cs, c.bias, c.times, c.c, c.ldc);
  };
  const auto seconds = [](Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
  };
  // Round by round, in alternating order: the whole step once (each call timed), then each
  // call alone (three warm-up calls, then the mean of five).
  const int rounds = 41;
  std::vector<std::vector<double>> in_step(step.size()), alone(step.size());
  std::vector<double> step_total, alone_total;
  for (int r = 0; r < rounds; r++) {
    for (int half = 0; half < 2; half++) {
      if ((half == 0) == (r % 2 == 0)) {
        double total = 0;
        for (size_t i = 0; i < step.size(); i++) {
          const auto t0 = Clock::now();
          run(step[i]);
          const double s = seconds(t0);
          in_step[i].push_back(s);
          total += s;
        }
        step_total.push_back(total);
      } else {
        double total = 0;
        for (size_t i = 0; i < step.size(); i++) {
          for (int w = 0; w < 3; w++) run(step[i]);
          const auto t0 = Clock::now();
          for (int w = 0; w < 5; w++) run(step[i]);
          const double s = seconds(t0) / 5;
          alone[i].push_back(s);
          total += s;
        }
        alone_total.push_back(total);
      }
    }
  }
  // Per layer and direction, summed over the blocks: medians of the rounds.
  std::vector<std::string> kinds;
  for (const Call& c : step)
    if (std::find(kinds.begin(), kinds.end(), c.name) == kinds.end()) kinds.push_back(c.name);
  std::printf("%s kernel, %d rounds, medians\n", wide ? "avx512" : "avx2", rounds);
  std::printf("%-9s %9s %9s %9s %9s %6s\n", "product", "step ms", "GFLOP/s", "alone ms",
              "GFLOP/s", "ratio");
  // One row: the medians of the two times, and the median of the rounds' ratios.
  const auto row = [&](const std::string& name, const std::vector<double>& s,
                       const std::vector<double>& a, double f) {
    std::vector<double> q(s.size());
    for (size_t r = 0; r < s.size(); r++) q[r] = s[r] / a[r];
    const double ms = median(s), ma = median(a);
    std::printf("%-9s %9.3f %9.1f %9.3f %9.1f %6.2f\n", name.c_str(), ms * 1e3, f / ms / 1e9,
                ma * 1e3, f / ma / 1e9, median(q));
  };
  double flop = 0;
  for (const std::string& kind : kinds) {
    std::vector<double> s(rounds, 0.0), a(rounds, 0.0);
    double f = 0;
    for (size_t i = 0; i < step.size(); i++) {
      if (step[i].name != kind) continue;
      f += step[i].flop();
      for (int r = 0; r < rounds; r++) s[r] += in_step[i][r], a[r] += alone[i][r];
    }
    flop += f;
    row(kind, s, a, f);
  }
  row("all", step_total, alone_total, flop);
}
