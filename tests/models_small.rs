//! The `resnet18` and `gpt2` examples at a tiny configuration, from the PyTorch files checked
//! into `tests/data/models/` (written by `scripts/export_torch_models.py --small`): compiled ==
//! session == eager bit for bit, and each against PyTorch's output within the examples'
//! tolerance; no Python needed. The two `#[graph] mod`s and remaps below are the examples'
//! with other values of their consts, and the last test holds them to that.

use grafo::checkpoint::Remap;
use grafo::ndarray::Dimension;
use grafo::prelude::*;
use grafo::Session;
use std::path::{Path, PathBuf};

#[graph]
pub mod resnet {
    /// The channels of the four stages, the image and the classes.
    pub const C1: usize = 4;
    pub const C2: usize = 8;
    pub const C3: usize = 16;
    pub const C4: usize = 32;
    pub const CLASSES: usize = 10;
    pub const IMG_H: usize = 36;
    pub const IMG_W: usize = 44;
    /// The feature maps' sizes at stages 1 (after the stem's stride-2 convolution and
    /// max pooling), 2, 3 and 4: each later stage halves them, rounding up.
    pub const H1: usize = 9;
    pub const W1: usize = 11;
    pub const H2: usize = 5;
    pub const W2: usize = 6;
    pub const H3: usize = 3;
    pub const W3: usize = 3;
    pub const H4: usize = 2;
    pub const W4: usize = 2;
    /// The batch of the input and output file.
    pub const IO_BATCH: usize = 2;

    /// `nn.BatchNorm2d(C1)`, and below for the other widths (a struct's dims are fixed).
    pub struct Norm1 {
        #[init(ones)]
        pub weight: Tensor<f32, C1>,
        pub bias: Tensor<f32, C1>,
        pub running_mean: Tensor<f32, C1>,
        #[init(ones)]
        pub running_var: Tensor<f32, C1>,
    }
    pub struct Norm2 {
        #[init(ones)]
        pub weight: Tensor<f32, C2>,
        pub bias: Tensor<f32, C2>,
        pub running_mean: Tensor<f32, C2>,
        #[init(ones)]
        pub running_var: Tensor<f32, C2>,
    }
    pub struct Norm3 {
        #[init(ones)]
        pub weight: Tensor<f32, C3>,
        pub bias: Tensor<f32, C3>,
        pub running_mean: Tensor<f32, C3>,
        #[init(ones)]
        pub running_var: Tensor<f32, C3>,
    }
    pub struct Norm4 {
        #[init(ones)]
        pub weight: Tensor<f32, C4>,
        pub bias: Tensor<f32, C4>,
        pub running_mean: Tensor<f32, C4>,
        #[init(ones)]
        pub running_var: Tensor<f32, C4>,
    }

    /// A `BasicBlock` that keeps the width: two 3x3 convolutions (HWIO), each with its norm.
    pub struct Basic1 {
        #[init(he_normal)]
        pub conv1: Tensor<f32, 3, 3, C1, C1>,
        pub bn1: Norm1,
        #[init(he_normal)]
        pub conv2: Tensor<f32, 3, 3, C1, C1>,
        pub bn2: Norm1,
    }
    pub struct Basic2 {
        #[init(he_normal)]
        pub conv1: Tensor<f32, 3, 3, C2, C2>,
        pub bn1: Norm2,
        #[init(he_normal)]
        pub conv2: Tensor<f32, 3, 3, C2, C2>,
        pub bn2: Norm2,
    }
    pub struct Basic3 {
        #[init(he_normal)]
        pub conv1: Tensor<f32, 3, 3, C3, C3>,
        pub bn1: Norm3,
        #[init(he_normal)]
        pub conv2: Tensor<f32, 3, 3, C3, C3>,
        pub bn2: Norm3,
    }
    pub struct Basic4 {
        #[init(he_normal)]
        pub conv1: Tensor<f32, 3, 3, C4, C4>,
        pub bn1: Norm4,
        #[init(he_normal)]
        pub conv2: Tensor<f32, 3, 3, C4, C4>,
        pub bn2: Norm4,
    }

    /// The shortcut of a block that halves the image: PyTorch's `Sequential(conv 1x1, bn)`.
    pub struct Shortcut2 {
        #[init(he_normal)]
        pub conv: Tensor<f32, 1, 1, C1, C2>,
        pub bn: Norm2,
    }
    pub struct Shortcut3 {
        #[init(he_normal)]
        pub conv: Tensor<f32, 1, 1, C2, C3>,
        pub bn: Norm3,
    }
    pub struct Shortcut4 {
        #[init(he_normal)]
        pub conv: Tensor<f32, 1, 1, C3, C4>,
        pub bn: Norm4,
    }

    /// A `BasicBlock` with stride 2 that doubles the width.
    pub struct Down2 {
        #[init(he_normal)]
        pub conv1: Tensor<f32, 3, 3, C1, C2>,
        pub bn1: Norm2,
        #[init(he_normal)]
        pub conv2: Tensor<f32, 3, 3, C2, C2>,
        pub bn2: Norm2,
        pub downsample: Shortcut2,
    }
    pub struct Down3 {
        #[init(he_normal)]
        pub conv1: Tensor<f32, 3, 3, C2, C3>,
        pub bn1: Norm3,
        #[init(he_normal)]
        pub conv2: Tensor<f32, 3, 3, C3, C3>,
        pub bn2: Norm3,
        pub downsample: Shortcut3,
    }
    pub struct Down4 {
        #[init(he_normal)]
        pub conv1: Tensor<f32, 3, 3, C3, C4>,
        pub bn1: Norm4,
        #[init(he_normal)]
        pub conv2: Tensor<f32, 3, 3, C4, C4>,
        pub bn2: Norm4,
        pub downsample: Shortcut4,
    }

    /// PyTorch's `layer2`, `layer3`, `layer4`: its blocks `0` and `1`.
    pub struct Stage2 {
        pub down: Down2,
        pub block: Basic2,
    }
    pub struct Stage3 {
        pub down: Down3,
        pub block: Basic3,
    }
    pub struct Stage4 {
        pub down: Down4,
        pub block: Basic4,
    }

    /// `nn.Linear(C4, CLASSES)`, its weight `[in, out]`.
    pub struct Linear {
        pub weight: Tensor<f32, C4, CLASSES>,
        pub bias: Tensor<f32, CLASSES>,
    }

    pub struct ResNet18 {
        #[init(he_normal)]
        pub conv1: Tensor<f32, 7, 7, 3, C1>,
        pub bn1: Norm1,
        pub layer1: [Basic1; 2],
        pub layer2: Stage2,
        pub layer3: Stage3,
        pub layer4: Stage4,
        pub fc: Linear,
    }

    /// The second file: PyTorch's input (NCHW, as PyTorch has it) and logits.
    pub struct Io {
        #[init(uniform(-1.0, 1.0))]
        pub input: Tensor<f32, IO_BATCH, 3, IMG_H, IMG_W>,
        pub output: Tensor<f32, IO_BATCH, CLASSES>,
    }

    /// `BatchNorm2d` in eval mode. TF's argument order: offset (`bias`) before scale (`weight`).
    pub fn norm1(x: Tensor<f32, B, H, W, C1>, n: Norm1) -> Tensor<f32, B, H, W, C1> {
        batch_normalization(x, n.running_mean, n.running_var, n.bias, n.weight, 1e-5)
    }
    pub fn norm2(x: Tensor<f32, B, H, W, C2>, n: Norm2) -> Tensor<f32, B, H, W, C2> {
        batch_normalization(x, n.running_mean, n.running_var, n.bias, n.weight, 1e-5)
    }
    pub fn norm3(x: Tensor<f32, B, H, W, C3>, n: Norm3) -> Tensor<f32, B, H, W, C3> {
        batch_normalization(x, n.running_mean, n.running_var, n.bias, n.weight, 1e-5)
    }
    pub fn norm4(x: Tensor<f32, B, H, W, C4>, n: Norm4) -> Tensor<f32, B, H, W, C4> {
        batch_normalization(x, n.running_mean, n.running_var, n.bias, n.weight, 1e-5)
    }

    /// `relu(bn2(conv2(relu(bn1(conv1(x))))) + x)`; a stride-1 3x3 convolution with PyTorch's
    /// `padding=1` is TF's SAME.
    pub fn basic1(x: Tensor<f32, B, H, W, C1>, p: Basic1) -> Tensor<f32, B, H, W, C1> {
        let y = relu(norm1(conv2d(x, p.conv1, 1, SAME), p.bn1));
        relu(norm1(conv2d(y, p.conv2, 1, SAME), p.bn2) + x)
    }
    pub fn basic2(x: Tensor<f32, B, H, W, C2>, p: Basic2) -> Tensor<f32, B, H, W, C2> {
        let y = relu(norm2(conv2d(x, p.conv1, 1, SAME), p.bn1));
        relu(norm2(conv2d(y, p.conv2, 1, SAME), p.bn2) + x)
    }
    pub fn basic3(x: Tensor<f32, B, H, W, C3>, p: Basic3) -> Tensor<f32, B, H, W, C3> {
        let y = relu(norm3(conv2d(x, p.conv1, 1, SAME), p.bn1));
        relu(norm3(conv2d(y, p.conv2, 1, SAME), p.bn2) + x)
    }
    pub fn basic4(x: Tensor<f32, B, H, W, C4>, p: Basic4) -> Tensor<f32, B, H, W, C4> {
        let y = relu(norm4(conv2d(x, p.conv1, 1, SAME), p.bn1));
        relu(norm4(conv2d(y, p.conv2, 1, SAME), p.bn2) + x)
    }

    /// The block that opens a stage: its first convolution has stride 2 (PyTorch pads it by 1
    /// on every side, so `pad` then VALID), the shortcut a strided 1x1 convolution.
    pub fn down2(x: Tensor<f32, B, H1, W1, C1>, p: Down2) -> Tensor<f32, B, H2, W2, C2> {
        let padded = pad(x, [[0, 0], [1, 1], [1, 1], [0, 0]]);
        let y = relu(norm2(conv2d(padded, p.conv1, 2, VALID), p.bn1));
        let y = norm2(conv2d(y, p.conv2, 1, SAME), p.bn2);
        relu(y + norm2(conv2d(x, p.downsample.conv, 2, VALID), p.downsample.bn))
    }
    pub fn down3(x: Tensor<f32, B, H2, W2, C2>, p: Down3) -> Tensor<f32, B, H3, W3, C3> {
        let padded = pad(x, [[0, 0], [1, 1], [1, 1], [0, 0]]);
        let y = relu(norm3(conv2d(padded, p.conv1, 2, VALID), p.bn1));
        let y = norm3(conv2d(y, p.conv2, 1, SAME), p.bn2);
        relu(y + norm3(conv2d(x, p.downsample.conv, 2, VALID), p.downsample.bn))
    }
    pub fn down4(x: Tensor<f32, B, H3, W3, C3>, p: Down4) -> Tensor<f32, B, H4, W4, C4> {
        let padded = pad(x, [[0, 0], [1, 1], [1, 1], [0, 0]]);
        let y = relu(norm4(conv2d(padded, p.conv1, 2, VALID), p.bn1));
        let y = norm4(conv2d(y, p.conv2, 1, SAME), p.bn2);
        relu(y + norm4(conv2d(x, p.downsample.conv, 2, VALID), p.downsample.bn))
    }

    /// The network: the stem (7x7 stride-2 convolution padded by 3, 3x3 stride-2 max pooling
    /// padded by 1 with -inf as PyTorch's), four stages, the global average and `fc`.
    pub fn forward(x: Tensor<f32, B, IMG_H, IMG_W, 3>, p: ResNet18) -> Tensor<f32, B, CLASSES> {
        let y = conv2d(pad(x, [[0, 0], [3, 3], [3, 3], [0, 0]]), p.conv1, 2, VALID);
        let y = relu(norm1(y, p.bn1));
        let y = pad(y, [[0, 0], [1, 1], [1, 1], [0, 0]], f32::NEG_INFINITY);
        let y = max_pool2d(y, 3, 2, VALID);
        let y = basic1(basic1(y, p.layer1[0]), p.layer1[1]);
        let y = basic2(down2(y, p.layer2.down), p.layer2.block);
        let y = basic3(down3(y, p.layer3.down), p.layer3.block);
        let y = basic4(down4(y, p.layer4.down), p.layer4.block);
        matmul(reduce_mean(y, [1, 2]), p.fc.weight) + p.fc.bias
    }
}

/// The largest difference to PyTorch's logits allowed, relative to their largest magnitude:
/// the two sum in different orders, so they differ by rounding, far below this.
pub const RESNET_TOLERANCE: f32 = 1e-4;

/// How torchvision's names and layouts map to `ResNet18`'s fields.
pub fn resnet_remap() -> Remap {
    let mut remap = Remap::new()
        // BatchNorm2d's step counter: no field holds it.
        .skip(|name| name.ends_with("num_batches_tracked"))
        // The shortcut's Sequential(conv, bn).
        .replace("downsample.0.weight", "downsample.conv")
        .replace("downsample.1.", "downsample.bn.")
        // A convolution without bias: its one tensor is the field.
        .replace("conv1.weight", "conv1")
        .replace("conv2.weight", "conv2");
    // A later stage's block 0 halves the image, block 1 keeps it.
    for stage in 2..=4 {
        remap = remap
            .replace(&format!("layer{stage}.0."), &format!("layer{stage}.down."))
            .replace(&format!("layer{stage}.1."), &format!("layer{stage}.block."));
    }
    remap
        .oihw_to_hwio(|path| {
            path.ends_with("conv1") || path.ends_with("conv2") || path.ends_with(".conv")
        })
        .transpose(|path| path == "fc.weight")
}

#[graph]
pub mod gpt2 {
    pub const LAYERS: usize = 2;
    pub const D: usize = 32;
    pub const D3: usize = 96;
    pub const FF: usize = 128;
    pub const HEADS: usize = 4;
    pub const HEAD: usize = 8;
    pub const T: usize = 16;
    /// 1 / sqrt(HEAD), the attention scores' scale.
    pub const SCALE: f32 = 0.353_553_38;
    pub const POSITIONS: usize = 32;
    pub const IO_BATCH: usize = 2;

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
pub const GPT2_TOLERANCE: f32 = 1e-4;

/// How PyTorch's names and layouts map to `Gpt2`'s fields: the names are the same (the
/// struct follows the module tree), and each `nn.Linear` weight (`[out, in]`) is transposed
/// to `[in, out]`. Layer norms and the embedding keep their layout.
pub fn gpt2_remap() -> Remap {
    Remap::new().transpose(|path| path.contains(".c_") && path.ends_with(".weight"))
}

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/models")
        .join(name)
}

/// The largest absolute difference, and it divided by the largest magnitude of `expected`.
fn differences<D: Dimension>(found: &Array<f32, D>, expected: &Array<f32, D>) -> (f32, f32) {
    let abs = found
        .iter()
        .zip(expected)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0f32, |m, d| if d > m || d.is_nan() { d } else { m });
    let scale = expected.iter().fold(0.0f32, |m, v| m.max(v.abs()));
    (abs, abs / scale)
}

#[test]
fn resnet18_small_matches_pytorch() -> Result<(), grafo::Error> {
    let p = resnet::ResNet18::load_safetensors_with(
        data("resnet18_small.safetensors"),
        &resnet_remap(),
    )?;
    let io = resnet::Io::load_safetensors(data("resnet18_small_io.safetensors"))?;
    let x = io
        .input
        .view()
        .permuted_axes([0, 2, 3, 1])
        .as_standard_layout()
        .into_owned();
    let compiled = resnet::forward(&x, &p)?;
    let eager = resnet::forward::eager(&x, &p)?;
    let mut session = Session::default();
    let in_session = resnet::forward::run(&mut session, &x, &p)?;
    assert_eq!(compiled, eager, "compiled == eager bit for bit");
    assert_eq!(compiled, in_session, "compiled == session bit for bit");
    let (abs, rel) = differences(&compiled, &io.output);
    assert!(
        rel <= RESNET_TOLERANCE,
        "ResNet-18 (small) against PyTorch: max abs difference {abs:e}, {rel:e} of the scale"
    );
    // The logits are not all alike: the batch norms and the weights took effect.
    let spread = io.output.iter().fold(0.0f32, |m, v| m.max(v.abs()));
    assert!(spread > 1e-2, "PyTorch's logits are near zero: {spread}");
    // Each image is its own: the batch's two rows differ.
    assert_ne!(compiled.row(0), compiled.row(1));
    Ok(())
}

#[test]
fn gpt2_small_matches_pytorch() -> Result<(), grafo::Error> {
    let p = gpt2::Gpt2::load_safetensors_with(data("gpt2_small.safetensors"), &gpt2_remap())?;
    let io = gpt2::Io::load_safetensors(data("gpt2_small_io.safetensors"))?;
    let compiled = gpt2::forward(&io.input, &p)?;
    let eager = gpt2::forward::eager(&io.input, &p)?;
    let mut session = Session::default();
    let in_session = gpt2::forward::run(&mut session, &io.input, &p)?;
    assert_eq!(compiled, eager, "compiled == eager bit for bit");
    assert_eq!(compiled, in_session, "compiled == session bit for bit");
    let (abs, rel) = differences(&compiled, &io.output);
    assert!(
        rel <= GPT2_TOLERANCE,
        "GPT-2 (small) against PyTorch: max abs difference {abs:e}, {rel:e} of the scale"
    );
    // Causality: changing the last token changes no earlier position's output.
    let mut later = io.input.clone();
    later
        .slice_mut(s![.., gpt2::T - 1, ..])
        .mapv_inplace(|v| v + 1.0);
    let changed = gpt2::forward(&later, &p)?;
    let before = s![.., ..gpt2::T - 1, ..];
    assert_eq!(changed.slice(before), compiled.slice(before));
    assert_ne!(changed, compiled);
    Ok(())
}

/// Without the remap, PyTorch's names and layouts do not load: every tensor is listed.
#[test]
fn pytorch_files_need_the_remap() {
    let err = gpt2::Gpt2::load_safetensors(data("gpt2_small.safetensors"))
        .expect_err("Linear weights are [out, in]");
    let text = err.to_string();
    assert!(text.contains("`h.0.attn.c_attn.weight`"), "{text}");
    let err = resnet::ResNet18::load_safetensors(data("resnet18_small.safetensors"))
        .expect_err("PyTorch's names");
    let text = err.to_string();
    assert!(text.contains("num_batches_tracked"), "{text}");
}

/// The text between `start` and the first line that is `}` after it, without the lines
/// that declare a `pub const` (the sizes, which are all the two copies may differ in).
fn item(source: &str, start: &str) -> String {
    let from = source
        .find(start)
        .unwrap_or_else(|| panic!("{start} is missing"));
    let len = source[from..].find("\n}\n").expect("the item's end");
    source[from..from + len]
        .lines()
        .filter(|line| !line.trim_start().starts_with("pub const "))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn the_models_are_the_examples() {
    let read = |path: &str| {
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(path))
            .expect("a source file")
    };
    let test = read("tests/models_small.rs");
    for (example, module, remap, ours) in [
        (
            "examples/resnet18.rs",
            "pub mod resnet {",
            "pub fn torch_remap",
            "pub fn resnet_remap",
        ),
        (
            "examples/gpt2.rs",
            "pub mod gpt2 {",
            "pub fn torch_remap",
            "pub fn gpt2_remap",
        ),
    ] {
        let example = read(example);
        assert_eq!(item(&test, module), item(&example, module), "{module}");
        assert_eq!(
            item(&test, ours).replacen(ours, remap, 1),
            item(&example, remap),
            "{ours}"
        );
    }
}
