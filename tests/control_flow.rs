//! Control flow in `#[graph]` bodies (docs/LANGUAGE.md section 5): cond nodes as expressions and
//! statements, AutoGraph's rule for variables assigned in one arm, nesting, host `if`s,
//! literal and constant-folded conditions, unrolled `for`, tuples, shadowing and blocks.
//! Which arm ran is read from the values; compiled, eager and run must agree.

mod refs;

use grafo::prelude::*;
use refs::{assert_close, to_f64};

fn v(xs: &[f32]) -> Array1<f32> {
    arr1(xs)
}

/// Compiled, eager and run all equal `want`.
macro_rules! check {
    ($f:ident ( $($arg:expr),* ) == $want:expr) => {{
        let want = $want;
        let w = to_f64(&want);
        assert_close(concat!(stringify!($f), " compiled"), &$f($($arg),*).unwrap(), &w);
        assert_close(concat!(stringify!($f), " eager"), &$f::eager($($arg),*).unwrap(), &w);
        assert_close(concat!(stringify!($f), " run"), &$f::run(&mut Session::default(), $($arg),*).unwrap(), &w);
    }};
}

// ----- cond as an expression ------------------------------------------------------------------

#[graph]
fn cond_expr(x: Tensor<f32, N>) -> Tensor<f32, N> {
    let y = if reduce_sum(x) > 0.0 {
        x * 2.0
    } else {
        x - 1.0
    };
    y
}

#[test]
fn cond_as_expression() {
    check!(cond_expr(&v(&[1.0, 2.0, -0.5])) == v(&[2.0, 4.0, -1.0]));
    check!(cond_expr(&v(&[1.0, -2.0, -0.5])) == v(&[0.0, -3.0, -1.5]));
    // Empty: sum is 0, not > 0: else arm, also empty.
    check!(cond_expr(&v(&[])) == v(&[]));
    let g = cond_expr::graph();
    assert_eq!(g.conds.len(), 1, "{:#?}", g.conds);
    assert!(g.nodes.iter().any(|n| n.op == "cond"));
}

#[graph]
fn cond_expr_tail(x: Tensor<f32, N>, t: Tensor<f32>) -> Tensor<f32, N> {
    if reduce_max(x) < t {
        exp(x)
    } else {
        neg(x)
    }
}

#[test]
fn cond_as_tail_expression() {
    let x = v(&[0.0, 1.0]);
    check!(cond_expr_tail(&x, &arr0(2.0)) == v(&[1.0, std::f32::consts::E]));
    check!(cond_expr_tail(&x, &arr0(1.0)) == v(&[-0.0, -1.0]));
}

// ----- statements -----------------------------------------------------------------------------

#[graph]
fn stmt_with_else(x: Tensor<f32, N>, c: Tensor<bool>) -> Tensor<f32, N> {
    let mut y = x + 1.0;
    if c {
        y = y * 10.0;
    } else {
        y = y - 10.0;
    }
    y
}

#[graph]
fn stmt_without_else(x: Tensor<f32, N>, c: Tensor<bool>) -> Tensor<f32, N> {
    let mut y = x + 1.0;
    if c {
        y = y * 10.0;
    }
    y + 0.5
}

#[test]
fn cond_statements() {
    let x = v(&[1.0, 2.0]);
    check!(stmt_with_else(&x, &arr0(true)) == v(&[20.0, 30.0]));
    check!(stmt_with_else(&x, &arr0(false)) == v(&[-8.0, -7.0]));
    check!(stmt_without_else(&x, &arr0(true)) == v(&[20.5, 30.5]));
    check!(stmt_without_else(&x, &arr0(false)) == v(&[2.5, 3.5]));
}

// AutoGraph's rule: a variable assigned in only one arm keeps its old value in the other.
#[graph]
fn one_arm_each(
    x: Tensor<f32, N>,
    c: Tensor<bool>,
) -> (Tensor<f32, N>, Tensor<f32, N>, Tensor<f32, N>) {
    let mut a = x;
    let mut b = x * 2.0;
    let untouched = x * 3.0;
    if c {
        a = a + 100.0;
    } else {
        b = b + 1000.0;
    }
    (a, b, untouched)
}

#[test]
fn variable_assigned_in_one_arm_keeps_old_value() {
    let x = v(&[1.0, 2.0]);
    for c in [true, false] {
        let c0 = arr0(c);
        let (wa, wb) = if c {
            (v(&[101.0, 102.0]), v(&[2.0, 4.0]))
        } else {
            (v(&[1.0, 2.0]), v(&[1002.0, 1004.0]))
        };
        let wu = v(&[3.0, 6.0]);
        let (a, b, u) = one_arm_each(&x, &c0).unwrap();
        assert_eq!((&a, &b, &u), (&wa, &wb, &wu), "compiled c={c}");
        let (a, b, u) = one_arm_each::eager(&x, &c0).unwrap();
        assert_eq!((&a, &b, &u), (&wa, &wb, &wu), "eager c={c}");
        let (a, b, u) = one_arm_each::run(&mut Session::default(), &x, &c0).unwrap();
        assert_eq!((&a, &b, &u), (&wa, &wb, &wu), "run c={c}");
    }
}

// A binding introduced inside an arm does not leak; the outer one of the same name is kept.
#[graph]
fn arm_local_shadow(x: Tensor<f32, N>, c: Tensor<bool>) -> Tensor<f32, N> {
    let mut y = x;
    if c {
        let x = x * 100.0;
        y = x + 1.0;
    }
    y + x
}

#[test]
fn arm_locals_do_not_leak() {
    let x = v(&[1.0, 2.0]);
    check!(arm_local_shadow(&x, &arr0(true)) == v(&[102.0, 203.0]));
    check!(arm_local_shadow(&x, &arr0(false)) == v(&[2.0, 4.0]));
}

// ----- nesting --------------------------------------------------------------------------------

#[graph]
fn nested(x: Tensor<f32, N>, p: Tensor<f32>, q: Tensor<f32>) -> Tensor<f32, N> {
    let mut y = x;
    if p > 0.0 {
        if q > 0.0 {
            y = y + 1.0;
        } else {
            y = y + 2.0;
        }
        y = y * 10.0;
    } else {
        let z = if q > 0.0 { y - 3.0 } else { y - 4.0 };
        y = z;
    }
    y
}

#[test]
fn nested_ifs() {
    let x = v(&[0.0, 1.0]);
    check!(nested(&x, &arr0(1.0), &arr0(1.0)) == v(&[10.0, 20.0]));
    check!(nested(&x, &arr0(1.0), &arr0(-1.0)) == v(&[20.0, 30.0]));
    check!(nested(&x, &arr0(-1.0), &arr0(1.0)) == v(&[-3.0, -2.0]));
    check!(nested(&x, &arr0(-1.0), &arr0(-1.0)) == v(&[-4.0, -3.0]));
}

#[graph]
fn else_if_chain(x: Tensor<f32, N>, s: Tensor<f32>) -> Tensor<f32, N> {
    if s < 0.0 {
        x * -1.0
    } else if s < 1.0 {
        x * 0.0
    } else {
        x * 2.0
    }
}

#[test]
fn else_if() {
    let x = v(&[1.0, 3.0]);
    check!(else_if_chain(&x, &arr0(-5.0)) == v(&[-1.0, -3.0]));
    check!(else_if_chain(&x, &arr0(0.5)) == v(&[0.0, 0.0]));
    check!(else_if_chain(&x, &arr0(5.0)) == v(&[2.0, 6.0]));
}

// ----- host conditions ------------------------------------------------------------------------

#[graph]
fn host_bool(x: Tensor<f32, N>, double: bool) -> Tensor<f32, N> {
    let mut y = x + 1.0;
    if double {
        y = y * 2.0;
    }
    y
}

#[graph]
fn host_expr(x: Tensor<f32, N>, double: bool) -> Tensor<f32, N> {
    if double {
        x * 2.0
    } else {
        x * 3.0
    }
}

#[graph]
fn host_compare(x: Tensor<f32, N>, k: f32) -> Tensor<f32, N> {
    let mut y = x;
    if k > 1.0 {
        y = y * k;
    }
    y
}

// A host value as a scalar operand.
#[graph]
fn host_scalar(x: Tensor<f32, N>, k: f32, j: i64) -> (Tensor<f32, N>, Tensor<f32, N>) {
    let n = cast::<f32>(fill([N], j));
    (x * k + 1.0, x - n)
}

#[test]
fn host_if() {
    let x = v(&[1.0, 2.0]);
    check!(host_bool(&x, true) == v(&[4.0, 6.0]));
    check!(host_bool(&x, false) == v(&[2.0, 3.0]));
    check!(host_expr(&x, true) == v(&[2.0, 4.0]));
    check!(host_expr(&x, false) == v(&[3.0, 6.0]));
    check!(host_compare(&x, 3.0) == v(&[3.0, 6.0]));
    check!(host_compare(&x, 2.0) == v(&[2.0, 4.0]));
    check!(host_compare(&x, 1.0) == v(&[1.0, 2.0]));
    check!(host_compare(&x, 0.5) == v(&[1.0, 2.0]));
    for (how, (a, b)) in [
        ("compiled", host_scalar(&x, 2.5, 3).unwrap()),
        ("eager", host_scalar::eager(&x, 2.5, 3).unwrap()),
        (
            "run",
            host_scalar::run(&mut Session::default(), &x, 2.5, 3).unwrap(),
        ),
    ] {
        assert_eq!(a, v(&[3.5, 6.0]), "x * k + 1 {how}");
        assert_eq!(b, v(&[-2.0, -1.0]), "x - j {how}");
    }
    check!(host_compare(&x, 0.5) == v(&[1.0, 2.0]));
}

// ----- conditions decided at compile time ------------------------------------------------------

#[graph]
fn literal_true(x: Tensor<f32, N>) -> Tensor<f32, N> {
    let mut y = x;
    if true {
        y = y + 1.0;
    }
    if false {
        y = y * 1000.0;
    }
    y
}

#[graph]
fn folded_condition(x: Tensor<f32, N>) -> Tensor<f32, N> {
    let c = constant(3.0);
    let mut y = x;
    if c > 2.0 {
        y = y * 2.0;
    } else {
        y = y * 1000.0;
    }
    y
}

// A condition over a reduction of a constant fill folds too.
#[graph]
fn folded_reduce_condition(x: Tensor<f32, N>) -> Tensor<f32, N> {
    let mut y = x;
    if reduce_sum(fill([4], 1.0)) < 3.0 {
        y = y + 1000.0;
    }
    if reduce_sum(fill([4], 1.0)) > 3.0 {
        y = y * 2.0;
    }
    y
}

#[test]
fn compile_time_conditions() {
    let x = v(&[1.0, 2.0]);
    check!(literal_true(&x) == v(&[2.0, 3.0]));
    check!(folded_condition(&x) == v(&[2.0, 4.0]));
    check!(folded_reduce_condition(&x) == v(&[2.0, 4.0]));
    for g in [
        literal_true::graph(),
        folded_condition::graph(),
        folded_reduce_condition::graph(),
    ] {
        assert!(
            g.conds.is_empty(),
            "{}: dead arms are removed at compile time: {:#?}",
            g.name,
            g.conds
        );
        assert!(
            !g.nodes.iter().any(|n| n.op == "cond" && n.group.is_some()),
            "{}",
            g.name
        );
    }
}

// ----- unrolled loops -------------------------------------------------------------------------

#[graph]
fn unrolled(x: Tensor<f32, N>) -> Tensor<f32, N> {
    let mut acc = x;
    for _i in 0..3 {
        acc = acc * 2.0 + x;
    }
    acc
}

#[test]
fn for_unrolled() {
    // acc: x -> 3x -> 7x -> 15x
    check!(unrolled(&v(&[1.0, -2.0])) == v(&[15.0, -30.0]));
    let g = unrolled::graph();
    assert!(
        g.nodes.iter().filter(|n| n.op == "mul").count() >= 3,
        "{:#?}",
        g.nodes
    );
}

#[graph]
fn unrolled_with_cond(x: Tensor<f32, N>, t: Tensor<f32>) -> Tensor<f32, N> {
    let mut acc = x;
    for _i in 0..3 {
        if reduce_max(acc) < t {
            acc = acc * 2.0;
        }
    }
    acc
}

#[test]
fn for_unrolled_with_cond() {
    let x = v(&[1.0, 0.5]);
    // max: 1 -> 2 -> 4 -> 8 if t > 4; stops when max >= t.
    check!(unrolled_with_cond(&x, &arr0(100.0)) == v(&[8.0, 4.0]));
    check!(unrolled_with_cond(&x, &arr0(3.0)) == v(&[4.0, 2.0]));
    check!(unrolled_with_cond(&x, &arr0(0.5)) == v(&[1.0, 0.5]));
    assert_eq!(unrolled_with_cond::graph().conds.len(), 3);
}

// ----- tuples, shadowing, blocks --------------------------------------------------------------

#[graph]
fn tuples_shadowing_blocks(x: Tensor<f32, N>) -> (Tensor<f32, N>, Tensor<f32>, Tensor<f32, N>) {
    let y = x + 1.0;
    let y = y * 2.0; // shadows
    let s = {
        let t = reduce_sum(y);
        t * 0.5
    };
    let z = {
        let y = y - 100.0; // inner shadow, not visible after the block
        y * 0.0
    };
    (y, s, z + y)
}

#[test]
fn tuples_shadowing_and_blocks() {
    let x = v(&[1.0, 2.0]);
    let want = (v(&[4.0, 6.0]), arr0(5.0f32), v(&[4.0, 6.0]));
    assert_eq!(tuples_shadowing_blocks(&x).unwrap(), want);
    assert_eq!(tuples_shadowing_blocks::eager(&x).unwrap(), want);
    assert_eq!(
        tuples_shadowing_blocks::run(&mut Session::default(), &x).unwrap(),
        want
    );
    assert_eq!(tuples_shadowing_blocks::graph().outputs.len(), 3);
}

// Tuple outputs sharing a common subexpression, one of them through a cond.
#[graph]
fn tuple_with_cond(x: Tensor<f32, N>, c: Tensor<bool>) -> (Tensor<f32, N>, Tensor<f32, N>) {
    let e = exp(x);
    let mut y = e;
    if c {
        y = e + e;
    }
    (e, y)
}

#[test]
fn tuple_outputs_with_cond() {
    let x = v(&[0.0, 1.0]);
    let e = x.mapv(f32::exp);
    for c in [true, false] {
        let want_y = if c { &e * 2.0 } else { e.clone() };
        let (a, b) = tuple_with_cond(&x, &arr0(c)).unwrap();
        assert_close("e", &a, &to_f64(&e));
        assert_close("y", &b, &to_f64(&want_y));
        let (a, b) = tuple_with_cond::eager(&x, &arr0(c)).unwrap();
        assert_close("e eager", &a, &to_f64(&e));
        assert_close("y eager", &b, &to_f64(&want_y));
    }
}

// One value fetched twice.
#[graph]
fn same_twice(x: Tensor<f32, N>) -> (Tensor<f32, N>, Tensor<f32, N>, Tensor<f32, N>) {
    let e = exp(x);
    (e, e, x)
}

#[test]
fn one_value_fetched_twice() {
    let x = v(&[0.0, 1.0]);
    let e = x.mapv(f32::exp);
    for (how, (a, b, c)) in [
        ("compiled", same_twice(&x).unwrap()),
        ("eager", same_twice::eager(&x).unwrap()),
        ("run", same_twice::run(&mut Session::default(), &x).unwrap()),
    ] {
        assert_close(&format!("first {how}"), &a, &to_f64(&e));
        assert_close(&format!("second {how}"), &b, &to_f64(&e));
        assert_eq!(c, x, "{how}");
    }
}

// A cond whose arms differ in their work but agree in shape, over a matrix.
#[graph]
fn cond_matrix(x: Tensor<f32, M, N>, t: Tensor<f32>) -> Tensor<f32, M, N> {
    let mut y = softmax(x, -1);
    if norm(x) > t {
        y = y * reduce_mean(x, 1, true);
    }
    y
}

#[test]
fn cond_on_a_matrix() {
    let x = arr2(&[[1.0f32, 2.0, 3.0], [0.0, -1.0, 4.0]]);
    let sm = {
        let mut o = x.clone();
        for mut r in o.rows_mut() {
            let m = r.iter().cloned().fold(f32::MIN, f32::max);
            r.mapv_inplace(|v| (v - m).exp());
            let s: f32 = r.sum();
            r.mapv_inplace(|v| v / s);
        }
        o
    };
    let means = x
        .mean_axis(grafo::ndarray::Axis(1))
        .unwrap()
        .insert_axis(grafo::ndarray::Axis(1));
    let taken = &sm * &means;
    for (t, want) in [(0.0f32, &taken), (100.0, &sm)] {
        let w = to_f64(want);
        assert_close(
            "cond_matrix compiled",
            &cond_matrix(&x, &arr0(t)).unwrap(),
            &w,
        );
        assert_close(
            "cond_matrix eager",
            &cond_matrix::eager(&x, &arr0(t)).unwrap(),
            &w,
        );
        assert_close(
            "cond_matrix run",
            &cond_matrix::run(&mut Session::default(), &x, &arr0(t)).unwrap(),
            &w,
        );
    }
}
