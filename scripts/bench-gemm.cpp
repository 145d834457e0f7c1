// The engine's matrix product alone, at the model's shapes: GFLOP/s of the forward product
// (x @ w^T + b), the input gradient (g @ w) and the weight gradient (g^T @ x) for each
// kernel, best of five. Built and run by scripts/bench-gemm.sh.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <random>
#include <utility>
#include <vector>

#include "gemm.h"  // the engine's prototypes (crates/revtx-engine/src/model/kernels)

using Kernel = decltype(&revtx_gemm_avx2);

int main() {
  std::mt19937 rng(1);
  std::normal_distribution<float> normal;
  struct Shape {
    const char* name;
    int64_t rows, in, out;
  };
  // The reference model's layers on a trimmed batch (1088 rows), then exercise 1's wide MLP.
  const Shape shapes[] = {{"qkv", 1088, 64, 192}, {"out", 1088, 64, 64},   {"up", 1088, 64, 256},
                          {"down", 1088, 256, 64}, {"head", 1088, 64, 12}, {"wide up", 1600, 256, 1024},
                          {"wide down", 1600, 1024, 256}};
  const bool wide = __builtin_cpu_supports("avx512f");
  std::vector<std::pair<const char*, Kernel>> kernels = {{"avx2", revtx_gemm_avx2}};
  if (wide) kernels.push_back({"avx512", revtx_gemm_avx512});
  std::printf("%-7s %-10s %8s %8s %8s  GFLOP/s\n", "kernel", "layer", "forward", "d input",
              "d weight");
  for (auto [name, f] : kernels) {
    for (const Shape& s : shapes) {
      std::vector<float> x(s.rows * s.in), w(s.out * s.in), b(s.out), g(s.rows * s.out);
      std::vector<float> y(s.rows * s.out), gx(s.rows * s.in), gw(s.out * s.in);
      for (auto* v : {&x, &w, &b, &g})
        for (float& e : *v) e = normal(rng);
      const int reps = s.rows > 1500 ? 5 : 50;
      double best[3] = {1e9, 1e9, 1e9};
      for (int round = 0; round < 5; round++) {
        auto t0 = std::chrono::steady_clock::now();
        for (int r = 0; r < reps; r++)
          f(s.rows, s.out, s.in, x.data(), s.in, 1, w.data(), 1, s.in, b.data(), nullptr, y.data(),
            s.out);
        auto t1 = std::chrono::steady_clock::now();
        for (int r = 0; r < reps; r++)
          f(s.rows, s.in, s.out, g.data(), s.out, 1, w.data(), s.in, 1, nullptr, nullptr, gx.data(),
            s.in);
        auto t2 = std::chrono::steady_clock::now();
        for (int r = 0; r < reps; r++)
          f(s.out, s.in, s.rows, g.data(), 1, s.out, x.data(), s.in, 1, nullptr, nullptr, gw.data(),
            s.in);
        auto t3 = std::chrono::steady_clock::now();
        const auto secs = [&](auto a, auto z) {
          return std::chrono::duration<double>(z - a).count() / reps;
        };
        best[0] = std::min(best[0], secs(t0, t1));
        best[1] = std::min(best[1], secs(t1, t2));
        best[2] = std::min(best[2], secs(t2, t3));
      }
      const double gflop = 2.0 * s.rows * s.in * s.out / 1e9;
      std::printf("%-7s %-10s %8.1f %8.1f %8.1f\n", name, s.name, gflop / best[0],
                  gflop / best[1], gflop / best[2]);
    }
  }
  if (!wide) std::printf("(no AVX-512 on this CPU: the AVX2 kernel only)\n");
}
