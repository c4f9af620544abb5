//! W10: ResNet-18 inference (batch norm not folded: each `BatchNorm2d` runs with its running
//! statistics) from PyTorch's own safetensors checkpoint, images NHWC.
//!
//! ```sh
//! /work/peers-venv/bin/python scripts/export_torch_models.py   # writes models/resnet18*.safetensors
//! cargo run --release --example resnet18                       # or: -- DIR with the two files
//! ```
//!
//! The struct follows PyTorch's module tree (torchvision's `resnet18` names: `conv1.weight`,
//! `bn1.running_var`, `layer2.0.downsample.0.weight`, `fc.bias`), so the checkpoint loads
//! through a short `Remap`: it skips the batch norms' step counters, names the two blocks of
//! a later stage `down` and `block` (a field cannot be called `0`), and turns `Conv2d`
//! kernels from OIHW to HWIO and `fc`'s `[out, in]` weight to `[in, out]`. PyTorch pads a
//! stride-2 convolution or pooling by the same amount on every side, where TF's SAME pads
//! only after, so those layers `pad` first and run VALID. The example checks compiled ==
//! eager bit for bit, and the logits against PyTorch's within [`TOLERANCE`]; without the
//! files it says how to make them and runs on `ResNet18::init` weights.

use grafo::checkpoint::Remap;
use grafo::ndarray::Dimension;
use grafo::prelude::*;
use std::path::{Path, PathBuf};

#[graph]
pub mod resnet {
    /// The channels of the four stages, the image and the classes.
    pub const C1: usize = 64;
    pub const C2: usize = 128;
    pub const C3: usize = 256;
    pub const C4: usize = 512;
    pub const CLASSES: usize = 1000;
    pub const IMG_H: usize = 224;
    pub const IMG_W: usize = 224;
    /// The feature maps' sizes at stages 1 (after the stem's stride-2 convolution and
    /// max pooling), 2, 3 and 4: each later stage halves them, rounding up.
    pub const H1: usize = 56;
    pub const W1: usize = 56;
    pub const H2: usize = 28;
    pub const W2: usize = 28;
    pub const H3: usize = 14;
    pub const W3: usize = 14;
    pub const H4: usize = 7;
    pub const W4: usize = 7;
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
pub const TOLERANCE: f32 = 1e-4;

/// How torchvision's names and layouts map to `ResNet18`'s fields.
pub fn torch_remap() -> Remap {
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

/// The folder holding `resnet18.safetensors` and `resnet18_io.safetensors`: the first
/// argument, or `models/` at the repository's root where the export script writes them.
pub fn models_dir() -> PathBuf {
    std::env::args_os()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("models"))
}

/// PyTorch's NCHW images as the NHWC array grafo's convolutions read.
pub fn nhwc(nchw: &Array4<f32>) -> Array4<f32> {
    nchw.view()
        .permuted_axes([0, 2, 3, 1])
        .as_standard_layout()
        .into_owned()
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
        dir.join("resnet18.safetensors"),
        dir.join("resnet18_io.safetensors"),
    );
    let (p, x, expected) = if weights.exists() && io.exists() {
        let p = resnet::ResNet18::load_safetensors_with(&weights, &torch_remap())?;
        let io = resnet::Io::load_safetensors(&io)?;
        println!("loaded PyTorch's weights from {}", weights.display());
        (p, nhwc(&io.input), Some(io.output))
    } else {
        println!(
            "{} or {} is missing: no comparison with PyTorch is made. To make them:\n  \
             /work/peers-venv/bin/python scripts/export_torch_models.py   (any Python with torch and safetensors)\n\
             Running on ResNet18::init(0) weights instead, checking compiled == eager only.",
            weights.display(),
            io.display()
        );
        (
            resnet::ResNet18::init(0),
            nhwc(&resnet::Io::init(1).input),
            None,
        )
    };

    let t = std::time::Instant::now();
    let compiled = resnet::forward(&x, &p)?;
    let compiled_ms = t.elapsed().as_secs_f64() * 1e3;
    let t = std::time::Instant::now();
    let eager = resnet::forward::eager(&x, &p)?;
    let eager_ms = t.elapsed().as_secs_f64() * 1e3;
    assert_eq!(compiled.shape(), &[x.dim().0, resnet::CLASSES]);
    if compiled != eager {
        let (abs, _) = differences(&compiled, &eager);
        return Err(format!(
            "compiled and eager differ (by up to {abs:e}): they must agree bit for bit"
        )
        .into());
    }
    println!(
        "ResNet-18, batch {} of {}x{}: compiled == eager bit for bit ({compiled_ms:.0} ms and {eager_ms:.0} ms, first calls)",
        x.dim().0,
        resnet::IMG_H,
        resnet::IMG_W
    );
    if let Some(expected) = expected {
        let (abs, rel) = differences(&compiled, &expected);
        println!(
            "against PyTorch: max abs difference {abs:.3e}, {rel:.3e} of the logits' largest magnitude (tolerance {TOLERANCE:e})"
        );
        if rel.is_nan() || rel > TOLERANCE {
            return Err(format!(
                "the logits differ from PyTorch's by {rel:e} of their scale, over the tolerance {TOLERANCE:e}"
            )
            .into());
        }
    }
    Ok(())
}
