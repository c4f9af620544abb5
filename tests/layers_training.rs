//! Training through the layers library: every layer's gradients (`gradients(loss, p)` with
//! `p` a struct of layers) against central finite differences in f64, compiled == eager bit
//! for bit; and a small model of layers that learns with SGD, its update written with layer
//! struct literals (`Dense { kernel: .., bias: .. }`).

use grafo::layers;
use grafo::ndarray::{Array1, Array2, Array4, ArrayD, IxDyn};
use grafo::prelude::*;

fn values(n: usize, seed: u64) -> Vec<f64> {
    let mut s = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
        })
        .collect()
}

fn array<D: grafo::ndarray::Dimension>(
    shape: &[usize],
    seed: u64,
) -> grafo::ndarray::Array<f64, D> {
    let n = shape.iter().product();
    ArrayD::from_shape_vec(IxDyn(shape), values(n, seed))
        .unwrap()
        .into_dimensionality::<D>()
        .unwrap()
}

#[graph]
mod vision {
    pub struct Net {
        pub conv: Conv2d<2, 2, 2, 3, f64>,
        pub dw: DepthwiseConv2d<2, 2, 3, 1, f64>,
        pub bn: BatchNorm<3, f64>,
        pub fc: Dense<12, 4, f64>,
        pub ln: LayerNorm<4, f64>,
    }

    pub fn loss(x: Tensor<f64, 2, 4, 4, 2>, w: Tensor<f64, 2, 4>, p: Net) -> Tensor<f64> {
        let h = conv2d(p.conv, x, 1, SAME, tanh);
        let h = depthwise_conv2d(p.dw, h, 2, VALID, sigmoid);
        let h = batch_norm(p.bn, h);
        let h = dense(p.fc, reshape(h, [2, 12]), tanh);
        reduce_sum(layer_norm(p.ln, h) * w)
    }

    pub fn grads(x: Tensor<f64, 2, 4, 4, 2>, w: Tensor<f64, 2, 4>, p: Net) -> (Tensor<f64>, Net) {
        let l = loss(x, w, p);
        (l, gradients(l, p))
    }
}

#[graph]
mod sequence {
    pub struct Net {
        pub emb: Embedding<7, 4, f64>,
        pub attn: MultiHeadAttention<4, 2, f64>,
        pub lstm: LstmCell<4, 3, f64>,
        pub gru: GruCell<4, 3, f64>,
    }

    pub fn loss(ids: Tensor<i32, 2, 3>, h0: Tensor<f64, 2, 3>, p: Net) -> Tensor<f64> {
        let e = embedding(p.emb, ids);
        let a = multi_head_attention(p.attn, e, e, true);
        let mut h = h0;
        let mut c = h0 * 0.5;
        let mut g = h0;
        for t in 0..3 {
            (h, c) = lstm_cell(p.lstm, a[s![.., t, ..]], (h, c));
            g = gru_cell(p.gru, a[s![.., t, ..]], g);
        }
        reduce_sum(h * c) + reduce_sum(g * h0)
    }

    pub fn grads(ids: Tensor<i32, 2, 3>, h0: Tensor<f64, 2, 3>, p: Net) -> (Tensor<f64>, Net) {
        let l = loss(ids, h0, p);
        (l, gradients(l, p))
    }
}

/// Every tensor of a struct, by name, as a mutable slice.
macro_rules! fields_mut {
    ($p:ident; $($($path:ident).+),* $(,)?) => {
        vec![$((stringify!($($path).+), $p.$($path).+.as_slice_mut().unwrap())),*]
    };
}

/// A struct's tensors by name, as mutable slices.
type Fields<P> = fn(&mut P) -> Vec<(&'static str, &mut [f64])>;

/// Checks `grad` (a list of named slices of the gradient struct) against central differences
/// of `loss` over every element of the same fields of `p`.
fn check_fields<P: Clone>(
    what: &str,
    p: &P,
    grad: Vec<(&str, Vec<f64>)>,
    fields: Fields<P>,
    loss: &dyn Fn(&P) -> f64,
) {
    let h = 1e-6;
    for (k, (name, g)) in grad.iter().enumerate() {
        for (i, gi) in g.iter().enumerate() {
            let (mut plus, mut minus) = (p.clone(), p.clone());
            fields(&mut plus)[k].1[i] += h;
            fields(&mut minus)[k].1[i] -= h;
            let fd = (loss(&plus) - loss(&minus)) / (2.0 * h);
            assert!(
                (gi - fd).abs() <= 1e-5 * (1.0 + fd.abs()),
                "{what}: d/d {name}[{i}]: gradients gave {gi}, finite differences {fd}"
            );
        }
    }
}

fn vision_fields(p: &mut vision::Net) -> Vec<(&'static str, &mut [f64])> {
    fields_mut!(p; conv.kernel, conv.bias, dw.depthwise_kernel, dw.bias, bn.gamma, bn.beta, bn.moving_mean, bn.moving_variance, fc.kernel, fc.bias, ln.gamma, ln.beta)
}

fn sequence_fields(p: &mut sequence::Net) -> Vec<(&'static str, &mut [f64])> {
    fields_mut!(p; emb.embeddings, attn.query.kernel, attn.query.bias, attn.key.kernel, attn.key.bias, attn.value.kernel, attn.value.bias, attn.output.kernel, attn.output.bias, lstm.kernel, lstm.recurrent_kernel, lstm.bias, gru.kernel, gru.recurrent_kernel, gru.bias)
}

/// The slices of a gradient struct, owned, compared bit for bit with the eager ones.
fn owned<P>(g: &mut P, fields: Fields<P>) -> Vec<(&'static str, Vec<f64>)> {
    fields(g)
        .into_iter()
        .map(|(n, s)| (n, s.to_vec()))
        .collect()
}

fn bits(a: &[(&str, Vec<f64>)], b: &[(&str, Vec<f64>)]) -> bool {
    a.iter()
        .zip(b)
        .all(|((_, x), (_, y))| x.iter().zip(y).all(|(u, v)| u.to_bits() == v.to_bits()))
}

#[test]
fn convolution_and_normalisation_layers_differentiate() {
    let mut p = vision::Net::init(3);
    for (k, (_, s)) in vision_fields(&mut p).into_iter().enumerate() {
        let v = values(s.len(), 100 + k as u64);
        s.copy_from_slice(&v);
    }
    p.bn.moving_variance.mapv_inplace(|v| v.abs() + 0.5);
    let x: Array4<f64> = array(&[2, 4, 4, 2], 1);
    let w: Array2<f64> = array(&[2, 4], 2);
    let (_, mut g) = vision::grads(&x, &w, &p).unwrap();
    let (_, mut ge) = vision::grads::eager(&x, &w, &p).unwrap();
    let (g, ge) = (owned(&mut g, vision_fields), owned(&mut ge, vision_fields));
    assert!(bits(&g, &ge), "compiled and eager gradients differ");
    let loss = |q: &vision::Net| vision::loss(&x, &w, q).unwrap().into_scalar();
    check_fields("vision", &p, g, vision_fields, &loss);
}

#[test]
fn embedding_attention_and_recurrent_layers_differentiate() {
    let mut p = sequence::Net::init(4);
    for (k, (_, s)) in sequence_fields(&mut p).into_iter().enumerate() {
        let v: Vec<f64> = values(s.len(), 200 + k as u64)
            .iter()
            .map(|v| v * 0.8)
            .collect();
        s.copy_from_slice(&v);
    }
    let ids = grafo::ndarray::arr2(&[[0, 6, 2], [3, 3, 5]]);
    let h0: Array2<f64> = array(&[2, 3], 5);
    let (_, mut g) = sequence::grads(&ids, &h0, &p).unwrap();
    let (_, mut ge) = sequence::grads::eager(&ids, &h0, &p).unwrap();
    let (g, ge) = (
        owned(&mut g, sequence_fields),
        owned(&mut ge, sequence_fields),
    );
    assert!(bits(&g, &ge), "compiled and eager gradients differ");
    let loss = |q: &sequence::Net| sequence::loss(&ids, &h0, q).unwrap().into_scalar();
    check_fields("sequence", &p, g, sequence_fields, &loss);
}

#[graph]
mod model {
    pub struct Net {
        pub conv: Conv2d<3, 3, 1, 4>,
        pub ln: LayerNorm<36>,
        pub fc: Dense<36, 2>,
    }

    pub fn forward(x: Tensor<f32, B, 6, 6, 1>, p: Net) -> Tensor<f32, B, 2> {
        let h = conv2d(p.conv, x, 2, SAME, relu);
        dense(p.fc, layer_norm(p.ln, reshape(h, [B, 36]), 1e-5))
    }

    /// One SGD step; the new layers are written as struct literals, their dims read from
    /// their fields (`Dense { .. }`) or written (`Conv2d::<3, 3, 1, 4> { .. }`).
    pub fn sgd(
        x: Tensor<f32, B, 6, 6, 1>,
        y: Tensor<i32, B>,
        p: Net,
        lr: f32,
    ) -> (Tensor<f32>, Net) {
        let loss = reduce_mean(sparse_softmax_cross_entropy_with_logits(y, forward(x, p)));
        let g = gradients(loss, p);
        let conv = Conv2d::<3, 3, 1, 4> {
            kernel: p.conv.kernel - lr * g.conv.kernel,
            bias: p.conv.bias - lr * g.conv.bias,
        };
        let ln = LayerNorm {
            gamma: p.ln.gamma - lr * g.ln.gamma,
            ..p.ln
        };
        let ln = LayerNorm {
            beta: p.ln.beta - lr * g.ln.beta,
            ..ln
        };
        let fc = layers::Dense {
            kernel: p.fc.kernel - lr * g.fc.kernel,
            bias: p.fc.bias - lr * g.fc.bias,
        };
        (loss, Net { conv, ln, fc })
    }
}

#[test]
fn a_model_of_layers_learns() {
    // 6x6 images; the label says whether the top half is brighter than the bottom half.
    let n = 64;
    let x = Array4::<f32>::from_shape_vec(
        (n, 6, 6, 1),
        values(n * 36, 9).iter().map(|&v| v as f32).collect(),
    )
    .unwrap();
    let y: Array1<i32> = (0..n)
        .map(|i| {
            let top: f32 = (0..3)
                .flat_map(|r| (0..6).map(move |c| (r, c)))
                .map(|(r, c)| x[[i, r, c, 0]])
                .sum();
            let bottom: f32 = (3..6)
                .flat_map(|r| (0..6).map(move |c| (r, c)))
                .map(|(r, c)| x[[i, r, c, 0]])
                .sum();
            i32::from(top > bottom)
        })
        .collect();
    let mut p = model::Net::init(17);
    let mut session = Session::default();
    let mut losses = Vec::new();
    for _ in 0..60 {
        let (loss, next) = model::sgd::run(&mut session, &x, &y, &p, 0.1).unwrap();
        losses.push(loss.into_scalar());
        p = next;
    }
    let (first, last) = (losses[0], *losses.last().unwrap());
    assert!(first > 0.5, "the first loss {first} is near chance (ln 2)");
    assert!(
        last < 0.5 * first,
        "the loss went from {first} to {last}: {losses:?}"
    );
    // The compiled, session and eager steps agree on the trained model.
    let (l1, q1) = model::sgd(&x, &y, &p, 0.1).unwrap();
    let (l2, q2) = model::sgd::eager(&x, &y, &p, 0.1).unwrap();
    assert_eq!(l1.into_scalar().to_bits(), l2.into_scalar().to_bits());
    assert_eq!(q1.fc, q2.fc);
    assert_eq!(q1.conv, q2.conv);
    let _: &layers::Dense<36, 2> = &q1.fc;
}
