//! `erf gelu softplus elu leaky_relu clip_by_value batch_normalization layer_norm` through
//! `#[graph]`: compiled == eager == `run` bit for bit, and both against a naive reference
//! written here in f64 (plain loops), on sizes 0, 1, 7 and 1023, with broadcasting and
//! NaN / inf / -0.

use grafo::ndarray::{Array1, Array2, Array3};
use grafo::prelude::*;

#[path = "common/entry_points.rs"]
#[macro_use]
mod entry_points;

/// `erf` in f64: the all-positive series below 1.5, `1 - erfc` (continued fraction) above.
fn ref_erf(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    let t = x.abs();
    let v = if t <= 1.5 {
        let (mut term, mut sum, mut n) = (t, 0.0, 0.0);
        while term > sum * 1e-18 {
            sum += term;
            term *= 2.0 * t * t / (2.0 * n + 3.0);
            n += 1.0;
        }
        std::f64::consts::FRAC_2_SQRT_PI * (-t * t).exp() * sum
    } else {
        1.0 - ref_erfc(t)
    };
    v.copysign(x)
}

fn ref_erfc(t: f64) -> f64 {
    if t.is_infinite() {
        return 0.0;
    }
    let mut f = t;
    for k in (1..=(3400.0 / (t * t)) as usize + 60).rev() {
        f = t + (k as f64 / 2.0) / f;
    }
    (-t * t).exp() / std::f64::consts::PI.sqrt() / f
}

fn ref_gelu(x: f64) -> f64 {
    let y = x / std::f64::consts::SQRT_2;
    let one_plus_erf = if y < -1.5 {
        ref_erfc(-y)
    } else {
        1.0 + ref_erf(y)
    };
    if x == f64::NEG_INFINITY {
        return 0.0;
    }
    0.5 * x * one_plus_erf
}

fn ref_gelu_tanh(x: f64) -> f64 {
    if x == f64::NEG_INFINITY {
        return 0.0;
    }
    let u = (2.0 / std::f64::consts::PI).sqrt() * (x + 0.044715 * x * x * x);
    x / (1.0 + (-2.0 * u).exp())
}

fn ref_softplus(x: f64) -> f64 {
    if x > 30.0 {
        x
    } else {
        x.exp().ln_1p()
    }
}

fn ref_elu(x: f64) -> f64 {
    if x > 0.0 {
        x
    } else {
        x.exp_m1()
    }
}

fn ref_leaky(x: f64, a: f64) -> f64 {
    if x > 0.0 {
        x
    } else {
        a * x
    }
}

/// Bitwise equality (NaN equal to NaN), for compiled == eager.
fn same_bits(a: &Array1<f32>, b: &Array1<f32>) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| x.to_bits() == y.to_bits() || x.is_nan() && y.is_nan())
}

/// `got` against the f64 reference: relative `rtol` (plus a tiny absolute slack), NaN and infinities exactly.
fn check(what: &str, got: &Array1<f32>, x: &Array1<f32>, r: impl Fn(f64) -> f64, rtol: f64) {
    for (&g, &v) in got.iter().zip(x) {
        let want = r(v as f64);
        let ok = if want.is_nan() {
            g.is_nan()
        } else if want.is_infinite() {
            g as f64 == want
        } else {
            (g as f64 - want).abs() <= rtol * want.abs() + 1e-37
        };
        assert!(ok, "{what}({v:e}) = {g:e}, want {want:e}");
    }
}

#[graph]
fn activations(
    x: Tensor<f32, N>,
) -> (
    Tensor<f32, N>,
    Tensor<f32, N>,
    Tensor<f32, N>,
    Tensor<f32, N>,
    Tensor<f32, N>,
    Tensor<f32, N>,
    Tensor<f32, N>,
) {
    (
        erf(x),
        gelu(x),
        gelu(x, true),
        softplus(x),
        elu(x),
        leaky_relu(x),
        leaky_relu(x, 0.01),
    )
}

/// Inputs: a ramp over [-12, 12] with the special values first.
fn inputs(n: usize) -> Array1<f32> {
    let special = [
        f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        -0.0,
        0.0,
        1e-30,
        -1e-30,
        0.875,
        -20.0,
        -13.95,
        14.0,
    ];
    Array1::from_shape_fn(n, |i| {
        if i < special.len() {
            special[i]
        } else {
            -12.0 + 24.0 * i as f32 / n as f32
        }
    })
}

#[test]
fn activations_match_eager_and_the_reference() {
    for n in [0, 1, 7, 11, 1023] {
        let x = inputs(n);
        let [(_, c), (_, e), (_, r)] = runs_ok!(activations(&x));
        for (how, other) in [("eager", &e), ("run", &r)] {
            assert!(same_bits(&c.0, &other.0), "erf compiled vs {how}");
            assert!(same_bits(&c.1, &other.1), "gelu compiled vs {how}");
            assert!(same_bits(&c.2, &other.2), "gelu tanh compiled vs {how}");
            assert!(same_bits(&c.3, &other.3), "softplus compiled vs {how}");
            assert!(same_bits(&c.4, &other.4), "elu compiled vs {how}");
            assert!(same_bits(&c.5, &other.5), "leaky_relu compiled vs {how}");
            assert!(
                same_bits(&c.6, &other.6),
                "leaky_relu(0.01) compiled vs {how}"
            );
        }
        let (erf_, gelu_, gelu_t, sp, elu_, lr, lr01) = c;
        check("erf", &erf_, &x, ref_erf, 2e-7);
        // The tails below -5 lose accuracy as x² · 2^-24 (docs/LANGUAGE-NOTES.md).
        check("gelu", &gelu_, &x, ref_gelu, 2e-5);
        check("gelu_tanh", &gelu_t, &x, ref_gelu_tanh, 4e-5);
        check("softplus", &sp, &x, ref_softplus, 1e-6);
        check("elu", &elu_, &x, ref_elu, 4e-7);
        check("leaky_relu", &lr, &x, |v| ref_leaky(v, 0.2f32 as f64), 1e-7);
        check(
            "leaky_relu 0.01",
            &lr01,
            &x,
            |v| ref_leaky(v, 0.01f32 as f64),
            1e-7,
        );
        if n > 4 {
            // -0 stays -0 where TensorFlow keeps it.
            assert_eq!(erf_[3].to_bits(), (-0.0f32).to_bits());
            assert_eq!(elu_[3].to_bits(), (-0.0f32).to_bits());
            assert_eq!(lr[3].to_bits(), (-0.0f32).to_bits());
            assert_eq!((gelu_[2], gelu_t[2], sp[2], elu_[2]), (0.0, 0.0, 0.0, -1.0));
        }
    }
}

#[graph]
fn activations_f64(
    x: Tensor<f64, N>,
    alpha: f64,
) -> (Tensor<f64, N>, Tensor<f64, N>, Tensor<f64, N>) {
    (erf(x), gelu(x, false), leaky_relu(x, alpha))
}

#[test]
fn f64_activations_and_a_host_alpha() {
    let x = Array1::from_shape_fn(1023, |i| -8.0 + 16.0 * i as f64 / 1023.0);
    for (how, (erf_, gelu_, lr)) in runs_ok!(activations_f64(&x, 0.3)) {
        for (i, &v) in x.iter().enumerate() {
            let e = ref_erf(v);
            assert!(
                (erf_[i] - e).abs() <= 1e-15 * e.abs().max(1e-300),
                "erf f64 {how} at {v}"
            );
            let g = ref_gelu(v);
            assert!(
                (gelu_[i] - g).abs() <= 1e-13 * g.abs() + 1e-300,
                "gelu f64 {how} at {v}: {} vs {g}",
                gelu_[i]
            );
            assert_eq!(lr[i], ref_leaky(v, 0.3), "leaky_relu f64 {how}");
        }
    }
}

#[graph]
fn clips(
    x: Tensor<f32, M, N>,
    lo: Tensor<f32, M, 1>,
    hi: Tensor<f32, N>,
) -> (Tensor<f32, M, N>, Tensor<f32, M, N>) {
    (clip_by_value(x, lo, hi), clip_by_value(x, -1.0, 2.0))
}

#[graph]
fn clips_int(n: Tensor<i32, N>) -> Tensor<i32, N> {
    clip_by_value(n, -3, 5)
}

#[test]
fn clip_by_value_matches_the_reference() {
    for (m, n) in [(0, 3), (1, 1), (7, 5), (1023, 2)] {
        let x = Array2::from_shape_fn((m, n), |(i, j)| {
            if i == 0 && j == 0 {
                f32::NAN
            } else {
                (i as f32 * 0.37 - j as f32 * 1.3).sin() * 4.0
            }
        });
        let lo = Array2::from_shape_fn((m, 1), |(i, _)| -(i as f32 % 3.0));
        let hi = Array1::from_shape_fn(n, |j| 0.5 + j as f32);
        let want_a = Array2::from_shape_fn((m, n), |(i, j)| {
            let v = x[(i, j)];
            if v.is_nan() {
                v
            } else {
                v.min(hi[j]).max(lo[(i, 0)])
            }
        });
        let want_b = x.mapv(|v| if v.is_nan() { v } else { v.clamp(-1.0, 2.0) });
        for (how, (a, b)) in runs_ok!(clips(&x, &lo, &hi)) {
            let eq = |g: &Array2<f32>, w: &Array2<f32>| {
                g.iter()
                    .zip(w)
                    .all(|(p, q)| p == q || p.is_nan() && q.is_nan())
            };
            assert!(eq(&a, &want_a), "clip tensor bounds {how} {m}x{n}");
            assert!(eq(&b, &want_b), "clip literal bounds {how} {m}x{n}");
        }
    }
    let n = arr1(&[i32::MIN, -4, -3, 0, 5, 6, i32::MAX]);
    for (how, r) in runs_ok!(clips_int(&n)) {
        assert_eq!(r, arr1(&[-3, -3, -3, 0, 5, 5, 5]), "{how}");
    }
}

#[graph]
fn batch_norm(
    x: Tensor<f32, B, C>,
    mean: Tensor<f32, C>,
    var: Tensor<f32, C>,
    offset: Tensor<f32, C>,
    scale: Tensor<f32, C>,
) -> Tensor<f32, B, C> {
    batch_normalization(x, mean, var, offset, scale, 1e-3)
}

#[test]
fn batch_normalization_matches_the_reference() {
    for (b, c) in [(0, 3), (1, 1), (7, 5), (1023, 3)] {
        let x = Array2::from_shape_fn((b, c), |(i, j)| (i as f32 * 0.7 + j as f32).cos() * 3.0);
        let mean = Array1::from_shape_fn(c, |j| j as f32 * 0.5 - 1.0);
        let var = Array1::from_shape_fn(c, |j| 0.25 + j as f32);
        let offset = Array1::from_shape_fn(c, |j| 0.1 * j as f32);
        let scale = Array1::from_shape_fn(c, |j| 1.0 + 0.3 * j as f32);
        let [(_, comp), (_, eag), (_, run)] =
            runs_ok!(batch_norm(&x, &mean, &var, &offset, &scale));
        assert_eq!(comp, eag, "compiled vs eager {b}x{c}");
        assert_eq!(comp, run, "compiled vs run {b}x{c}");
        for ((i, j), &g) in comp.indexed_iter() {
            let (xv, m, v) = (x[(i, j)] as f64, mean[j] as f64, var[j] as f64);
            let want = (xv - m) / (v + 1e-3f32 as f64).sqrt() * scale[j] as f64 + offset[j] as f64;
            assert!(
                (g as f64 - want).abs() <= 1e-5 * (1.0 + want.abs()),
                "bn {b}x{c} at {i},{j}: {g} vs {want}"
            );
        }
    }
}

#[graph]
fn layer_norms(
    x: Tensor<f32, N, 64>,
    gamma: Tensor<f32, 64>,
    beta: Tensor<f32, 64>,
) -> (Tensor<f32, N, 64>, Tensor<f32, N, 64>) {
    (
        layer_norm(x, gamma, beta),
        layer_norm(x, gamma, beta, -1, 1e-5),
    )
}

/// W4 written by hand: `layer_norm` lowers to exactly this graph.
#[graph]
fn layer_norm_by_hand(
    x: Tensor<f32, N, 64>,
    gamma: Tensor<f32, 64>,
    beta: Tensor<f32, 64>,
) -> Tensor<f32, N, 64> {
    let mean = reduce_mean(x, -1, true);
    let d = x - mean;
    let var = reduce_mean(d * d, -1, true);
    d / sqrt(var + 1e-5) * gamma + beta
}

#[graph]
fn layer_norm_2axes(
    x: Tensor<f32, B, 4, 8>,
    gamma: Tensor<f32, 4, 8>,
    beta: Tensor<f32, 8>,
) -> Tensor<f32, B, 4, 8> {
    layer_norm(x, gamma, beta, [1, 2], 1e-5)
}

/// Layer norm of each row of `rows` (contiguous chunks of `len`) in f64.
fn ref_layer_norm(
    x: &[f32],
    len: usize,
    eps: f64,
    gamma: impl Fn(usize) -> f64,
    beta: impl Fn(usize) -> f64,
) -> Vec<f64> {
    let mut out = Vec::with_capacity(x.len());
    for row in x.chunks(len) {
        let mean = row.iter().map(|&v| v as f64).sum::<f64>() / len as f64;
        let var = row.iter().map(|&v| (v as f64 - mean).powi(2)).sum::<f64>() / len as f64;
        for (k, &v) in row.iter().enumerate() {
            out.push((v as f64 - mean) / (var + eps).sqrt() * gamma(k) + beta(k));
        }
    }
    out
}

#[test]
fn layer_norm_matches_the_reference() {
    let gamma = Array1::from_shape_fn(64, |k| 1.0 + 0.01 * k as f32);
    let beta = Array1::from_shape_fn(64, |k| -0.5 + 0.02 * k as f32);
    for n in [0, 1, 7, 1023] {
        let x = Array2::from_shape_fn((n, 64), |(i, k)| {
            ((i * 64 + k) as f32 * 0.013).sin() * 5.0 + (i % 7) as f32 * 0.1
        });
        let [(_, comp), (_, eag), (_, run)] = runs_ok!(layer_norms(&x, &gamma, &beta));
        assert_eq!(comp, run, "compiled vs run n={n}");
        assert_eq!(comp, eag, "compiled vs eager n={n}");
        let [(_, hand_c), (_, hand_e), _] = runs_ok!(layer_norm_by_hand(&x, &gamma, &beta));
        assert_eq!(
            comp.1, hand_c,
            "layer_norm is the hand-written W4, compiled, n={n}"
        );
        assert_eq!(
            eag.1, hand_e,
            "layer_norm is the hand-written W4, eager, n={n}"
        );
        let flat = x.as_slice().unwrap();
        for (got, eps) in [(&comp.0, 1e-3f32), (&comp.1, 1e-5f32)] {
            let want = ref_layer_norm(
                flat,
                64,
                eps as f64,
                |k| gamma[k] as f64,
                |k| beta[k] as f64,
            );
            for (g, w) in got.iter().zip(&want) {
                assert!(
                    (*g as f64 - w).abs() <= 2e-5 * (1.0 + w.abs()),
                    "layer_norm n={n} eps={eps}: {g} vs {w}"
                );
            }
        }
    }
    let x = Array3::from_shape_fn((3, 4, 8), |(b, i, j)| {
        (b * 32 + i * 8 + j) as f32 * 0.1 - 4.0
    });
    let g2 = Array2::from_shape_fn((4, 8), |(i, j)| 0.5 + (i * 8 + j) as f32 * 0.01);
    let b2 = Array1::from_shape_fn(8, |j| j as f32 * 0.1);
    for (how, y) in runs_ok!(layer_norm_2axes(&x, &g2, &b2)) {
        let want = ref_layer_norm(
            x.as_slice().unwrap(),
            32,
            1e-5,
            |k| g2[(k / 8, k % 8)] as f64,
            |k| b2[k % 8] as f64,
        );
        for (g, w) in y.iter().zip(&want) {
            assert!(
                (*g as f64 - w).abs() <= 2e-5 * (1.0 + w.abs()),
                "layer_norm [1, 2] {how}: {g} vs {w}"
            );
        }
    }
}
