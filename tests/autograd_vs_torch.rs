//! The f32 gradients of whole models against PyTorch autograd: W8's MLP (at smaller sizes),
//! W9's CNN, W6's transformer block (at smaller sizes) and the GRU example (all 16 steps, and
//! stopped early by its cond). `scripts/autograd_vs_torch.py` wrote each model's seeded inputs
//! and torch's loss and gradients, in float32 and in float64, to tests/data/autograd/; here
//! grafo computes the same gradients compiled and eagerly. Asserted: compiled == eager bit for
//! bit; for each gradient, grafo's and torch's f32 values within `TOL` of the float64
//! reference, scaled by the tensor's largest reference value, and grafo's error no more than
//! `RATIO` times torch's own f32 error (plus a floor of `FLOOR` scaled). The per-tensor figures
//! print with `cargo test --test autograd_vs_torch -- --nocapture` and are in
//! docs/bench/gradients-vs-pytorch.md.

use grafo::ndarray::{ArrayD, IxDyn};
use grafo::prelude::*;
use std::collections::HashMap;

/// Largest allowed `max|g - g64| / max|g64|`, for grafo's and for torch's f32 gradients.
const TOL: f64 = 1e-5;
/// grafo's error against float64 at most this many times torch's f32 error ...
const RATIO: f64 = 4.0;
/// ... or this, relative to the tensor's largest value (so that an exactly rounded torch
/// value does not demand the same of grafo).
const FLOOR: f64 = 1e-6;

#[graph]
mod models {
    /// W8's MLP (tests/common/training.rs's `mlp_train_step` without the Adam update), at
    /// 64 inputs and 32 hidden units: relu, mean sparse softmax cross-entropy.
    #[allow(clippy::type_complexity)]
    pub fn mlp(
        x: Tensor<f32, B, 64>,
        labels: Tensor<i32, B>,
        w1: Tensor<f32, 64, 32>,
        b1: Tensor<f32, 32>,
        w2: Tensor<f32, 32, 10>,
        b2: Tensor<f32, 10>,
    ) -> (
        Tensor<f32>,
        (
            Tensor<f32, 64, 32>,
            Tensor<f32, 32>,
            Tensor<f32, 32, 10>,
            Tensor<f32, 10>,
        ),
    ) {
        let h = relu(matmul(x, w1) + b1);
        let logits = matmul(h, w2) + b2;
        let loss = reduce_mean(sparse_softmax_cross_entropy_with_logits(labels, logits));
        (loss, gradients(loss, (w1, b1, w2, b2)))
    }

    /// W9's CNN (tests/common/training.rs's `cnn_train_step` without the Adam update), with
    /// the input's gradient too.
    #[allow(clippy::type_complexity, clippy::too_many_arguments)]
    pub fn cnn(
        x: Tensor<f32, B, 28, 28, 1>,
        labels: Tensor<i32, B>,
        k1: Tensor<f32, 3, 3, 1, 32>,
        c1: Tensor<f32, 32>,
        k2: Tensor<f32, 3, 3, 32, 64>,
        c2: Tensor<f32, 64>,
        w: Tensor<f32, 1600, 10>,
        c: Tensor<f32, 10>,
    ) -> (
        Tensor<f32>,
        Tensor<f32, B, 28, 28, 1>,
        (Tensor<f32, 3, 3, 1, 32>, Tensor<f32, 32>),
        (Tensor<f32, 3, 3, 32, 64>, Tensor<f32, 64>),
        (Tensor<f32, 1600, 10>, Tensor<f32, 10>),
    ) {
        let y = max_pool2d(relu(conv2d(x, k1, 1, VALID) + c1), 2, 2, VALID);
        let y = max_pool2d(relu(conv2d(y, k2, 1, VALID) + c2), 2, 2, VALID);
        let logits = matmul(reshape(y, [B, 1600]), w) + c;
        let loss = reduce_mean(sparse_softmax_cross_entropy_with_logits(labels, logits));
        let (gx, gk1, gc1, gk2, gc2, gw, gc) = gradients(loss, (x, k1, c1, k2, c2, w, c));
        (loss, gx, (gk1, gc1), (gk2, gc2), (gw, gc))
    }

    /// examples/transformer_block.rs's `encoder::attention` at sequence 16, width 64, 4 heads
    /// of 16 (so the scores' scale is 1/4).
    pub fn attention(
        x: Tensor<f32, B, 16, 64>,
        wq: Tensor<f32, 64, 64>,
        wk: Tensor<f32, 64, 64>,
        wv: Tensor<f32, 64, 64>,
        wo: Tensor<f32, 64, 64>,
    ) -> Tensor<f32, B, 16, 64> {
        let q = transpose(reshape(matmul(x, wq), [B, 16, 4, 16]), [0, 2, 1, 3]);
        let k = transpose(reshape(matmul(x, wk), [B, 16, 4, 16]), [0, 2, 1, 3]);
        let v = transpose(reshape(matmul(x, wv), [B, 16, 4, 16]), [0, 2, 1, 3]);
        let scores = matmul(q, transpose(k, [0, 1, 3, 2])) * 0.25;
        let context = matmul(softmax(scores, -1), v);
        let merged = reshape(transpose(context, [0, 2, 1, 3]), [B, 16, 64]);
        matmul(merged, wo)
    }

    /// examples/transformer_block.rs's `encoder::block` at those sizes, feed-forward 128.
    #[allow(clippy::too_many_arguments)]
    pub fn block(
        x: Tensor<f32, B, 16, 64>,
        wq: Tensor<f32, 64, 64>,
        wk: Tensor<f32, 64, 64>,
        wv: Tensor<f32, 64, 64>,
        wo: Tensor<f32, 64, 64>,
        gamma1: Tensor<f32, 64>,
        beta1: Tensor<f32, 64>,
        w1: Tensor<f32, 64, 128>,
        c1: Tensor<f32, 128>,
        w2: Tensor<f32, 128, 64>,
        c2: Tensor<f32, 64>,
        gamma2: Tensor<f32, 64>,
        beta2: Tensor<f32, 64>,
    ) -> Tensor<f32, B, 16, 64> {
        let y = layer_norm(x + attention(x, wq, wk, wv, wo), gamma1, beta1, -1, 1e-5);
        let ff = matmul(gelu(matmul(y, w1) + c1), w2) + c2;
        layer_norm(y + ff, gamma2, beta2, -1, 1e-5)
    }

    /// The block's output projected on `r`, and its gradients.
    #[allow(clippy::type_complexity, clippy::too_many_arguments)]
    pub fn transformer(
        x: Tensor<f32, B, 16, 64>,
        wq: Tensor<f32, 64, 64>,
        wk: Tensor<f32, 64, 64>,
        wv: Tensor<f32, 64, 64>,
        wo: Tensor<f32, 64, 64>,
        gamma1: Tensor<f32, 64>,
        beta1: Tensor<f32, 64>,
        w1: Tensor<f32, 64, 128>,
        c1: Tensor<f32, 128>,
        w2: Tensor<f32, 128, 64>,
        c2: Tensor<f32, 64>,
        gamma2: Tensor<f32, 64>,
        beta2: Tensor<f32, 64>,
        r: Tensor<f32, B, 16, 64>,
    ) -> (
        Tensor<f32>,
        Tensor<f32, B, 16, 64>,
        (
            Tensor<f32, 64, 64>,
            Tensor<f32, 64, 64>,
            Tensor<f32, 64, 64>,
            Tensor<f32, 64, 64>,
        ),
        (Tensor<f32, 64>, Tensor<f32, 64>),
        (
            Tensor<f32, 64, 128>,
            Tensor<f32, 128>,
            Tensor<f32, 128, 64>,
            Tensor<f32, 64>,
        ),
        (Tensor<f32, 64>, Tensor<f32, 64>),
    ) {
        let y = block(
            x, wq, wk, wv, wo, gamma1, beta1, w1, c1, w2, c2, gamma2, beta2,
        );
        let loss = reduce_sum(y * r);
        let (gx, gq, gk, gv, go, gg1, gb1, gw1, gc1, gw2, gc2, gg2, gb2) = gradients(
            loss,
            (
                x, wq, wk, wv, wo, gamma1, beta1, w1, c1, w2, c2, gamma2, beta2,
            ),
        );
        (
            loss,
            gx,
            (gq, gk, gv, go),
            (gg1, gb1),
            (gw1, gc1, gw2, gc2),
            (gg2, gb2),
        )
    }

    /// examples/gru.rs's `gru::cell`, as it is there.
    #[allow(clippy::too_many_arguments)]
    pub fn cell(
        x: Tensor<f32, B, I>,
        h: Tensor<f32, B, H>,
        wz: Tensor<f32, I, H>,
        uz: Tensor<f32, H, H>,
        bz: Tensor<f32, H>,
        wr: Tensor<f32, I, H>,
        ur: Tensor<f32, H, H>,
        br: Tensor<f32, H>,
        wn: Tensor<f32, I, H>,
        un: Tensor<f32, H, H>,
        bn: Tensor<f32, H>,
    ) -> Tensor<f32, B, H> {
        let z = sigmoid(matmul(x, wz) + matmul(h, uz) + bz);
        let r = sigmoid(matmul(x, wr) + matmul(h, ur) + br);
        let n = tanh(matmul(x, wn) + matmul(r * h, un) + bn);
        (1.0 - z) * n + z * h
    }

    /// examples/gru.rs's `gru::run_steps`, as it is there.
    #[allow(clippy::too_many_arguments)]
    pub fn run_steps(
        x: Tensor<f32, B, 16, I>,
        h0: Tensor<f32, B, H>,
        wz: Tensor<f32, I, H>,
        uz: Tensor<f32, H, H>,
        bz: Tensor<f32, H>,
        wr: Tensor<f32, I, H>,
        ur: Tensor<f32, H, H>,
        br: Tensor<f32, H>,
        wn: Tensor<f32, I, H>,
        un: Tensor<f32, H, H>,
        bn: Tensor<f32, H>,
        tol: Tensor<f32>,
    ) -> (Tensor<f32, B, H>, Tensor<f32>) {
        let mut h = h0;
        let mut running = constant(1.0);
        let mut steps = constant(0.0);
        for t in 0..16 {
            if running > 0.5 {
                let next = cell(x[s![.., t, ..]], h, wz, uz, bz, wr, ur, br, wn, un, bn);
                running = select(reduce_max(abs(next - h)) < tol, 0.0, 1.0);
                steps = steps + 1.0;
                h = next;
            }
        }
        (h, steps)
    }

    /// The last state projected on `r`, its gradients, and the steps run.
    #[allow(clippy::type_complexity, clippy::too_many_arguments)]
    pub fn gru(
        x: Tensor<f32, B, 16, I>,
        h0: Tensor<f32, B, H>,
        wz: Tensor<f32, I, H>,
        uz: Tensor<f32, H, H>,
        bz: Tensor<f32, H>,
        wr: Tensor<f32, I, H>,
        ur: Tensor<f32, H, H>,
        br: Tensor<f32, H>,
        wn: Tensor<f32, I, H>,
        un: Tensor<f32, H, H>,
        bn: Tensor<f32, H>,
        tol: Tensor<f32>,
        r: Tensor<f32, B, H>,
    ) -> (
        Tensor<f32>,
        (Tensor<f32, B, 16, I>, Tensor<f32, B, H>),
        (Tensor<f32, I, H>, Tensor<f32, H, H>, Tensor<f32, H>),
        (Tensor<f32, I, H>, Tensor<f32, H, H>, Tensor<f32, H>),
        (Tensor<f32, I, H>, Tensor<f32, H, H>, Tensor<f32, H>),
        Tensor<f32>,
    ) {
        let (h, steps) = run_steps(x, h0, wz, uz, bz, wr, ur, br, wn, un, bn, tol);
        let loss = reduce_sum(h * r);
        let (gx, gh0, gwz, guz, gbz, gwr, gur, gbr, gwn, gun, gbn) =
            gradients(loss, (x, h0, wz, uz, bz, wr, ur, br, wn, un, bn));
        (
            loss,
            (gx, gh0),
            (gwz, guz, gbz),
            (gwr, gur, gbr),
            (gwn, gun, gbn),
            steps,
        )
    }
}

/// One model's file: every tensor by name, as f64 (f32 and i32 are exact in f64) with its
/// dtype's name.
struct Data {
    tensors: HashMap<String, (ArrayD<f64>, safetensors::Dtype)>,
}

impl Data {
    fn load(model: &str) -> Data {
        let path = format!(
            "{}/tests/data/autograd/{model}.safetensors",
            env!("CARGO_MANIFEST_DIR")
        );
        let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        let file = safetensors::SafeTensors::deserialize(&bytes).expect("a safetensors file");
        let mut tensors = HashMap::new();
        for (name, view) in file.tensors() {
            let data = view.data();
            let values: Vec<f64> = match view.dtype() {
                safetensors::Dtype::F32 => data
                    .chunks_exact(4)
                    .map(|b| f32::from_le_bytes(b.try_into().unwrap()) as f64)
                    .collect(),
                safetensors::Dtype::F64 => data
                    .chunks_exact(8)
                    .map(|b| f64::from_le_bytes(b.try_into().unwrap()))
                    .collect(),
                safetensors::Dtype::I32 => data
                    .chunks_exact(4)
                    .map(|b| i32::from_le_bytes(b.try_into().unwrap()) as f64)
                    .collect(),
                other => panic!("{model}: {name} has dtype {other:?}"),
            };
            let array = ArrayD::from_shape_vec(IxDyn(view.shape()), values).unwrap();
            tensors.insert(name, (array, view.dtype()));
        }
        Data { tensors }
    }

    fn get(&self, name: &str, dtype: safetensors::Dtype) -> &ArrayD<f64> {
        let (a, t) = self
            .tensors
            .get(name)
            .unwrap_or_else(|| panic!("no tensor {name}"));
        assert_eq!(*t, dtype, "{name}'s dtype");
        a
    }

    /// An input, as the f32 array grafo takes.
    fn f32(&self, name: &str) -> ArrayD<f32> {
        self.get(&format!("in.{name}"), safetensors::Dtype::F32)
            .mapv(|v| v as f32)
    }

    fn i32(&self, name: &str) -> ArrayD<i32> {
        self.get(&format!("in.{name}"), safetensors::Dtype::I32)
            .mapv(|v| v as i32)
    }
}

type V<'a, D> = grafo::ndarray::ArrayView<'a, f32, D>;
fn d<D: grafo::ndarray::Dimension>(a: &ArrayD<f32>) -> V<'_, D> {
    a.view().into_dimensionality::<D>().unwrap()
}
use grafo::ndarray::{Ix0, Ix1, Ix2, Ix3, Ix4};

fn bits_equal(a: &ArrayD<f32>, b: &ArrayD<f32>) -> bool {
    a.shape() == b.shape()
        && a.iter()
            .zip(b.iter())
            .all(|(x, y)| x.to_bits() == y.to_bits())
}

/// Largest `|a - b|`, and largest `|a - b| / max(|b|, 1e-3 * max|b|)` (relative, with a floor
/// so that a near-zero reference element does not dominate).
fn diffs(a: &ArrayD<f64>, b: &ArrayD<f64>) -> (f64, f64) {
    let scale = b.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let floor = (1e-3 * scale).max(f64::MIN_POSITIVE);
    a.iter()
        .zip(b.iter())
        .fold((0.0f64, 0.0f64), |(ab, re), (x, y)| {
            let d = (x - y).abs();
            (ab.max(d), re.max(d / y.abs().max(floor)))
        })
}

/// Compares one model's gradients (named as in the file, compiled and eager in the same order)
/// with torch's, printing a row per tensor and asserting the bounds of the module docs.
fn compare(
    model: &str,
    data: &Data,
    names: &[&str],
    compiled: &[ArrayD<f32>],
    eager: &[ArrayD<f32>],
) {
    assert_eq!(names.len(), compiled.len());
    println!("{model}: tensor | max abs grafo-torch32 | max rel grafo-torch32 | max abs grafo-f64 | max rel grafo-f64 | max abs torch32-f64 | max|g64|");
    for (k, name) in names.iter().enumerate() {
        assert!(
            bits_equal(&compiled[k], &eager[k]),
            "{model}, {name}: compiled != eager"
        );
        let g = compiled[k].mapv(|v| v as f64);
        let t32 = data.get(&format!("grad32.{name}"), safetensors::Dtype::F32);
        let t64 = data.get(&format!("grad64.{name}"), safetensors::Dtype::F64);
        assert_eq!(g.shape(), t64.shape(), "{model}, {name}: shape");
        let scale = t64.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        assert!(scale > 0.0, "{model}, {name}: an all-zero reference");
        let (abs_t, rel_t) = diffs(&g, t32);
        let (abs_r, rel_r) = diffs(&g, t64);
        let (abs_tr, _) = diffs(t32, t64);
        println!(
            "  {name:>7} | {abs_t:.2e} | {rel_t:.2e} | {abs_r:.2e} | {rel_r:.2e} | {abs_tr:.2e} | {scale:.2e}"
        );
        assert!(
            abs_r <= TOL * scale && abs_tr <= TOL * scale,
            "{model}, {name}: grafo {abs_r:e}, torch {abs_tr:e} from float64 (largest {scale:e})"
        );
        assert!(
            abs_r <= RATIO * abs_tr + FLOOR * scale,
            "{model}, {name}: grafo is {abs_r:e} from float64, torch's f32 {abs_tr:e}"
        );
    }
}

fn compare_loss(model: &str, data: &Data, compiled: f32, eager: f32) {
    assert_eq!(compiled.to_bits(), eager.to_bits(), "{model}: loss");
    let l64 = data.get("loss64", safetensors::Dtype::F64).sum();
    let l32 = data.get("loss32", safetensors::Dtype::F32).sum();
    println!("{model}: loss grafo {compiled:.9}, torch f32 {l32:.9}, f64 {l64:.9}");
    assert!(
        (compiled as f64 - l64).abs() <= 1e-5 * l64.abs().max(1.0),
        "{model}: loss {compiled} against {l64}"
    );
}

#[test]
fn mlp_gradients_match_torch() {
    let data = Data::load("mlp");
    let (x, labels) = (data.f32("x"), data.i32("labels"));
    let p = ["w1", "b1", "w2", "b2"].map(|n| data.f32(n));
    let run = |eager: bool| {
        let f = if eager {
            models::mlp::eager
        } else {
            models::mlp
        };
        let labels = labels.view().into_dimensionality::<Ix1>().unwrap();
        let (l, (a, b, c, e)) = f(
            &d::<Ix2>(&x),
            &labels,
            &d::<Ix2>(&p[0]),
            &d::<Ix1>(&p[1]),
            &d::<Ix2>(&p[2]),
            &d::<Ix1>(&p[3]),
        )
        .unwrap();
        let grads = vec![a.into_dyn(), b.into_dyn(), c.into_dyn(), e.into_dyn()];
        (l.into_scalar(), grads)
    };
    let ((l, g), (le, ge)) = (run(false), run(true));
    compare_loss("mlp", &data, l, le);
    compare("mlp", &data, &["w1", "b1", "w2", "b2"], &g, &ge);
}

#[test]
fn cnn_gradients_match_torch() {
    let data = Data::load("cnn");
    let (x, labels) = (data.f32("x"), data.i32("labels"));
    let p = ["k1", "c1", "k2", "c2", "w", "c"].map(|n| data.f32(n));
    let run = |eager: bool| {
        let f = if eager {
            models::cnn::eager
        } else {
            models::cnn
        };
        let labels = labels.view().into_dimensionality::<Ix1>().unwrap();
        let (l, gx, (a, b), (c, e), (w, cc)) = f(
            &d::<Ix4>(&x),
            &labels,
            &d::<Ix4>(&p[0]),
            &d::<Ix1>(&p[1]),
            &d::<Ix4>(&p[2]),
            &d::<Ix1>(&p[3]),
            &d::<Ix2>(&p[4]),
            &d::<Ix1>(&p[5]),
        )
        .unwrap();
        let grads = vec![
            gx.into_dyn(),
            a.into_dyn(),
            b.into_dyn(),
            c.into_dyn(),
            e.into_dyn(),
            w.into_dyn(),
            cc.into_dyn(),
        ];
        (l.into_scalar(), grads)
    };
    let ((l, g), (le, ge)) = (run(false), run(true));
    compare_loss("cnn", &data, l, le);
    compare(
        "cnn",
        &data,
        &["x", "k1", "c1", "k2", "c2", "w", "c"],
        &g,
        &ge,
    );
}

const BLOCK: [&str; 13] = [
    "x", "wq", "wk", "wv", "wo", "gamma1", "beta1", "w1", "c1", "w2", "c2", "gamma2", "beta2",
];

#[test]
fn transformer_block_gradients_match_torch() {
    let data = Data::load("transformer");
    let p = BLOCK.map(|n| data.f32(n));
    let r = data.f32("r");
    let run = |eager: bool| {
        let f = if eager {
            models::transformer::eager
        } else {
            models::transformer
        };
        let (l, gx, (q, k, v, o), (g1, b1), (w1, c1, w2, c2), (g2, b2)) = f(
            &d::<Ix3>(&p[0]),
            &d::<Ix2>(&p[1]),
            &d::<Ix2>(&p[2]),
            &d::<Ix2>(&p[3]),
            &d::<Ix2>(&p[4]),
            &d::<Ix1>(&p[5]),
            &d::<Ix1>(&p[6]),
            &d::<Ix2>(&p[7]),
            &d::<Ix1>(&p[8]),
            &d::<Ix2>(&p[9]),
            &d::<Ix1>(&p[10]),
            &d::<Ix1>(&p[11]),
            &d::<Ix1>(&p[12]),
            &d::<Ix3>(&r),
        )
        .unwrap();
        let grads = vec![
            gx.into_dyn(),
            q.into_dyn(),
            k.into_dyn(),
            v.into_dyn(),
            o.into_dyn(),
            g1.into_dyn(),
            b1.into_dyn(),
            w1.into_dyn(),
            c1.into_dyn(),
            w2.into_dyn(),
            c2.into_dyn(),
            g2.into_dyn(),
            b2.into_dyn(),
        ];
        (l.into_scalar(), grads)
    };
    let ((l, g), (le, ge)) = (run(false), run(true));
    compare_loss("transformer", &data, l, le);
    compare("transformer", &data, &BLOCK, &g, &ge);
}

const GRU: [&str; 11] = [
    "x", "h0", "wz", "uz", "bz", "wr", "ur", "br", "wn", "un", "bn",
];

fn gru_case(model: &str) {
    let data = Data::load(model);
    let p = GRU.map(|n| data.f32(n));
    let (tol, r) = (data.f32("tol"), data.f32("r"));
    let run = |eager: bool| {
        let f = if eager {
            models::gru::eager
        } else {
            models::gru
        };
        let (l, (gx, gh0), (a, b, c), (e, f_, g), (h, i, j), steps) = f(
            &d::<Ix3>(&p[0]),
            &d::<Ix2>(&p[1]),
            &d::<Ix2>(&p[2]),
            &d::<Ix2>(&p[3]),
            &d::<Ix1>(&p[4]),
            &d::<Ix2>(&p[5]),
            &d::<Ix2>(&p[6]),
            &d::<Ix1>(&p[7]),
            &d::<Ix2>(&p[8]),
            &d::<Ix2>(&p[9]),
            &d::<Ix1>(&p[10]),
            &d::<Ix0>(&tol),
            &d::<Ix2>(&r),
        )
        .unwrap();
        let grads = vec![
            gx.into_dyn(),
            gh0.into_dyn(),
            a.into_dyn(),
            b.into_dyn(),
            c.into_dyn(),
            e.into_dyn(),
            f_.into_dyn(),
            g.into_dyn(),
            h.into_dyn(),
            i.into_dyn(),
            j.into_dyn(),
        ];
        (l.into_scalar(), grads, steps.into_scalar())
    };
    let ((l, g, steps), (le, ge, steps_e)) = (run(false), run(true));
    let torch_steps = data.get("steps", safetensors::Dtype::F32).sum();
    assert_eq!(steps, steps_e);
    assert_eq!(steps as f64, torch_steps, "{model}: the steps run");
    println!("{model}: {steps} steps");
    compare_loss(model, &data, l, le);
    compare(model, &data, &GRU, &g, &ge);
}

#[test]
fn gru_gradients_through_16_steps_match_torch() {
    gru_case("gru_full");
}

#[test]
fn gru_gradients_through_the_early_stop_match_torch() {
    gru_case("gru_stop");
}

/// The GRU functions above are the example's own text (the test would otherwise check a copy
/// that has drifted from it).
#[test]
fn gru_functions_are_the_examples() {
    let example = include_str!("../examples/gru.rs");
    let here = include_str!("autograd_vs_torch.rs");
    for f in ["pub fn cell(", "pub fn run_steps("] {
        let body = |src: &str| {
            let start = src.find(f).unwrap_or_else(|| panic!("{f} not found"));
            let end = start + src[start..].find("\n    }\n").unwrap();
            src[start..end]
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
        };
        assert_eq!(body(example), body(here), "{f}");
    }
}
