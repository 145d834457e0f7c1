// Two versions of the engine's matrix product, taking turns in one process: the median
// ratio of their times (new / old) at the model's shapes, per product and over a whole
// set of shapes. Built and run by scripts/ab-gemm.sh.
//
// On a shared machine two separate runs differ by more than most changes are worth; here
// every round times both versions back to back, alternating which goes first, and the
// ratio is taken round by round, so that drift in the machine's speed cancels.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#define GEMM_ARGS                                                                       \
  int64_t, int64_t, int64_t, const float*, int64_t, int64_t, const float*, int64_t, int64_t, \
      const float*, const float*, float*, int64_t
extern "C" void revtx_gemm_old(GEMM_ARGS);
extern "C" void revtx_gemm_new(GEMM_ARGS);
using Kernel = decltype(&revtx_gemm_old);

namespace {

struct Shape {
  const char* name;
  int64_t rows, in, out;
  std::vector<float> x, w, b, g, y, gx, gw;
};

// One product of a linear layer: 0 the forward (x @ w^T + b), 1 the input gradient
// (g @ w), 2 the weight gradient (g^T @ x).
void product(Kernel f, Shape& s, int op) {
  if (op == 0)
    f(s.rows, s.out, s.in, s.x.data(), s.in, 1, s.w.data(), 1, s.in, s.b.data(), nullptr,
      s.y.data(), s.out);
  else if (op == 1)
    f(s.rows, s.in, s.out, s.g.data(), s.out, 1, s.w.data(), s.in, 1, nullptr, nullptr,
      s.gx.data(), s.in);
  else
    f(s.out, s.in, s.rows, s.g.data(), 1, s.out, s.x.data(), s.in, 1, nullptr, nullptr,
      s.gw.data(), s.in);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Rounds of every shape's three products in both versions; prints the medians.
void compare(const char* set, std::vector<Shape> shapes, int reps, int rounds) {
  std::mt19937 rng(1);
  std::normal_distribution<float> normal;
  for (Shape& s : shapes) {
    s.x.resize(s.rows * s.in), s.w.resize(s.out * s.in), s.b.resize(s.out);
    s.g.resize(s.rows * s.out), s.y.resize(s.rows * s.out), s.gx.resize(s.rows * s.in);
    s.gw.resize(s.out * s.in);
    for (auto* v : {&s.x, &s.w, &s.b, &s.g})
      for (float& e : *v) e = normal(rng);
  }
  const Kernel versions[2] = {revtx_gemm_old, revtx_gemm_new};
  std::vector<std::vector<double>> ratios(shapes.size() * 3);
  std::vector<double> whole, old_ms, new_ms;
  for (int round = 0; round < rounds; round++) {
    double total[2] = {0, 0};
    for (size_t si = 0; si < shapes.size(); si++) {
      double t[2][3];
      for (int turn = 0; turn < 2; turn++) {
        const int v = round % 2 == 0 ? turn : 1 - turn;
        for (int op = 0; op < 3; op++) {
          const auto t0 = std::chrono::steady_clock::now();
          for (int r = 0; r < reps; r++) product(versions[v], shapes[si], op);
          const auto t1 = std::chrono::steady_clock::now();
          t[v][op] = std::chrono::duration<double>(t1 - t0).count() / reps;
          total[v] += t[v][op];
        }
      }
      for (int op = 0; op < 3; op++) ratios[si * 3 + op].push_back(t[1][op] / t[0][op]);
    }
    whole.push_back(total[1] / total[0]);
    old_ms.push_back(total[0] * 1e3), new_ms.push_back(total[1] * 1e3);
  }
  std::printf("%s (%d rounds; new / old, medians):\n", set, rounds);
  std::printf("  %-10s %8s %8s %8s\n", "layer", "forward", "d input", "d weight");
  for (size_t si = 0; si < shapes.size(); si++)
    std::printf("  %-10s %8.3f %8.3f %8.3f\n", shapes[si].name, median(ratios[si * 3]),
                median(ratios[si * 3 + 1]), median(ratios[si * 3 + 2]));
  std::printf("  all three products of every layer: %.3f (old %.3f ms, new %.3f ms)\n",
              median(whole), median(old_ms), median(new_ms));
}

}  // namespace

int main() {
  // The layers of the reference model and of exercise 1's wide model (width 256, MLP
  // 1,024), both on a trimmed training batch: 64 strings of 17 tokens, 1,088 rows.
  compare("reference model",
          {{"qkv", 1088, 64, 192}, {"out", 1088, 64, 64}, {"up", 1088, 64, 256},
           {"down", 1088, 256, 64}, {"head", 1088, 64, 12}},
          10, 41);
  compare("wide model",
          {{"qkv", 1088, 256, 768}, {"out", 1088, 256, 256}, {"up", 1088, 256, 1024},
           {"down", 1088, 1024, 256}},
          3, 21);
}
