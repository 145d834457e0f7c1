// GELU's autograd node and the fused MLP, on gelu.cpp's kernel at the width in use.

#include "kernels.h"

namespace revtx {

void gelu_forward(const float* x, float* y, float* dy, int64_t n) {
  (wide_kernels().load(std::memory_order_relaxed) ? revtx_gelu_avx512 : revtx_gelu_avx2)(x, y, dy,
                                                                                        n);
}

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

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

}  // namespace

Tensor gelu(const Tensor& x) { return Gelu::apply(x); }

Tensor mlp(const Tensor& x, const Tensor& w1, const Tensor& b1, const Tensor& w2,
           const Tensor& b2) {
  return Mlp::apply(x, w1, b1, w2, b2);
}

}  // namespace revtx
