//! Checks the elementwise kernels, the eager elementwise ops and the math functions against naive references.

mod harness;

use graph_runtime::math::*;
use harness::*;

/// Every 1021st f32 bit pattern (both signs, all exponents) plus edge values.
fn sweep() -> impl Iterator<Item = f32> {
    let edges = [
        0.0f32,
        -0.0,
        1.0,
        -1.0,
        f32::MIN_POSITIVE,
        1e-45,
        -1e-45,
        f32::MAX,
        f32::MIN,
        88.72,
        88.8,
        -87.5,
        -103.9,
        -104.0,
        0.625,
        -0.625,
        0.6249,
        1e-4,
        -1e-4,
        9.0,
        9.1,
    ];
    (0..u32::MAX / 1021)
        .map(|i| f32::from_bits(i.wrapping_mul(1021)))
        .chain(edges)
}

/// The largest ulp error of `f` against the correctly rounded `reference`, and where it happens.
fn max_ulp(f: impl Fn(f32) -> f32, reference: impl Fn(f64) -> f64) -> (u64, f32) {
    let mut worst = (0, 0.0);
    for x in sweep() {
        let want = reference(x as f64) as f32;
        let got = f(x);
        let d = ulp_f32(got, want);
        if d > worst.0 {
            worst = (d, x);
        }
    }
    worst
}

fn sigmoid_ref(x: f64) -> f64 {
    if x < 0.0 {
        let e = x.exp();
        e / (1.0 + e)
    } else {
        1.0 / (1.0 + (-x).exp())
    }
}

#[test]
fn f32_math_within_4_ulp() {
    let cases: [(&str, fn(f32) -> f32, fn(f64) -> f64); 7] = [
        ("exp", exp_f32, f64::exp),
        ("log", log_f32, f64::ln),
        ("tanh", tanh_f32, f64::tanh),
        ("sigmoid", sigmoid_f32, sigmoid_ref),
        ("sin", sin_f32, f64::sin),
        ("cos", cos_f32, f64::cos),
        ("rsqrt", rsqrt_f32, |x| 1.0 / x.sqrt()),
    ];
    for (name, f, r) in cases {
        let (ulp, at) = max_ulp(f, r);
        println!("{name}: max {ulp} ulp at {at:e}");
        assert!(ulp <= 4, "{name}: {ulp} ulp at {at:e}");
    }
}

#[test]
fn f32_math_special_values() {
    assert_eq!(exp_f32(f32::NEG_INFINITY), 0.0);
    assert_eq!(exp_f32(f32::INFINITY), f32::INFINITY);
    assert_eq!(exp_f32(88.8), f32::INFINITY);
    assert!(exp_f32(f32::NAN).is_nan());
    assert_eq!(log_f32(0.0), f32::NEG_INFINITY);
    assert_eq!(log_f32(-0.0), f32::NEG_INFINITY);
    assert!(log_f32(-1.0).is_nan());
    assert!(log_f32(f32::NEG_INFINITY).is_nan());
    assert!(log_f32(f32::NAN).is_nan());
    assert_eq!(log_f32(f32::INFINITY), f32::INFINITY);
    assert_eq!(tanh_f32(f32::INFINITY), 1.0);
    assert_eq!(tanh_f32(f32::NEG_INFINITY), -1.0);
    assert_eq!(tanh_f32(1e-30), 1e-30);
    assert!(tanh_f32(-0.0).is_sign_negative() && tanh_f32(-0.0) == 0.0);
    assert!(tanh_f32(f32::NAN).is_nan());
    assert_eq!(sigmoid_f32(f32::NEG_INFINITY), 0.0);
    assert_eq!(sigmoid_f32(f32::INFINITY), 1.0);
    assert!(sigmoid_f32(f32::NAN).is_nan());
    assert_eq!(sigmoid_f64(f64::NEG_INFINITY), 0.0);
    assert_eq!(rsqrt_f32(4.0), 0.5);
    assert_eq!(rsqrt_f64(0.0), f64::INFINITY);
}
