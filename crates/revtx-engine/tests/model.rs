//! Tests of `src/model/mod.rs`.

use revtx_engine::config::{ModelConfig, SoftmaxAxis};
use revtx_engine::model::*;
use tch::Kind;
use tch::Tensor;

#[test]
fn chapter_model_has_103_244_parameters() {
    let (vs, _) = init(&ModelConfig::chapter(), 0);
    assert_eq!(parameter_count(&vs), 103_244);
}

fn weights_for(cfg: &ModelConfig, tokens: &[i64]) -> (Tensor, Vec<Tensor>) {
    let (_vs, m) = init(cfg, 3);
    let idx = Tensor::from_slice(tokens).view([1, -1]);
    tch::no_grad(|| m.forward(&idx))
}

/// Changing the last token must leave every earlier position untouched.
#[test]
fn causal_model_never_sees_later_tokens() {
    let cfg = ModelConfig::chapter();
    let (la, wa) = weights_for(&cfg, &[1, 2, 3, 4, 10, 5]);
    let (lb, wb) = weights_for(&cfg, &[1, 2, 3, 4, 10, 9]);
    let early = |t: &Tensor| t.narrow(1, 0, 5);
    assert!(early(&la).equal(&early(&lb)), "earlier logits changed");
    for (a, b) in wa.iter().zip(&wb) {
        assert!(
            a.narrow(2, 0, 5).equal(&b.narrow(2, 0, 5)),
            "earlier weights changed"
        );
    }
}

/// With the softmax over queries, a later token changes earlier weights: the leak.
#[test]
fn query_softmax_leaks_later_tokens_into_earlier_weights() {
    let mut cfg = ModelConfig::chapter();
    cfg.attn.softmax = SoftmaxAxis::Queries;
    let (_, wa) = weights_for(&cfg, &[1, 2, 3, 4, 10, 5]);
    let (_, wb) = weights_for(&cfg, &[1, 2, 3, 4, 10, 9]);
    let diff = (wa[0].narrow(2, 0, 5) - wb[0].narrow(2, 0, 5))
        .abs()
        .max()
        .double_value(&[]);
    assert!(diff > 1e-4, "expected the leak, max change {diff}");
    // And no weight is ever placed on a later key: the leak is in the normalisation.
    assert_eq!(wa[0].triu(1).abs().sum(Kind::Float).double_value(&[]), 0.0);
}
