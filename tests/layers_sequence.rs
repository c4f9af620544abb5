//! The sequence layers of `grafo::layers`: `multi_head_attention` (self, cross, causal, a
//! symbolic sequence length), `lstm_cell` and `gru_cell` unrolled over a sequence; compiled vs
//! eager (bit for bit) vs Keras' formulas written here as plain loops in f64, on odd sizes.

use grafo::layers;
use grafo::ndarray::{Array1, Array2, Array3};
use grafo::prelude::*;

#[path = "common/layer_inputs.rs"]
mod layer_inputs;
use layer_inputs::{array, assert_bits};

fn assert_close<D: grafo::ndarray::Dimension>(
    what: &str,
    got: &grafo::ndarray::Array<f32, D>,
    want: &grafo::ndarray::Array<f64, D>,
    tol: f64,
) {
    assert_eq!(got.shape(), want.shape(), "{what}: shape");
    for (i, (g, w)) in got.iter().zip(want.iter()).enumerate() {
        assert!(
            (f64::from(*g) - w).abs() <= tol * (1.0 + w.abs()),
            "{what}[{i}]: got {g}, reference {w}"
        );
    }
}

#[graph]
mod attn {
    pub fn self_attention(
        x: Tensor<f32, B, 5, 6>,
        a: MultiHeadAttention<6, 2>,
    ) -> Tensor<f32, B, 5, 6> {
        multi_head_attention(a, x, x)
    }

    pub fn causal(x: Tensor<f32, B, 5, 6>, a: MultiHeadAttention<6, 2>) -> Tensor<f32, B, 5, 6> {
        multi_head_attention(a, x, x, true)
    }

    pub fn cross(
        q: Tensor<f32, B, 5, 6>,
        v: Tensor<f32, B, 4, 6>,
        k: Tensor<f32, B, 4, 6>,
        a: MultiHeadAttention<6, 2>,
    ) -> (Tensor<f32, B, 5, 6>, Tensor<f32, B, 5, 6>) {
        (
            multi_head_attention(a, q, v, k),
            multi_head_attention(a, q, v, k, true),
        )
    }

    /// A symbolic sequence length, and three heads of two.
    pub fn symbolic(x: Tensor<f32, B, T, 6>, a: MultiHeadAttention<6, 3>) -> Tensor<f32, B, T, 6> {
        multi_head_attention(a, x, x, true)
    }
}

/// `x · kernel + bias` of one of the attention's dense layers, in f64.
fn project(x: &Array3<f32>, d: &layers::Dense<6, 6>) -> Array3<f64> {
    let (b, l, n) = x.dim();
    Array3::from_shape_fn((b, l, n), |(i, t, o)| {
        (0..n)
            .map(|e| f64::from(x[[i, t, e]]) * f64::from(d.kernel[[e, o]]))
            .sum::<f64>()
            + f64::from(d.bias[o])
    })
}

/// Keras' `MultiHeadAttention` (key_dim D / H, output projected to D) as plain loops.
fn attention_ref<const H: usize>(
    q: &Array3<f32>,
    v: &Array3<f32>,
    k: &Array3<f32>,
    a: &layers::MultiHeadAttention<6, H>,
    causal: bool,
) -> Array3<f64> {
    let (b, t, d) = q.dim();
    let s = v.dim().1;
    let dk = d / H;
    let scale = 1.0 / (dk as f64).sqrt();
    let (qp, kp, vp) = (
        project(q, &a.query),
        project(k, &a.key),
        project(v, &a.value),
    );
    let mut ctx = Array3::<f64>::zeros((b, t, d));
    for i in 0..b {
        for h in 0..H {
            for r in 0..t {
                let scores: Vec<f64> = (0..s)
                    .map(|c| {
                        if causal && c > r {
                            return f64::NEG_INFINITY;
                        }
                        (0..dk)
                            .map(|e| qp[[i, r, h * dk + e]] * scale * kp[[i, c, h * dk + e]])
                            .sum()
                    })
                    .collect();
                let m = scores.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                let w: Vec<f64> = scores.iter().map(|x| (x - m).exp()).collect();
                let z: f64 = w.iter().sum();
                for e in 0..dk {
                    ctx[[i, r, h * dk + e]] =
                        (0..s).map(|c| w[c] / z * vp[[i, c, h * dk + e]]).sum();
                }
            }
        }
    }
    let o = &a.output;
    Array3::from_shape_fn((b, t, d), |(i, r, n)| {
        (0..d)
            .map(|e| ctx[[i, r, e]] * f64::from(o.kernel[[e, n]]))
            .sum::<f64>()
            + f64::from(o.bias[n])
    })
}

/// A layer's values drawn again so that its biases are not zero.
fn attention_layer<const H: usize>(seed: u64) -> layers::MultiHeadAttention<6, H> {
    let dense = |k: u64| layers::Dense::<6, 6> {
        kernel: array(&[6, 6], seed + k),
        bias: array(&[6], seed + 10 + k),
    };
    layers::MultiHeadAttention {
        query: dense(1),
        key: dense(2),
        value: dense(3),
        output: dense(4),
    }
}

#[test]
fn multi_head_attention_matches_keras_formula() {
    let a = attention_layer::<2>(100);
    for batch in [0, 1, 3] {
        let x: Array3<f32> = array(&[batch, 5, 6], 200 + batch as u64);
        let got = attn::self_attention(&x, &a).unwrap();
        assert_bits("self", &got, &attn::self_attention::eager(&x, &a).unwrap());
        assert_close("self", &got, &attention_ref(&x, &x, &x, &a, false), 1e-5);
        let got = attn::causal(&x, &a).unwrap();
        assert_bits("causal", &got, &attn::causal::eager(&x, &a).unwrap());
        assert_close("causal", &got, &attention_ref(&x, &x, &x, &a, true), 1e-5);

        let v: Array3<f32> = array(&[batch, 4, 6], 300 + batch as u64);
        let k: Array3<f32> = array(&[batch, 4, 6], 400 + batch as u64);
        let (plain, masked) = attn::cross(&x, &v, &k, &a).unwrap();
        let (ep, em) = attn::cross::eager(&x, &v, &k, &a).unwrap();
        assert_bits("cross", &plain, &ep);
        assert_bits("cross causal", &masked, &em);
        assert_close("cross", &plain, &attention_ref(&x, &v, &k, &a, false), 1e-5);
        assert_close(
            "cross causal",
            &masked,
            &attention_ref(&x, &v, &k, &a, true),
            1e-5,
        );
    }
    let a3 = attention_layer::<3>(500);
    for len in [1, 7] {
        let x: Array3<f32> = array(&[2, len, 6], 600 + len as u64);
        let got = attn::symbolic(&x, &a3).unwrap();
        assert_bits("symbolic", &got, &attn::symbolic::eager(&x, &a3).unwrap());
        assert_close(
            "symbolic",
            &got,
            &attention_ref(&x, &x, &x, &a3, true),
            1e-5,
        );
    }
}

#[graph]
mod cells {
    pub fn lstm_seq(
        xs: Tensor<f32, B, 3, 3>,
        h0: Tensor<f32, B, 4>,
        c0: Tensor<f32, B, 4>,
        cell: LstmCell<3, 4>,
    ) -> (Tensor<f32, B, 4>, Tensor<f32, B, 4>) {
        let mut h = h0;
        let mut c = c0;
        for t in 0..3 {
            (h, c) = lstm_cell(cell, xs[s![.., t, ..]], (h, c));
        }
        (h, c)
    }

    pub fn gru_seq(
        xs: Tensor<f32, B, 3, 3>,
        h0: Tensor<f32, B, 4>,
        cell: GruCell<3, 4>,
    ) -> Tensor<f32, B, 4> {
        let mut h = h0;
        for t in 0..3 {
            h = gru_cell(cell, xs[s![.., t, ..]], h);
        }
        h
    }
}

fn sigmoid(v: f64) -> f64 {
    1.0 / (1.0 + (-v).exp())
}

/// `x · kernel + h · recurrent_kernel` for one row, in f64.
fn affine(x: &[f64], k: &Array2<f32>, h: &[f64], r: &Array2<f32>) -> (Vec<f64>, Vec<f64>) {
    let n = k.dim().1;
    let xk = (0..n)
        .map(|o| {
            x.iter()
                .enumerate()
                .map(|(i, v)| v * f64::from(k[[i, o]]))
                .sum()
        })
        .collect();
    let hr = (0..n)
        .map(|o| {
            h.iter()
                .enumerate()
                .map(|(i, v)| v * f64::from(r[[i, o]]))
                .sum()
        })
        .collect();
    (xk, hr)
}

/// Keras' `LSTMCell` over the sequence, row by row.
fn lstm_ref(
    xs: &Array3<f32>,
    h0: &Array2<f32>,
    c0: &Array2<f32>,
    cell: &layers::LstmCell<3, 4>,
) -> (Array2<f64>, Array2<f64>) {
    let (b, steps, _) = xs.dim();
    let hn = 4;
    let mut hs = h0.mapv(f64::from);
    let mut cs = c0.mapv(f64::from);
    for i in 0..b {
        for t in 0..steps {
            let x: Vec<f64> = (0..3).map(|e| f64::from(xs[[i, t, e]])).collect();
            let h: Vec<f64> = hs.row(i).to_vec();
            let (xk, hr) = affine(&x, &cell.kernel, &h, &cell.recurrent_kernel);
            let z: Vec<f64> = (0..4 * hn)
                .map(|o| xk[o] + hr[o] + f64::from(cell.bias[o]))
                .collect();
            for u in 0..hn {
                let (ig, fg, g, og) = (
                    sigmoid(z[u]),
                    sigmoid(z[hn + u]),
                    z[2 * hn + u].tanh(),
                    sigmoid(z[3 * hn + u]),
                );
                let c = fg * cs[[i, u]] + ig * g;
                cs[[i, u]] = c;
                hs[[i, u]] = og * c.tanh();
            }
        }
    }
    (hs, cs)
}

/// Keras' `GRUCell` (`reset_after=True`) over the sequence, row by row.
fn gru_ref(xs: &Array3<f32>, h0: &Array2<f32>, cell: &layers::GruCell<3, 4>) -> Array2<f64> {
    let (b, steps, _) = xs.dim();
    let hn = 4;
    let mut hs = h0.mapv(f64::from);
    for i in 0..b {
        for t in 0..steps {
            let x: Vec<f64> = (0..3).map(|e| f64::from(xs[[i, t, e]])).collect();
            let h: Vec<f64> = hs.row(i).to_vec();
            let (xk, hr) = affine(&x, &cell.kernel, &h, &cell.recurrent_kernel);
            let mx: Vec<f64> = (0..3 * hn)
                .map(|o| xk[o] + f64::from(cell.bias[[0, o]]))
                .collect();
            let mh: Vec<f64> = (0..3 * hn)
                .map(|o| hr[o] + f64::from(cell.bias[[1, o]]))
                .collect();
            for u in 0..hn {
                let z = sigmoid(mx[u] + mh[u]);
                let r = sigmoid(mx[hn + u] + mh[hn + u]);
                let hh = (mx[2 * hn + u] + r * mh[2 * hn + u]).tanh();
                hs[[i, u]] = z * h[u] + (1.0 - z) * hh;
            }
        }
    }
    hs
}

#[test]
fn lstm_and_gru_cells_match_keras_formulas() {
    let lstm = layers::LstmCell::<3, 4> {
        bias: array(&[16], 700),
        ..layers::LstmCell::init(7)
    };
    let gru = layers::GruCell::<3, 4> {
        bias: array(&[2, 12], 701),
        ..layers::GruCell::init(8)
    };
    for batch in [0, 1, 5] {
        let xs: Array3<f32> = array(&[batch, 3, 3], 710 + batch as u64);
        let h0: Array2<f32> = array(&[batch, 4], 720 + batch as u64);
        let c0: Array2<f32> = array(&[batch, 4], 730 + batch as u64);
        let (h, c) = cells::lstm_seq(&xs, &h0, &c0, &lstm).unwrap();
        let (eh, ec) = cells::lstm_seq::eager(&xs, &h0, &c0, &lstm).unwrap();
        assert_bits("lstm h", &h, &eh);
        assert_bits("lstm c", &c, &ec);
        let (wh, wc) = lstm_ref(&xs, &h0, &c0, &lstm);
        assert_close("lstm h", &h, &wh, 1e-5);
        assert_close("lstm c", &c, &wc, 1e-5);

        let h = cells::gru_seq(&xs, &h0, &gru).unwrap();
        assert_bits("gru", &h, &cells::gru_seq::eager(&xs, &h0, &gru).unwrap());
        assert_close("gru", &h, &gru_ref(&xs, &h0, &gru), 1e-5);
    }
}

#[test]
fn recurrent_layers_initialise_as_keras() {
    let lstm = layers::LstmCell::<3, 4>::init(1);
    // unit_forget_bias: ones on the forget gate's quarter, zeros elsewhere.
    let want: Array1<f32> = (0..16)
        .map(|i| if (4..8).contains(&i) { 1.0 } else { 0.0 })
        .collect();
    assert_eq!(lstm.bias, want);
    // The orthogonal recurrent kernels: [H, nH] with orthonormal rows.
    let gru = layers::GruCell::<3, 4>::init(2);
    for (what, r) in [
        ("lstm", &lstm.recurrent_kernel),
        ("gru", &gru.recurrent_kernel),
    ] {
        let r = r.mapv(f64::from);
        let gram = r.dot(&r.t());
        for ((i, j), v) in gram.indexed_iter() {
            let want = if i == j { 1.0 } else { 0.0 };
            assert!((v - want).abs() < 1e-5, "{what}: R·Rᵀ[{i}, {j}] = {v}");
        }
    }
    let limit = (6.0f32 / (3.0 + 16.0)).sqrt();
    assert!(lstm.kernel.iter().all(|v| v.abs() <= limit) && lstm.kernel.iter().any(|v| *v != 0.0));
    assert!(gru.bias.iter().all(|v| *v == 0.0));
    assert_eq!(gru.bias.dim(), (2, 12));
}
