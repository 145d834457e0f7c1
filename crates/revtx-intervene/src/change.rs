//! What training changed in a learned position table: the trained rows less the rows the
//! model started from, which `model::init` draws again from the run's seed (as training
//! drew them). Cosines and norms are summed in `f64`, in order, with `f64::sqrt`
//! (correctly rounded everywhere).

use anyhow::{Context, Result};
use revtx_engine::model::{self, ModelConfig};
use revtx_engine::result::TableChange;
use tch::{Kind, Tensor};

/// A table's rows as `f64` vectors.
fn rows(t: &Tensor) -> Vec<Vec<f64>> {
    let (n, d) = t.size2().expect("a table (rows, d_model)");
    let flat =
        Vec::<f32>::try_from(t.to_kind(Kind::Float).contiguous().view([-1])).expect("float rows");
    let d = usize::try_from(d).expect("a width");
    (0..usize::try_from(n).expect("a row count"))
        .map(|r| {
            flat[r * d..(r + 1) * d]
                .iter()
                .map(|&x| f64::from(x))
                .collect()
        })
        .collect()
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn cosine(a: &[f64], b: &[f64]) -> f64 {
    dot(a, b) / (dot(a, a).sqrt() * dot(b, b).sqrt())
}

/// The initial table of `cfg`'s model at `seed`, as training started from it.
pub fn initial_table(cfg: &ModelConfig, seed: u64) -> Result<Tensor> {
    let (vs, _model) = model::init(cfg, seed);
    let t = vs.variables().get("pos.weight").map(Tensor::copy);
    t.context("the model has no learned position table")
}

/// The change from `initial` to `trained`, row by row.
pub fn table_change(initial: &Tensor, trained: &Tensor) -> TableChange {
    let (start, end) = (rows(initial), rows(trained));
    let change: Vec<Vec<f64>> = start
        .iter()
        .zip(&end)
        .map(|(a, b)| b.iter().zip(a).map(|(y, x)| y - x).collect())
        .collect();
    let cos: Vec<Vec<f64>> = change
        .iter()
        .map(|a| change.iter().map(|b| cosine(a, b)).collect())
        .collect();
    TableChange {
        rows: change.len(),
        change_norm: change.iter().map(|c| dot(c, c).sqrt()).collect(),
        initial_norm: start.iter().map(|c| dot(c, c).sqrt()).collect(),
        neighbour: (1..change.len()).map(|i| cos[i - 1][i]).collect(),
        cos,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use revtx_engine::experiments::RunConfig;

    /// The initial table is drawn again bit for bit, and a change made by hand is found.
    #[test]
    fn the_initial_table_is_drawn_again_and_a_change_is_measured() {
        let cfg = RunConfig::reference();
        let a = initial_table(&cfg.model, 7).unwrap();
        assert!(a.equal(&initial_table(&cfg.model, 7).unwrap()));
        assert!(!a.equal(&initial_table(&cfg.model, 8).unwrap()));
        // Rows 0 and 1 moved along one direction, row 2 against it, the rest not at all.
        let d = cfg.model.d_model;
        let dir = Tensor::ones([d], (Kind::Float, tch::Device::Cpu));
        let trained = a.copy();
        let _ = trained.get(0).g_add_(&(&dir * 0.5));
        let _ = trained.get(1).g_add_(&(&dir * 0.25));
        let _ = trained.get(2).g_sub_(&dir);
        let c = table_change(&a, &trained);
        assert_eq!(c.rows, usize::try_from(cfg.model.positions).unwrap());
        assert!((c.neighbour[0] - 1.0).abs() < 1e-12 && (c.neighbour[1] + 1.0).abs() < 1e-12);
        assert!((c.change_norm[0] - 0.5 * (d as f64).sqrt()).abs() < 1e-6);
        assert!(c.change_norm[5] < 1e-300, "an untouched row did not change");
        assert!(c.initial_norm[0] > 1.0);
    }
}
