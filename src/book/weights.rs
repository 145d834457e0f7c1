//! What the book reads from a trained model's weights (the cache entry's
//! `weights.safetensors`), beyond the engine's result: the learned position table's rows and
//! how alike they are. Figures and expressions read it from here and nowhere else.

#![allow(
    clippy::cast_precision_loss,
    reason = "positions and widths are small counts, exact in an f64"
)]

use std::path::Path;

/// The learned position table of the model saved in `entry`, one row per position, or
/// `None` when the model has none (another position kind, or a probe's entry).
pub fn position_table(entry: &Path) -> Result<Option<Vec<Vec<f32>>>, String> {
    let path = entry.join("weights.safetensors");
    if !path.exists() {
        return Ok(None);
    }
    let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let st = safetensors::SafeTensors::deserialize(&bytes)
        .map_err(|e| format!("{}: {e:?}", path.display()))?;
    let Ok(t) = st.tensor("pos.weight") else {
        return Ok(None);
    };
    let (&[rows, cols], safetensors::Dtype::F32) = (t.shape(), t.dtype()) else {
        return Err(format!(
            "{}: pos.weight must be a float32 matrix",
            path.display()
        ));
    };
    let floats: Vec<f32> = (t.data().chunks_exact(4))
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    if floats.len() != rows * cols || cols == 0 {
        return Err(format!("{}: pos.weight is truncated", path.display()));
    }
    Ok(Some(floats.chunks(cols).map(<[f32]>::to_vec).collect()))
}

/// The cosine similarity of every pair of rows (a row of zeros is alike to nothing: 0).
pub fn cosine(rows: &[Vec<f32>]) -> Vec<Vec<f64>> {
    let norm = |r: &[f32]| r.iter().map(|&x| f64::from(x).powi(2)).sum::<f64>().sqrt();
    let norms: Vec<f64> = rows.iter().map(|r| norm(r)).collect();
    (rows.iter().zip(&norms))
        .map(|(a, na)| {
            (rows.iter().zip(&norms))
                .map(|(b, nb)| {
                    let dot: f64 = a
                        .iter()
                        .zip(b)
                        .map(|(&x, &y)| f64::from(x) * f64::from(y))
                        .sum();
                    if *na > 0.0 && *nb > 0.0 {
                        dot / (na * nb)
                    } else {
                        0.0
                    }
                })
                .collect()
        })
        .collect()
}

/// The cosine similarity of the sinusoidal vectors of positions `p` and `q` in width `d`
/// (even): each pair of columns `(sin pω, cos pω)` is a unit vector, so the cosine is the
/// mean over the `d / 2` frequencies `ω_i = 10000^(-2i/d)` of `cos((p - q)ω_i)`, a function
/// of the distance alone.
pub fn sinusoidal_cosine(d: usize, rows: usize) -> Vec<Vec<f64>> {
    let half = d / 2;
    let at = |dist: f64| {
        (0..half)
            .map(|i| (dist * 10000f64.powf(-2.0 * i as f64 / d as f64)).cos())
            .sum::<f64>()
            / half as f64
    };
    (0..rows)
        .map(|p| (0..rows).map(|q| at(p as f64 - q as f64)).collect())
        .collect()
}

/// Adds to one seed's result, as expressions and `show` see it, `table` for a run with a
/// learned table: `cos`, every pair of rows' cosine similarity, and `neighbour`, row i's
/// with row i + 1. A run without one, or whose weights cannot be read, gets none (an
/// expression that reads it then says the path does not exist).
pub fn add_table(result: &mut serde_json::Value, entry: &Path) {
    if let (Some(table), serde_json::Value::Object(o)) = (table(entry), result) {
        o.insert("table".into(), serde_json::json!(table));
    }
}

/// A run's learned table, as `run.table` reads it (see [`add_table`]): `None` for a run
/// without one, or whose weights cannot be read.
pub fn table(entry: &Path) -> Option<Table> {
    let rows = position_table(entry).ok()??;
    let cos = cosine(&rows);
    let neighbour: Vec<f64> = (1..cos.len()).map(|i| cos[i - 1][i]).collect();
    Some(Table { cos, neighbour })
}

/// A learned table's similarities: `cos`, every pair of rows' cosine similarity, and
/// `neighbour`, row i's with row i + 1.
#[derive(serde::Serialize)]
pub struct Table {
    pub cos: Vec<Vec<f64>>,
    pub neighbour: Vec<f64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cosine_of_rows() {
        let c = cosine(&[
            vec![1.0, 0.0],
            vec![1.0, 1.0],
            vec![0.0, 0.0],
            vec![-2.0, 0.0],
        ]);
        assert!((c[0][1] - std::f64::consts::FRAC_1_SQRT_2).abs() < 1e-12);
        assert!(c[0][2].abs() < 1e-300, "a row of zeros is alike to nothing");
        assert!((c[0][3] + 1.0).abs() < 1e-12);
        assert!((c[1][1] - 1.0).abs() < 1e-12);
    }

    #[test]
    fn sinusoidal_cosine_depends_on_distance_only() {
        let c = sinusoidal_cosine(64, 33);
        assert!((c[0][0] - 1.0).abs() < 1e-12);
        assert!((c[3][7] - c[20][24]).abs() < 1e-12);
        assert!((c[3][7] - c[7][3]).abs() < 1e-12);
        assert!(c[0][1] < 1.0 && c[0][1] > c[0][8]);
    }
}
