//! Integer `/ %`, `floordiv floormod truncatediv truncatemod`, integer `pow`, and the bool
//! operators through `#[graph]`: compiled == eager == `run` == a naive reference written here,
//! on sizes 0, 1, 7 and 1023 with broadcasting; and the run-time errors TensorFlow raises
//! (a zero divisor, a negative integer exponent), with the op's name and source line.

use grafo::ndarray::{Array1, Array2};
use grafo::prelude::*;

#[path = "common/entry_points.rs"]
#[macro_use]
mod entry_points;

/// Naive truncated division and remainder (Rust's `/` and `%`, wrapping `MIN / -1`).
fn ref_trunc_div(x: i64, y: i64, bits: u32) -> i64 {
    let q = x as i128 / y as i128;
    wrap(q, bits)
}
fn ref_trunc_mod(x: i64, y: i64) -> i64 {
    (x as i128 % y as i128) as i64
}
/// Naive floored division: the largest integer `q` with `q * y <= x` for `y > 0` (mirrored for `y < 0`).
fn ref_floor_div(x: i64, y: i64, bits: u32) -> i64 {
    let (x, y) = (x as i128, y as i128);
    let mut q = x / y;
    if q * y != x && ((x < 0) != (y < 0)) {
        q -= 1;
    }
    wrap(q, bits)
}
fn ref_floor_mod(x: i64, y: i64) -> i64 {
    let (x, y) = (x as i128, y as i128);
    let r = x - (x.div_euclid(y) * y);
    // Euclid's remainder is non-negative; floor's has the sign of y.
    let r = if y < 0 && r != 0 { r + y } else { r };
    r as i64
}
fn wrap(v: i128, bits: u32) -> i64 {
    if bits == 32 {
        v as i32 as i64
    } else {
        v as i64
    }
}

#[graph]
fn int_division_family(
    a: Tensor<i32, N>,
    b: Tensor<i32, N>,
) -> (
    Tensor<i32, N>,
    Tensor<i32, N>,
    Tensor<i32, N>,
    Tensor<i32, N>,
    Tensor<i32, N>,
    Tensor<i32, N>,
) {
    (
        a / b,
        a % b,
        truncatediv(a, b),
        truncatemod(a, b),
        floordiv(a, b),
        floormod(a, b),
    )
}

#[graph]
fn int64_division_family(
    a: Tensor<i64, N>,
    b: Tensor<i64, N>,
) -> (
    Tensor<i64, N>,
    Tensor<i64, N>,
    Tensor<i64, N>,
    Tensor<i64, N>,
) {
    (a / b, a % b, floordiv(a, b), floormod(a, b))
}

/// Operands with every sign combination, exact and inexact quotients, and `MIN` by `-1`.
fn operands_i32(n: usize) -> (Array1<i32>, Array1<i32>) {
    let special = [
        (7, 2),
        (-7, 2),
        (7, -2),
        (-7, -2),
        (6, 3),
        (-6, 3),
        (0, -5),
        (i32::MIN, -1),
        (i32::MIN, 1),
        (i32::MAX, -1),
        (i32::MIN, i32::MAX),
        (1, i32::MIN),
    ];
    let a = Array1::from_shape_fn(n, |i| {
        if i < special.len() {
            special[i].0
        } else {
            (i as i32).wrapping_mul(2_654_435_761u32 as i32) >> 7
        }
    });
    let b = Array1::from_shape_fn(n, |i| {
        if i < special.len() {
            special[i].1
        } else {
            let v = ((i as i32).wrapping_mul(40_503) >> 3) % 97;
            if v == 0 {
                13
            } else {
                v
            }
        }
    });
    (a, b)
}

#[test]
fn integer_division_family_matches_the_reference() {
    for n in [0, 1, 7, 12, 1023] {
        let (a, b) = operands_i32(n);
        let z = |g: &dyn Fn(i64, i64) -> i64| -> Array1<i32> {
            a.iter()
                .zip(&b)
                .map(|(&x, &y)| g(x as i64, y as i64) as i32)
                .collect()
        };
        let div = z(&|x, y| ref_trunc_div(x, y, 32));
        let rem = z(&ref_trunc_mod);
        let fdiv = z(&|x, y| ref_floor_div(x, y, 32));
        let fmod = z(&ref_floor_mod);
        for (how, r) in runs!(int_division_family(&a, &b)) {
            let (d, m, td, tm, fd, fm) = r.unwrap();
            assert_eq!(d, div, "/ {how} n={n}");
            assert_eq!(m, rem, "% {how} n={n}");
            assert_eq!(td, div, "truncatediv {how} n={n}");
            assert_eq!(tm, rem, "truncatemod {how} n={n}");
            assert_eq!(fd, fdiv, "floordiv {how} n={n}");
            assert_eq!(fm, fmod, "floormod {how} n={n}");
        }
    }
    // The wrapping cases, spelled out: MIN / -1 = MIN, MIN % -1 = 0 (no panic).
    let (a, b) = (arr1(&[i32::MIN]), arr1(&[-1]));
    let (d, m, _, _, fd, fm) = int_division_family(&a, &b).unwrap();
    assert_eq!((d[0], m[0], fd[0], fm[0]), (i32::MIN, 0, i32::MIN, 0));
    let (a, b) = (
        arr1(&[i64::MIN, -7, 7, i64::MAX]),
        arr1(&[-1i64, 2, -2, i64::MIN]),
    );
    for (how, r) in runs!(int64_division_family(&a, &b)) {
        let (d, m, fd, fm) = r.unwrap();
        let z = |g: &dyn Fn(i64, i64) -> i64| -> Array1<i64> {
            a.iter().zip(&b).map(|(&x, &y)| g(x, y)).collect()
        };
        assert_eq!(d, z(&|x, y| ref_trunc_div(x, y, 64)), "i64 / {how}");
        assert_eq!(m, z(&ref_trunc_mod), "i64 % {how}");
        assert_eq!(fd, z(&|x, y| ref_floor_div(x, y, 64)), "i64 floordiv {how}");
        assert_eq!(fm, z(&ref_floor_mod), "i64 floormod {how}");
    }
}

#[graph]
fn int_mod_broadcast(
    a: Tensor<i32, M, N>,
    col: Tensor<i32, M, 1>,
    s: Tensor<i32>,
) -> (Tensor<i32, M, N>, Tensor<i32, M, N>, Tensor<i32, M, N>) {
    (a % col, floormod(a, s), floordiv(a, 3) + a % 4)
}

#[test]
fn integer_remainders_broadcast() {
    let a = Array2::from_shape_fn((7, 5), |(i, j)| (i as i32 * 5 + j as i32) * 37 - 600);
    let col = Array2::from_shape_fn((7, 1), |(i, _)| [3, -3, 7, -7, 1, 100, -2][i]);
    let s = arr0(-6);
    let want_a = Array2::from_shape_fn((7, 5), |(i, j)| {
        ref_trunc_mod(a[(i, j)] as i64, col[(i, 0)] as i64) as i32
    });
    let want_b = a.mapv(|x| ref_floor_mod(x as i64, -6) as i32);
    let want_c = a.mapv(|x| (ref_floor_div(x as i64, 3, 32) + ref_trunc_mod(x as i64, 4)) as i32);
    for (how, r) in runs!(int_mod_broadcast(&a, &col, &s)) {
        let (ra, rb, rc) = r.unwrap();
        assert_eq!(ra, want_a, "a % col {how}");
        assert_eq!(rb, want_b, "floormod(a, s) {how}");
        assert_eq!(rc, want_c, "floordiv(a, 3) + a % 4 {how}");
    }
}

#[graph]
fn float_division_family(
    a: Tensor<f32, N>,
    b: Tensor<f32, N>,
) -> (
    Tensor<f32, N>,
    Tensor<f32, N>,
    Tensor<f32, N>,
    Tensor<f32, N>,
    Tensor<f32, N>,
) {
    (
        a % b,
        truncatemod(a, b),
        truncatediv(a, b),
        floordiv(a, b),
        floormod(a, b),
    )
}

/// TensorFlow's floormod on floats: `fmod`, moved by `y` when the signs differ.
fn ref_floormod_f32(x: f32, y: f32) -> f32 {
    let r = x % y;
    if r != 0.0 && (r < 0.0) != (y < 0.0) {
        r + y
    } else {
        r
    }
}

#[test]
fn float_division_family_matches_the_reference() {
    let a = arr1(&[
        7.5f32,
        -7.5,
        7.5,
        -7.5,
        -0.0,
        0.0,
        3.0,
        f32::INFINITY,
        1.0,
        f32::NAN,
        5.0,
        -6.0,
    ]);
    let b = arr1(&[
        2.0f32,
        2.0,
        -2.0,
        -2.0,
        3.0,
        -3.0,
        0.0,
        2.0,
        f32::INFINITY,
        1.0,
        f32::NAN,
        3.0,
    ]);
    let z = |g: fn(f32, f32) -> f32| -> Array1<f32> {
        a.iter().zip(&b).map(|(&x, &y)| g(x, y)).collect()
    };
    let same = |got: &Array1<f32>, want: &Array1<f32>| {
        got.iter()
            .zip(want)
            .all(|(g, w)| g.to_bits() == w.to_bits() || g.is_nan() && w.is_nan())
    };
    for (how, r) in runs!(float_division_family(&a, &b)) {
        let (m, tm, td, fd, fm) = r.unwrap();
        let rem = z(|x, y| x % y);
        assert!(same(&m, &rem), "% {how}: {m} vs {rem}");
        assert!(same(&tm, &rem), "truncatemod {how}");
        let want = z(|x, y| (x / y).trunc());
        assert!(same(&td, &want), "truncatediv {how}: {td} vs {want}");
        let want = z(|x, y| (x / y).floor());
        assert!(same(&fd, &want), "floordiv {how}: {fd} vs {want}");
        let want = z(ref_floormod_f32);
        assert!(same(&fm, &want), "floormod {how}: {fm} vs {want}");
    }
    // Spot values against TensorFlow's documented results.
    let (_, _, _, fd, fm) = float_division_family(&a, &b).unwrap();
    assert_eq!((fd[1], fm[1]), (-4.0, 0.5));
    assert_eq!((fd[2], fm[2]), (-4.0, -0.5));
}

// ----- errors: integer division by zero and negative powers ----------------------------------

const DIV_LINE: u32 = line!() + 3;
#[graph]
fn divides(a: Tensor<i32, N>, b: Tensor<i32, N>) -> Tensor<i32, N> {
    a / b + 1
}

const MOD_LINE: u32 = line!() + 3;
#[graph]
fn remainders(a: Tensor<i64, N>, b: Tensor<i64>) -> Tensor<i64, N> {
    floormod(a, b) * (a % 3)
}

/// Asserts `r` is an arithmetic error of `op` at `line`, and that its message says so.
fn assert_arith<T: std::fmt::Debug>(r: Result<T, Error>, op: &str, line: u32, what: &str) {
    match r {
        Err(e @ Error::Arithmetic { .. }) => {
            let Error::Arithmetic { op: o, line: l, .. } = &e else {
                unreachable!()
            };
            assert_eq!((*o, *l), (op, line), "{what}: {e}");
            let text = e.to_string();
            assert!(
                text.contains(op) && text.contains(&format!("line {line}")),
                "{what}: {text}"
            );
        }
        other => panic!("{what}: expected an arithmetic error of `{op}`, got {other:?}"),
    }
}

#[test]
fn integer_division_by_zero_is_an_error_on_every_path() {
    for n in [1, 7, 1023] {
        let a = Array1::from_shape_fn(n, |i| i as i32 - 3);
        let mut b = Array1::from_shape_fn(n, |i| i as i32 % 5 + 1);
        b[n - 1] = 0;
        for (how, r) in runs!(divides(&a, &b)) {
            assert_arith(r, "div", DIV_LINE, &format!("{how} n={n}"));
        }
        b[n - 1] = -1;
        for (how, r) in runs!(divides(&a, &b)) {
            let want: Array1<i32> = a.iter().zip(&b).map(|(x, y)| x / y + 1).collect();
            assert_eq!(r.unwrap(), want, "{how} n={n}");
        }
    }
    // An empty tensor has nothing to divide.
    let e = Array1::<i32>::zeros(0);
    for (how, r) in runs!(divides(&e, &e)) {
        assert_eq!(r.unwrap().len(), 0, "{how}");
    }
    let a = arr1(&[5i64, -5, 9]);
    for (how, r) in runs!(remainders(&a, &arr0(0i64))) {
        assert_arith(r, "floormod", MOD_LINE, how);
    }
    for (how, r) in runs!(remainders(&a, &arr0(4i64))) {
        assert_eq!(r.unwrap(), arr1(&[2i64, -6, 0]), "{how}");
    }
}

#[test]
fn the_eager_api_rejects_integer_zero_divisors_but_floats_divide() {
    use grafo::eager;
    let a = arr1(&[1, 2, 3]);
    let z = arr1(&[1, 0, 1]);
    for (name, r) in [
        ("div", eager::div(&a, &z)),
        ("truncatediv", eager::truncatediv(&a, &z)),
        ("truncatemod", eager::truncatemod(&a, &z)),
        ("floordiv", eager::floordiv(&a, &z)),
        ("floormod", eager::floormod(&a, &z)),
    ] {
        assert!(
            matches!(&r, Err(Error::Arithmetic { op, line: 0, .. }) if *op == name),
            "{name}: {r:?}"
        );
    }
    assert!(matches!(
        eager::pow(&a, &arr1(&[1, -1, 1])),
        Err(Error::Arithmetic { op: "pow", .. })
    ));
    let f = eager::div(&arr1(&[1.0f32, -1.0, 0.0]), &arr1(&[0.0f32, 0.0, 0.0])).unwrap();
    assert_eq!(f[0], f32::INFINITY);
    assert_eq!(f[1], f32::NEG_INFINITY);
    assert!(f[2].is_nan());
}

const IF_LINE: u32 = line!() + 5;
#[graph]
fn divides_in_an_arm(a: Tensor<i32, N>, b: Tensor<i32, N>, go: Tensor<bool>) -> Tensor<i32, N> {
    let mut y = a;
    if go {
        y = a / b;
    }
    y
}

#[test]
fn a_division_in_an_arm_fails_only_when_the_arm_runs() {
    let (a, b) = (arr1(&[4, 5]), arr1(&[2, 0]));
    for (how, r) in runs!(divides_in_an_arm(&a, &b, &arr0(false))) {
        assert_eq!(r.unwrap(), a, "{how}");
    }
    for (how, r) in runs!(divides_in_an_arm(&a, &b, &arr0(true))) {
        assert_arith(r, "div", IF_LINE, how);
    }
}

const POW_LINE: u32 = line!() + 3;
#[graph]
fn int_pow(a: Tensor<i64, N>, b: Tensor<i64, N>) -> Tensor<i64, N> {
    pow(a, b)
}

#[graph]
fn int32_pow(a: Tensor<i32, N>, b: Tensor<i32>) -> Tensor<i32, N> {
    pow(a, b)
}

/// `x^e` mod 2^64 without the code under test: `e = hi * 2^32 + lo`, and `x^(2^32)` is
/// `(x^(2^31))^2` with std's `wrapping_pow`.
fn ref_pow_i64(x: i64, e: i64) -> i64 {
    let (hi, lo) = ((e as u64 >> 32) as u32, e as u32);
    let x_2_32 = x.wrapping_pow(1 << 31).wrapping_pow(2);
    x_2_32.wrapping_pow(hi).wrapping_mul(x.wrapping_pow(lo))
}

#[test]
fn integer_pow_uses_the_whole_exponent_and_rejects_negative_ones() {
    let a = arr1(&[-1i64, -1, 2, 3, 3, 0, 1, -2, 7]);
    let b = arr1(&[
        1i64 << 32,
        (1 << 32) + 1,
        1 << 32,
        (1 << 32) + 5,
        i64::MAX,
        1 << 40,
        i64::MAX,
        63,
        0,
    ]);
    let want: Array1<i64> = a.iter().zip(&b).map(|(&x, &e)| ref_pow_i64(x, e)).collect();
    // TensorFlow: pow(-1, 2^32) = 1 (the exponent was clamped to u32::MAX before: -1).
    assert_eq!(want[0], 1);
    for (how, r) in runs!(int_pow(&a, &b)) {
        assert_eq!(r.unwrap(), want, "{how}");
    }
    let b = arr1(&[2i64, 1, 0, -1, 3, 1, 1, 1, 1]);
    for (how, r) in runs!(int_pow(&a, &b)) {
        assert_arith(r, "pow", POW_LINE, how);
    }
    for n in [0usize, 1, 7, 1023] {
        let a = Array1::from_shape_fn(n, |i| i as i32 - 500);
        let want = a.mapv(|x| x.wrapping_pow(5));
        for (how, r) in runs!(int32_pow(&a, &arr0(5))) {
            assert_eq!(r.unwrap(), want, "i32 pow {how} n={n}");
        }
    }
}

// ----- bool operators ------------------------------------------------------------------------

#[graph]
fn bool_ops(
    p: Tensor<bool, N>,
    q: Tensor<bool, N>,
) -> (
    Tensor<bool, N>,
    Tensor<bool, N>,
    Tensor<bool, N>,
    Tensor<bool, N>,
    Tensor<bool, N>,
    Tensor<bool, N>,
    Tensor<bool, N>,
    Tensor<bool, N>,
) {
    (
        p & q,
        p | q,
        p ^ q,
        !p,
        logical_and(p, q),
        logical_or(p, q),
        logical_xor(p, q),
        logical_not(q),
    )
}

#[graph]
fn in_range(x: Tensor<f32, M, N>, lo: Tensor<f32, M, 1>, flag: Tensor<bool>) -> Tensor<f32, M, N> {
    select((x > lo) & (x < 1.0) | flag & !(x == 0.5), x, 0.0)
}

#[test]
fn bool_operators_match_the_reference() {
    for n in [0, 1, 7, 1023] {
        let p = Array1::from_shape_fn(n, |i| i % 3 == 0);
        let q = Array1::from_shape_fn(n, |i| i % 2 == 0);
        let z = |g: fn(bool, bool) -> bool| -> Array1<bool> {
            p.iter().zip(&q).map(|(&x, &y)| g(x, y)).collect()
        };
        let (and, or, xor) = (z(|x, y| x && y), z(|x, y| x || y), z(|x, y| x != y));
        for (how, r) in runs!(bool_ops(&p, &q)) {
            let (a, o, x, np, la, lo, lx, nq) = r.unwrap();
            assert_eq!(a, and, "& {how}");
            assert_eq!(o, or, "| {how}");
            assert_eq!(x, xor, "^ {how}");
            assert_eq!(np, p.mapv(|v| !v), "! {how}");
            assert_eq!(
                (la, lo, lx),
                (and.clone(), or.clone(), xor.clone()),
                "logical_* {how}"
            );
            assert_eq!(nq, q.mapv(|v| !v), "logical_not {how}");
        }
    }
    let x = Array2::from_shape_fn((7, 3), |(i, j)| i as f32 * 0.25 - 0.5 + j as f32 * 0.125);
    let lo = Array2::from_shape_fn((7, 1), |(i, _)| i as f32 * 0.1);
    for flag in [false, true] {
        let want = Array2::from_shape_fn((7, 3), |(i, j)| {
            let v = x[(i, j)];
            let keep = (v > lo[(i, 0)] && v < 1.0) || (flag && v != 0.5);
            if keep {
                v
            } else {
                0.0
            }
        });
        for (how, r) in runs!(in_range(&x, &lo, &arr0(flag))) {
            assert_eq!(r.unwrap(), want, "in_range {how} flag={flag}");
        }
    }
}
