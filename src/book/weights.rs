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
    let Some((shape, dtype, data)) =
        read_tensor(&path, "pos.weight").map_err(|e| format!("{}: {e}", path.display()))?
    else {
        return Ok(None);
    };
    let ([rows, cols], "F32") = (shape.as_slice(), dtype.as_str()) else {
        return Err(format!(
            "{}: pos.weight must be a float32 matrix",
            path.display()
        ));
    };
    let (rows, cols) = (*rows, *cols);
    let floats: Vec<f32> = (data.chunks_exact(4))
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    if floats.len() != rows * cols || cols == 0 {
        return Err(format!("{}: pos.weight is truncated", path.display()));
    }
    Ok(Some(floats.chunks(cols).map(<[f32]>::to_vec).collect()))
}

/// A tensor's shape, dtype (as safetensors names it: `F32`) and bytes.
type Tensor = (Vec<usize>, String, Vec<u8>);

/// One tensor of a safetensors file, read alone: the header (a little-endian length, then
/// JSON naming each tensor's dtype, shape and byte range) and that tensor's bytes, not the
/// whole file (a build reads the position table of many entries).
fn read_tensor(path: &Path, name: &str) -> Result<Option<Tensor>, String> {
    use std::io::{Read, Seek, SeekFrom};
    #[derive(serde::Deserialize)]
    struct Info {
        dtype: String,
        shape: Vec<usize>,
        data_offsets: [u64; 2],
    }
    let mut f = std::fs::File::open(path).map_err(|e| e.to_string())?;
    let size = f.metadata().map_err(|e| e.to_string())?.len();
    let mut n = [0u8; 8];
    f.read_exact(&mut n).map_err(|e| e.to_string())?;
    let n = u64::from_le_bytes(n);
    if n > size.saturating_sub(8) {
        return Err("the safetensors header runs past the file".into());
    }
    let mut header = vec![0u8; usize::try_from(n).map_err(|e| e.to_string())?];
    f.read_exact(&mut header).map_err(|e| e.to_string())?;
    let mut tensors: serde_json::Map<String, serde_json::Value> =
        serde_json::from_slice(&header).map_err(|e| format!("safetensors header: {e}"))?;
    let Some(info) = tensors.remove(name) else {
        return Ok(None);
    };
    let info: Info = serde_json::from_value(info).map_err(|e| format!("{name}: {e}"))?;
    let [start, end] = info.data_offsets;
    if start > end || 8 + n + end > size {
        return Err(format!("{name} runs past the file"));
    }
    let mut data = vec![0u8; usize::try_from(end - start).map_err(|e| e.to_string())?];
    f.seek(SeekFrom::Start(8 + n + start))
        .map_err(|e| e.to_string())?;
    f.read_exact(&mut data).map_err(|e| e.to_string())?;
    Ok(Some((info.shape, info.dtype, data)))
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

    /// The position table read alone is the table the safetensors library reads, from a
    /// file with another tensor before it and the library's own header.
    #[test]
    fn the_position_table_is_read_alone_and_right() {
        use safetensors::tensor::{serialize, TensorView};
        let f32s = |v: &[f32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
        let (a, pos) = (f32s(&[9.0; 6]), f32s(&[1.0, 2.0, 3.0, 4.0, -5.5, 6.25]));
        let bytes = serialize(
            [
                (
                    "a.weight",
                    TensorView::new(safetensors::Dtype::F32, vec![2, 3], &a).unwrap(),
                ),
                (
                    "pos.weight",
                    TensorView::new(safetensors::Dtype::F32, vec![3, 2], &pos).unwrap(),
                ),
            ],
            &None,
        )
        .unwrap();
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("weights.safetensors"), &bytes).unwrap();
        assert_eq!(
            position_table(dir.path()).unwrap().unwrap(),
            vec![vec![1.0, 2.0], vec![3.0, 4.0], vec![-5.5, 6.25]]
        );
        // A file cut short is an error, not a table.
        std::fs::write(
            dir.path().join("weights.safetensors"),
            &bytes[..bytes.len() - 4],
        )
        .unwrap();
        assert!(position_table(dir.path()).is_err());
    }

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
