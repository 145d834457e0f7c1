// Two versions of the engine's fused attention kernel, taking turns in one process: the
// median ratio of their times (new / old) for one forward and backward at the chapter's
// shape, for each combination of the switches the chapter trains, and whether the two
// compute the same bits. Built and run by scripts/ab-attention.sh, which puts each
// version of attention.h (or, before the workspace, the "Fused attention" section of
// kernels.cpp) into a namespace of its own.
//
// As in ab-gemm.cpp, every round times both versions back to back, alternating which goes
// first, and the ratio is taken round by round, so that drift in the machine's speed
// cancels.
// The kernels' vector helpers, once, outside the two versions' namespaces.
#define REVTX_LANES 8
#include "lanes.h"

#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

namespace old_version {
#include "old.inc"
}
namespace new_version {
#include "new.inc"
}

namespace {

struct Switches {
  const char* name;
  bool scale, causal, over_queries;
};

// The outputs of one version: y, the weights, and the gradient of qkv.
struct Outputs {
  std::vector<float> y, w, dqkv;
};

template <class Opts>
void pass(const Switches& s, const std::vector<float>& qkv, const std::vector<float>& dy,
          Outputs& o, int64_t b, int64_t t, int64_t d, int64_t h,
          void (*fwd)(const float*, float*, float*, int64_t, int64_t, int64_t, int64_t, Opts),
          void (*bwd)(const float*, const float*, const float*, float*, int64_t, int64_t,
                      int64_t, int64_t, Opts)) {
  const Opts opts{s.scale, s.causal, s.over_queries};
  fwd(qkv.data(), o.y.data(), o.w.data(), b, t, d, h, opts);
  bwd(qkv.data(), o.w.data(), dy.data(), o.dqkv.data(), b, t, d, h, opts);
}

double median(std::vector<double> x) {
  std::sort(x.begin(), x.end());
  return x[x.size() / 2];
}

}  // namespace

int main() {
  // The chapter's training batch: 64 strings of 17 tokens, d_model 64 in two heads.
  const int64_t b = 64, t = 17, d = 64, h = 2;
  const int rounds = 41, reps = 200;
  std::mt19937 rng(1);
  std::normal_distribution<float> normal;
  std::vector<float> qkv(b * t * 3 * d), dy(b * t * d);
  for (float& x : qkv) x = normal(rng);
  for (float& x : dy) x = normal(rng);
  const Switches all[] = {{"reference", true, true, false},
                          {"no scale", false, true, false},
                          {"no mask", true, false, false},
                          {"softmax over queries", true, true, true}};
  std::printf("  %-22s %10s %10s %9s  %s\n", "switches", "old ms", "new ms", "new/old",
              "bits");
  for (const Switches& s : all) {
    Outputs out[2];
    for (Outputs& o : out) {
      o.y.resize(b * t * d);
      o.w.resize(b * h * t * t);
      o.dqkv.resize(qkv.size());
    }
    auto run = [&](int v) {
      if (v == 0)
        pass<old_version::AttnOpts>(s, qkv, dy, out[0], b, t, d, h,
                                    old_version::attention_forward,
                                    old_version::attention_backward);
      else
        pass<new_version::AttnOpts>(s, qkv, dy, out[1], b, t, d, h,
                                    new_version::attention_forward,
                                    new_version::attention_backward);
    };
    std::vector<double> ms[2], ratio;
    for (int r = 0; r < rounds; r++) {
      double sec[2];
      for (int turn = 0; turn < 2; turn++) {
        const int v = (r + turn) % 2;
        const auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < reps; i++) run(v);
        sec[v] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        ms[v].push_back(sec[v] / reps * 1e3);
      }
      ratio.push_back(sec[1] / sec[0]);
    }
    const bool same = out[0].y == out[1].y && out[0].w == out[1].w && out[0].dqkv == out[1].dqkv;
    std::printf("  %-22s %10.4f %10.4f %9.3f  %s\n", s.name, median(ms[0]), median(ms[1]),
                median(ratio), same ? "same" : "DIFFER");
  }
}
