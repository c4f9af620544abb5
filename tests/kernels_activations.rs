//! Accuracy of the math functions added for issue 10 (`erf`, `gelu`, `softplus`, `elu`) against
//! references written here in f64 (series and continued fractions, not the functions under test).

mod harness;

use graph_runtime::math::*;
use harness::ulp_f32;

/// `erf(x)` in f64 from two independent formulas: for `|x| ≤ 1.5` the all-positive series
/// `2/√π · e^{-x²} · Σ 2ⁿ x^{2n+1} / (2n+1)!!` (no cancellation), beyond it
/// `1 - erfc(x)` with `erfc` from its continued fraction (evaluated bottom-up).
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
        1.0 - ref_erfc_large(t)
    };
    v.copysign(x)
}

/// `erfc(t)` for `t ≥ 1.5`: `e^{-t²}/√π · 1/(t + (1/2)/(t + 1/(t + (3/2)/(t + ...))))`.
fn ref_erfc_large(t: f64) -> f64 {
    // The fraction converges faster for larger t: 1500 levels at 1.5, fewer beyond.
    let levels = (3400.0 / (t * t)) as usize + 60;
    let mut f = t;
    for k in (1..=levels).rev() {
        f = t + (k as f64 / 2.0) / f;
    }
    (-t * t).exp() / std::f64::consts::PI.sqrt() / f
}

/// `1 + erf(x)` without cancellation for negative `x`.
fn ref_one_plus_erf(x: f64) -> f64 {
    if x < -1.5 {
        ref_erfc_large(-x)
    } else {
        1.0 + ref_erf(x)
    }
}

/// A dense sweep of f32 values: every 257th bit pattern of magnitude below 12, both signs, plus edges.
fn dense_f32() -> Vec<f32> {
    let mut xs: Vec<f32> = (0..12.0f32.to_bits())
        .step_by(257)
        .flat_map(|b| [f32::from_bits(b), -f32::from_bits(b)])
        .collect();
    xs.extend([
        0.875,
        -0.875,
        0.874_999_9,
        4.0,
        10.0,
        1e-30,
        1e-45,
        f32::MIN_POSITIVE,
    ]);
    xs
}

fn worst_f32(xs: &[f32], f: impl Fn(f32) -> f32, r: impl Fn(f64) -> f64) -> (u64, f32) {
    xs.iter()
        .map(|&x| (ulp_f32(f(x), r(x as f64) as f32), x))
        .max_by_key(|p| p.0)
        .unwrap_or((0, 0.0))
}

#[test]
fn erf_f32_is_within_2_ulp() {
    let (ulp, at) = worst_f32(&dense_f32(), erf_f32, ref_erf);
    println!("erf_f32: max {ulp} ulp at {at:e}");
    assert!(ulp <= 2, "erf_f32: {ulp} ulp at {at:e}");
}

#[test]
fn erf_special_values() {
    assert_eq!(erf_f32(f32::INFINITY), 1.0);
    assert_eq!(erf_f32(f32::NEG_INFINITY), -1.0);
    assert_eq!(erf_f32(f32::MAX), 1.0);
    assert!(erf_f32(f32::NAN).is_nan());
    assert_eq!(erf_f32(-0.0).to_bits(), (-0.0f32).to_bits());
    assert_eq!(erf_f64(f64::INFINITY), 1.0);
    assert_eq!(erf_f64(f64::NEG_INFINITY), -1.0);
    assert!(erf_f64(f64::NAN).is_nan());
    assert_eq!(erf_f64(-0.0).to_bits(), (-0.0f64).to_bits());
    assert_eq!(erf_f64(1e-300), 1e-300 * std::f64::consts::FRAC_2_SQRT_PI);
}

/// Relative distance in f64 ulps (of the reference's magnitude).
fn ulp_f64(got: f64, want: f64) -> f64 {
    if got == want {
        return 0.0;
    }
    let ulp = f64::EPSILON * want.abs().max(f64::MIN_POSITIVE);
    (got - want).abs() / ulp
}

#[test]
fn erf_f64_agrees_with_the_series_within_4_ulp() {
    let mut worst = (0.0f64, 0.0f64);
    let mut x = -7.0f64;
    while x <= 7.0 {
        let d = ulp_f64(erf_f64(x), ref_erf(x));
        if d > worst.0 {
            worst = (d, x);
        }
        x += 1.0 / 1021.0;
    }
    println!("erf_f64: max {:.2} ulp at {:e}", worst.0, worst.1);
    assert!(worst.0 <= 4.0, "erf_f64: {} ulp at {}", worst.0, worst.1);
}

fn ref_gelu(x: f64) -> f64 {
    0.5 * x * ref_one_plus_erf(x / std::f64::consts::SQRT_2)
}

/// `0.5 x (1 + tanh(u))`, written as `x / (1 + e^{-2u})` so that the reference does not cancel.
fn ref_gelu_tanh(x: f64) -> f64 {
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

#[test]
fn gelu_softplus_elu_f32_are_accurate_including_the_negative_tail() {
    let xs: Vec<f32> = (-4000..=4000).map(|i| i as f32 / 100.0).collect();
    let near: Vec<f32> = xs.iter().copied().filter(|&x| x >= -5.0).collect();
    let (g, gat) = worst_f32(&near, gelu_f32, ref_gelu);
    println!("gelu_f32 on [-5, 40]: max {g} ulp at {gat}");
    assert!(g <= 4, "gelu_f32: {g} ulp at {gat}");
    // Below -5 the rounding of `x / sqrt(2)` and of its square is amplified by `x²` in
    // `e^{-x²/2}`: a relative error of about `x² · 2^-24`, not an ulp bound (the formula
    // TensorFlow uses cancels to 0 or to noise there).
    for &x in xs.iter().filter(|&&x| x < -5.0) {
        let (got, want) = (gelu_f32(x) as f64, ref_gelu(x as f64));
        let rel = ((got - want) / want).abs();
        let bound = 4.0 * (x as f64).powi(2) * f64::from(f32::EPSILON) + 1e-6;
        assert!(
            rel <= bound || want.abs() < 1e-37,
            "gelu_f32({x}) = {got}, want {want}"
        );
    }
    // The tanh form goes through sigmoid (2 ulp) and a cubic: a few ulp while `|2u|` is
    // small; in the tail the rounding of `u` is amplified by `|2u|` in `e^{2u}`.
    let near: Vec<f32> = xs.iter().copied().filter(|&x| x >= -3.0).collect();
    let (t, tat) = worst_f32(&near, gelu_tanh_f32, ref_gelu_tanh);
    println!("gelu_tanh_f32 on [-3, 40]: max {t} ulp at {tat}");
    assert!(t <= 12, "gelu_tanh_f32: {t} ulp at {tat}");
    for &x in xs.iter().filter(|&&x| x < -3.0) {
        let (got, want) = (gelu_tanh_f32(x) as f64, ref_gelu_tanh(x as f64));
        let u = (2.0 / std::f64::consts::PI).sqrt() * (x as f64 + 0.044715 * (x as f64).powi(3));
        let bound = 8.0 * (2.0 * u).abs() * f64::from(f32::EPSILON) + 1e-6;
        let rel = ((got - want) / want).abs();
        assert!(
            rel <= bound || want.abs() < 1e-37,
            "gelu_tanh_f32({x}) = {got}, want {want}"
        );
    }
    let (s, sat) = worst_f32(&xs, softplus_f32, ref_softplus);
    println!("softplus_f32: max {s} ulp at {sat}");
    // TensorFlow's lower threshold returns `e^x` for `x < log(eps) + 2 = -13.94`, which
    // differs from `ln(1 + e^x)` by `e^x / 2` relative (up to 7 ulp just below it).
    assert!(s <= 8, "softplus_f32: {s} ulp at {sat}");
    let above: Vec<f32> = xs.iter().copied().filter(|&x| x > -13.9).collect();
    let (s2, s2at) = worst_f32(&above, softplus_f32, ref_softplus);
    println!("softplus_f32 above the threshold: max {s2} ulp at {s2at}");
    assert!(s2 <= 4, "softplus_f32: {s2} ulp at {s2at}");
    let (e, eat) = worst_f32(&xs, elu_f32, |x| if x > 0.0 { x } else { x.exp_m1() });
    println!("elu_f32: max {e} ulp at {eat}");
    assert!(e <= 4, "elu_f32: {e} ulp at {eat}");
    // Near zero, where `e^x - 1` and `ln(1 + e)` cancel without their corrections.
    let tiny: Vec<f32> = (1..2000).map(|i| i as f32 * 1e-6 - 1e-3).collect();
    let (e0, e0at) = worst_f32(&tiny, elu_f32, |x| if x > 0.0 { x } else { x.exp_m1() });
    assert!(e0 <= 4, "elu_f32 near 0: {e0} ulp at {e0at:e}");
    let (g0, g0at) = worst_f32(&tiny, gelu_f32, ref_gelu);
    assert!(g0 <= 4, "gelu_f32 near 0: {g0} ulp at {g0at:e}");
}

#[test]
fn activation_special_values() {
    for (name, f) in [
        ("gelu", gelu_f32 as fn(f32) -> f32),
        ("gelu_tanh", gelu_tanh_f32),
        ("softplus", softplus_f32),
        ("elu", elu_f32),
    ] {
        assert!(f(f32::NAN).is_nan(), "{name}(NaN)");
        assert_eq!(f(f32::INFINITY), f32::INFINITY, "{name}(inf)");
    }
    assert_eq!(gelu_f32(f32::NEG_INFINITY), 0.0);
    assert_eq!(gelu_tanh_f32(f32::NEG_INFINITY), 0.0);
    assert_eq!(softplus_f32(f32::NEG_INFINITY), 0.0);
    assert_eq!(elu_f32(f32::NEG_INFINITY), -1.0);
    assert_eq!(elu_f32(-0.0).to_bits(), (-0.0f32).to_bits());
    assert_eq!(softplus_f32(100.0), 100.0);
    assert_eq!(softplus_f64(1000.0), 1000.0);
    assert_eq!(elu_f64(f64::NEG_INFINITY), -1.0);
}
