//! Every op of the original language table (docs/OPS.md lists them all) through `#[graph]`: compiled == eager == a naive f64
//! reference, on small odd shapes, with broadcasting, keep-dims and negative axes, NaN,
//! integer wrapping and division, bool outputs, casts, and the linear-algebra / NN ops.

mod refs;

use grafo::ndarray::{ArrayD, Ix1, Ix2, Ix3, Ix4, IxDyn};
use grafo::prelude::*;
use refs::*;

#[path = "common/entry_points.rs"]
#[macro_use]
mod entry_points;

fn f(a: &ArrayD<f64>, g: impl Fn(f64) -> f64) -> ArrayD<f64> {
    map1(a, g)
}

fn d<T: AsF64, D: grafo::ndarray::Dimension>(a: &Array<T, D>) -> ArrayD<f64> {
    to_f64(a)
}

// ----- elementwise unary ----------------------------------------------------------------------

#[graph]
fn unary_a(
    x: Tensor<f32, M, N>,
    p: Tensor<f32, M, N>,
) -> (
    Tensor<f32, M, N>,
    Tensor<f32, M, N>,
    Tensor<f32, M, N>,
    Tensor<f32, M, N>,
    Tensor<f32, M, N>,
    Tensor<f32, M, N>,
) {
    (abs(x), exp(x), log(p), sqrt(p), rsqrt(p), square(x))
}

#[graph]
fn unary_b(
    x: Tensor<f32, M, N>,
) -> (
    Tensor<f32, M, N>,
    Tensor<f32, M, N>,
    Tensor<f32, M, N>,
    Tensor<f32, M, N>,
    Tensor<f32, M, N>,
    Tensor<f32, M, N>,
    Tensor<f32, M, N>,
) {
    (tanh(x), sigmoid(x), relu(x), sin(x), cos(x), neg(x), -x)
}

#[graph]
fn unary_chain(p: Tensor<f32, M, N>) -> Tensor<f32, M, N> {
    exp(log(p)) + sqrt(square(p)) - abs(neg(p)) * rsqrt(p) * sqrt(p)
}

#[test]
fn unary_ops() {
    let x = rand_arr(1, Ix2(7, 5), -3.0, 3.0);
    let p = rand_arr(2, Ix2(7, 5), 0.05, 4.0);
    let (xd, pd) = (d(&x), d(&p));
    for (how, (abs_, exp_, log_, sqrt_, rsqrt_, sq)) in runs_ok!(unary_a(&x, &p)) {
        assert_close(&format!("abs {how}"), &abs_, &f(&xd, f64::abs));
        assert_close(&format!("exp {how}"), &exp_, &f(&xd, f64::exp));
        assert_close(&format!("log {how}"), &log_, &f(&pd, f64::ln));
        assert_close(&format!("sqrt {how}"), &sqrt_, &f(&pd, f64::sqrt));
        assert_close(
            &format!("rsqrt {how}"),
            &rsqrt_,
            &f(&pd, |v| 1.0 / v.sqrt()),
        );
        assert_close(&format!("square {how}"), &sq, &f(&xd, |v| v * v));
    }
    for (how, (tanh_, sig, relu_, sin_, cos_, neg_, minus)) in runs_ok!(unary_b(&x)) {
        assert_close(&format!("tanh {how}"), &tanh_, &f(&xd, f64::tanh));
        assert_close(
            &format!("sigmoid {how}"),
            &sig,
            &f(&xd, |v| 1.0 / (1.0 + (-v).exp())),
        );
        assert_close(&format!("relu {how}"), &relu_, &f(&xd, ref_relu));
        assert_close(&format!("sin {how}"), &sin_, &f(&xd, f64::sin));
        assert_close(&format!("cos {how}"), &cos_, &f(&xd, f64::cos));
        assert_close(&format!("neg {how}"), &neg_, &f(&xd, |v| -v));
        assert_close(&format!("unary - {how}"), &minus, &f(&xd, |v| -v));
    }
    for (how, out) in runs_ok!(unary_chain(&p)) {
        assert_close(&format!("chain {how}"), &out, &f(&pd, |v| v + v - v));
    }
}

#[graph]
fn unary_1d(x: Tensor<f32, N>) -> (Tensor<f32, N>, Tensor<f32, N>, Tensor<f32, N>) {
    (exp(x), tanh(x), sigmoid(x))
}

#[test]
fn unary_extremes() {
    let x = arr1(&[
        -100.0f32,
        -20.0,
        -1e-7,
        0.0,
        1e-7,
        20.0,
        88.0,
        100.0,
        f32::NAN,
    ]);
    let xd = d(&x);
    for (how, (e, t, s)) in runs_ok!(unary_1d(&x)) {
        assert_close(
            &format!("exp {how}"),
            &e,
            &f(&xd, |v| (v as f32).exp() as f64),
        );
        assert_close(&format!("tanh {how}"), &t, &f(&xd, f64::tanh));
        assert_close(
            &format!("sigmoid {how}"),
            &s,
            &f(&xd, |v| 1.0 / (1.0 + (-v).exp())),
        );
    }
}

// ----- binary, broadcasting -------------------------------------------------------------------

#[graph]
fn bin_row(
    a: Tensor<f32, M, N>,
    b: Tensor<f32, N>,
) -> (
    Tensor<f32, M, N>,
    Tensor<f32, M, N>,
    Tensor<f32, M, N>,
    Tensor<f32, M, N>,
    Tensor<f32, M, N>,
    Tensor<f32, M, N>,
) {
    (a + b, a - b, b * a, a / b, maximum(a, b), minimum(b, a))
}

#[graph]
fn bin_col(
    a: Tensor<f32, M, N>,
    c: Tensor<f32, M, 1>,
) -> (
    Tensor<f32, M, N>,
    Tensor<f32, M, N>,
    Tensor<f32, M, N>,
    Tensor<f32, M, N>,
) {
    (a + c, c - a, a * c, c / a)
}

#[graph]
fn bin_scalar(
    a: Tensor<f32, M, N>,
    s: Tensor<f32>,
) -> (
    Tensor<f32, M, N>,
    Tensor<f32, M, N>,
    Tensor<f32, M, N>,
    Tensor<f32, M, N>,
) {
    (a + s, s - a, a * s, maximum(a, s))
}

#[graph]
fn bin_literal(
    a: Tensor<f32, M, N>,
) -> (
    Tensor<f32, M, N>,
    Tensor<f32, M, N>,
    Tensor<f32, M, N>,
    Tensor<f32, M, N>,
) {
    (2.0 - a, a / 4.0, 1.0 / a, minimum(a, 0.5) + 3)
}

#[graph]
fn bin_outer(b: Tensor<f32, N>, c: Tensor<f32, M, 1>) -> Tensor<f32, M, N> {
    b * c + c
}

#[graph]
fn pow_ops(
    p: Tensor<f32, M, N>,
    e: Tensor<f32, N>,
) -> (
    Tensor<f32, M, N>,
    Tensor<f32, M, N>,
    Tensor<f32, M, N>,
    Tensor<f32, M, N>,
) {
    (pow(p, e), pow(p, 2.0), pow(p, 3.0), pow(p, 0.5))
}

#[test]
fn binary_broadcasting() {
    let a = rand_arr(3, Ix2(7, 5), -2.0, 2.0);
    let b = rand_arr(4, Ix1(5), 0.5, 2.0);
    let c = rand_arr(5, Ix2(7, 1), 0.5, 2.0);
    let s = arr0(0.75f32);
    let (ad, bd, cd, sd) = (d(&a), d(&b), d(&c), d(&s));
    let mx = |x: f64, y: f64| if x >= y { x } else { y };
    let mn = |x: f64, y: f64| if x <= y { x } else { y };
    for (how, (add, sub, mul, div, max, min)) in runs_ok!(bin_row(&a, &b)) {
        assert_close(&format!("row + {how}"), &add, &zip2(&ad, &bd, |x, y| x + y));
        assert_close(&format!("row - {how}"), &sub, &zip2(&ad, &bd, |x, y| x - y));
        assert_close(&format!("row * {how}"), &mul, &zip2(&ad, &bd, |x, y| x * y));
        assert_close(&format!("row / {how}"), &div, &zip2(&ad, &bd, |x, y| x / y));
        assert_close(&format!("row max {how}"), &max, &zip2(&ad, &bd, mx));
        assert_close(&format!("row min {how}"), &min, &zip2(&ad, &bd, mn));
    }
    for (how, (add, sub, mul, div)) in runs_ok!(bin_col(&a, &c)) {
        assert_close(&format!("col + {how}"), &add, &zip2(&ad, &cd, |x, y| x + y));
        assert_close(&format!("col - {how}"), &sub, &zip2(&ad, &cd, |x, y| y - x));
        assert_close(&format!("col * {how}"), &mul, &zip2(&ad, &cd, |x, y| x * y));
        assert_close_tol(
            &format!("col / {how}"),
            &div,
            &zip2(&ad, &cd, |x, y| y / x),
            1e-4,
            1e-4,
        );
    }
    for (how, (add, sub, mul, max)) in runs_ok!(bin_scalar(&a, &s)) {
        assert_close(
            &format!("scalar + {how}"),
            &add,
            &zip2(&ad, &sd, |x, y| x + y),
        );
        assert_close(
            &format!("scalar - {how}"),
            &sub,
            &zip2(&ad, &sd, |x, y| y - x),
        );
        assert_close(
            &format!("scalar * {how}"),
            &mul,
            &zip2(&ad, &sd, |x, y| x * y),
        );
        assert_close(&format!("scalar max {how}"), &max, &zip2(&ad, &sd, mx));
    }
    for (how, (l1, l2, l3, l4)) in runs_ok!(bin_literal(&a)) {
        assert_close(&format!("2 - a {how}"), &l1, &f(&ad, |x| 2.0 - x));
        assert_close(&format!("a / 4 {how}"), &l2, &f(&ad, |x| x / 4.0));
        assert_close_tol(
            &format!("1 / a {how}"),
            &l3,
            &f(&ad, |x| 1.0 / x),
            1e-4,
            1e-4,
        );
        assert_close(
            &format!("min(a, .5) + 3 {how}"),
            &l4,
            &f(&ad, |x| mn(x, 0.5) + 3.0),
        );
    }
    for (how, out) in runs_ok!(bin_outer(&b, &c)) {
        assert_eq!(out.shape(), &[7, 5]);
        assert_close(
            &format!("outer {how}"),
            &out,
            &zip2(&zip2(&bd, &cd, |x, y| x * y), &cd, |x, y| x + y),
        );
    }
    let p = rand_arr(6, Ix2(7, 5), 0.1, 3.0);
    let e = arr1(&[-1.5f32, 0.0, 0.5, 2.0, 3.0]);
    let (pd, ed) = (d(&p), d(&e));
    for (how, (pe, p2, p3, ph)) in runs_ok!(pow_ops(&p, &e)) {
        assert_close(&format!("pow(p, e) {how}"), &pe, &zip2(&pd, &ed, f64::powf));
        assert_close(&format!("pow(p, 2) {how}"), &p2, &f(&pd, |v| v * v));
        assert_close(&format!("pow(p, 3) {how}"), &p3, &f(&pd, |v| v * v * v));
        assert_close(&format!("pow(p, .5) {how}"), &ph, &f(&pd, f64::sqrt));
    }
}

// ----- NaN ------------------------------------------------------------------------------------

#[graph]
fn nan_ops(
    a: Tensor<f32, N>,
    b: Tensor<f32, N>,
) -> (
    Tensor<f32, N>,
    Tensor<f32, N>,
    Tensor<f32, N>,
    Tensor<f32, N>,
) {
    (maximum(a, b), minimum(a, b), relu(a), abs(a) + b)
}

#[test]
fn nan_propagation() {
    let n = f32::NAN;
    let a = arr1(&[n, 1.0, n, -1.0, f32::INFINITY, -3.0, 0.0]);
    let b = arr1(&[1.0, n, n, -2.0, 1.0, f32::NEG_INFINITY, -0.0]);
    let nan = f64::NAN;
    let max = ArrayD::from_shape_vec(
        IxDyn(&[7]),
        vec![nan, nan, nan, -1.0, f64::INFINITY, -3.0, 0.0],
    )
    .unwrap();
    let min = ArrayD::from_shape_vec(
        IxDyn(&[7]),
        vec![nan, nan, nan, -2.0, 1.0, f64::NEG_INFINITY, 0.0],
    )
    .unwrap();
    let relu_ = ArrayD::from_shape_vec(
        IxDyn(&[7]),
        vec![nan, 1.0, nan, 0.0, f64::INFINITY, 0.0, 0.0],
    )
    .unwrap();
    let s = ArrayD::from_shape_vec(
        IxDyn(&[7]),
        vec![nan, nan, nan, -1.0, f64::INFINITY, f64::NEG_INFINITY, 0.0],
    )
    .unwrap();
    for (how, (mx, mn, r, ab)) in runs_ok!(nan_ops(&a, &b)) {
        assert_close(&format!("maximum NaN {how}"), &mx, &max);
        assert_close(&format!("minimum NaN {how}"), &mn, &min);
        assert_close(&format!("relu NaN {how}"), &r, &relu_);
        assert_close(&format!("abs + NaN {how}"), &ab, &s);
    }
}

// ----- comparisons and select -----------------------------------------------------------------

#[graph]
fn compare(
    a: Tensor<f32, M, N>,
    b: Tensor<f32, N>,
) -> (
    Tensor<bool, M, N>,
    Tensor<bool, M, N>,
    Tensor<bool, M, N>,
    Tensor<bool, M, N>,
    Tensor<bool, M, N>,
    Tensor<bool, M, N>,
) {
    (a < b, a <= b, a > b, a >= b, a == b, a != b)
}

#[graph]
fn compare_literal(a: Tensor<i32, N>) -> (Tensor<bool, N>, Tensor<bool, N>) {
    (a > 2, 3 == a)
}

#[graph]
fn select_ops(
    a: Tensor<f32, M, N>,
    b: Tensor<f32, N>,
    c: Tensor<bool, M, N>,
    s: Tensor<f32>,
) -> (Tensor<f32, M, N>, Tensor<f32, M, N>, Tensor<f32, M, N>) {
    (
        select(a > b, a, b),
        select(c, s, a),
        select(c, a * 2.0, 0.0),
    )
}

#[test]
fn comparisons_give_bools() {
    let mut a = rand_arr(7, Ix2(7, 5), -1.0, 1.0);
    let b = rand_arr(8, Ix1(5), -1.0, 1.0);
    a.row_mut(3).assign(&b); // equal elements
    a[[5, 1]] = f32::NAN;
    let (ad, bd) = (d(&a), d(&b));
    let t = |v: bool| if v { 1.0 } else { 0.0 };
    for (how, (lt, le, gt, ge, eq, ne)) in runs_ok!(compare(&a, &b)) {
        assert_exact(&format!("< {how}"), &lt, &zip2(&ad, &bd, |x, y| t(x < y)));
        assert_exact(&format!("<= {how}"), &le, &zip2(&ad, &bd, |x, y| t(x <= y)));
        assert_exact(&format!("> {how}"), &gt, &zip2(&ad, &bd, |x, y| t(x > y)));
        assert_exact(&format!(">= {how}"), &ge, &zip2(&ad, &bd, |x, y| t(x >= y)));
        assert_exact(&format!("== {how}"), &eq, &zip2(&ad, &bd, |x, y| t(x == y)));
        assert_exact(&format!("!= {how}"), &ne, &zip2(&ad, &bd, |x, y| t(x != y)));
    }
    let i = arr1(&[1, 2, 3, 4, -3]);
    for (how, (gt, eq)) in runs_ok!(compare_literal(&i)) {
        assert_eq!(gt, arr1(&[false, false, true, true, false]), "{how}");
        assert_eq!(eq, arr1(&[false, false, true, false, false]), "{how}");
    }
}

#[test]
fn select_op() {
    let a = rand_arr(9, Ix2(7, 5), -1.0, 1.0);
    let b = rand_arr(10, Ix1(5), -1.0, 1.0);
    let c = a.mapv(|v| v > 0.2);
    let s = arr0(9.0f32);
    let (ad, bd, cd) = (d(&a), d(&b), d(&c));
    for (how, (s1, s2, s3)) in runs_ok!(select_ops(&a, &b, &c, &s)) {
        assert_close(
            &format!("select max {how}"),
            &s1,
            &zip2(&ad, &bd, |x, y| if x > y { x } else { y }),
        );
        assert_close(
            &format!("select scalar {how}"),
            &s2,
            &zip2(&cd, &ad, |c, x| if c != 0.0 { 9.0 } else { x }),
        );
        assert_close(
            &format!("select literal {how}"),
            &s3,
            &zip2(&cd, &ad, |c, x| if c != 0.0 { 2.0 * x } else { 0.0 }),
        );
    }
}

// ----- casts ----------------------------------------------------------------------------------

#[graph]
fn casts_from_f32(
    x: Tensor<f32, N>,
) -> (
    Tensor<i32, N>,
    Tensor<f64, N>,
    Tensor<bool, N>,
    Tensor<i64, N>,
) {
    (
        cast::<i32>(x),
        cast::<f64>(x) * 2.0,
        cast::<bool>(x),
        cast::<i64>(x),
    )
}

#[graph]
fn casts_from_int(
    i: Tensor<i32, N>,
    b: Tensor<bool, N>,
) -> (
    Tensor<f32, N>,
    Tensor<i64, N>,
    Tensor<f32, N>,
    Tensor<i32, N>,
    Tensor<f32, N>,
) {
    (
        cast::<f32>(i) / 2.0,
        cast::<i64>(i) * 3,
        cast::<f32>(b),
        cast::<i32>(b) + i,
        cast::<f32>(cast::<f64>(i)),
    )
}

#[test]
fn casts() {
    let x = arr1(&[
        -2.7f32,
        -0.5,
        -0.0,
        0.0,
        0.5,
        2.7,
        1e10,
        -1e10,
        f32::NAN,
        3.0,
    ]);
    for (how, (i, f64_, b, l)) in runs_ok!(casts_from_f32(&x)) {
        assert_eq!(i, x.mapv(|v| v as i32), "f32 -> i32 {how}");
        assert_eq!(l, x.mapv(|v| v as i64), "f32 -> i64 {how}");
        assert_eq!(b, x.mapv(|v| v != 0.0), "f32 -> bool {how}");
        assert_close(
            &format!("f32 -> f64 {how}"),
            &f64_,
            &d(&x).mapv(|v| v * 2.0),
        );
    }
    let i = arr1(&[i32::MIN, -7, -1, 0, 1, 7, i32::MAX]);
    let b = arr1(&[true, false, true, false, true, false, true]);
    for (how, (f1, l, bf, bi, ff)) in runs_ok!(casts_from_int(&i, &b)) {
        assert_eq!(f1, i.mapv(|v| v as f32 / 2.0), "i32 -> f32 {how}");
        assert_eq!(l, i.mapv(|v| v as i64 * 3), "i32 -> i64 {how}");
        assert_eq!(bf, b.mapv(|v| v as u8 as f32), "bool -> f32 {how}");
        assert_eq!(
            bi,
            ndarray_zip(&b, &i, |b, i| (b as i32).wrapping_add(i)),
            "bool -> i32 {how}"
        );
        assert_eq!(ff, i.mapv(|v| v as f64 as f32), "i32 -> f64 -> f32 {how}");
    }
}

fn ndarray_zip<A: Copy, B: Copy, C>(
    a: &Array1<A>,
    b: &Array1<B>,
    g: impl Fn(A, B) -> C,
) -> Array1<C> {
    a.iter().zip(b.iter()).map(|(&x, &y)| g(x, y)).collect()
}

// ----- integers -------------------------------------------------------------------------------

#[graph]
fn int_ops(
    a: Tensor<i32, N>,
    b: Tensor<i32, N>,
) -> (
    Tensor<i32, N>,
    Tensor<i32, N>,
    Tensor<i32, N>,
    Tensor<i32, N>,
    Tensor<i32, N>,
    Tensor<i32, N>,
    Tensor<i32, N>,
    Tensor<i32, N>,
) {
    (
        a + b,
        a - b,
        a * b,
        a / b,
        -a,
        maximum(a, b),
        minimum(a, b),
        a * 3 + 1,
    )
}

#[graph]
fn int64_ops(
    a: Tensor<i64, N>,
    b: Tensor<i64, N>,
) -> (
    Tensor<i64, N>,
    Tensor<i64, N>,
    Tensor<i64, N>,
    Tensor<i64, N>,
) {
    (a + b, a * b, a / b, abs(b) - a)
}

#[graph]
fn int_unary(
    a: Tensor<i32, N>,
) -> (
    Tensor<i32, N>,
    Tensor<i32, N>,
    Tensor<i32, N>,
    Tensor<i32, N>,
) {
    (abs(a), square(a), relu(a), neg(a))
}

#[test]
fn integer_ops_wrap_and_divide_like_rust() {
    let a = arr1(&[i32::MAX, i32::MIN, 7, -7, 5, i32::MIN, 65536, -9]);
    // No zero divisor here: an integer division by zero is an error (tests/ops_integer.rs).
    let b = arr1(&[1, -1, 2, 2, 3, 1, 65536, -4]);
    let z = |g: fn(i32, i32) -> i32| ndarray_zip(&a, &b, g);
    for (how, (add, sub, mul, div, neg_, max, min, lin)) in runs_ok!(int_ops(&a, &b)) {
        assert_eq!(add, z(i32::wrapping_add), "+ {how}");
        assert_eq!(sub, z(i32::wrapping_sub), "- {how}");
        assert_eq!(mul, z(i32::wrapping_mul), "* {how}");
        // Integer division truncates toward zero and wraps MIN / -1.
        assert_eq!(div, z(i32::wrapping_div), "/ {how}");
        assert_eq!(neg_, a.mapv(i32::wrapping_neg), "neg {how}");
        assert_eq!(max, z(|x, y| x.max(y)), "maximum {how}");
        assert_eq!(min, z(|x, y| x.min(y)), "minimum {how}");
        assert_eq!(
            lin,
            a.mapv(|x| x.wrapping_mul(3).wrapping_add(1)),
            "a * 3 + 1 {how}"
        );
    }
    let c = arr1(&[i32::MIN + 1, -3, 0, 3, 46341, -46341]);
    for (how, (abs_, sq, relu_, neg_)) in runs_ok!(int_unary(&c)) {
        assert_eq!(abs_, c.mapv(i32::wrapping_abs), "abs {how}");
        assert_eq!(sq, c.mapv(|v| v.wrapping_mul(v)), "square {how}");
        assert_eq!(relu_, c.mapv(|v| v.max(0)), "relu {how}");
        assert_eq!(neg_, c.mapv(i32::wrapping_neg), "neg {how}");
    }
    let a = arr1(&[i64::MAX, i64::MIN, 7, -7, 5]);
    let b = arr1(&[1i64, -1, 2, 2, -3]);
    for (how, (add, mul, div, ab)) in runs_ok!(int64_ops(&a, &b)) {
        assert_eq!(add, ndarray_zip(&a, &b, i64::wrapping_add), "i64 + {how}");
        assert_eq!(mul, ndarray_zip(&a, &b, i64::wrapping_mul), "i64 * {how}");
        assert_eq!(div, ndarray_zip(&a, &b, i64::wrapping_div), "i64 / {how}");
        assert_eq!(
            ab,
            ndarray_zip(&a, &b, |x, y| y.wrapping_abs().wrapping_sub(x)),
            "i64 abs - {how}"
        );
    }
}

// ----- create ---------------------------------------------------------------------------------

#[graph]
fn create(
    x: Tensor<f32, N>,
) -> (
    Tensor<f32, N>,
    Tensor<f32, 2, N>,
    Tensor<f32, N>,
    Tensor<i32, 3>,
    Tensor<f64, 2, 2>,
    Tensor<i32, N>,
) {
    (
        zeros([N]) + x,
        ones([2, N]) * x,
        fill([N], 2.5) - x,
        fill([3], 7),
        ones::<f64>([2, 2]),
        zeros::<i32>([N]),
    )
}

#[test]
fn create_ops() {
    let x = arr1(&[1.0f32, -2.0, 3.5]);
    for (how, (z, o, fl, fi, of, zi)) in runs_ok!(create(&x)) {
        assert_eq!(z, x, "zeros {how}");
        assert_eq!(
            o,
            grafo::ndarray::stack![grafo::ndarray::Axis(0), x, x],
            "ones {how}"
        );
        assert_eq!(fl, x.mapv(|v| 2.5 - v), "fill {how}");
        assert_eq!(fi, arr1(&[7, 7, 7]), "fill i32 {how}");
        assert_eq!(of, Array2::<f64>::ones((2, 2)), "ones f64 {how}");
        assert_eq!(zi, Array1::<i32>::zeros(3), "zeros i32 {how}");
    }
    let e = Array1::<f32>::zeros(0);
    for (how, (z, o, _, _, _, zi)) in runs_ok!(create(&e)) {
        assert_eq!(z.len(), 0, "{how}");
        assert_eq!(o.shape(), &[2, 0], "{how}");
        assert_eq!(zi.len(), 0, "{how}");
    }
}

// ----- reductions -----------------------------------------------------------------------------

#[graph]
fn reductions(
    x: Tensor<f32, A, B, C>,
) -> (
    Tensor<f32>,
    Tensor<f32, A, C>,
    Tensor<f32, B>,
    Tensor<f32, A, B, 1>,
    Tensor<f32, 1, B, 1>,
    Tensor<f32>,
    Tensor<f32, A, B>,
    Tensor<f32, A, C>,
) {
    (
        reduce_sum(x),
        reduce_mean(x, 1),
        reduce_max(x, [0, 2]),
        reduce_min(x, -1, true),
        reduce_sum(x, [-1, 0], true),
        norm(x),
        reduce_mean(x, -1, false),
        reduce_sum(x * x + 1.0, -2),
    )
}

#[graph]
fn reductions_int(
    x: Tensor<i32, M, N>,
) -> (
    Tensor<i32, M>,
    Tensor<i32, N>,
    Tensor<i32>,
    Tensor<i32, M, 1>,
) {
    (
        reduce_sum(x, 1),
        reduce_max(x, 0),
        reduce_min(x),
        reduce_sum(x, -1, true),
    )
}

#[graph]
fn reductions_f64(x: Tensor<f64, M, N>) -> (Tensor<f64, N>, Tensor<f64>) {
    (reduce_mean(x, 0), norm(x))
}

#[test]
fn reduction_ops() {
    for (seed, (a, b, c)) in [(3usize, 4usize, 5usize), (1, 1, 1), (2, 7, 33), (5, 1, 130)]
        .into_iter()
        .enumerate()
    {
        let x = rand_arr(20 + seed as u64, Ix3(a, b, c), -2.0, 2.0);
        let xd = d(&x);
        let sq = f(&xd, |v| v * v + 1.0);
        for (how, (all, mean1, max02, min_k, sum_k, nrm, mean_last, fused)) in
            runs_ok!(reductions(&x))
        {
            let what = |op: &str| format!("{op} {a}x{b}x{c} {how}");
            assert_close(
                &what("sum all"),
                &all,
                &ref_reduce(&xd, &[0, 1, 2], false, "sum"),
            );
            assert_close(
                &what("mean 1"),
                &mean1,
                &ref_reduce(&xd, &[1], false, "mean"),
            );
            assert_close(
                &what("max [0, 2]"),
                &max02,
                &ref_reduce(&xd, &[0, 2], false, "max"),
            );
            assert_close(
                &what("min -1 keep"),
                &min_k,
                &ref_reduce(&xd, &[2], true, "min"),
            );
            assert_close(
                &what("sum [-1, 0] keep"),
                &sum_k,
                &ref_reduce(&xd, &[0, 2], true, "sum"),
            );
            assert_close(
                &what("norm"),
                &nrm,
                &ArrayD::from_elem(IxDyn(&[]), ref_norm(&xd)),
            );
            assert_close(
                &what("mean -1"),
                &mean_last,
                &ref_reduce(&xd, &[2], false, "mean"),
            );
            assert_close(
                &what("sum(x*x+1) -2"),
                &fused,
                &ref_reduce(&sq, &[1], false, "sum"),
            );
        }
    }
    let xi = rand_i32(30, Ix2(7, 5), -1000, 1000);
    let xid = d(&xi);
    for (how, (s1, m0, mn, sk)) in runs_ok!(reductions_int(&xi)) {
        assert_exact(
            &format!("i32 sum 1 {how}"),
            &s1,
            &ref_reduce(&xid, &[1], false, "sum"),
        );
        assert_exact(
            &format!("i32 max 0 {how}"),
            &m0,
            &ref_reduce(&xid, &[0], false, "max"),
        );
        assert_exact(
            &format!("i32 min {how}"),
            &mn,
            &ref_reduce(&xid, &[0, 1], false, "min"),
        );
        assert_exact(
            &format!("i32 sum -1 keep {how}"),
            &sk,
            &ref_reduce(&xid, &[1], true, "sum"),
        );
    }
    let x64 = rand_f64(31, Ix2(9, 4), -1.0, 1.0);
    let x64d = d(&x64);
    for (how, (m, n)) in runs_ok!(reductions_f64(&x64)) {
        assert_close_tol(
            &format!("f64 mean {how}"),
            &m,
            &ref_reduce(&x64d, &[0], false, "mean"),
            1e-12,
            1e-12,
        );
        assert_close_tol(
            &format!("f64 norm {how}"),
            &n,
            &ArrayD::from_elem(IxDyn(&[]), ref_norm(&x64d)),
            1e-12,
            1e-12,
        );
    }
}

#[graph]
fn reduce_max_nan(x: Tensor<f32, M, N>) -> (Tensor<f32, M>, Tensor<f32, M>) {
    (reduce_max(x, 1), reduce_min(x, 1))
}

#[test]
fn reductions_with_nan_and_inf() {
    let x = arr2(&[
        [1.0f32, f32::NAN, 3.0],
        [f32::NEG_INFINITY, 0.0, f32::INFINITY],
    ]);
    for (how, (mx, mn)) in runs_ok!(reduce_max_nan(&x)) {
        assert!(mx[0].is_nan() && mn[0].is_nan(), "NaN row {how}: {mx} {mn}");
        assert_eq!((mx[1], mn[1]), (f32::INFINITY, f32::NEG_INFINITY), "{how}");
    }
}

// ----- softmax --------------------------------------------------------------------------------

#[graph]
fn softmaxes(
    x: Tensor<f32, M, N>,
) -> (
    Tensor<f32, M, N>,
    Tensor<f32, M, N>,
    Tensor<f32, M, N>,
    Tensor<f32, M, N>,
    Tensor<f32, M, N>,
) {
    (
        softmax(x, -1),
        softmax(x, 0),
        log_softmax(x, 1),
        log_softmax(x, -2),
        softmax(x * 100.0),
    )
}

#[graph]
fn softmax_3d(x: Tensor<f32, A, B, C>) -> (Tensor<f32, A, B, C>, Tensor<f32, A, B, C>) {
    (softmax(x, 1), log_softmax(x, -1))
}

#[test]
fn softmax_ops() {
    for (seed, (m, n)) in [(7usize, 5usize), (1, 1), (3, 257)].into_iter().enumerate() {
        let x = rand_arr(40 + seed as u64, Ix2(m, n), -3.0, 3.0);
        let xd = d(&x);
        let x100 = f(&xd, |v| v * 100.0);
        for (how, (s1, s0, l1, l0, big)) in runs_ok!(softmaxes(&x)) {
            let what = |op: &str| format!("{op} {m}x{n} {how}");
            assert_close(&what("softmax -1"), &s1, &ref_softmax(&xd, 1, false));
            assert_close(&what("softmax 0"), &s0, &ref_softmax(&xd, 0, false));
            assert_close(&what("log_softmax 1"), &l1, &ref_softmax(&xd, 1, true));
            assert_close(&what("log_softmax -2"), &l0, &ref_softmax(&xd, 0, true));
            assert_close(&what("softmax(100 x)"), &big, &ref_softmax(&x100, 1, false));
        }
    }
    let x = rand_arr(45, Ix3(3, 4, 5), -3.0, 3.0);
    let xd = d(&x);
    for (how, (s, l)) in runs_ok!(softmax_3d(&x)) {
        assert_close(
            &format!("softmax 3d axis 1 {how}"),
            &s,
            &ref_softmax(&xd, 1, false),
        );
        assert_close(
            &format!("log_softmax 3d axis -1 {how}"),
            &l,
            &ref_softmax(&xd, 2, true),
        );
    }
}

// ----- transpose, reshape ---------------------------------------------------------------------

#[graph]
fn transposes(
    x: Tensor<f32, A, B, C>,
    y: Tensor<f32, M, N>,
) -> (
    Tensor<f32, C, B, A>,
    Tensor<f32, B, A, C>,
    Tensor<f32, C, A, B>,
    Tensor<f32, N, M>,
) {
    (
        transpose(x),
        transpose(x, [1, 0, 2]),
        transpose(x, [2, 0, 1]),
        transpose(y) * 2.0 + 1.0,
    )
}

#[test]
fn transpose_ops() {
    for (seed, (a, b, c)) in [(3usize, 4usize, 5usize), (1, 7, 1), (17, 9, 33)]
        .into_iter()
        .enumerate()
    {
        let x = rand_arr(50 + seed as u64, Ix3(a, b, c), -1.0, 1.0);
        let y = rand_arr(60 + seed as u64, Ix2(b, c), -1.0, 1.0);
        let (xd, yd) = (d(&x), d(&y));
        for (how, (t, t102, t201, ty)) in runs_ok!(transposes(&x, &y)) {
            assert_exact(
                &format!("transpose {how}"),
                &t,
                &ref_transpose(&xd, &[2, 1, 0]),
            );
            assert_exact(
                &format!("transpose [1,0,2] {how}"),
                &t102,
                &ref_transpose(&xd, &[1, 0, 2]),
            );
            assert_exact(
                &format!("transpose [2,0,1] {how}"),
                &t201,
                &ref_transpose(&xd, &[2, 0, 1]),
            );
            assert_close(
                &format!("transpose 2d fused {how}"),
                &ty,
                &f(&ref_transpose(&yd, &[1, 0]), |v| v * 2.0 + 1.0),
            );
        }
    }
}

#[graph]
fn reshapes(
    x: Tensor<f32, N, 6>,
    y: Tensor<f32, 4, 6>,
) -> (
    Tensor<f32, N, 2, 3>,
    Tensor<f32, 2, N, 3>,
    Tensor<f32, 24>,
    Tensor<f32, N, 3>,
    Tensor<f32, N, 3, 2>,
) {
    (
        reshape(x, [N, 2, 3]),
        reshape(x, [2, N, 3]),
        reshape(y, [-1]),
        reduce_sum(reshape(x + 1.0, [N, 3, -1]), -1),
        reshape(exp(x), [N, 3, 2]) * 2.0,
    )
}

// A reshape of a computed value as an output is tracked in tests/pending_bugs.rs.

#[test]
fn reshape_ops() {
    for n in [1usize, 4, 5] {
        let x = rand_arr(70 + n as u64, Ix2(n, 6), -1.0, 1.0);
        let y = rand_arr(71, Ix2(4, 6), -1.0, 1.0);
        let flat: Vec<f64> = x.iter().map(|&v| v as f64).collect();
        let sh = |s: &[usize], v: &[f64]| ArrayD::from_shape_vec(IxDyn(s), v.to_vec()).unwrap();
        let plus = sh(
            &[n, 3, 2],
            &flat.iter().map(|v| v + 1.0).collect::<Vec<_>>(),
        );
        let ex = sh(
            &[n, 3, 2],
            &flat.iter().map(|v| v.exp() * 2.0).collect::<Vec<_>>(),
        );
        for (how, (r1, r2, r3, r4, r5)) in runs_ok!(reshapes(&x, &y)) {
            assert_exact(
                &format!("reshape [N,2,3] {how}"),
                &r1,
                &sh(&[n, 2, 3], &flat),
            );
            assert_exact(
                &format!("reshape [2,N,3] {how}"),
                &r2,
                &sh(&[2, n, 3], &flat),
            );
            assert_exact(
                &format!("reshape [-1] {how}"),
                &r3,
                &sh(&[24], &y.iter().map(|&v| v as f64).collect::<Vec<_>>()),
            );
            assert_close(
                &format!("reduce(reshape(x+1)) {how}"),
                &r4,
                &ref_reduce(&plus, &[2], false, "sum"),
            );
            assert_close(&format!("reshape(exp) * 2 {how}"), &r5, &ex);
        }
    }
}

// ----- bias_add, matmul -----------------------------------------------------------------------

#[graph]
fn bias_adds(
    x: Tensor<f32, M, N>,
    b: Tensor<f32, N>,
    y: Tensor<f32, B, H, W, C>,
    c: Tensor<f32, C>,
) -> (Tensor<f32, M, N>, Tensor<f32, B, H, W, C>) {
    (bias_add(x, b), relu(bias_add(y, c)))
}

#[test]
fn bias_add_op() {
    let x = rand_arr(80, Ix2(7, 5), -1.0, 1.0);
    let b = rand_arr(81, Ix1(5), -1.0, 1.0);
    let y = rand_arr(82, Ix4(2, 3, 5, 7), -1.0, 1.0);
    let c = rand_arr(83, Ix1(7), -1.0, 1.0);
    for (how, (o1, o2)) in runs_ok!(bias_adds(&x, &b, &y, &c)) {
        assert_close(
            &format!("bias_add 2d {how}"),
            &o1,
            &zip2(&d(&x), &d(&b), |a, b| a + b),
        );
        assert_close(
            &format!("bias_add 4d relu {how}"),
            &o2,
            &zip2(&d(&y), &d(&c), |a, b| ref_relu(a + b)),
        );
    }
}

#[graph]
fn mm_2d(
    a: Tensor<f32, M, K>,
    b: Tensor<f32, K, N>,
    bias: Tensor<f32, N>,
) -> (Tensor<f32, M, N>, Tensor<f32, M, N>, Tensor<f32, K, K>) {
    let p = matmul(a, b);
    (p, tanh(p + bias) * 2.0, matmul(transpose(a), a))
}

#[graph]
fn mm_3d(
    a: Tensor<f32, B, M, K>,
    b: Tensor<f32, B, K, N>,
    w: Tensor<f32, K, N>,
) -> (Tensor<f32, B, M, N>, Tensor<f32, B, M, N>) {
    (matmul(a, b), relu(matmul(a, w)))
}

#[graph]
fn mm_f64(a: Tensor<f64, M, K>, b: Tensor<f64, K, N>) -> Tensor<f64, M, N> {
    matmul(a, b) + 1.0
}

#[test]
fn matmul_ops() {
    for (seed, (m, k, n)) in [
        (7usize, 5usize, 3usize),
        (1, 1, 1),
        (33, 65, 17),
        (2, 130, 9),
    ]
    .into_iter()
    .enumerate()
    {
        let a = rand_arr(90 + seed as u64, Ix2(m, k), -1.0, 1.0);
        let b = rand_arr(91 + seed as u64, Ix2(k, n), -1.0, 1.0);
        let bias = rand_arr(92 + seed as u64, Ix1(n), -1.0, 1.0);
        let (ad, bd) = (d(&a), d(&b));
        let p = ref_matmul(&ad, &bd);
        let tol = 1e-4 * (k as f64).sqrt();
        for (how, (mm, epi, ata)) in runs_ok!(mm_2d(&a, &b, &bias)) {
            let what = |op: &str| format!("{op} {m}x{k}x{n} {how}");
            assert_close_tol(&what("matmul"), &mm, &p, 1e-4, tol);
            assert_close_tol(
                &what("tanh(matmul + bias) * 2"),
                &epi,
                &zip2(&p, &d(&bias), |x, y| (x + y).tanh() * 2.0),
                1e-4,
                tol,
            );
            assert_close_tol(
                &what("matmul(aT, a)"),
                &ata,
                &ref_matmul(&ref_transpose(&ad, &[1, 0]), &ad),
                1e-4,
                tol,
            );
        }
    }
    for (seed, (bs, m, k, n)) in [
        (3usize, 7usize, 5usize, 3usize),
        (1, 1, 1, 1),
        (2, 9, 33, 17),
    ]
    .into_iter()
    .enumerate()
    {
        let a = rand_arr(100 + seed as u64, Ix3(bs, m, k), -1.0, 1.0);
        let b = rand_arr(101 + seed as u64, Ix3(bs, k, n), -1.0, 1.0);
        let w = rand_arr(102 + seed as u64, Ix2(k, n), -1.0, 1.0);
        let (ad, bd, wd) = (d(&a), d(&b), d(&w));
        for (how, (bmm, bmw)) in runs_ok!(mm_3d(&a, &b, &w)) {
            let what = |op: &str| format!("{op} {bs}x{m}x{k}x{n} {how}");
            assert_close(&what("batched matmul"), &bmm, &ref_matmul(&ad, &bd));
            assert_close(
                &what("relu(3d x 2d)"),
                &bmw,
                &f(&ref_matmul(&ad, &wd), ref_relu),
            );
        }
    }
    let a = rand_f64(110, Ix2(6, 11), -1.0, 1.0);
    let b = rand_f64(111, Ix2(11, 4), -1.0, 1.0);
    for (how, out) in runs_ok!(mm_f64(&a, &b)) {
        assert_close_tol(
            &format!("f64 matmul {how}"),
            &out,
            &f(&ref_matmul(&d(&a), &d(&b)), |v| v + 1.0),
            1e-12,
            1e-12,
        );
    }
}

// ----- conv2d ---------------------------------------------------------------------------------

#[graph]
fn convs(
    x: Tensor<f32, B, 9, 7, 3>,
    k: Tensor<f32, 3, 3, 3, 4>,
    bias: Tensor<f32, 4>,
) -> (
    Tensor<f32, B, 9, 7, 4>,
    Tensor<f32, B, 5, 4, 4>,
    Tensor<f32, B, 7, 5, 4>,
    Tensor<f32, B, 4, 3, 4>,
) {
    (
        conv2d(x, k, 1, SAME) + bias,
        relu(conv2d(x, k, 2, SAME)),
        bias_add(conv2d(x, k, 1, VALID), bias),
        conv2d(x, k, 2, VALID),
    )
}

#[graph]
fn convs_even(
    x: Tensor<f32, B, 5, 6, 2>,
    k4: Tensor<f32, 4, 4, 2, 3>,
    k1: Tensor<f32, 1, 1, 2, 5>,
) -> (
    Tensor<f32, B, 5, 6, 3>,
    Tensor<f32, B, 3, 3, 3>,
    Tensor<f32, B, 5, 6, 5>,
) {
    (
        conv2d(x, k4, 1, SAME),
        conv2d(x, k4, 2, SAME),
        conv2d(x, k1, 1, VALID),
    )
}

#[graph]
fn conv_symbolic(
    x: Tensor<f32, B, H, W, 3>,
    k: Tensor<f32, 3, 3, 3, 2>,
) -> Tensor<f32, B, H, W, 2> {
    conv2d(x, k, 1, SAME)
}

#[test]
fn conv2d_ops() {
    let k = rand_arr(120, Ix4(3, 3, 3, 4), -0.5, 0.5);
    let bias = rand_arr(121, Ix1(4), -0.5, 0.5);
    for bsz in [1usize, 2] {
        let x = rand_arr(122 + bsz as u64, Ix4(bsz, 9, 7, 3), -1.0, 1.0);
        let (xd, kd, bd) = (d(&x), d(&k), d(&bias));
        for (how, (s1, s2, v1, v2)) in runs_ok!(convs(&x, &k, &bias)) {
            let what = |op: &str| format!("{op} B={bsz} {how}");
            assert_close(
                &what("SAME s1 + bias"),
                &s1,
                &zip2(&ref_conv2d(&xd, &kd, 1, true), &bd, |a, b| a + b),
            );
            assert_close(
                &what("relu SAME s2"),
                &s2,
                &f(&ref_conv2d(&xd, &kd, 2, true), ref_relu),
            );
            assert_close(
                &what("VALID s1 bias_add"),
                &v1,
                &zip2(&ref_conv2d(&xd, &kd, 1, false), &bd, |a, b| a + b),
            );
            assert_close(&what("VALID s2"), &v2, &ref_conv2d(&xd, &kd, 2, false));
        }
    }
    let x = rand_arr(130, Ix4(2, 5, 6, 2), -1.0, 1.0);
    let k4 = rand_arr(131, Ix4(4, 4, 2, 3), -0.5, 0.5);
    let k1 = rand_arr(132, Ix4(1, 1, 2, 5), -0.5, 0.5);
    let (xd, k4d, k1d) = (d(&x), d(&k4), d(&k1));
    for (how, (s1, s2, one)) in runs_ok!(convs_even(&x, &k4, &k1)) {
        assert_close(
            &format!("4x4 SAME s1 (asymmetric pad) {how}"),
            &s1,
            &ref_conv2d(&xd, &k4d, 1, true),
        );
        assert_close(
            &format!("4x4 SAME s2 {how}"),
            &s2,
            &ref_conv2d(&xd, &k4d, 2, true),
        );
        assert_close(
            &format!("1x1 VALID {how}"),
            &one,
            &ref_conv2d(&xd, &k1d, 1, false),
        );
    }
    let k = rand_arr(140, Ix4(3, 3, 3, 2), -0.5, 0.5);
    for (h, w) in [(1usize, 1usize), (2, 9), (11, 3)] {
        let x = rand_arr(141 + h as u64, Ix4(1, h, w, 3), -1.0, 1.0);
        for (how, out) in runs_ok!(conv_symbolic(&x, &k)) {
            assert_close(
                &format!("symbolic conv {h}x{w} {how}"),
                &out,
                &ref_conv2d(&d(&x), &d(&k), 1, true),
            );
        }
    }
}
