//! The run keys beyond the chapter's, each against an independent composition: `trig`
//! against libm (here only as the reference), the position tables against their formulas,
//! ReLU against libtorch's, Adam and SGD against libtorch's optimisers, clipping against
//! its definition, and the parameter counts every choice's formula gives.
#![allow(
    clippy::cast_precision_loss,
    clippy::float_cmp,
    reason = "small integers; exact equality is what some checks test"
)]

mod common;

use revtx_engine::config::{Activation, ModelConfig, NormPlacement, PositionEncoding};
use revtx_engine::model::{self, kernels, position};
use revtx_engine::trig;
use tch::{nn, Kind, Tensor};

/// Normal draws from libtorch's generator, holding its lock: `model::init` seeds and draws
/// under it, and a draw from another test between the two would change its weights.
fn randn(shape: impl Into<Vec<i64>>) -> Tensor {
    let _g = model::TORCH_RNG.lock().unwrap_or_else(|e| e.into_inner());
    Tensor::randn(shape.into(), (Kind::Float, tch::Device::Cpu))
}

#[test]
fn trig_matches_libm_to_a_few_ulps() {
    assert_eq!(trig::LN_10000, 10000f64.ln());
    for k in -4000..=4000 {
        let a = f64::from(k) / 40.0; // -100 ..= 100 radians
        let (s, c) = trig::sin_cos(a);
        // The fold by the period costs |a|·2^-52 at most; the series a few ulps.
        let tol = 1e-15 * (4.0 + a.abs());
        assert!((s - a.sin()).abs() < tol, "sin {a}: {s} vs {}", a.sin());
        assert!((c - a.cos()).abs() < tol, "cos {a}: {c} vs {}", a.cos());
    }
    for k in -1000..=1000 {
        let y = f64::from(k) / 50.0; // -20 ..= 20
        let (e, want) = (trig::exp(y), y.exp());
        assert!((e - want).abs() <= 4e-16 * want, "exp {y}: {e} vs {want}");
    }
    assert_eq!(trig::exp(0.0), 1.0);
    for k in -30..=30 {
        assert_eq!(trig::exp2(f64::from(k)), 2f64.powi(k), "2^{k}");
        let x = f64::from(k) / 7.0;
        let (e, want) = (trig::exp2(x), x.exp2());
        assert!((e - want).abs() <= 4e-16 * want, "2^{x}: {e} vs {want}");
    }
}

#[test]
fn the_sinusoidal_table_is_vaswanis() {
    let (rows, d) = (25, 64);
    let table = Vec::<f32>::try_from(&position::sinusoidal_table(rows, d).view([-1])).unwrap();
    for p in 0..rows {
        for c in 0..d {
            let w = 10000f64.powf(-((2 * (c / 2)) as f64) / d as f64);
            let a = p as f64 * w;
            let want = if c % 2 == 0 { a.sin() } else { a.cos() } as f32;
            let got = table[(p * d + c) as usize];
            // Rounded to float32 from an f64 within 1e-13: the same float, or a neighbour
            // when the f64 sits at a rounding boundary.
            assert!(
                (got - want).abs() <= f32::EPSILON * want.abs().max(1e-30),
                "row {p} column {c}: {got} vs {want}"
            );
        }
    }
}

/// Rotary positions make a head's score depend only on how far apart the query and the
/// key are: shifting both by the same offset leaves every score as it was.
#[test]
fn rope_scores_depend_only_on_the_offset() {
    common::book_mode();
    let (t, heads, d_k) = (12, 2, 8);
    let rope = position::Rope::new(24, d_k);
    let q1 = randn([1, 1, heads, d_k]);
    let k1 = randn([1, 1, heads, d_k]);
    // The same query and key at every position.
    let q = q1.expand([1, t, heads, d_k], false).contiguous();
    let k = k1.expand([1, t, heads, d_k], false).contiguous();
    let (rq, rk) = (rope.rotate(&q), rope.rotate(&k));
    // scores[h][i][j] = rq[i]·rk[j]
    let scores = rq.permute([0, 2, 1, 3]).matmul(&rk.permute([0, 2, 3, 1]));
    let s = |h: i64, i: i64, j: i64| scores.double_value(&[0, h, i, j]);
    for h in 0..heads {
        for (i, j) in [(3, 1), (5, 5), (7, 2)] {
            for shift in 1..4 {
                let (a, b) = (s(h, i, j), s(h, i + shift, j + shift));
                assert!((a - b).abs() < 1e-4 * (1.0 + a.abs()), "{a} vs {b}");
            }
        }
    }
    // A rotation keeps every vector's length, and position 0 is not turned at all.
    let lengths = |x: &Tensor| {
        x.square()
            .sum_dim_intlist([-1i64].as_slice(), false, Kind::Float)
    };
    assert!(lengths(&rq).allclose(&lengths(&q), 1e-5, 1e-5, false));
    assert!(rq.narrow(1, 0, 1).equal(&q.narrow(1, 0, 1)));
    // and it does turn the others.
    assert!(!rq
        .narrow(1, 1, 1)
        .allclose(&q.narrow(1, 1, 1), 1e-3, 1e-3, false));
}

/// Ours is libtorch's `relu` to the bit, forward and backward, with one decision about
/// signed zeros: ours gives `+0` for an input of `-0` (as for every input ≤ 0), where
/// libtorch's passes the `-0` through. The two compare equal as numbers, and no later
/// operation of the model tells them apart except by the sign of a zero.
#[test]
fn relu_is_libtorchs_to_the_bit_forward_and_back() {
    common::book_mode();
    let x = randn([257, 33]) * 3.0;
    let _ = x.narrow(0, 0, 1).fill_(-0.0); // a row of negative zeros
    let _ = x.narrow(0, 1, 1).fill_(0.0); // and of positive ones
    let x = x.set_requires_grad(true);
    let g = randn([257, 33]);
    let ours = common::grads_and_output(&kernels::relu(&x), &g, &[&x]);
    let theirs = common::grads_and_output(&x.relu(), &g, &[&x]);
    let (grad, out) = (&ours[0], &ours[1]);
    assert_eq!(
        common::differing_bits(&common::floats(grad), &common::floats(&theirs[0])),
        0
    );
    let (a, b) = (common::floats(out), common::floats(&theirs[1]));
    let differ: Vec<usize> = (0..a.len())
        .filter(|&i| a[i].to_bits() != b[i].to_bits())
        .collect();
    assert_eq!(differ, (0..33).collect::<Vec<_>>(), "only the row of -0");
    assert!(differ
        .iter()
        .all(|&i| a[i].to_bits() == 0 && b[i].to_bits() == 0x8000_0000));
    assert!(a.iter().zip(&b).all(|(x, y)| x == y), "equal as numbers");
}

fn counted(edit: impl Fn(&mut ModelConfig)) -> i64 {
    let mut cfg = ModelConfig::chapter();
    edit(&mut cfg);
    let (vs, m) = model::init(&cfg, 0);
    // It runs: logits for a batch of two sequences of nine tokens.
    let idx = Tensor::from_slice(&[1i64, 2, 3, 10, 3, 2, 1, 11, 11]).repeat([2, 1]);
    let (logits, _) = tch::no_grad(|| m.forward(&idx));
    assert_eq!(logits.size(), [2, 9, 12]);
    assert!(logits.isfinite().all().int64_value(&[]) == 1);
    model::parameter_count(&vs)
}

/// Each choice has the parameter count its formula gives: the chapter's 103,244, less the
/// 25 × 64 position table where positions are not learned, less 4·64 per block and 2·64
/// for the final norm without norms, less the final norm alone after the additions.
#[test]
fn every_choice_has_the_parameters_its_formula_gives() {
    let (base, table, d) = (103_244, 25 * 64, 64);
    for (kind, want) in [
        (PositionEncoding::Learned, base),
        (PositionEncoding::Sinusoidal, base - table),
        (PositionEncoding::Rope, base - table),
        (PositionEncoding::Alibi, base - table),
        (PositionEncoding::None, base - table),
    ] {
        assert_eq!(counted(|c| c.position_encoding = kind), want, "{kind:?}");
    }
    for (norm, want) in [
        (NormPlacement::Pre, base),
        (NormPlacement::Post, base - 2 * d),
        (NormPlacement::None, base - 2 * (4 * d) - 2 * d),
    ] {
        assert_eq!(counted(|c| c.norm = norm), want, "{norm:?}");
    }
    for &a in Activation::ALL {
        assert_eq!(counted(|c| c.activation = a), base, "{a:?}");
    }
    // RMS norms have a scale and no shift: 64 fewer parameters each, five of them.
    assert_eq!(
        counted(|c| c.norm_kind = revtx_engine::config::NormKind::Rms),
        base - 5 * d
    );
}

/// The chapter's model draws the same weights as before the choices existed: its first
/// forward pass is pinned by the numerics digests; here the choices that train no table
/// at least leave the token embedding's draw alone.
#[test]
fn choices_do_not_disturb_what_comes_before_them() {
    let tok = |kind| {
        let mut cfg = ModelConfig::chapter();
        cfg.position_encoding = kind;
        let (_vs, m) = model::init(&cfg, 7);
        m.tok.ws.copy()
    };
    let learned = tok(PositionEncoding::Learned);
    for kind in [
        PositionEncoding::Sinusoidal,
        PositionEncoding::Rope,
        PositionEncoding::Alibi,
        PositionEncoding::None,
    ] {
        assert!(tok(kind).equal(&learned), "{kind:?}");
    }
}

/// Under rope the fused kernel and the libtorch composition still agree.
#[test]
fn fused_attention_agrees_with_the_reference_under_rope() {
    common::book_mode();
    let mut cfg = ModelConfig::chapter();
    cfg.position_encoding = PositionEncoding::Rope;
    let (_vs, m) = model::init(&cfg, 1);
    let idx = Tensor::from_slice(&[4i64, 1, 7, 10, 7, 1, 4]).view([1, -1]);
    let (s, w) = tch::no_grad(|| m.raw_scores(&idx));
    assert_eq!((s.len(), w.len()), (2, 2));
    let mha = {
        let _g = model::TORCH_RNG.lock().unwrap_or_else(|e| e.into_inner());
        model::MultiHeadAttention::new(nn::VarStore::new(tch::Device::Cpu).root(), &cfg)
    };
    let x = randn([2, 7, 64]);
    let ((y1, w1), (y2, w2)) = tch::no_grad(|| (mha.forward(&x), mha.reference(&x)));
    assert!(common::close(&y1, &y2) && common::close(&w1, &w2));
}

/// Every choice's model, forward and backward, gives the same bits under every kernel
/// width this machine has (AVX2, and AVX-512 where present): logits, and the gradient of
/// every parameter.
#[test]
fn every_choice_computes_the_same_bits_at_every_kernel_width() {
    type Choice = (&'static str, fn(&mut ModelConfig));
    common::book_mode();
    let choices: [Choice; 9] = [
        ("chapter", |_| {}),
        ("sinusoidal", |c| {
            c.position_encoding = PositionEncoding::Sinusoidal;
        }),
        ("rope", |c| c.position_encoding = PositionEncoding::Rope),
        ("none", |c| c.position_encoding = PositionEncoding::None),
        ("post", |c| c.norm = NormPlacement::Post),
        ("no norm", |c| c.norm = NormPlacement::None),
        ("relu", |c| c.activation = Activation::Relu),
        ("alibi", |c| c.position_encoding = PositionEncoding::Alibi),
        ("rms", |c| c.norm_kind = revtx_engine::config::NormKind::Rms),
    ];
    // Every activation, whatever the list above names.
    let activations = Activation::ALL.iter().map(|&a| {
        let edit = move |c: &mut ModelConfig| c.activation = a;
        (a.name(), edit)
    });
    let idx = Tensor::from_slice(&[1i64, 2, 3, 4, 10, 4, 3, 2, 1, 11]).repeat([3, 1]);
    let widest = *common::widths().last().expect("AVX2 at least");
    let choices = choices
        .into_iter()
        .map(|(n, f)| (n, Box::new(f) as Box<dyn Fn(&mut ModelConfig)>))
        .chain(activations.map(|(n, f)| (n, Box::new(f) as Box<dyn Fn(&mut ModelConfig)>)));
    for (name, edit) in choices {
        let mut cfg = ModelConfig::chapter();
        edit(&mut cfg);
        let bits: Vec<Vec<u32>> = common::widths()
            .into_iter()
            .map(|k| {
                assert_eq!(kernels::use_isa(Some(k)), k);
                let (vs, m) = model::init(&cfg, 3);
                let (logits, _) = m.forward(&idx);
                (&logits * &logits).sum(Kind::Float).backward();
                let mut vars = vs.variables().into_iter().collect::<Vec<_>>();
                vars.sort_by(|a, b| a.0.cmp(&b.0));
                let mut all = common::floats(&logits);
                for (_, t) in &vars {
                    all.extend(common::floats(&t.grad()));
                }
                all.iter().map(|x| x.to_bits()).collect()
            })
            .collect();
        assert!(
            bits.iter().all(|b| *b == bits[0]),
            "{name}: the widths differ"
        );
        assert!(bits[0].len() > 100_000, "{name}: logits and every gradient");
    }
    assert_eq!(kernels::use_isa(None), widest);
}

/// Each task's sequence: the prompt, the separator, the task's answer; targets from the
/// separator on, and nothing after the answer's last token.
#[test]
fn each_task_encodes_its_answer() {
    use revtx_engine::data::{encode, Alphabet, Targets, Task};
    for (task, letters, problem, want) in [
        (Task::Reverse, 10, "cab", "c a b | b a c . . ."),
        (Task::Copy, 10, "cab", "c a b | c a b . . ."),
        (Task::Sort, 10, "cab", "c a b | a b c . . ."),
        // 47 + 85 = 132, the sum's digits least significant first.
        (Task::Add, 10, "47+85", "4 7 + 8 5 = 2 3 1 ."),
        // 3 + 1 = 10 in base 4: "03" + "01" = 010, written 0 1 0.
        (Task::Add, 4, "03+01", "0 3 + 0 1 = 0 1 0 ."),
        // Pairs c→a, b→d; the query b asks for d.
        (Task::Recall, 4, "cabdb", "c a b d b | d . . ."),
    ] {
        let alphabet = Alphabet::new(task, letters);
        let s = alphabet.parse(problem).unwrap();
        let (x, y) = encode(&s, alphabet, 10, Targets::Answer, 0);
        assert_eq!(alphabet.render_row(&x), want, "{task:?}");
        assert_eq!(
            alphabet.problem_text(&s),
            problem,
            "{task:?}: text round trip"
        );
        let n = task.size(s.len());
        let (p, total) = (task.prompt_len(n), task.sequence_len(n));
        assert_eq!(
            &y[p..total - 1],
            &x[p + 1..total],
            "{task:?}: the answer is the target"
        );
        assert!(
            y[..p]
                .iter()
                .chain(&y[total - 1..])
                .all(|&t| t == revtx_engine::data::IGNORE),
            "{task:?}: nothing else is"
        );
    }
    let add = Alphabet::new(Task::Add, 10);
    assert_eq!(add.vocab(), 13, "ten digits, '=', the pad and '+'");
    assert_eq!(Alphabet::new(Task::Recall, 4).vocab(), 6);
    assert_eq!(Alphabet::CHAPTER.vocab(), 12);
    for bad in ["12+3", "123", "1a+22"] {
        assert!(add.parse(bad).is_err(), "{bad} is not an addition");
    }
    let recall = Alphabet::new(Task::Recall, 4);
    for bad in ["cacbc", "cabdd", "cabd"] {
        assert!(recall.parse(bad).is_err(), "{bad} is not a recall");
    }
}

/// Every drawn problem is one its task poses: recall's keys distinct and its query among
/// them, add's numbers of equal length; and every size in the range is drawn.
#[test]
fn drawn_problems_are_well_formed() {
    use revtx_engine::data::{sample_problems, Alphabet, Task};
    use revtx_engine::rng::Rng;
    for (task, letters) in [
        (Task::Reverse, 10),
        (Task::Add, 3),
        (Task::Recall, 5),
        (Task::Sort, 26),
    ] {
        let a = Alphabet::new(task, letters);
        let problems = sample_problems(&mut Rng::new(7), a, 500, 1, 5);
        let mut sizes = std::collections::BTreeSet::new();
        for s in &problems {
            sizes.insert(task.size(s.len()));
            assert_eq!(task.symbols(task.size(s.len())), s.len());
            assert!(s.iter().all(|&c| (c as usize) < letters));
            assert_eq!(a.parse(&a.problem_text(s)).as_ref(), Ok(s), "{task:?}");
        }
        assert_eq!(sizes.into_iter().collect::<Vec<_>>(), vec![1, 2, 3, 4, 5]);
    }
}

/// RMS norm against its formula in float64, and ALiBi's slopes and biases against Press
/// et al.'s: `2^(-8h/H)` exactly for two heads, `-m·|i - j|`.
#[test]
fn rms_norm_and_alibi_are_their_formulas() {
    common::book_mode();
    let mut cfg = ModelConfig::chapter();
    cfg.norm_kind = revtx_engine::config::NormKind::Rms;
    let n = model::norm::new(nn::VarStore::new(tch::Device::Cpu).root(), &cfg);
    let x = randn([5, 64]) * 3.0;
    let y = tch::nn::Module::forward(&n, &x).to_kind(Kind::Double);
    let xd = x.to_kind(Kind::Double);
    let want = &xd / (xd.square().mean_dim([-1i64].as_slice(), true, Kind::Double) + 1e-5).sqrt();
    assert!(y.allclose(&want, 1e-5, 1e-6, false));
    // Its square root: correctly rounded (Rust's), and its derivative 1/2√a.
    let a = (randn([300]).abs() * 10.0).set_requires_grad(true);
    let r = model::norm::sqrt(&a);
    let (av, rv) = (common::floats(&a), common::floats(&r));
    assert!(av
        .iter()
        .zip(&rv)
        .all(|(a, r)| a.sqrt().to_bits() == r.to_bits()));
    r.sum(Kind::Float).backward();
    let want = (a.detach().sqrt() * 2.0).reciprocal();
    assert!(a.grad().allclose(&want, 1e-6, 1e-7, false));
    assert_eq!(position::alibi_slope(1, 2), 2f64.powi(-4));
    assert_eq!(position::alibi_slope(2, 2), 2f64.powi(-8));
    let b = position::alibi_bias(2, 5);
    assert_eq!(b.double_value(&[0, 4, 1]), -3.0 / 16.0);
    assert_eq!(b.double_value(&[1, 1, 4]), -3.0 / 256.0);
    assert_eq!(b.double_value(&[1, 2, 2]), 0.0);
}
