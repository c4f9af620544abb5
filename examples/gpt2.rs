//! W11: a GPT-2-small-shaped decoder (12 pre-LN blocks, width 768, 12 causal attention heads,
//! tanh GELU, layer norm) run from PyTorch's own safetensors checkpoint.
//!
//! ```sh
//! /work/peers-venv/bin/python scripts/export_torch_models.py   # writes models/gpt2*.safetensors
//! cargo run --release --example gpt2                           # or: -- DIR with the two files
//! ```
//!
//! The model takes token embeddings (what `wte(ids)` gives, `[B, 128, 768]`), adds the learned
//! position embeddings `wpe`, runs the 12 blocks and the final layer norm `ln_f`, and returns
//! the hidden states; the token lookup and the language-model head (a `gather` and a `matmul`
//! by `wte`'s transpose) are left out, as the 50257-token vocabulary would weigh more than the
//! stack. The PyTorch model (`scripts/export_torch_models.py`) is nanoGPT's, with `nn.Linear`
//! layers, so the checkpoint is loaded through a `Remap` that transposes them. The example
//! checks compiled == eager bit for bit, and its output against PyTorch's within
//! [`TOLERANCE`]; without the files it says how to make them and runs on `Gpt2::init` weights.

use grafo::checkpoint::Remap;
use grafo::ndarray::Dimension;
use grafo::prelude::*;
use std::path::{Path, PathBuf};

#[graph]
pub mod gpt2 {
    pub const LAYERS: usize = 12;
    pub const D: usize = 768;
    pub const D3: usize = 2304;
    pub const FF: usize = 3072;
    pub const HEADS: usize = 12;
    pub const HEAD: usize = 64;
    pub const T: usize = 128;
    /// 1 / sqrt(HEAD), the attention scores' scale.
    pub const SCALE: f32 = 0.125;
    pub const POSITIONS: usize = 1024;
    pub const IO_BATCH: usize = 1;

    /// `nn.LayerNorm(D)`: PyTorch's `weight` is the scale, `bias` the offset.
    pub struct LayerNorm {
        #[init(ones)]
        pub weight: Tensor<f32, D>,
        pub bias: Tensor<f32, D>,
    }

    /// `nn.Linear(D, 3 * D)`, the query, key and value projections in one matmul. grafo's
    /// weight is `[in, out]`, the transpose of PyTorch's `[out, in]`.
    pub struct QkvProj {
        #[init(random_normal(0.0, 0.02))]
        pub weight: Tensor<f32, D, D3>,
        pub bias: Tensor<f32, D3>,
    }

    /// `nn.Linear(D, D)`, the attention's output projection.
    pub struct OutProj {
        #[init(random_normal(0.0, 0.02))]
        pub weight: Tensor<f32, D, D>,
        pub bias: Tensor<f32, D>,
    }

    /// `nn.Linear(D, 4 * D)`.
    pub struct Up {
        #[init(random_normal(0.0, 0.02))]
        pub weight: Tensor<f32, D, FF>,
        pub bias: Tensor<f32, FF>,
    }

    /// `nn.Linear(4 * D, D)`.
    pub struct Down {
        #[init(random_normal(0.0, 0.02))]
        pub weight: Tensor<f32, FF, D>,
        pub bias: Tensor<f32, D>,
    }

    pub struct Attention {
        pub c_attn: QkvProj,
        pub c_proj: OutProj,
    }

    pub struct Mlp {
        pub c_fc: Up,
        pub c_proj: Down,
    }

    pub struct Block {
        pub ln_1: LayerNorm,
        pub attn: Attention,
        pub ln_2: LayerNorm,
        pub mlp: Mlp,
    }

    /// `nn.Embedding(POSITIONS, D)`: one row per position.
    pub struct Embedding {
        #[init(random_normal(0.0, 0.01))]
        pub weight: Tensor<f32, POSITIONS, D>,
    }

    /// The checkpoint's tensors, named as PyTorch names them (`h.3.attn.c_attn.weight`).
    pub struct Gpt2 {
        pub wpe: Embedding,
        pub h: [Block; LAYERS],
        pub ln_f: LayerNorm,
    }

    /// The second file: PyTorch's input and output.
    pub struct Io {
        #[init(uniform(-1.0, 1.0))]
        pub input: Tensor<f32, IO_BATCH, T, D>,
        pub output: Tensor<f32, IO_BATCH, T, D>,
    }

    /// Causal multi-head self-attention: the heads split by a reshape and a transpose, each
    /// position attending to itself and the ones before it.
    pub fn attention(x: Tensor<f32, B, T, D>, p: Attention) -> Tensor<f32, B, T, D> {
        let qkv = matmul(x, p.c_attn.weight) + p.c_attn.bias;
        let (q, k, v) = split(qkv, 3, -1);
        let q = transpose(reshape(q, [B, T, HEADS, HEAD]), [0, 2, 1, 3]);
        let k = transpose(reshape(k, [B, T, HEADS, HEAD]), [0, 2, 1, 3]);
        let v = transpose(reshape(v, [B, T, HEADS, HEAD]), [0, 2, 1, 3]);
        let scores = matmul(q, transpose(k, [0, 1, 3, 2])) * SCALE;
        let causal = band_part(ones::<bool>([T, T]), -1, 0);
        let weights = softmax(select(causal, scores, f32::NEG_INFINITY), -1);
        let context = reshape(transpose(matmul(weights, v), [0, 2, 1, 3]), [B, T, D]);
        matmul(context, p.c_proj.weight) + p.c_proj.bias
    }

    /// One pre-LN block, GPT-2's: `x + attn(ln_1(x))`, then `x + mlp(ln_2(x))` with GELU's
    /// tanh approximation (`nn.GELU(approximate="tanh")`, as GPT-2).
    pub fn block(x: Tensor<f32, B, T, D>, p: Block) -> Tensor<f32, B, T, D> {
        let x = x + attention(layer_norm(x, p.ln_1.weight, p.ln_1.bias, -1, 1e-5), p.attn);
        let h = layer_norm(x, p.ln_2.weight, p.ln_2.bias, -1, 1e-5);
        let up = gelu(matmul(h, p.mlp.c_fc.weight) + p.mlp.c_fc.bias, true);
        x + matmul(up, p.mlp.c_proj.weight) + p.mlp.c_proj.bias
    }

    /// The stack: position embeddings, the blocks, the final layer norm.
    pub fn forward(x: Tensor<f32, B, T, D>, p: Gpt2) -> Tensor<f32, B, T, D> {
        let mut h = x + p.wpe.weight[s![0..T, ..]];
        for i in 0..LAYERS {
            h = block(h, p.h[i]);
        }
        layer_norm(h, p.ln_f.weight, p.ln_f.bias, -1, 1e-5)
    }
}

/// The largest difference to PyTorch's output allowed, relative to the output's largest
/// magnitude: the two sum in different orders (and PyTorch's `tanh` is not grafo's), so
/// they differ by rounding, which grows with depth but stays far below this.
pub const TOLERANCE: f32 = 1e-4;

/// How PyTorch's names and layouts map to `Gpt2`'s fields: the names are the same (the
/// struct follows the module tree), and each `nn.Linear` weight (`[out, in]`) is transposed
/// to `[in, out]`. Layer norms and the embedding keep their layout.
pub fn torch_remap() -> Remap {
    Remap::new().transpose(|path| path.contains(".c_") && path.ends_with(".weight"))
}

/// The folder holding `gpt2.safetensors` and `gpt2_io.safetensors`: the first argument, or
/// `models/` at the repository's root where the export script writes them.
pub fn models_dir() -> PathBuf {
    std::env::args_os()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("models"))
}

/// The largest absolute difference, and it divided by the largest magnitude of `expected`.
pub fn differences<D: Dimension>(found: &Array<f32, D>, expected: &Array<f32, D>) -> (f32, f32) {
    let abs = found
        .iter()
        .zip(expected)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0f32, |m, d| if d > m || d.is_nan() { d } else { m });
    let scale = expected.iter().fold(0.0f32, |m, v| m.max(v.abs()));
    (abs, abs / scale)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = models_dir();
    let (weights, io) = (
        dir.join("gpt2.safetensors"),
        dir.join("gpt2_io.safetensors"),
    );
    let (p, x, expected) = if weights.exists() && io.exists() {
        let p = gpt2::Gpt2::load_safetensors_with(&weights, &torch_remap())?;
        let io = gpt2::Io::load_safetensors(&io)?;
        println!("loaded PyTorch's weights from {}", weights.display());
        (p, io.input, Some(io.output))
    } else {
        println!(
            "{} or {} is missing: no comparison with PyTorch is made. To make them:\n  \
             /work/peers-venv/bin/python scripts/export_torch_models.py   (any Python with torch and safetensors)\n\
             Running on Gpt2::init(0) weights instead, checking compiled == eager only.",
            weights.display(),
            io.display()
        );
        (gpt2::Gpt2::init(0), gpt2::Io::init(1).input, None)
    };

    let t = std::time::Instant::now();
    let compiled = gpt2::forward(&x, &p)?;
    let compiled_ms = t.elapsed().as_secs_f64() * 1e3;
    let t = std::time::Instant::now();
    let eager = gpt2::forward::eager(&x, &p)?;
    let eager_ms = t.elapsed().as_secs_f64() * 1e3;
    assert_eq!(compiled.shape(), &[x.dim().0, gpt2::T, gpt2::D]);
    if compiled != eager {
        let (abs, _) = differences(&compiled, &eager);
        return Err(format!(
            "compiled and eager differ (by up to {abs:e}): they must agree bit for bit"
        )
        .into());
    }
    println!(
        "GPT-2 stack, batch {}, {} tokens: compiled == eager bit for bit ({compiled_ms:.0} ms and {eager_ms:.0} ms, first calls)",
        x.dim().0,
        gpt2::T
    );
    if let Some(expected) = expected {
        let (abs, rel) = differences(&compiled, &expected);
        println!(
            "against PyTorch: max abs difference {abs:.3e}, {rel:.3e} of the output's largest magnitude (tolerance {TOLERANCE:e})"
        );
        if rel.is_nan() || rel > TOLERANCE {
            return Err(format!("the output differs from PyTorch's by {rel:e} of its scale, over the tolerance {TOLERANCE:e}").into());
        }
    }
    Ok(())
}
