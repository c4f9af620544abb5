//! `relu6 sign floor ceil round log1p expm1 reciprocal` (unary ops with kernels of their own)
//! and `hard_sigmoid hard_swish silu swish softsign` (Keras' composites) through `#[graph]`:
//! compiled == eager == `run` bit for bit, and all against a naive reference written here
//! (plain f64 arithmetic, rounding written out by hand), on sizes 0, 1, 7 and 1023 with NaN,
//! the infinities, -0, halves and overflow.

// The references spell their comparisons out rather than call the functions under test.
#![allow(clippy::manual_clamp)]

use grafo::ndarray::{arr1, Array1};
use grafo::prelude::*;

#[path = "common/entry_points.rs"]
#[macro_use]
mod entry_points;

/// Round half to even, written out: the nearer integer, the even one on a tie, the sign of `v` kept.
fn ref_round(v: f64) -> f64 {
    if !v.is_finite() {
        return v;
    }
    let f = v.floor();
    let d = v - f;
    let r = if d < 0.5 {
        f
    } else if d > 0.5 {
        f + 1.0
    } else if f % 2.0 == 0.0 {
        f
    } else {
        f + 1.0
    };
    if r == 0.0 {
        0.0f64.copysign(v)
    } else {
        r
    }
}

fn ref_floor(v: f64) -> f64 {
    if !v.is_finite() || v == v.trunc() {
        return v;
    }
    let t = v.trunc();
    if v < 0.0 {
        t - 1.0
    } else {
        t
    }
}

fn ref_ceil(v: f64) -> f64 {
    if !v.is_finite() || v == v.trunc() {
        return v;
    }
    let t = v.trunc();
    if v > 0.0 {
        t + 1.0
    } else {
        // ceil(-0.5) is -0.
        0.0f64.copysign(v) + t
    }
}

fn ref_sign(v: f64) -> f64 {
    if v.is_nan() {
        v
    } else if v > 0.0 {
        1.0
    } else if v < 0.0 {
        -1.0
    } else {
        0.0
    }
}

fn ref_relu6(v: f64) -> f64 {
    if v.is_nan() {
        v
    } else if v < 0.0 {
        0.0
    } else if v > 6.0 {
        6.0
    } else {
        v
    }
}

/// `ln(1 + v)` by its series near 0 (where `1 + v` would round), `ln` elsewhere.
fn ref_log1p(v: f64) -> f64 {
    if v == 0.0 {
        v
    } else if v.abs() <= 0.25 {
        let mut sum = 0.0;
        let mut term = v;
        for k in 1..48 {
            sum += term / k as f64;
            term *= -v;
        }
        sum
    } else {
        (1.0 + v).ln()
    }
}

/// `e^v - 1` by its series near 0, `exp` elsewhere.
fn ref_expm1(v: f64) -> f64 {
    if v == 0.0 {
        v
    } else if v.abs() <= 0.25 {
        let mut sum = 0.0;
        let mut term = v;
        for k in 2..32 {
            sum += term;
            term *= v / k as f64;
        }
        sum
    } else {
        v.exp() - 1.0
    }
}

fn ref_sigmoid(v: f64) -> f64 {
    1.0 / (1.0 + (-v).exp())
}

fn ref_silu(v: f64) -> f64 {
    if v == f64::NEG_INFINITY {
        // -inf * 0: NaN, as the composite computes it.
        return f64::NAN;
    }
    v * ref_sigmoid(v)
}

/// Bitwise equality (NaN equal to NaN), for compiled == eager.
fn same_bits<T: Copy + Into<f64>>(a: &Array1<T>, b: &Array1<T>) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| {
            let (x, y): (f64, f64) = ((*x).into(), (*y).into());
            x.to_bits() == y.to_bits() || x.is_nan() && y.is_nan()
        })
}

/// `got` against the f64 reference of each input, rounded to `T` (so overflow and underflow
/// are the reference's too): within `rtol` (relative, plus `T`'s smallest normal as absolute
/// slack), NaN, the infinities and the sign of a zero exactly.
fn check<T: Copy + Into<f64> + Rounded>(
    what: &str,
    got: &Array1<T>,
    x: &Array1<T>,
    r: impl Fn(f64) -> f64,
    rtol: f64,
) {
    for (&g, &v) in got.iter().zip(x) {
        let (g, v): (f64, f64) = (g.into(), v.into());
        let want = T::rounded(r(v));
        let ok = if want.is_nan() {
            g.is_nan()
        } else if want.is_infinite() || want == 0.0 {
            g.to_bits() == want.to_bits()
        } else {
            (g - want).abs() <= rtol * want.abs() + T::SLACK
        };
        assert!(ok, "{what}({v:e}) = {g:e}, want {want:e}");
    }
}

/// An f64 reference value rounded to the element type, and the absolute slack of a comparison.
trait Rounded {
    const SLACK: f64;
    fn rounded(v: f64) -> f64;
}

impl Rounded for f32 {
    const SLACK: f64 = f32::MIN_POSITIVE as f64;
    fn rounded(v: f64) -> f64 {
        v as f32 as f64
    }
}

impl Rounded for f64 {
    const SLACK: f64 = f64::MIN_POSITIVE;
    fn rounded(v: f64) -> f64 {
        v
    }
}

#[graph]
fn steps(
    x: Tensor<f32, N>,
) -> (
    Tensor<f32, N>,
    Tensor<f32, N>,
    Tensor<f32, N>,
    Tensor<f32, N>,
    Tensor<f32, N>,
    Tensor<f32, N>,
) {
    (
        relu6(x),
        sign(x),
        floor(x),
        ceil(x),
        round(x),
        reciprocal(x),
    )
}

#[graph]
fn smooth(
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
        log1p(x),
        expm1(x),
        hard_sigmoid(x),
        hard_swish(x),
        silu(x),
        swish(x),
        softsign(x),
    )
}

/// One fused loop over several of the new ops (fusion must not change a bit).
#[graph]
fn fused(x: Tensor<f32, N>) -> Tensor<f32, N> {
    floor(x * 2.0) + round(x) * sign(x) - ceil(relu6(x))
        + log1p(abs(x)) * expm1(-abs(x))
        + reciprocal(x * x + 1.0)
        + hard_swish(x) * softsign(x)
}

/// Special values first, then a ramp over [-12, 12] that hits the halves.
fn inputs(n: usize) -> Array1<f32> {
    let special = [
        f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        -0.0,
        0.0,
        0.5,
        1.5,
        -2.5,
        2.5,
        -0.5,
        -0.4,
        -1.0,
        1e-30,
        -1e-30,
        1e-8,
        -3e-6,
        6.0,
        6.5,
        -3.0,
        3.0,
        89.0,
        88.7,
        -104.0,
        f32::MAX,
        1e-40,
        -1.5,
        8_388_609.0,
        -0.999_999_94,
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
fn unary_ops_match_eager_and_the_reference() {
    for n in [0, 1, 7, 1023] {
        let x = inputs(n);
        let [(_, c), (_, e), (_, r)] = runs_ok!(steps(&x));
        for (how, o) in [("eager", &e), ("run", &r)] {
            assert!(same_bits(&c.0, &o.0), "relu6 compiled vs {how}");
            assert!(same_bits(&c.1, &o.1), "sign compiled vs {how}");
            assert!(same_bits(&c.2, &o.2), "floor compiled vs {how}");
            assert!(same_bits(&c.3, &o.3), "ceil compiled vs {how}");
            assert!(same_bits(&c.4, &o.4), "round compiled vs {how}");
            assert!(same_bits(&c.5, &o.5), "reciprocal compiled vs {how}");
        }
        let (relu6_, sign_, floor_, ceil_, round_, recip) = c;
        // The exact ops are exact (relu6 and sign up to the sign of a zero relu6 keeps).
        check("relu6", &relu6_, &x, ref_relu6, 0.0);
        check("sign", &sign_, &x, ref_sign, 0.0);
        check("floor", &floor_, &x, ref_floor, 0.0);
        check("ceil", &ceil_, &x, ref_ceil, 0.0);
        check("round", &round_, &x, ref_round, 0.0);
        // f32 division is correctly rounded: within half an ulp of the f64 quotient.
        check("reciprocal", &recip, &x, |v| 1.0 / v, 1.2e-7);

        let [(_, c), (_, e), (_, r)] = runs_ok!(smooth(&x));
        for (how, o) in [("eager", &e), ("run", &r)] {
            assert!(same_bits(&c.0, &o.0), "log1p compiled vs {how}");
            assert!(same_bits(&c.1, &o.1), "expm1 compiled vs {how}");
            assert!(same_bits(&c.2, &o.2), "hard_sigmoid compiled vs {how}");
            assert!(same_bits(&c.3, &o.3), "hard_swish compiled vs {how}");
            assert!(same_bits(&c.4, &o.4), "silu compiled vs {how}");
            assert!(same_bits(&c.5, &o.5), "swish compiled vs {how}");
            assert!(same_bits(&c.6, &o.6), "softsign compiled vs {how}");
        }
        let (l1p, em1, hsig, hswish, silu_, swish_, ssign) = c;
        check("log1p", &l1p, &x, ref_log1p, 3e-7);
        check("expm1", &em1, &x, ref_expm1, 3e-7);
        // The composites round `x + 3` (and the product) in f32 first.
        check(
            "hard_sigmoid",
            &hsig,
            &x,
            |v| ref_relu6((v as f32 + 3.0) as f64) / 6.0,
            2e-7,
        );
        check(
            "hard_swish",
            &hswish,
            &x,
            |v| (v * ref_relu6((v as f32 + 3.0) as f64)) as f32 as f64 / 6.0,
            3e-7,
        );
        check("silu", &silu_, &x, ref_silu, 1e-6);
        assert!(same_bits(&silu_, &swish_), "swish is silu");
        check(
            "softsign",
            &ssign,
            &x,
            |v| {
                if v.is_infinite() {
                    f64::NAN
                } else {
                    v / (1.0 + v.abs())
                }
            },
            2e-7,
        );

        let [(_, c), (_, e), (_, r)] = runs_ok!(fused(&x));
        assert!(same_bits(&c, &e), "fused compiled vs eager, n={n}");
        assert!(same_bits(&c, &r), "fused compiled vs run, n={n}");
    }
}

#[test]
fn the_special_values_tensorflow_gives() {
    let x = arr1(&[
        -0.0f32,
        0.5,
        1.5,
        -2.5,
        -1.0,
        100.0,
        f32::NEG_INFINITY,
        -0.4,
    ]);
    let (relu6_, sign_, floor_, ceil_, round_, recip) = steps(&x).unwrap();
    let (l1p, em1, hsig, _, _, _, ssign) = smooth(&x).unwrap();
    let bits = |v: f32| v.to_bits();
    // sign(-0) is +0 (Eigen's sign, which TF calls); floor, ceil and round keep -0.
    assert_eq!(bits(sign_[0]), bits(0.0));
    assert_eq!(bits(floor_[0]), bits(-0.0));
    assert_eq!(bits(ceil_[0]), bits(-0.0));
    assert_eq!(bits(round_[0]), bits(-0.0));
    assert_eq!(bits(relu6_[0]), bits(-0.0));
    assert_eq!(bits(l1p[0]), bits(-0.0));
    assert_eq!(bits(em1[0]), bits(-0.0));
    assert_eq!(recip[0], f32::NEG_INFINITY);
    // Half to even.
    assert_eq!(&round_.to_vec()[1..4], &[0.0, 2.0, -2.0]);
    assert_eq!(bits(round_[7]), bits(-0.0));
    assert_eq!(bits(ceil_[7]), bits(-0.0));
    assert_eq!(floor_[7], -1.0);
    assert_eq!(l1p[4], f32::NEG_INFINITY, "log1p(-1)");
    assert_eq!(em1[5], f32::INFINITY, "expm1(100) overflows");
    assert_eq!(em1[6], -1.0, "expm1(-inf)");
    assert_eq!(
        (relu6_[5], sign_[6], hsig[5], hsig[6]),
        (6.0, -1.0, 1.0, 0.0)
    );
    assert!(ssign[6].is_nan(), "softsign(-inf) is NaN, as TF's");
    let tiny = arr1(&[1e-7f32, -1e-7]);
    let (l, e, ..) = smooth(&tiny).unwrap();
    // Accurate near 0, where ln(1 + x) and e^x - 1 would lose every digit.
    assert!((l[0] as f64 - 1e-7f32 as f64 * (1.0 - 0.5e-7)).abs() < 1e-14);
    assert!((e[1] as f64 - (-1e-7f32 as f64) * (1.0 - 0.5e-7)).abs() < 1e-14);
    let big = arr1(&[f32::INFINITY, -2.0, -1.5]);
    let (l, ..) = smooth(&big).unwrap();
    assert_eq!(l[0], f32::INFINITY);
    assert!(l[1].is_nan() && l[2].is_nan(), "log1p below -1 is NaN");
}

#[graph]
fn steps_f64(
    x: Tensor<f64, N>,
) -> (
    Tensor<f64, N>,
    Tensor<f64, N>,
    Tensor<f64, N>,
    Tensor<f64, N>,
    Tensor<f64, N>,
    Tensor<f64, N>,
    Tensor<f64, N>,
    Tensor<f64, N>,
) {
    (
        relu6(x),
        sign(x),
        floor(x),
        ceil(x),
        round(x),
        reciprocal(x),
        log1p(x),
        expm1(x),
    )
}

#[test]
fn f64_ops_match_eager_and_the_reference() {
    for n in [0, 1, 7, 1023] {
        let x = inputs(n).mapv(|v| v as f64);
        let [(_, c), (_, e), (_, r)] = runs_ok!(steps_f64(&x));
        for (how, o) in [("eager", &e), ("run", &r)] {
            let pairs = [
                (&c.0, &o.0),
                (&c.1, &o.1),
                (&c.2, &o.2),
                (&c.3, &o.3),
                (&c.4, &o.4),
                (&c.5, &o.5),
                (&c.6, &o.6),
                (&c.7, &o.7),
            ];
            for (k, (a, b)) in pairs.into_iter().enumerate() {
                assert!(same_bits(a, b), "output {k} compiled vs {how}, n={n}");
            }
        }
        check("relu6 f64", &c.0, &x, ref_relu6, 0.0);
        check("sign f64", &c.1, &x, ref_sign, 0.0);
        check("floor f64", &c.2, &x, ref_floor, 0.0);
        check("ceil f64", &c.3, &x, ref_ceil, 0.0);
        check("round f64", &c.4, &x, ref_round, 0.0);
        check("reciprocal f64", &c.5, &x, |v| 1.0 / v, 0.0);
        check("log1p f64", &c.6, &x, ref_log1p, 1e-15);
        check("expm1 f64", &c.7, &x, ref_expm1, 1e-15);
    }
}

#[graph]
fn int_steps(
    n: Tensor<i32, N>,
    m: Tensor<i64, N>,
) -> (
    Tensor<i32, N>,
    Tensor<i32, N>,
    Tensor<i32, N>,
    Tensor<i64, N>,
    Tensor<i64, N>,
) {
    (sign(n), round(n), relu6(n), sign(m), relu6(m))
}

#[test]
fn integer_sign_round_and_relu6() {
    for len in [0usize, 1, 7, 1023] {
        let special = [i32::MIN, -7, -1, 0, 1, 5, 6, 7, i32::MAX];
        let n = Array1::from_shape_fn(len, |i| {
            special.get(i).copied().unwrap_or(i as i32 * 37 - 500)
        });
        let m = n.mapv(|v| v as i64 * 3_000_000_000);
        let [(_, c), (_, e), (_, r)] = runs_ok!(int_steps(&n, &m));
        assert_eq!(c, e, "compiled vs eager, n={len}");
        assert_eq!(c, r, "compiled vs run, n={len}");
        for i in 0..len {
            let (v, w) = (n[i], m[i]);
            let s = if v > 0 {
                1
            } else if v < 0 {
                -1
            } else {
                0
            };
            assert_eq!(c.0[i], s, "sign({v})");
            assert_eq!(c.1[i], v, "round({v})");
            assert_eq!(
                c.2[i],
                if v < 0 {
                    0
                } else if v > 6 {
                    6
                } else {
                    v
                },
                "relu6({v})"
            );
            assert_eq!(c.3[i], s as i64, "sign({w})");
            assert_eq!(
                c.4[i],
                if w < 0 {
                    0
                } else if w > 6 {
                    6
                } else {
                    w
                },
                "relu6({w})"
            );
        }
    }
}
