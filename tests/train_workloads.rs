//! W8 (an Adam step of W2's MLP): compiled == eager == session bit for bit, the loss against
//! a reference written here, and the loss going down over steps; W8 with its parameters
//! updated in place gives the same bits; W9 (an Adam step of W7's CNN, in place): compiled ==
//! eager == session, its loss against plain loops, and learning.

#[path = "common/training.rs"]
mod training;

use grafo::ndarray::{Array1, Array2};
use grafo::ndarray::{Array4, Axis};
use grafo::prelude::*;
use training::{cnn_train_step, mlp_train_step, mlp_train_step_in_place};

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

#[test]
fn mlp_train_step_in_place_matches_the_functional_step() {
    let b = 7;
    let x = Array2::from_shape_vec((b, 784), uniform(b * 784, 11)).unwrap();
    let y = Array1::from_iter((0..b).map(|i| (i * 3 % 10) as i32));
    let w1 = Array2::from_shape_vec((784, 512), uniform(784 * 512, 12)).unwrap() * 0.05;
    let w2 = Array2::from_shape_vec((512, 10), uniform(5120, 13)).unwrap() * 0.05;
    let z1 = Array1::<f32>::zeros(512);
    let z2 = Array1::<f32>::zeros(10);
    let zw1 = Array2::<f32>::zeros((784, 512));
    let zw2 = Array2::<f32>::zeros((512, 10));
    // The functional step's state, and the in-place step's (compiled, session, eager).
    let mut f = (w1.clone(), z1.clone(), w2.clone(), z2.clone());
    let mut fm = (zw1.clone(), z1.clone(), zw2.clone(), z2.clone());
    let mut fv = fm.clone();
    let mut paths = vec![(f.clone(), fm.clone(), fv.clone()); 3];
    let mut session = Session::default();
    for step in 1..=3 {
        let t = step as f32;
        let (loss, p1, p2, p3, p4) = mlp_train_step(
            &x, &y, &f.0, &f.1, &f.2, &f.3, &fm.0, &fm.1, &fm.2, &fm.3, &fv.0, &fv.1, &fv.2, &fv.3,
            t,
        )
        .unwrap();
        (f.0, fm.0, fv.0) = p1;
        (f.1, fm.1, fv.1) = p2;
        (f.2, fm.2, fv.2) = p3;
        (f.3, fm.3, fv.3) = p4;
        for (path, (p, m, v)) in paths.iter_mut().enumerate() {
            let l = match path {
                0 => mlp_train_step_in_place(
                    &x, &y, &mut p.0, &mut p.1, &mut p.2, &mut p.3, &mut m.0, &mut m.1, &mut m.2,
                    &mut m.3, &mut v.0, &mut v.1, &mut v.2, &mut v.3, t,
                ),
                1 => mlp_train_step_in_place::run(
                    &mut session,
                    &x,
                    &y,
                    &mut p.0,
                    &mut p.1,
                    &mut p.2,
                    &mut p.3,
                    &mut m.0,
                    &mut m.1,
                    &mut m.2,
                    &mut m.3,
                    &mut v.0,
                    &mut v.1,
                    &mut v.2,
                    &mut v.3,
                    t,
                ),
                _ => mlp_train_step_in_place::eager(
                    &x, &y, &mut p.0, &mut p.1, &mut p.2, &mut p.3, &mut m.0, &mut m.1, &mut m.2,
                    &mut m.3, &mut v.0, &mut v.1, &mut v.2, &mut v.3, t,
                ),
            }
            .unwrap();
            assert_eq!(l, loss, "step {step}, path {path}: the loss");
            assert_eq!(
                (p, m, v),
                (&mut f, &mut fm, &mut fv),
                "step {step}, path {path}"
            );
        }
    }
}

/// W9's parameters and Adam state: k1 c1 k2 c2 w c, then their m, then their v.
#[derive(Clone, Debug, PartialEq)]
struct Cnn {
    k1: Array4<f32>,
    c1: Array1<f32>,
    k2: Array4<f32>,
    c2: Array1<f32>,
    w: Array2<f32>,
    c: Array1<f32>,
}

impl Cnn {
    fn seeded() -> Cnn {
        Cnn {
            k1: Array4::from_shape_vec((3, 3, 1, 32), uniform(288, 21)).unwrap() * 0.3,
            c1: Array1::from(uniform(32, 22)) * 0.1,
            k2: Array4::from_shape_vec((3, 3, 32, 64), uniform(18432, 23)).unwrap() * 0.06,
            c2: Array1::from(uniform(64, 24)) * 0.1,
            w: Array2::from_shape_vec((1600, 10), uniform(16000, 25)).unwrap() * 0.05,
            c: Array1::zeros(10),
        }
    }
    fn zeros() -> Cnn {
        let z = Cnn::seeded();
        Cnn {
            k1: z.k1 * 0.0,
            c1: z.c1 * 0.0,
            k2: z.k2 * 0.0,
            c2: z.c2 * 0.0,
            w: z.w * 0.0,
            c: z.c * 0.0,
        }
    }
}

/// Runs one W9 step on `(p, m, v)` by path: 0 compiled, 1 in `session`, 2 eager.
fn cnn_step(
    path: usize,
    session: &mut Session,
    x: &Array4<f32>,
    y: &Array1<i32>,
    (p, m, v): &mut (Cnn, Cnn, Cnn),
    t: f32,
) -> f32 {
    let loss = match path {
        0 => cnn_train_step(
            x, y, &mut p.k1, &mut p.c1, &mut p.k2, &mut p.c2, &mut p.w, &mut p.c, &mut m.k1,
            &mut m.c1, &mut m.k2, &mut m.c2, &mut m.w, &mut m.c, &mut v.k1, &mut v.c1, &mut v.k2,
            &mut v.c2, &mut v.w, &mut v.c, t,
        ),
        1 => cnn_train_step::run(
            session, x, y, &mut p.k1, &mut p.c1, &mut p.k2, &mut p.c2, &mut p.w, &mut p.c,
            &mut m.k1, &mut m.c1, &mut m.k2, &mut m.c2, &mut m.w, &mut m.c, &mut v.k1, &mut v.c1,
            &mut v.k2, &mut v.c2, &mut v.w, &mut v.c, t,
        ),
        _ => cnn_train_step::eager(
            x, y, &mut p.k1, &mut p.c1, &mut p.k2, &mut p.c2, &mut p.w, &mut p.c, &mut m.k1,
            &mut m.c1, &mut m.k2, &mut m.c2, &mut m.w, &mut m.c, &mut v.k1, &mut v.c1, &mut v.k2,
            &mut v.c2, &mut v.w, &mut v.c, t,
        ),
    };
    loss.unwrap().into_scalar()
}

/// A VALID 3x3 convolution, bias and relu, then a 2x2 max pool, in f64 with plain loops.
fn conv_relu_pool(x: &Array4<f64>, k: &Array4<f32>, bias: &Array1<f32>) -> Array4<f64> {
    let (n, h, w, ci) = x.dim();
    let co = k.dim().3;
    let (oh, ow) = (h - 2, w - 2);
    let mut conv = Array4::<f64>::zeros((n, oh, ow, co));
    for b in 0..n {
        for i in 0..oh {
            for j in 0..ow {
                for o in 0..co {
                    let mut s = bias[o] as f64;
                    for di in 0..3 {
                        for dj in 0..3 {
                            for c in 0..ci {
                                s += x[[b, i + di, j + dj, c]] * k[[di, dj, c, o]] as f64;
                            }
                        }
                    }
                    conv[[b, i, j, o]] = s.max(0.0);
                }
            }
        }
    }
    let mut pooled = Array4::<f64>::zeros((n, oh / 2, ow / 2, co));
    for b in 0..n {
        for i in 0..oh / 2 {
            for j in 0..ow / 2 {
                for o in 0..co {
                    let mut m = f64::NEG_INFINITY;
                    for di in 0..2 {
                        for dj in 0..2 {
                            m = m.max(conv[[b, 2 * i + di, 2 * j + dj, o]]);
                        }
                    }
                    pooled[[b, i, j, o]] = m;
                }
            }
        }
    }
    pooled
}

/// W9's loss in f64: the CNN's logits by plain loops, then mean logsumexp - logit[label].
fn cnn_reference_loss(x: &Array4<f32>, y: &Array1<i32>, p: &Cnn) -> f64 {
    let h = conv_relu_pool(&x.mapv(|v| v as f64), &p.k1, &p.c1);
    let h = conv_relu_pool(&h, &p.k2, &p.c2);
    let n = x.dim().0;
    let mut total = 0.0;
    for (b, sample) in h.axis_iter(Axis(0)).enumerate() {
        let flat: Vec<f64> = sample.iter().cloned().collect();
        let logits: Vec<f64> = (0..10)
            .map(|o| p.c[o] as f64 + (0..1600).map(|i| flat[i] * p.w[[i, o]] as f64).sum::<f64>())
            .collect();
        let max = logits.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let lse = max + logits.iter().map(|l| (l - max).exp()).sum::<f64>().ln();
        total += lse - logits[y[b] as usize];
    }
    total / n as f64
}

#[test]
fn cnn_train_step_compiled_eager_session_agree_and_learn() {
    let b = 3;
    let x = Array4::from_shape_vec((b, 28, 28, 1), uniform(b * 784, 31)).unwrap();
    let y = Array1::from_iter((0..b).map(|i| (i * 7 % 10) as i32));
    let start = (Cnn::seeded(), Cnn::zeros(), Cnn::zeros());
    let mut paths = vec![start; 3];
    let mut session = Session::default();
    let mut losses = Vec::new();
    for step in 1..=6 {
        let t = step as f32;
        let reference = cnn_reference_loss(&x, &y, &paths[0].0);
        let loss = cnn_step(0, &mut session, &x, &y, &mut paths[0], t);
        assert!(
            (loss as f64 - reference).abs() < 1e-4 * (1.0 + reference),
            "step {step}: {loss} vs plain loops {reference}"
        );
        if step <= 2 {
            for path in [1, 2] {
                let l = cnn_step(path, &mut session, &x, &y, &mut paths[path], t);
                assert_eq!(
                    l.to_bits(),
                    loss.to_bits(),
                    "step {step}, path {path}: loss"
                );
                assert_eq!(paths[path], paths[0], "step {step}, path {path}: state");
            }
        }
        losses.push(loss);
    }
    assert!(
        losses[5] < 0.5 * losses[0],
        "the loss went down: {losses:?}"
    );
}
