//! Trained models for the page's widget: each model's weights as one compact file, a
//! manifest the widget reads, and the engine's own decodes for the browser's parity test.
//!
//! `models/<id>.bin` holds the float32 weights of every tensor, in name order, byte-plane
//! shuffled (every float's first byte, then every second byte, ...) and gzip-compressed:
//! the exponent bytes then compress well, and the file stays lossless. The page undoes
//! both with `DecompressionStream` (see static/widget/weights.js).

use revtx_spec::entry::WEIGHTS_FILE;
use revtx_spec::result::RunResult;
use serde::Serialize;
use std::io::{Read, Write};
use std::path::Path;

/// What the weights of one chapter's widget models together may weigh, packed: a page
/// loads only its own widgets' models, so its transfer grows by at most this much. Held
/// at each `widget` directive (`widget-budget`).
pub const BUDGET: usize = 1_500_000;

/// The bytes the page loads for the model of the cache entry `entry` (its packed weights).
pub fn packed_size(entry: &Path) -> Result<usize, String> {
    let key = entry
        .file_name()
        .and_then(|k| k.to_str())
        .unwrap_or_default();
    let (floats, _) = read_weights(&entry.join(WEIGHTS_FILE))?;
    packed(entry, key, &floats).map(|b| b.len())
}

/// One model to export: a training run's result and the directory of its cache entry.
pub struct Model<'a> {
    pub id: &'a str,
    pub label: &'a str,
    pub result: &'a RunResult,
    pub key: &'a str,
    pub entry: &'a Path,
}

#[derive(Serialize)]
struct Manifest<'a> {
    format: u32,
    models: Vec<ManifestModel<'a>>,
}

#[derive(Serialize)]
struct ManifestModel<'a> {
    id: &'a str,
    label: &'a str,
    run: &'a str,
    seed: u64,
    key: &'a str,
    profile: &'a str,
    config: &'a revtx_spec::config::ModelConfig,
    /// What the model answers a string with (the widget runs `reverse`, `copy`, `sort`).
    task: revtx_spec::task::Task,
    train_lengths: [usize; 2],
    first_untrained: Option<usize>,
    file: String,
    bytes: usize,
    floats: usize,
    tensors: Vec<TensorInfo>,
    attention: AttentionInfo<'a>,
}

#[derive(Serialize)]
struct TensorInfo {
    name: String,
    shape: Vec<usize>,
    offset: usize,
}

#[derive(Serialize)]
struct AttentionInfo<'a> {
    input: &'a str,
    tokens: &'a [String],
}

#[derive(Serialize)]
struct Decodes<'a> {
    test: Pairs<'a>,
    long: Pairs<'a>,
    /// The engine's attention for the manifest's input (what the browser test reads).
    attention: EngineAttention<'a>,
}

#[derive(Serialize)]
struct EngineAttention<'a> {
    input: &'a str,
    tokens: &'a [String],
    /// `[layer][head][query][key]`.
    weights: &'a [Vec<Vec<Vec<f64>>>],
}

#[derive(Serialize)]
struct Pairs<'a> {
    inputs: &'a [String],
    outputs: &'a [String],
}

/// What an export makes.
pub struct Export {
    /// The files by name: `manifest.json`, `decodes.json` and one `<id>.bin` per model.
    pub files: Vec<(String, Vec<u8>)>,
    /// The bytes of the weights among them.
    pub weights: usize,
}

/// The export of `models`.
pub fn files(models: &[Model]) -> Result<Export, String> {
    let mut out = Vec::new();
    let mut manifest = Manifest {
        format: 1,
        models: Vec::new(),
    };
    let mut decodes = std::collections::BTreeMap::new();
    let mut total = 0;
    for m in models {
        let train = m
            .result
            .train()
            .ok_or_else(|| format!("`{}` is not a training run", m.id))?;
        let (floats, tensors) = read_weights(&m.entry.join(WEIGHTS_FILE))?;
        let packed = packed(m.entry, m.key, &floats)?;
        let file = format!("{}.bin", m.id);
        let bytes = packed.len();
        total += bytes;
        out.push((file.clone(), packed));
        let data = &m.result.config.data;
        manifest.models.push(ManifestModel {
            id: m.id,
            label: m.label,
            run: m.id,
            seed: m.result.seed,
            key: m.key,
            profile: &m.result.env.profile,
            config: &m.result.config.model,
            task: data.task,
            train_lengths: [data.min_len, data.max_len],
            first_untrained: train.positions.as_ref().and_then(|p| p.first_untrained),
            file,
            bytes,
            floats: floats.len(),
            tensors,
            attention: AttentionInfo {
                input: &train.attention.input,
                tokens: &train.attention.tokens,
            },
        });
        decodes.insert(
            m.id,
            Decodes {
                test: Pairs {
                    inputs: &train.test.inputs,
                    outputs: &train.test.outputs,
                },
                long: Pairs {
                    inputs: &train.long.inputs,
                    outputs: &train.long.outputs,
                },
                attention: EngineAttention {
                    input: &train.attention.input,
                    tokens: &train.attention.tokens,
                    weights: &train.attention.weights,
                },
            },
        );
    }
    let manifest = serde_json::to_vec(&manifest).map_err(|e| e.to_string())?;
    let decodes = serde_json::to_vec(&decodes).map_err(|e| e.to_string())?;
    out.push(("manifest.json".into(), manifest));
    out.push(("decodes.json".into(), decodes));
    Ok(Export {
        files: out,
        weights: total,
    })
}

/// Every tensor of a safetensors file as float32, in name order, with where each starts.
fn read_weights(path: &Path) -> Result<(Vec<f32>, Vec<TensorInfo>), String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let st = safetensors::SafeTensors::deserialize(&bytes)
        .map_err(|e| format!("{}: {e:?}", path.display()))?;
    let mut names: Vec<String> = st.names().into_iter().cloned().collect();
    names.sort();
    let (mut floats, mut infos) = (Vec::new(), Vec::new());
    for name in names {
        let t = st.tensor(&name).map_err(|e| format!("{name}: {e:?}"))?;
        if t.dtype() != safetensors::Dtype::F32 {
            return Err(format!("{name}: weights must be float32"));
        }
        infos.push(TensorInfo {
            name,
            shape: t.shape().to_vec(),
            offset: floats.len(),
        });
        floats.extend(
            t.data()
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])),
        );
    }
    Ok((floats, infos))
}

/// `pack(floats)` for the cache entry `entry` (under key `key`). Packing at gzip's best
/// level takes about 40 ms a model, every build: the packed file is kept in the run cache
/// (`<cache>/widget/<key>.v1.gz`) and used again only when it unpacks to exactly these
/// floats, so a stale or damaged copy is packed afresh, never published.
fn packed(entry: &Path, key: &str, floats: &[f32]) -> Result<Vec<u8>, String> {
    let memo = entry
        .parent()
        .and_then(Path::parent)
        .map(|cache| cache.join("widget").join(format!("{key}.v1.gz")));
    if let Some(bytes) = memo.as_ref().and_then(|m| std::fs::read(m).ok()) {
        let same = unpack(&bytes).is_ok_and(|back| {
            back.len() == floats.len()
                && back
                    .iter()
                    .zip(floats)
                    .all(|(a, b)| a.to_bits() == b.to_bits())
        });
        if same {
            return Ok(bytes);
        }
    }
    let bytes = pack(floats)?;
    if let Some(m) = memo {
        // A memo: a build that cannot keep it still publishes the right bytes.
        let _ = super::site::write_atomic(&m, &bytes);
    }
    Ok(bytes)
}

/// Byte-plane shuffle, then gzip: lossless, and a fifth smaller than the raw floats.
fn pack(floats: &[f32]) -> Result<Vec<u8>, String> {
    let n = floats.len();
    let mut planes = vec![0u8; 4 * n];
    for (i, x) in floats.iter().enumerate() {
        for (b, byte) in x.to_le_bytes().into_iter().enumerate() {
            planes[b * n + i] = byte;
        }
    }
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    gz.write_all(&planes).map_err(|e| e.to_string())?;
    gz.finish().map_err(|e| e.to_string())
}

/// The inverse of `pack` (what `static/widget/weights.js` does in the page): gunzip, then undo
/// the byte-plane shuffle. Used by the tests to prove the format lossless.
pub fn unpack(bytes: &[u8]) -> Result<Vec<f32>, String> {
    let mut planes = Vec::new();
    flate2::read::GzDecoder::new(bytes)
        .read_to_end(&mut planes)
        .map_err(|e| e.to_string())?;
    if planes.len() % 4 != 0 {
        return Err(format!(
            "{} bytes is not a whole number of floats",
            planes.len()
        ));
    }
    let n = planes.len() / 4;
    Ok((0..n)
        .map(|i| {
            f32::from_le_bytes([
                planes[i],
                planes[n + i],
                planes[2 * n + i],
                planes[3 * n + i],
            ])
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packing_is_lossless() {
        let xs: Vec<f32> = (0..1000u16)
            .map(|i| (f32::from(i) * 0.37).sin() / 3.0)
            .collect();
        let packed = pack(&xs).unwrap();
        let back = unpack(&packed).unwrap();
        assert_eq!(back, xs);
    }
}
