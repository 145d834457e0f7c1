// The fused attention's autograd node: the kernel is attention.h; the node checks shapes,
// allocates, and saves qkv, the weights and the options (whole) for the backward.

#include <string>

#include "attention.h"
#include "kernels.h"

namespace revtx {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

struct Attention : public torch::autograd::Function<Attention> {
  // qkv (b, t, 3d) → y (b, t, d), heads side by side, and the weights (b, h, t, t).
  static variable_list forward(AutogradContext* ctx, const Tensor& qkv_in, int64_t heads,
                               AttnOpts o) {
    TORCH_CHECK(qkv_in.dim() == 3 && qkv_in.scalar_type() == at::kFloat,
                "attention: qkv must be float32 (batch, tokens, 3 d_model), got ", qkv_in.sizes());
    const Tensor qkv = qkv_in.contiguous();
    const int64_t b = qkv.size(0), t = qkv.size(1), d = qkv.size(2) / 3;
    TORCH_CHECK(qkv.size(2) == 3 * d && d % heads == 0, "attention: ", qkv.size(2),
                " columns do not split into q, k, v of ", heads, " heads");
    Tensor y = at::empty({b, t, d}, qkv.options());
    Tensor w = at::empty({b, heads, t, t}, qkv.options());
    attention_forward(qkv.data_ptr<float>(), y.data_ptr<float>(), w.data_ptr<float>(), b, t, d,
                      heads, o);
    ctx->save_for_backward({qkv, w});
    ctx->saved_data["heads"] = heads;
    ctx->saved_data["opts"] = std::string(reinterpret_cast<const char*>(&o), sizeof o);
    ctx->mark_non_differentiable({w});
    return {y, w};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    auto saved = ctx->get_saved_variables();
    const Tensor& qkv = saved[0];
    const Tensor& w = saved[1];
    const int64_t heads = ctx->saved_data["heads"].toInt();
    AttnOpts o;
    const std::string& saved_opts = ctx->saved_data["opts"].toStringRef();
    std::memcpy(&o, saved_opts.data(), sizeof o);
    if (!grads[0].defined()) return {at::zeros_like(qkv), Tensor(), Tensor()};
    const Tensor dy = grads[0].contiguous();
    Tensor dqkv = at::empty_like(qkv);
    attention_backward(qkv.data_ptr<float>(), w.data_ptr<float>(), dy.data_ptr<float>(),
                       dqkv.data_ptr<float>(), qkv.size(0), qkv.size(1), qkv.size(2) / 3, heads,
                       o);
    return {dqkv, Tensor(), Tensor()};
  }
};

}  // namespace

std::vector<Tensor> attention(const Tensor& qkv, int64_t heads, const AttnOpts& opts) {
  return Attention::apply(qkv, heads, opts);
}

}  // namespace revtx
