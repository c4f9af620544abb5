//! W8 (an Adam step of W2's MLP): compiled == eager == session bit for bit, the loss against
//! a reference written here, and the loss going down over steps.

#[path = "common/training.rs"]
mod training;

use grafo::ndarray::{Array1, Array2};
use grafo::prelude::*;
use training::mlp_train_step;

fn uniform(n: usize, seed: u32) -> Vec<f32> {
    let mut s = seed.wrapping_mul(2654435761).wrapping_add(1);
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 17;
            s ^= s << 5;
            (s >> 8) as f32 / (1u32 << 23) as f32 - 1.0
        })
        .collect()
}

/// The reference loss in f64: mean over rows of logsumexp(logits) - logits[label].
fn reference_loss(
    x: &Array2<f32>,
    y: &Array1<i32>,
    w1: &Array2<f32>,
    b1: &Array1<f32>,
    w2: &Array2<f32>,
    b2: &Array1<f32>,
) -> f64 {
    let mut total = 0.0;
    for r in 0..x.nrows() {
        let h: Vec<f64> = (0..w1.ncols())
            .map(|j| {
                let s: f64 = (0..x.ncols())
                    .map(|k| x[[r, k]] as f64 * w1[[k, j]] as f64)
                    .sum::<f64>()
                    + b1[j] as f64;
                s.max(0.0)
            })
            .collect();
        let logits: Vec<f64> = (0..w2.ncols())
            .map(|c| (0..h.len()).map(|j| h[j] * w2[[j, c]] as f64).sum::<f64>() + b2[c] as f64)
            .collect();
        let m = logits.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let lse = m + logits.iter().map(|v| (v - m).exp()).sum::<f64>().ln();
        total += lse - logits[y[r] as usize];
    }
    total / x.nrows() as f64
}

#[test]
fn mlp_train_step_compiled_eager_session_agree_and_learn() {
    let b = 32;
    let x = Array2::from_shape_vec((b, 784), uniform(b * 784, 1)).unwrap();
    let y = Array1::from_iter((0..b).map(|i| (i * 7 % 10) as i32));
    let mut w1 = Array2::from_shape_vec((784, 512), uniform(784 * 512, 2)).unwrap() * 0.05;
    let mut b1 = Array1::<f32>::zeros(512);
    let mut w2 = Array2::from_shape_vec((512, 10), uniform(5120, 3)).unwrap() * 0.05;
    let mut b2 = Array1::<f32>::zeros(10);
    let (mut mw1, mut vw1) = (
        Array2::<f32>::zeros((784, 512)),
        Array2::<f32>::zeros((784, 512)),
    );
    let (mut mb1, mut vb1) = (Array1::<f32>::zeros(512), Array1::<f32>::zeros(512));
    let (mut mw2, mut vw2) = (
        Array2::<f32>::zeros((512, 10)),
        Array2::<f32>::zeros((512, 10)),
    );
    let (mut mb2, mut vb2) = (Array1::<f32>::zeros(10), Array1::<f32>::zeros(10));
    let mut session = Session::default();
    let mut losses = Vec::new();
    for step in 1..=20 {
        let t = step as f32;
        let compiled = mlp_train_step(
            &x, &y, &w1, &b1, &w2, &b2, &mw1, &mb1, &mw2, &mb2, &vw1, &vb1, &vw2, &vb2, t,
        )
        .unwrap();
        if step <= 2 {
            let eager = mlp_train_step::eager(
                &x, &y, &w1, &b1, &w2, &b2, &mw1, &mb1, &mw2, &mb2, &vw1, &vb1, &vw2, &vb2, t,
            )
            .unwrap();
            assert_eq!(compiled, eager, "step {step}: compiled == eager");
            let reference = reference_loss(&x, &y, &w1, &b1, &w2, &b2);
            let loss = compiled.0.clone().into_scalar() as f64;
            assert!(
                (loss - reference).abs() < 1e-4 * (1.0 + reference),
                "step {step}: {loss} vs {reference}"
            );
        }
        let in_session = mlp_train_step::run(
            &mut session,
            &x,
            &y,
            &w1,
            &b1,
            &w2,
            &b2,
            &mw1,
            &mb1,
            &mw2,
            &mb2,
            &vw1,
            &vb1,
            &vw2,
            &vb2,
            t,
        )
        .unwrap();
        assert_eq!(compiled, in_session, "step {step}: compiled == session");
        let (loss, p1, p2, p3, p4) = compiled;
        losses.push(loss.into_scalar());
        (w1, mw1, vw1) = p1;
        (b1, mb1, vb1) = p2;
        (w2, mw2, vw2) = p3;
        (b2, mb2, vb2) = p4;
    }
    assert!(
        losses[19] < 0.5 * losses[0],
        "the loss went down: {losses:?}"
    );
}
