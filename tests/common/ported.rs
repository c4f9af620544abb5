//! Two models as a PyTorch user ports them (issue 31, item 9): a MobileNetV2 inverted-residual block and a gather + mean text classifier, as `#[graph]` functions shared by tests/ported.rs and benches/ported.rs.
//!
//! The PyTorch twins are in scripts/bench_ported_torch.py; the shapes are in
//! docs/bench/ported.md. Batch normalisation is kept as its own op after each convolution
//! (inference form, as the ported block has it), not folded into the kernels.
// Each binary that includes this module uses some of its items, not all.
#![allow(dead_code)]

use grafo::ndarray::{Array1, Array2, Array4, ArrayD, IxDyn};
use grafo::prelude::*;

/// Channels of the block's input and output (MobileNetV2's second stage).
pub const CHANNELS: usize = 24;
/// Channels after the 1x1 expansion (expansion factor 6).
pub const EXPANDED: usize = 144;
/// Output channels of the stride-2 block (the next stage's).
pub const CHANNELS_OUT_S2: usize = 32;
/// Height and width of the block's input.
pub const SIDE: usize = 56;

/// Vocabulary, embedding width, tokens per text and classes of the text classifier.
pub const VOCAB: usize = 20000;
pub const EMBED: usize = 128;
pub const TOKENS: usize = 128;
pub const HIDDEN: usize = 64;
pub const CLASSES: usize = 4;

/// MobileNetV2's inverted residual, stride 1: 1x1 expand + BN + relu6, depthwise 3x3 SAME +
/// BN + relu6, 1x1 project + BN, plus the input.
#[graph]
pub fn inverted_residual(
    x: Tensor<f32, B, 56, 56, 24>,
    k_expand: Tensor<f32, 1, 1, 24, 144>,
    m1: Tensor<f32, 144>,
    v1: Tensor<f32, 144>,
    o1: Tensor<f32, 144>,
    s1: Tensor<f32, 144>,
    k_depthwise: Tensor<f32, 3, 3, 144, 1>,
    m2: Tensor<f32, 144>,
    v2: Tensor<f32, 144>,
    o2: Tensor<f32, 144>,
    s2: Tensor<f32, 144>,
    k_project: Tensor<f32, 1, 1, 144, 24>,
    m3: Tensor<f32, 24>,
    v3: Tensor<f32, 24>,
    o3: Tensor<f32, 24>,
    s3: Tensor<f32, 24>,
) -> Tensor<f32, B, 56, 56, 24> {
    let h = relu6(batch_normalization(
        conv2d(x, k_expand, 1, SAME),
        m1,
        v1,
        o1,
        s1,
        1e-5,
    ));
    let h = relu6(batch_normalization(
        depthwise_conv2d(h, k_depthwise, 1, SAME),
        m2,
        v2,
        o2,
        s2,
        1e-5,
    ));
    x + batch_normalization(conv2d(h, k_project, 1, SAME), m3, v3, o3, s3, 1e-5)
}

/// The stride-2 block that opens a stage: no residual, 24 -> 32 channels, 56 -> 28 pixels.
#[graph]
pub fn inverted_residual_s2(
    x: Tensor<f32, B, 56, 56, 24>,
    k_expand: Tensor<f32, 1, 1, 24, 144>,
    m1: Tensor<f32, 144>,
    v1: Tensor<f32, 144>,
    o1: Tensor<f32, 144>,
    s1: Tensor<f32, 144>,
    k_depthwise: Tensor<f32, 3, 3, 144, 1>,
    m2: Tensor<f32, 144>,
    v2: Tensor<f32, 144>,
    o2: Tensor<f32, 144>,
    s2: Tensor<f32, 144>,
    k_project: Tensor<f32, 1, 1, 144, 32>,
    m3: Tensor<f32, 32>,
    v3: Tensor<f32, 32>,
    o3: Tensor<f32, 32>,
    s3: Tensor<f32, 32>,
) -> Tensor<f32, B, 28, 28, 32> {
    let h = relu6(batch_normalization(
        conv2d(x, k_expand, 1, SAME),
        m1,
        v1,
        o1,
        s1,
        1e-5,
    ));
    let h = relu6(batch_normalization(
        depthwise_conv2d(h, k_depthwise, 2, SAME),
        m2,
        v2,
        o2,
        s2,
        1e-5,
    ));
    batch_normalization(conv2d(h, k_project, 1, SAME), m3, v3, o3, s3, 1e-5)
}

/// The text classifier: embedding rows gathered by token id, their mean over the tokens,
/// dense 128 -> 64 + relu, dense 64 -> 4 (logits).
#[graph]
pub fn text_classifier(
    ids: Tensor<i32, B, 128>,
    table: Tensor<f32, 20000, 128>,
    w1: Tensor<f32, 128, 64>,
    b1: Tensor<f32, 64>,
    w2: Tensor<f32, 64, 4>,
    b2: Tensor<f32, 4>,
) -> Tensor<f32, B, 4> {
    let e = gather(table, ids, 0);
    let m = reduce_mean(e, 1);
    let h = relu(matmul(m, w1) + b1);
    matmul(h, w2) + b2
}

/// A small seeded generator (SplitMix64), so the bench and the test see the same weights.
pub struct Seeded(u64);

impl Seeded {
    pub fn new(seed: u64) -> Self {
        Seeded(seed)
    }

    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A uniform value in `[lo, hi)`.
    pub fn uniform(&mut self, lo: f32, hi: f32) -> f32 {
        let unit = (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32;
        lo + (hi - lo) * unit
    }

    pub fn array(&mut self, shape: &[usize], lo: f32, hi: f32) -> ArrayD<f32> {
        ArrayD::from_shape_simple_fn(IxDyn(shape), || self.uniform(lo, hi))
    }

    pub fn vector(&mut self, len: usize, lo: f32, hi: f32) -> Array1<f32> {
        Array1::from_shape_simple_fn(len, || self.uniform(lo, hi))
    }

    pub fn array4(&mut self, shape: [usize; 4], lo: f32, hi: f32) -> Array4<f32> {
        Array4::from_shape_simple_fn(shape, || self.uniform(lo, hi))
    }

    /// Token ids in `[0, vocab)`.
    pub fn ids(&mut self, batch: usize, tokens: usize, vocab: usize) -> Array2<i32> {
        Array2::from_shape_simple_fn((batch, tokens), || (self.next_u64() % vocab as u64) as i32)
    }
}

/// One batch normalisation's inference operands: mean, variance, offset, scale.
pub type BatchNorm = (Array1<f32>, Array1<f32>, Array1<f32>, Array1<f32>);

fn batch_norm(rng: &mut Seeded, channels: usize) -> BatchNorm {
    (
        rng.vector(channels, -0.1, 0.1),
        rng.vector(channels, 0.5, 1.5),
        rng.vector(channels, -0.1, 0.1),
        rng.vector(channels, 0.8, 1.2),
    )
}

/// The weights of one inverted-residual block (`out` output channels).
pub struct BlockWeights {
    pub k_expand: Array4<f32>,
    pub bn1: BatchNorm,
    pub k_depthwise: Array4<f32>,
    pub bn2: BatchNorm,
    pub k_project: Array4<f32>,
    pub bn3: BatchNorm,
}

impl BlockWeights {
    /// He-scaled seeded weights for a block projecting to `out` channels.
    pub fn seeded(out: usize) -> Self {
        let mut rng = Seeded::new(31 + out as u64);
        let a1 = (6.0 / CHANNELS as f32).sqrt();
        let a2 = (6.0 / 9.0f32).sqrt();
        let a3 = (6.0 / EXPANDED as f32).sqrt();
        BlockWeights {
            k_expand: rng.array4([1, 1, CHANNELS, EXPANDED], -a1, a1),
            bn1: batch_norm(&mut rng, EXPANDED),
            k_depthwise: rng.array4([3, 3, EXPANDED, 1], -a2, a2),
            bn2: batch_norm(&mut rng, EXPANDED),
            k_project: rng.array4([1, 1, EXPANDED, out], -a3, a3),
            bn3: batch_norm(&mut rng, out),
        }
    }

    /// The stride 1 block, compiled (weights from [`BlockWeights::seeded`]).
    pub fn compiled(&self, x: &Array4<f32>) -> Result<Array4<f32>, grafo::Error> {
        inverted_residual(
            x,
            &self.k_expand,
            &self.bn1.0,
            &self.bn1.1,
            &self.bn1.2,
            &self.bn1.3,
            &self.k_depthwise,
            &self.bn2.0,
            &self.bn2.1,
            &self.bn2.2,
            &self.bn2.3,
            &self.k_project,
            &self.bn3.0,
            &self.bn3.1,
            &self.bn3.2,
            &self.bn3.3,
        )
    }

    /// The stride 1 block, op by op.
    pub fn eager(&self, x: &Array4<f32>) -> Result<Array4<f32>, grafo::Error> {
        inverted_residual::eager(
            x,
            &self.k_expand,
            &self.bn1.0,
            &self.bn1.1,
            &self.bn1.2,
            &self.bn1.3,
            &self.k_depthwise,
            &self.bn2.0,
            &self.bn2.1,
            &self.bn2.2,
            &self.bn2.3,
            &self.k_project,
            &self.bn3.0,
            &self.bn3.1,
            &self.bn3.2,
            &self.bn3.3,
        )
    }

    /// The stride 1 block in a Session.
    pub fn session(
        &self,
        session: &mut Session,
        x: &Array4<f32>,
    ) -> Result<Array4<f32>, grafo::Error> {
        inverted_residual::run(
            session,
            x,
            &self.k_expand,
            &self.bn1.0,
            &self.bn1.1,
            &self.bn1.2,
            &self.bn1.3,
            &self.k_depthwise,
            &self.bn2.0,
            &self.bn2.1,
            &self.bn2.2,
            &self.bn2.3,
            &self.k_project,
            &self.bn3.0,
            &self.bn3.1,
            &self.bn3.2,
            &self.bn3.3,
        )
    }

    /// The stride 2 block, compiled (weights from [`BlockWeights::seeded`]).
    pub fn compiled_s2(&self, x: &Array4<f32>) -> Result<Array4<f32>, grafo::Error> {
        inverted_residual_s2(
            x,
            &self.k_expand,
            &self.bn1.0,
            &self.bn1.1,
            &self.bn1.2,
            &self.bn1.3,
            &self.k_depthwise,
            &self.bn2.0,
            &self.bn2.1,
            &self.bn2.2,
            &self.bn2.3,
            &self.k_project,
            &self.bn3.0,
            &self.bn3.1,
            &self.bn3.2,
            &self.bn3.3,
        )
    }

    /// The stride 2 block, op by op.
    pub fn eager_s2(&self, x: &Array4<f32>) -> Result<Array4<f32>, grafo::Error> {
        inverted_residual_s2::eager(
            x,
            &self.k_expand,
            &self.bn1.0,
            &self.bn1.1,
            &self.bn1.2,
            &self.bn1.3,
            &self.k_depthwise,
            &self.bn2.0,
            &self.bn2.1,
            &self.bn2.2,
            &self.bn2.3,
            &self.k_project,
            &self.bn3.0,
            &self.bn3.1,
            &self.bn3.2,
            &self.bn3.3,
        )
    }

    /// The stride 2 block in a Session.
    pub fn session_s2(
        &self,
        session: &mut Session,
        x: &Array4<f32>,
    ) -> Result<Array4<f32>, grafo::Error> {
        inverted_residual_s2::run(
            session,
            x,
            &self.k_expand,
            &self.bn1.0,
            &self.bn1.1,
            &self.bn1.2,
            &self.bn1.3,
            &self.k_depthwise,
            &self.bn2.0,
            &self.bn2.1,
            &self.bn2.2,
            &self.bn2.3,
            &self.k_project,
            &self.bn3.0,
            &self.bn3.1,
            &self.bn3.2,
            &self.bn3.3,
        )
    }

    /// A seeded input `[batch, 56, 56, 24]`.
    pub fn input(batch: usize) -> Array4<f32> {
        Seeded::new(7 + batch as u64).array4([batch, SIDE, SIDE, CHANNELS], -1.0, 1.0)
    }
}

/// The text classifier's weights.
pub struct TextWeights {
    pub table: Array2<f32>,
    pub w1: Array2<f32>,
    pub b1: Array1<f32>,
    pub w2: Array2<f32>,
    pub b2: Array1<f32>,
}

impl TextWeights {
    pub fn seeded() -> Self {
        let mut rng = Seeded::new(2031);
        let a1 = (6.0 / EMBED as f32).sqrt();
        let a2 = (6.0 / HIDDEN as f32).sqrt();
        TextWeights {
            table: Array2::from_shape_simple_fn((VOCAB, EMBED), || rng.uniform(-1.0, 1.0)),
            w1: Array2::from_shape_simple_fn((EMBED, HIDDEN), || rng.uniform(-a1, a1)),
            b1: rng.vector(HIDDEN, -0.1, 0.1),
            w2: Array2::from_shape_simple_fn((HIDDEN, CLASSES), || rng.uniform(-a2, a2)),
            b2: rng.vector(CLASSES, -0.1, 0.1),
        }
    }

    /// Seeded token ids `[batch, 128]`.
    pub fn ids(batch: usize) -> Array2<i32> {
        Seeded::new(99 + batch as u64).ids(batch, TOKENS, VOCAB)
    }

    /// The classifier, compiled.
    pub fn compiled(&self, ids: &Array2<i32>) -> Result<Array2<f32>, grafo::Error> {
        text_classifier(ids, &self.table, &self.w1, &self.b1, &self.w2, &self.b2)
    }

    /// The classifier, op by op.
    pub fn eager(&self, ids: &Array2<i32>) -> Result<Array2<f32>, grafo::Error> {
        text_classifier::eager(ids, &self.table, &self.w1, &self.b1, &self.w2, &self.b2)
    }

    /// The classifier in a Session.
    pub fn session(
        &self,
        session: &mut Session,
        ids: &Array2<i32>,
    ) -> Result<Array2<f32>, grafo::Error> {
        text_classifier::run(
            session,
            ids,
            &self.table,
            &self.w1,
            &self.b1,
            &self.w2,
            &self.b2,
        )
    }
}
