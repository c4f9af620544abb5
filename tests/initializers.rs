//! `Name::init(seed)`: each field drawn by its initialiser as Keras defines it, checked by the
//! statistics of large tensors (mean, standard deviation, bounds), and reproducible from the
//! seed and the field's path.

use grafo::init::{fans, TRUNCATED_STDDEV};
use grafo::prelude::*;

#[graph]
mod inits {
    pub struct All {
        /// Keras' default kernel initialiser.
        pub dense: Tensor<f32, 256, 512>,
        /// A bias: zeros by default.
        pub bias: Tensor<f32, 512>,
        #[init(he_normal)]
        pub conv: Tensor<f32, 3, 3, 64, 128>,
        #[init(he_uniform)]
        pub he_u: Tensor<f32, 400, 300>,
        #[init(glorot_normal)]
        pub glorot_n: Tensor<f64, 300, 500>,
        #[init(lecun_normal)]
        pub lecun_n: Tensor<f32, 200, 600>,
        #[init(lecun_uniform)]
        pub lecun_u: Tensor<f32, 200, 600>,
        #[init(truncated_normal(0.5, 0.1))]
        pub trunc: Tensor<f32, 400, 400>,
        #[init(truncated_normal)]
        pub trunc_default: Tensor<f32, 100000>,
        #[init(random_normal(1.0, 2.0))]
        pub normal: Tensor<f32, 400, 400>,
        #[init(uniform(-0.3, 0.7))]
        pub uniform: Tensor<f32, 400, 400>,
        #[init(ones)]
        pub scale: Tensor<f32, 64>,
        #[init(constant(-2.5))]
        pub shift: Tensor<f64, 3, 2>,
        pub steps: Tensor<i64, 4>,
        #[init(ones)]
        pub mask: Tensor<bool, 3>,
    }

    /// Another struct with a field at one of `All`'s paths: the same seed gives it the same values.
    pub struct Other {
        pub extra: Tensor<f32, 7>,
        pub dense: Tensor<f32, 256, 512>,
    }

    pub fn use_all(x: Tensor<f32, B, 256>, p: All) -> Tensor<f32, B, 512> {
        matmul(x, p.dense) + p.bias
    }
}

/// Mean and (population) standard deviation.
fn stats(values: impl Iterator<Item = f64> + Clone) -> (f64, f64, f64, f64) {
    let n = values.clone().count() as f64;
    let mean = values.clone().sum::<f64>() / n;
    let var = values.clone().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n;
    let lo = values.clone().fold(f64::INFINITY, f64::min);
    let hi = values.fold(f64::NEG_INFINITY, f64::max);
    (mean, var.sqrt(), lo, hi)
}

fn check<D: ndarray::Dimension>(
    name: &str,
    a: &Array<f32, D>,
    mean: f64,
    std: f64,
    bounds: (f64, f64),
) {
    let (m, s, lo, hi) = stats(a.iter().map(|&v| f64::from(v)));
    let n = a.len() as f64;
    // The mean within 5 standard errors, the stddev within 2%.
    assert!(
        (m - mean).abs() < 5.0 * std / n.sqrt(),
        "{name}: mean {m}, expected {mean}"
    );
    assert!(
        (s - std).abs() < 0.02 * std,
        "{name}: stddev {s}, expected {std}"
    );
    assert!(
        lo >= bounds.0 && hi <= bounds.1,
        "{name}: [{lo}, {hi}] outside {bounds:?}"
    );
    // The bounds are approached: the draws fill their range.
    let width = bounds.1 - bounds.0;
    if width.is_finite() {
        assert!(
            lo < bounds.0 + 0.05 * width && hi > bounds.1 - 0.05 * width,
            "{name}: [{lo}, {hi}]"
        );
    }
}

#[test]
fn fans_are_keras() {
    assert_eq!(fans(&[256, 512]), (256.0, 512.0));
    assert_eq!(
        fans(&[3, 3, 64, 128]),
        (576.0, 1152.0),
        "HWIO: receptive field times in / out"
    );
    assert_eq!(fans(&[5, 7, 2]), (35.0, 10.0));
    assert_eq!(fans(&[10]), (10.0, 10.0));
    assert_eq!(fans(&[]), (1.0, 1.0));
}

#[test]
fn each_initialiser_draws_as_keras_defines_it() {
    let p = inits::All::init(2024);
    let inf = f64::INFINITY;

    // glorot_uniform: U(-l, l), l = sqrt(6 / (fan_in + fan_out)); stddev l / sqrt(3).
    let l = (6.0f64 / (256.0 + 512.0)).sqrt();
    check(
        "dense (glorot_uniform)",
        &p.dense,
        0.0,
        l / 3f64.sqrt(),
        (-l, l),
    );
    assert!(
        p.bias.iter().all(|&v| v == 0.0),
        "a bias is zeros by default"
    );

    // he_normal: truncated normal of stddev sqrt(2 / fan_in) / 0.8796, which leaves sqrt(2 / fan_in).
    let fan_in = 3.0 * 3.0 * 64.0;
    let s = (2.0f64 / fan_in).sqrt();
    let bound = 2.0 * s / TRUNCATED_STDDEV;
    check("conv (he_normal)", &p.conv, 0.0, s, (-bound, bound));

    let l = (6.0f64 / 400.0).sqrt();
    check("he_uniform", &p.he_u, 0.0, l / 3f64.sqrt(), (-l, l));

    let s = (2.0f64 / (300.0 + 500.0)).sqrt();
    let bound = 2.0 * s / TRUNCATED_STDDEV;
    check(
        "glorot_normal",
        &p.glorot_n.mapv(|v| v as f32),
        0.0,
        s,
        (-bound - 1e-6, bound + 1e-6),
    );

    let s = (1.0f64 / 200.0).sqrt();
    check(
        "lecun_normal",
        &p.lecun_n,
        0.0,
        s,
        (-2.0 * s / TRUNCATED_STDDEV, 2.0 * s / TRUNCATED_STDDEV),
    );
    let l = (3.0f64 / 200.0).sqrt();
    check("lecun_uniform", &p.lecun_u, 0.0, l / 3f64.sqrt(), (-l, l));

    // truncated_normal(mean, stddev): N(mean, stddev) re-drawn beyond 2 stddev, so the values
    // lie in mean +- 2 stddev and their stddev is 0.8796 stddev.
    check(
        "truncated_normal(0.5, 0.1)",
        &p.trunc,
        0.5,
        0.1 * TRUNCATED_STDDEV,
        (0.3 - 1e-6, 0.7 + 1e-6),
    );
    check(
        "truncated_normal (Keras' 0, 0.05)",
        &p.trunc_default,
        0.0,
        0.05 * TRUNCATED_STDDEV,
        (-0.1 - 1e-6, 0.1 + 1e-6),
    );

    check("random_normal(1, 2)", &p.normal, 1.0, 2.0, (-inf, inf));
    let (lo, hi) = (-0.3f64, 0.7f64);
    check(
        "uniform(-0.3, 0.7)",
        &p.uniform,
        0.2,
        (hi - lo) / 12f64.sqrt(),
        (lo, hi),
    );

    assert!(p.scale.iter().all(|&v| v == 1.0));
    assert!(p.shift.iter().all(|&v| v == -2.5));
    assert!(p.steps.iter().all(|&v| v == 0));
    assert!(p.mask.iter().all(|&v| v));
}

#[test]
fn init_is_reproducible_from_the_seed_and_the_path() -> Result<(), grafo::Error> {
    let (a, b, c) = (
        inits::All::init(7),
        inits::All::init(7),
        inits::All::init(8),
    );
    assert_eq!(a.dense, b.dense);
    assert_eq!(a.conv, b.conv);
    assert_eq!(a.uniform, b.uniform);
    assert_ne!(a.dense, c.dense, "another seed, other values");
    // Fields of one struct are drawn from different streams.
    assert_ne!(
        a.lecun_n.slice(s![.., ..200]),
        a.lecun_u.slice(s![.., ..200])
    );
    // A field's values depend on the seed and its path only, not on the fields around it.
    let other = inits::Other::init(7);
    assert_eq!(other.dense, a.dense);
    // The model runs on what init gives.
    let x = Array2::<f32>::ones((2, 256));
    let y = inits::use_all(&x, &a)?;
    let expected = x.dot(&a.dense) + &a.bias;
    assert!(y
        .iter()
        .zip(&expected)
        .all(|(u, v)| (u - v).abs() <= 1e-4 * (1.0 + v.abs())));
    Ok(())
}
