//! The UCI handwritten digits and the two models `examples/train_digits.rs` trains (an MLP and a small CNN), shared with its test (`tests/train_digits.rs`).
//!
//! Cargo builds no example from this folder (it has no `main.rs`); both files include it
//! with `#[path]`.

// The example and the test each use part of this module.
#![allow(dead_code)]

use grafo::prelude::*;
use rand::seq::SliceRandom;
use rand::{RngExt, SeedableRng};
use rand_xorshift::XorShiftRng;
use std::io::Read;

/// Pixels of an image (8x8).
pub const PIXELS: usize = 64;
/// Units of the MLP's hidden layer (the literal `128` of [`mlp`]'s signatures).
pub const HIDDEN: usize = 128;
/// Filters of the CNN's convolution (the literal `32` of [`cnn`]'s signatures).
pub const FILTERS: usize = 32;
/// Digits 0..9.
pub const CLASSES: usize = 10;

/// `examples/data/digits.csv.gz` (see the README beside it), built into the program so that it
/// runs from any directory.
const DIGITS_CSV_GZ: &[u8] = include_bytes!("../data/digits.csv.gz");

/// Images and their labels.
#[derive(Clone, Debug)]
pub struct Digits {
    /// One image a row, the 64 pixels row by row, scaled from 0..16 to 0..1.
    pub images: Array2<f32>,
    /// The digit each image shows.
    pub labels: Array1<i64>,
}

impl Digits {
    /// The 1,797 images of the data file.
    pub fn load() -> Result<Digits, String> {
        let mut text = String::new();
        flate2::read::GzDecoder::new(DIGITS_CSV_GZ)
            .read_to_string(&mut text)
            .map_err(|e| format!("digits.csv.gz: {e}"))?;
        let mut pixels = Vec::new();
        let mut labels = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let fields: Vec<&str> = line.split(',').collect();
            if fields.len() != PIXELS + 1 {
                return Err(format!(
                    "digits.csv line {}: {} fields, expected {}",
                    i + 1,
                    fields.len(),
                    PIXELS + 1
                ));
            }
            for (j, field) in fields.iter().enumerate() {
                let v: u8 = field
                    .trim()
                    .parse()
                    .map_err(|e| format!("digits.csv line {}, field {}: {e}", i + 1, j + 1))?;
                let max = if j == PIXELS { CLASSES - 1 } else { 16 };
                if usize::from(v) > max {
                    return Err(format!(
                        "digits.csv line {}, field {}: {v} is above {max}",
                        i + 1,
                        j + 1
                    ));
                }
                if j == PIXELS {
                    labels.push(i64::from(v));
                } else {
                    pixels.push(f32::from(v) / 16.0);
                }
            }
        }
        let images = Array2::from_shape_vec((labels.len(), PIXELS), pixels)
            .map_err(|e| format!("digits.csv: {e}"))?;
        Ok(Digits {
            images,
            labels: Array1::from_vec(labels),
        })
    }

    /// The number of images.
    pub fn len(&self) -> usize {
        self.labels.len()
    }

    /// The images and labels at `indices`, in that order.
    pub fn select(&self, indices: &[usize]) -> Digits {
        Digits {
            images: self.images.select(Axis(0), indices),
            labels: self.labels.select(Axis(0), indices),
        }
    }

    /// Shuffles the images with `rng` and holds out a fifth: `(train, held_out)`.
    pub fn split(&self, rng: &mut XorShiftRng) -> (Digits, Digits) {
        let mut order: Vec<usize> = (0..self.len()).collect();
        order.shuffle(rng);
        let held_out = self.len() / 5;
        (
            self.select(&order[held_out..]),
            self.select(&order[..held_out]),
        )
    }
}

/// The seeded generator of the shuffles and the initial weights: the same on every machine.
pub fn rng(seed: u64) -> XorShiftRng {
    XorShiftRng::seed_from_u64(seed)
}

/// The MLP 64 -> 128 (relu) -> 10 and its Adam train step, over a symbolic batch `B`.
#[graph]
pub mod mlp {
    /// The class scores of each image.
    pub fn logits(
        x: Tensor<f32, B, 64>,
        w1: Tensor<f32, 64, 128>,
        b1: Tensor<f32, 128>,
        w2: Tensor<f32, 128, 10>,
        b2: Tensor<f32, 10>,
    ) -> Tensor<f32, B, 10> {
        matmul(relu(matmul(x, w1) + b1), w2) + b2
    }

    /// The mean cross-entropy and the fraction of images classified right.
    pub fn evaluate(
        x: Tensor<f32, B, 64>,
        labels: Tensor<i64, B>,
        w1: Tensor<f32, 64, 128>,
        b1: Tensor<f32, 128>,
        w2: Tensor<f32, 128, 10>,
        b2: Tensor<f32, 10>,
    ) -> (Tensor<f32>, Tensor<f32>) {
        let z = logits(x, w1, b1, w2, b2);
        let loss = reduce_mean(sparse_softmax_cross_entropy_with_logits(labels, z));
        let accuracy = reduce_mean(cast::<f32>(argmax(z, -1) == labels));
        (loss, accuracy)
    }

    /// One Adam step on a batch: the batch's loss and accuracy (before the step), then each
    /// parameter's new `(value, m, v)`. `t` is the step, counted from 1.
    #[allow(clippy::type_complexity, clippy::too_many_arguments)]
    pub fn train_step(
        x: Tensor<f32, B, 64>,
        labels: Tensor<i64, B>,
        w1: Tensor<f32, 64, 128>,
        b1: Tensor<f32, 128>,
        w2: Tensor<f32, 128, 10>,
        b2: Tensor<f32, 10>,
        mw1: Tensor<f32, 64, 128>,
        mb1: Tensor<f32, 128>,
        mw2: Tensor<f32, 128, 10>,
        mb2: Tensor<f32, 10>,
        vw1: Tensor<f32, 64, 128>,
        vb1: Tensor<f32, 128>,
        vw2: Tensor<f32, 128, 10>,
        vb2: Tensor<f32, 10>,
        t: f32,
        lr: f32,
    ) -> (
        Tensor<f32>,
        Tensor<f32>,
        (
            Tensor<f32, 64, 128>,
            Tensor<f32, 64, 128>,
            Tensor<f32, 64, 128>,
        ),
        (Tensor<f32, 128>, Tensor<f32, 128>, Tensor<f32, 128>),
        (
            Tensor<f32, 128, 10>,
            Tensor<f32, 128, 10>,
            Tensor<f32, 128, 10>,
        ),
        (Tensor<f32, 10>, Tensor<f32, 10>, Tensor<f32, 10>),
    ) {
        let (loss, accuracy) = evaluate(x, labels, w1, b1, w2, b2);
        let (gw1, gb1, gw2, gb2) = gradients(loss, (w1, b1, w2, b2));
        let (b1t, b2t) = (pow(0.9, t), pow(0.999, t));
        (
            loss,
            accuracy,
            apply_adam(w1, mw1, vw1, b1t, b2t, lr, 0.9, 0.999, 1e-8, gw1),
            apply_adam(b1, mb1, vb1, b1t, b2t, lr, 0.9, 0.999, 1e-8, gb1),
            apply_adam(w2, mw2, vw2, b1t, b2t, lr, 0.9, 0.999, 1e-8, gw2),
            apply_adam(b2, mb2, vb2, b1t, b2t, lr, 0.9, 0.999, 1e-8, gb2),
        )
    }
}

/// The MLP's parameters (or an optimizer slot of the same shapes).
#[derive(Clone, Debug, PartialEq)]
pub struct Mlp {
    pub w1: Array2<f32>,
    pub b1: Array1<f32>,
    pub w2: Array2<f32>,
    pub b2: Array1<f32>,
}

impl Mlp {
    /// Initial weights: He-uniform for the relu layer, Glorot-uniform for the output layer
    /// (Keras' defaults for such layers), zero biases.
    pub fn init(rng: &mut XorShiftRng) -> Mlp {
        let mut uniform = |rows: usize, cols: usize, limit: f32| {
            Array2::from_shape_simple_fn((rows, cols), || rng.random_range(-limit..limit))
        };
        let he = (6.0 / PIXELS as f32).sqrt();
        let glorot = (6.0 / (HIDDEN + CLASSES) as f32).sqrt();
        Mlp {
            w1: uniform(PIXELS, HIDDEN, he),
            b1: Array1::zeros(HIDDEN),
            w2: uniform(HIDDEN, CLASSES, glorot),
            b2: Array1::zeros(CLASSES),
        }
    }

    /// All zeros: Adam's `m` and `v` before the first step.
    pub fn zeros() -> Mlp {
        Mlp {
            w1: Array2::zeros((PIXELS, HIDDEN)),
            b1: Array1::zeros(HIDDEN),
            w2: Array2::zeros((HIDDEN, CLASSES)),
            b2: Array1::zeros(CLASSES),
        }
    }
}

/// A model with its optimizer state, trained one mini-batch at a time.
pub trait Trainer {
    /// One Adam step on `batch`; returns the batch's loss and accuracy before the step.
    fn step(&mut self, batch: &Digits) -> Result<(f32, f32), grafo::Error>;
    /// The mean loss and the accuracy of the current parameters on `data`.
    fn evaluate(&mut self, data: &Digits) -> Result<(f32, f32), grafo::Error>;
    /// Steps taken so far.
    fn steps(&self) -> u32;
    /// The compiled train step's graph (for TensorBoard's Graphs tab).
    fn train_step_graph(&self) -> grafo::GraphDef;
}

/// The MLP's parameters, Adam's state and the session its train step runs in.
pub struct MlpTrainer {
    pub session: Session,
    pub params: Mlp,
    pub m: Mlp,
    pub v: Mlp,
    /// Steps taken so far (Adam's `t` is this plus one at the next step).
    pub steps: u32,
    pub learning_rate: f32,
}

impl MlpTrainer {
    pub fn new(params: Mlp, learning_rate: f32) -> MlpTrainer {
        MlpTrainer {
            session: Session::default(),
            params,
            m: Mlp::zeros(),
            v: Mlp::zeros(),
            steps: 0,
            learning_rate,
        }
    }
}

impl Trainer for MlpTrainer {
    fn step(&mut self, batch: &Digits) -> Result<(f32, f32), grafo::Error> {
        let (p, m, v) = (&self.params, &self.m, &self.v);
        let t = (self.steps + 1) as f32;
        let (loss, accuracy, w1, b1, w2, b2) = mlp::train_step::run(
            &mut self.session,
            &batch.images,
            &batch.labels,
            &p.w1,
            &p.b1,
            &p.w2,
            &p.b2,
            &m.w1,
            &m.b1,
            &m.w2,
            &m.b2,
            &v.w1,
            &v.b1,
            &v.w2,
            &v.b2,
            t,
            self.learning_rate,
        )?;
        // The step returns new values (the train step is written functionally): each
        // parameter's and slot's array is replaced by its update.
        (self.params.w1, self.m.w1, self.v.w1) = w1;
        (self.params.b1, self.m.b1, self.v.b1) = b1;
        (self.params.w2, self.m.w2, self.v.w2) = w2;
        (self.params.b2, self.m.b2, self.v.b2) = b2;
        self.steps += 1;
        Ok((loss.into_scalar(), accuracy.into_scalar()))
    }

    fn evaluate(&mut self, data: &Digits) -> Result<(f32, f32), grafo::Error> {
        let p = &self.params;
        let (loss, accuracy) = mlp::evaluate::run(
            &mut self.session,
            &data.images,
            &data.labels,
            &p.w1,
            &p.b1,
            &p.w2,
            &p.b2,
        )?;
        Ok((loss.into_scalar(), accuracy.into_scalar()))
    }

    fn steps(&self) -> u32 {
        self.steps
    }

    fn train_step_graph(&self) -> grafo::GraphDef {
        mlp::train_step::graph()
    }
}

/// A small CNN over the images as 8x8x1 (NHWC): a 3x3 convolution to 32 channels (SAME) with
/// bias and relu, a 2x2 max pooling to 4x4x32, and a dense layer from those 512 values to the
/// 10 classes; its Adam train step as the MLP's.
#[graph]
pub mod cnn {
    /// The class scores of each image (given as its 64 pixels, row by row).
    pub fn logits(
        x: Tensor<f32, B, 64>,
        k: Tensor<f32, 3, 3, 1, 32>,
        c: Tensor<f32, 32>,
        w: Tensor<f32, 512, 10>,
        b: Tensor<f32, 10>,
    ) -> Tensor<f32, B, 10> {
        let images = reshape(x, [B, 8, 8, 1]);
        let features = max_pool2d(relu(conv2d(images, k, 1, SAME) + c), 2, 2, VALID);
        matmul(reshape(features, [B, 512]), w) + b
    }

    /// The mean cross-entropy and the fraction of images classified right.
    pub fn evaluate(
        x: Tensor<f32, B, 64>,
        labels: Tensor<i64, B>,
        k: Tensor<f32, 3, 3, 1, 32>,
        c: Tensor<f32, 32>,
        w: Tensor<f32, 512, 10>,
        b: Tensor<f32, 10>,
    ) -> (Tensor<f32>, Tensor<f32>) {
        let z = logits(x, k, c, w, b);
        let loss = reduce_mean(sparse_softmax_cross_entropy_with_logits(labels, z));
        let accuracy = reduce_mean(cast::<f32>(argmax(z, -1) == labels));
        (loss, accuracy)
    }

    /// One Adam step on a batch: the batch's loss and accuracy (before the step), then each
    /// parameter's new `(value, m, v)`. `t` is the step, counted from 1.
    #[allow(clippy::type_complexity, clippy::too_many_arguments)]
    pub fn train_step(
        x: Tensor<f32, B, 64>,
        labels: Tensor<i64, B>,
        k: Tensor<f32, 3, 3, 1, 32>,
        c: Tensor<f32, 32>,
        w: Tensor<f32, 512, 10>,
        b: Tensor<f32, 10>,
        mk: Tensor<f32, 3, 3, 1, 32>,
        mc: Tensor<f32, 32>,
        mw: Tensor<f32, 512, 10>,
        mb: Tensor<f32, 10>,
        vk: Tensor<f32, 3, 3, 1, 32>,
        vc: Tensor<f32, 32>,
        vw: Tensor<f32, 512, 10>,
        vb: Tensor<f32, 10>,
        t: f32,
        lr: f32,
    ) -> (
        Tensor<f32>,
        Tensor<f32>,
        (
            Tensor<f32, 3, 3, 1, 32>,
            Tensor<f32, 3, 3, 1, 32>,
            Tensor<f32, 3, 3, 1, 32>,
        ),
        (Tensor<f32, 32>, Tensor<f32, 32>, Tensor<f32, 32>),
        (
            Tensor<f32, 512, 10>,
            Tensor<f32, 512, 10>,
            Tensor<f32, 512, 10>,
        ),
        (Tensor<f32, 10>, Tensor<f32, 10>, Tensor<f32, 10>),
    ) {
        let (loss, accuracy) = evaluate(x, labels, k, c, w, b);
        let (gk, gc, gw, gb) = gradients(loss, (k, c, w, b));
        let (b1t, b2t) = (pow(0.9, t), pow(0.999, t));
        (
            loss,
            accuracy,
            apply_adam(k, mk, vk, b1t, b2t, lr, 0.9, 0.999, 1e-8, gk),
            apply_adam(c, mc, vc, b1t, b2t, lr, 0.9, 0.999, 1e-8, gc),
            apply_adam(w, mw, vw, b1t, b2t, lr, 0.9, 0.999, 1e-8, gw),
            apply_adam(b, mb, vb, b1t, b2t, lr, 0.9, 0.999, 1e-8, gb),
        )
    }
}

/// The CNN's parameters (or an optimizer slot of the same shapes).
#[derive(Clone, Debug, PartialEq)]
pub struct Cnn {
    pub k: Array4<f32>,
    pub c: Array1<f32>,
    pub w: Array2<f32>,
    pub b: Array1<f32>,
}

impl Cnn {
    /// Initial weights: He-uniform for the relu convolution (fan-in 3x3x1), Glorot-uniform
    /// for the output layer, zero biases.
    pub fn init(rng: &mut XorShiftRng) -> Cnn {
        let he = (6.0f32 / 9.0).sqrt();
        let glorot = (6.0 / (4 * 4 * FILTERS + CLASSES) as f32).sqrt();
        Cnn {
            k: Array4::from_shape_simple_fn((3, 3, 1, FILTERS), || rng.random_range(-he..he)),
            c: Array1::zeros(FILTERS),
            w: Array2::from_shape_simple_fn((4 * 4 * FILTERS, CLASSES), || {
                rng.random_range(-glorot..glorot)
            }),
            b: Array1::zeros(CLASSES),
        }
    }

    /// All zeros: Adam's `m` and `v` before the first step.
    pub fn zeros() -> Cnn {
        Cnn {
            k: Array4::zeros((3, 3, 1, FILTERS)),
            c: Array1::zeros(FILTERS),
            w: Array2::zeros((4 * 4 * FILTERS, CLASSES)),
            b: Array1::zeros(CLASSES),
        }
    }
}

/// The CNN's parameters, Adam's state and the session its train step runs in.
pub struct CnnTrainer {
    pub session: Session,
    pub params: Cnn,
    pub m: Cnn,
    pub v: Cnn,
    pub steps: u32,
    pub learning_rate: f32,
}

impl CnnTrainer {
    pub fn new(params: Cnn, learning_rate: f32) -> CnnTrainer {
        CnnTrainer {
            session: Session::default(),
            params,
            m: Cnn::zeros(),
            v: Cnn::zeros(),
            steps: 0,
            learning_rate,
        }
    }
}

impl Trainer for CnnTrainer {
    fn step(&mut self, batch: &Digits) -> Result<(f32, f32), grafo::Error> {
        let (p, m, v) = (&self.params, &self.m, &self.v);
        let t = (self.steps + 1) as f32;
        let (loss, accuracy, k, c, w, b) = cnn::train_step::run(
            &mut self.session,
            &batch.images,
            &batch.labels,
            &p.k,
            &p.c,
            &p.w,
            &p.b,
            &m.k,
            &m.c,
            &m.w,
            &m.b,
            &v.k,
            &v.c,
            &v.w,
            &v.b,
            t,
            self.learning_rate,
        )?;
        (self.params.k, self.m.k, self.v.k) = k;
        (self.params.c, self.m.c, self.v.c) = c;
        (self.params.w, self.m.w, self.v.w) = w;
        (self.params.b, self.m.b, self.v.b) = b;
        self.steps += 1;
        Ok((loss.into_scalar(), accuracy.into_scalar()))
    }

    fn evaluate(&mut self, data: &Digits) -> Result<(f32, f32), grafo::Error> {
        let p = &self.params;
        let (loss, accuracy) = cnn::evaluate::run(
            &mut self.session,
            &data.images,
            &data.labels,
            &p.k,
            &p.c,
            &p.w,
            &p.b,
        )?;
        Ok((loss.into_scalar(), accuracy.into_scalar()))
    }

    fn steps(&self) -> u32 {
        self.steps
    }

    fn train_step_graph(&self) -> grafo::GraphDef {
        cnn::train_step::graph()
    }
}

/// The mini-batches of one epoch: `data` in an order drawn from `rng`, cut into batches of
/// `size` images (the last one smaller when `size` does not divide the count).
pub fn batches(data: &Digits, size: usize, rng: &mut XorShiftRng) -> Vec<Digits> {
    let mut order: Vec<usize> = (0..data.len()).collect();
    order.shuffle(rng);
    order.chunks(size).map(|chunk| data.select(chunk)).collect()
}
