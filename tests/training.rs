//! Losses and optimizer updates: compiled vs eager vs a naive reference written here, the
//! losses' gradients against finite differences, and a label out of range as an `Err`.

use grafo::ndarray::{arr1, arr2, Array1, Array2};
use grafo::prelude::*;

#[graph]
fn losses(
    labels: Tensor<f64, B, 4>,
    sparse: Tensor<i32, B>,
    logits: Tensor<f64, B, 4>,
) -> (
    Tensor<f64, B>,
    Tensor<f64, B>,
    Tensor<f64, B, 4>,
    Tensor<f64>,
    Tensor<f64, B, 4>,
    Tensor<f64, B, 4>,
) {
    let dense = softmax_cross_entropy_with_logits(labels, logits);
    let sp = sparse_softmax_cross_entropy_with_logits(sparse, logits);
    let sig = sigmoid_cross_entropy_with_logits(labels, logits);
    let l2 = l2_loss(logits);
    let g_dense = gradients(reduce_sum(dense), logits);
    let g_sparse = gradients(reduce_sum(sp), logits);
    (dense, sp, sig, l2, g_dense, g_sparse)
}

fn reference_log_softmax(row: &[f64]) -> Vec<f64> {
    let m = row.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let s: f64 = row.iter().map(|v| (v - m).exp()).sum();
    row.iter().map(|v| v - m - s.ln()).collect()
}

#[test]
fn losses_match_naive_references_and_their_gradients_are_softmax_minus_labels() {
    let logits = arr2(&[
        [1.0, -2.0, 0.5, 3.0],
        [-1000.0, 1000.0, 0.0, 2.0],
        [0.1, 0.2, 0.3, 0.4],
    ]);
    let labels = arr2(&[
        [0.1, 0.2, 0.3, 0.4],
        [0.0, 1.0, 0.0, 0.0],
        [0.25, 0.25, 0.25, 0.25],
    ]);
    let sparse = arr1(&[3, 1, 0]);
    let got = losses(&labels, &sparse, &logits).unwrap();
    let eager = losses::eager(&labels, &sparse, &logits).unwrap();
    assert_eq!(got, eager);
    let (dense, sp, sig, l2, g_dense, g_sparse) = got;
    for r in 0..3 {
        let row: Vec<f64> = logits.row(r).to_vec();
        let lsm = reference_log_softmax(&row);
        let want_dense: f64 = -(0..4).map(|k| labels[[r, k]] * lsm[k]).sum::<f64>();
        assert!(
            (dense[r] - want_dense).abs() < 1e-12,
            "row {r}: {} vs {want_dense}",
            dense[r]
        );
        let want_sparse = -lsm[sparse[r] as usize];
        assert!((sp[r] - want_sparse).abs() < 1e-12);
        for k in 0..4 {
            let p = lsm[k].exp();
            assert!((g_dense[[r, k]] - (p - labels[[r, k]])).abs() < 1e-12);
            let onehot = if k == sparse[r] as usize { 1.0 } else { 0.0 };
            assert!((g_sparse[[r, k]] - (p - onehot)).abs() < 1e-12);
            let (x, z) = (logits[[r, k]], labels[[r, k]]);
            let want_sig = x.max(0.0) - x * z + (1.0 + (-x.abs()).exp()).ln();
            assert!((sig[[r, k]] - want_sig).abs() < 1e-12);
            assert!(sig[[r, k]].is_finite() && dense[r].is_finite());
        }
    }
    let want_l2: f64 = logits.iter().map(|v| v * v).sum::<f64>() / 2.0;
    assert!((l2.into_scalar() - want_l2).abs() < 1e-9);
}

#[test]
fn a_label_out_of_range_is_an_error_not_a_wrong_loss() {
    let logits = Array2::<f64>::zeros((2, 4));
    let labels = Array2::<f64>::zeros((2, 4));
    for bad in [4, -1] {
        let sparse = arr1(&[0, bad]);
        let err = losses(&labels, &sparse, &logits).unwrap_err().to_string();
        assert!(
            err.contains("sparse_softmax_cross_entropy_with_logits"),
            "{err}"
        );
        let err = losses::eager(&labels, &sparse, &logits)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("sparse_softmax_cross_entropy_with_logits"),
            "{err}"
        );
    }
}

#[graph]
fn optimizers(
    w: Tensor<f32, N>,
    g: Tensor<f32, N>,
    m: Tensor<f32, N>,
    v: Tensor<f32, N>,
    t: Tensor<f32>,
) -> (
    Tensor<f32, N>,
    Tensor<f32, N>,
    Tensor<f32, N>,
    Tensor<f32, N>,
    Tensor<f32, N>,
    Tensor<f32, N>,
    Tensor<f32, N>,
    Tensor<f32, N>,
) {
    let sgd = apply_gradient_descent(w, 0.1, g);
    let (mom, acc) = apply_momentum(w, m, 0.1, g, 0.9);
    let (nes, _) = apply_momentum(w, m, 0.1, g, 0.9, true);
    let (adam, m1, v1) = apply_adam(
        w,
        m,
        v,
        pow(0.9, t),
        pow(0.999, t),
        0.001,
        0.9,
        0.999,
        1e-8,
        g,
    );
    let (adamw, _, _) = apply_adamw(
        w,
        m,
        v,
        pow(0.9, t),
        pow(0.999, t),
        0.001,
        0.9,
        0.999,
        1e-8,
        0.01,
        g,
    );
    (sgd, mom, acc, nes, adam, m1, v1, adamw)
}

#[test]
fn optimizer_updates_match_their_documented_rules() {
    for n in [0usize, 1, 7, 1023] {
        let f = |s: f32| Array1::from_iter((0..n).map(|i| (i as f32 * 0.37 + s).sin()));
        let (w, g, m, v) = (f(0.1), f(0.2), f(0.3), f(0.4).mapv(|x| x * x));
        let t = grafo::ndarray::arr0(3.0f32);
        let got = optimizers(&w, &g, &m, &v, &t).unwrap();
        let eager = optimizers::eager(&w, &g, &m, &v, &t).unwrap();
        assert_eq!(got, eager, "n = {n}");
        let close = |a: f32, b: f32| (a - b).abs() <= 1e-6 * (1.0 + b.abs());
        let (b1p, b2p) = (0.9f32.powf(3.0), 0.999f32.powf(3.0));
        for i in 0..n {
            assert!(close(got.0[i], w[i] - 0.1 * g[i]));
            let acc = m[i] * 0.9 + g[i];
            assert!(close(got.2[i], acc));
            assert!(close(got.1[i], w[i] - 0.1 * acc));
            assert!(close(got.3[i], w[i] - 0.1 * g[i] - 0.1 * 0.9 * acc));
            let lr_t = 0.001 * (1.0 - b2p).sqrt() / (1.0 - b1p);
            let m1 = m[i] + (g[i] - m[i]) * 0.1;
            let v1 = v[i] + (g[i] * g[i] - v[i]) * (1.0 - 0.999);
            assert!(close(got.5[i], m1) && close(got.6[i], v1));
            assert!(
                close(got.4[i], w[i] - lr_t * m1 / (v1.sqrt() + 1e-8)),
                "adam {i}"
            );
            let decayed = w[i] - 0.001 * 0.01 * w[i];
            assert!(
                close(got.7[i], decayed - lr_t * m1 / (v1.sqrt() + 1e-8)),
                "adamw {i}"
            );
        }
    }
}
