//! `reduce_prod`, `reduce_any`/`reduce_all`, `cumsum` and `top_k` through `#[graph]`:
//! compiled == eager == `run` bit for bit, and all against naive references written here
//! (plain loops), on sizes 0, 1, 7 and 1023, with NaN, the infinities, -0, ties and integer
//! wrap-around.

use grafo::ndarray::{Array1, Array2, Array3, Axis};
use grafo::prelude::*;

#[path = "common/entry_points.rs"]
#[macro_use]
mod entry_points;

/// Bitwise equality (NaN equal to NaN), for compiled == eager and for exact references.
fn same_f32<D: grafo::ndarray::Dimension>(
    a: &grafo::ndarray::Array<f32, D>,
    b: &grafo::ndarray::Array<f32, D>,
) -> bool {
    a.shape() == b.shape()
        && a.iter()
            .zip(b)
            .all(|(x, y)| x.to_bits() == y.to_bits() || x.is_nan() && y.is_nan())
}

/// Values for row `i`, column `j`: mostly in [0.6, 1.4] (so 1023-element products stay
/// finite), with NaN, the infinities, zeros of both signs and negatives sprinkled in.
fn value(i: usize, j: usize) -> f32 {
    match (i * 7 + j) % 97 {
        3 => f32::NAN,
        11 => f32::INFINITY,
        17 => f32::NEG_INFINITY,
        23 => -0.0,
        31 => 0.0,
        41 => -1.25,
        _ => 0.6 + 0.8 * (((i * 31 + j * 17) % 101) as f32 / 101.0),
    }
}

/// The product in f64, one rounding to f32 (the reference of an f32 product).
fn ref_prod(vals: impl Iterator<Item = f32>) -> f32 {
    vals.fold(1.0f64, |a, v| a * v as f64) as f32
}

/// Within one f32 ulp (the products are rounded once from f64, in another order), NaN and
/// the infinities and the sign of 0 exactly.
fn close_f32(got: f32, want: f32) -> bool {
    if want.is_nan() {
        got.is_nan()
    } else if want.is_infinite() || want == 0.0 {
        got.to_bits() == want.to_bits()
    } else {
        (got - want).abs() <= want.abs() * 1.2e-7
    }
}

#[graph]
fn prods(
    x: Tensor<f32, N, 7>,
    y: Tensor<f32, 2, N, 3>,
) -> (
    Tensor<f32>,
    Tensor<f32, N>,
    Tensor<f32, 7>,
    Tensor<f32, N>,
    Tensor<f32, 1, N, 1>,
) {
    (
        reduce_prod(x),
        reduce_prod(x, -1),
        reduce_prod(x, 0),
        reduce_prod(y, [0, 2]),
        reduce_prod(y, [0, 2], true),
    )
}

#[test]
fn reduce_prod_matches_the_reference() {
    for n in [0, 1, 7, 1023] {
        // All-axes products of 7n values of [0.6, 1.4] overflow or underflow f32 only through f64.
        let x = Array2::from_shape_fn((n, 7), |(i, j)| value(i, j));
        let y = Array3::from_shape_fn((2, n, 3), |(a, i, b)| value(i + 5 * a, b + 3));
        let [(_, c), (_, e), (_, r)] = runs_ok!(prods(&x, &y));
        for (how, o) in [("eager", &e), ("run", &r)] {
            assert!(same_f32(&c.0, &o.0), "all axes compiled vs {how}, n={n}");
            assert!(same_f32(&c.1, &o.1), "rows compiled vs {how}, n={n}");
            assert!(same_f32(&c.2, &o.2), "columns compiled vs {how}, n={n}");
            assert!(same_f32(&c.3, &o.3), "axes [0, 2] compiled vs {how}, n={n}");
            assert!(same_f32(&c.4, &o.4), "keep_dims compiled vs {how}, n={n}");
        }
        let all = ref_prod(x.iter().copied());
        assert!(close_f32(c.0[()], all), "all: {} vs {all}", c.0);
        for i in 0..n {
            let want = ref_prod(x.row(i).iter().copied());
            assert!(close_f32(c.1[i], want), "row {i}: {} vs {want}", c.1[i]);
            let want = ref_prod(
                (0..2)
                    .flat_map(|a| (0..3).map(move |b| (a, b)))
                    .map(|(a, b)| y[(a, i, b)]),
            );
            assert!(
                close_f32(c.3[i], want),
                "[0, 2] at {i}: {} vs {want}",
                c.3[i]
            );
            assert_eq!(c.4[(0, i, 0)].to_bits(), c.3[i].to_bits());
        }
        for j in 0..7 {
            let want = ref_prod(x.column(j).iter().copied());
            assert!(close_f32(c.2[j], want), "column {j}: {} vs {want}", c.2[j]);
        }
        if n == 0 {
            assert_eq!(c.0[()], 1.0, "the empty product is 1");
            assert!(c.2.iter().all(|&v| v == 1.0));
        }
    }
}

#[graph]
fn int_prods(
    n: Tensor<i32, N, 3>,
    m: Tensor<i64, N>,
) -> (Tensor<i32, 3>, Tensor<i32, N>, Tensor<i64>) {
    (reduce_prod(n, 0), reduce_prod(n, 1), reduce_prod(m))
}

#[graph]
fn f64_prod(x: Tensor<f64, N>) -> Tensor<f64> {
    reduce_prod(x)
}

#[test]
fn integer_products_wrap_and_f64_products_match() {
    for len in [0usize, 1, 7, 1023] {
        let n = Array2::from_shape_fn((len, 3), |(i, j)| (i as i32 * 7 + j as i32) % 13 - 6);
        let m = Array1::from_shape_fn(len, |i| (i as i64 % 5) + 2);
        let [(_, c), (_, e), (_, r)] = runs_ok!(int_prods(&n, &m));
        assert_eq!(c, e, "compiled vs eager, n={len}");
        assert_eq!(c, r, "compiled vs run, n={len}");
        for j in 0..3 {
            let want = n.column(j).iter().fold(1i32, |a, &v| a.wrapping_mul(v));
            assert_eq!(c.0[j], want, "column {j}");
        }
        for i in 0..len {
            let want = n.row(i).iter().fold(1i32, |a, &v| a.wrapping_mul(v));
            assert_eq!(c.1[i], want, "row {i}");
        }
        assert_eq!(c.2[()], m.iter().fold(1i64, |a, &v| a.wrapping_mul(v)));
        let x = Array1::from_shape_fn(len, |i| 0.999 + (i % 7) as f64 * 0.0005);
        let [(_, c), (_, e), (_, r)] = runs_ok!(f64_prod(&x));
        assert_eq!(c, e);
        assert_eq!(c, r);
        let want = x.iter().product::<f64>();
        assert!((c[()] - want).abs() <= 1e-13 * want.abs());
    }
}

#[graph]
fn any_all(
    x: Tensor<f32, N, 7>,
) -> (
    Tensor<bool>,
    Tensor<bool>,
    Tensor<bool, N>,
    Tensor<bool, 7>,
    Tensor<bool, N, 1>,
) {
    let p = x > 1.0;
    (
        reduce_any(p),
        reduce_all(x == x),
        reduce_any(p, -1),
        reduce_all(p, 0),
        reduce_all(p, 1, true),
    )
}

#[test]
fn reduce_any_and_all_match_the_reference() {
    for n in [0, 1, 7, 1023] {
        let x = Array2::from_shape_fn((n, 7), |(i, j)| value(i, j));
        let [(_, c), (_, e), (_, r)] = runs_ok!(any_all(&x));
        assert_eq!(c, e, "compiled vs eager, n={n}");
        assert_eq!(c, r, "compiled vs run, n={n}");
        let p = x.mapv(|v| v > 1.0);
        assert_eq!(c.0[()], p.iter().any(|&b| b));
        assert_eq!(c.1[()], x.iter().all(|v| !v.is_nan()));
        for i in 0..n {
            assert_eq!(c.2[i], p.row(i).iter().any(|&b| b), "any of row {i}");
            assert_eq!(c.4[(i, 0)], p.row(i).iter().all(|&b| b), "all of row {i}");
        }
        for j in 0..7 {
            assert_eq!(c.3[j], p.column(j).iter().all(|&b| b), "all of column {j}");
        }
        if n == 0 {
            // Empty: any is false, all is true (TF's).
            assert!(!c.0[()] && c.1[()] && c.3.iter().all(|&b| b));
        }
    }
}

#[graph]
fn sums(
    x: Tensor<f32, N, 7>,
) -> (
    Tensor<f32, N, 7>,
    Tensor<f32, N, 7>,
    Tensor<f32, N, 7>,
    Tensor<f32, N, 7>,
    Tensor<f32, N, 7>,
) {
    (
        cumsum(x, 0),
        cumsum(x, -1),
        cumsum(x, 1, true),
        cumsum(x, 0, false, true),
        cumsum(x, -2, true, true),
    )
}

/// The running sums of `x` along `axis` in f32, in the order TF's definition reads.
fn ref_cumsum(x: &Array2<f32>, axis: usize, exclusive: bool, reverse: bool) -> Array2<f32> {
    let mut out = Array2::zeros(x.raw_dim());
    for (lane_in, mut lane_out) in x
        .lanes(Axis(axis))
        .into_iter()
        .zip(out.lanes_mut(Axis(axis)))
    {
        let len = lane_in.len();
        let mut total = 0.0f32;
        for step in 0..len {
            let k = if reverse { len - 1 - step } else { step };
            if exclusive {
                lane_out[k] = total;
                total += lane_in[k];
            } else {
                total += lane_in[k];
                lane_out[k] = total;
            }
        }
    }
    out
}

#[test]
fn cumsum_matches_the_reference() {
    for n in [0, 1, 7, 1023] {
        let x = Array2::from_shape_fn((n, 7), |(i, j)| {
            value(i, j) * if j % 2 == 0 { 1.0 } else { -3.0 }
        });
        let [(_, c), (_, e), (_, r)] = runs_ok!(sums(&x));
        for (how, o) in [("eager", &e), ("run", &r)] {
            assert!(same_f32(&c.0, &o.0), "axis 0 compiled vs {how}");
            assert!(same_f32(&c.1, &o.1), "axis -1 compiled vs {how}");
            assert!(same_f32(&c.2, &o.2), "exclusive compiled vs {how}");
            assert!(same_f32(&c.3, &o.3), "reverse compiled vs {how}");
            assert!(same_f32(&c.4, &o.4), "exclusive reverse compiled vs {how}");
        }
        // The same additions in the same order: exact. (A sum from +0: the exclusive first is +0.)
        assert!(
            same_f32(&c.0, &ref_cumsum(&x, 0, false, false)),
            "axis 0, n={n}"
        );
        assert!(
            same_f32(&c.1, &ref_cumsum(&x, 1, false, false)),
            "axis -1, n={n}"
        );
        assert!(
            same_f32(&c.2, &ref_cumsum(&x, 1, true, false)),
            "exclusive, n={n}"
        );
        assert!(
            same_f32(&c.3, &ref_cumsum(&x, 0, false, true)),
            "reverse, n={n}"
        );
        assert!(
            same_f32(&c.4, &ref_cumsum(&x, 0, true, true)),
            "exclusive reverse, n={n}"
        );
    }
}

#[graph]
fn int_sums(n: Tensor<i32, N>) -> (Tensor<i32, N>, Tensor<i32, N>) {
    (cumsum(n, 0), cumsum(n, 0, true, true))
}

#[test]
fn integer_cumsum_wraps() {
    for len in [0usize, 1, 7, 1023] {
        let n = Array1::from_shape_fn(len, |i| if i % 3 == 0 { i32::MAX } else { i as i32 - 4 });
        let [(_, c), (_, e), (_, r)] = runs_ok!(int_sums(&n));
        assert_eq!(c, e);
        assert_eq!(c, r);
        let mut t = 0i32;
        for i in 0..len {
            t = t.wrapping_add(n[i]);
            assert_eq!(c.0[i], t, "inclusive at {i}");
        }
        let mut t = 0i32;
        for i in (0..len).rev() {
            assert_eq!(c.1[i], t, "exclusive reverse at {i}");
            t = t.wrapping_add(n[i]);
        }
    }
}

#[graph]
fn tops(
    x: Tensor<f32, N, 7>,
) -> (
    (Tensor<f32, N, 0>, Tensor<i32, N, 0>),
    (Tensor<f32, N, 1>, Tensor<i32, N, 1>),
    (Tensor<f32, N, 3>, Tensor<i32, N, 3>),
    (Tensor<f32, N, 7>, Tensor<i32, N, 7>),
) {
    (top_k(x, 0), top_k(x, 1), top_k(x, 3), top_k(x, 7))
}

/// The indices of `row` in TF's order: larger first, NaN above all, ties by lower index.
fn ref_order(row: &[f64]) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..row.len()).collect();
    // Insertion sort: plain and stable, so equal values keep their index order.
    for a in 1..idx.len() {
        let mut b = a;
        while b > 0 && ranks_before(row[idx[b]], row[idx[b - 1]]) {
            idx.swap(b, b - 1);
            b -= 1;
        }
    }
    idx
}

/// Whether `a` ranks strictly before `b`.
fn ranks_before(a: f64, b: f64) -> bool {
    if a.is_nan() {
        !b.is_nan()
    } else {
        !b.is_nan() && a > b
    }
}

#[test]
fn top_k_matches_the_reference() {
    for n in [0, 1, 7, 1023] {
        // Ties (the values repeat), -0 next to +0, NaN and the infinities.
        let x = Array2::from_shape_fn((n, 7), |(i, j)| match (i + j) % 11 {
            0 => -0.0,
            1 => 0.0,
            _ => (value(i, j) * 4.0).round() / 4.0,
        });
        let [(_, c), (_, e), (_, r)] = runs_ok!(tops(&x));
        for (how, o) in [("eager", &e), ("run", &r)] {
            assert_eq!(c.1 .1, o.1 .1, "k=1 indices compiled vs {how}");
            assert_eq!(c.2 .1, o.2 .1, "k=3 indices compiled vs {how}");
            assert_eq!(c.3 .1, o.3 .1, "k=7 indices compiled vs {how}");
            assert!(same_f32(&c.3 .0, &o.3 .0), "k=7 values compiled vs {how}");
            assert_eq!(c.0 .0.shape(), &[n, 0]);
        }
        for i in 0..n {
            let row: Vec<f64> = x.row(i).iter().map(|&v| v as f64).collect();
            let order = ref_order(&row);
            for (k, (vals, inds)) in [
                (1, (&c.1 .0, &c.1 .1)),
                (3, (&c.2 .0, &c.2 .1)),
                (7, (&c.3 .0, &c.3 .1)),
            ] {
                for j in 0..k {
                    assert_eq!(
                        inds[(i, j)] as usize,
                        order[j],
                        "row {i} k={k} rank {j}: {row:?}"
                    );
                    let want = x[(i, order[j])];
                    assert_eq!(vals[(i, j)].to_bits(), want.to_bits(), "row {i} value {j}");
                }
            }
        }
    }
}

#[graph]
fn top_int(x: Tensor<i64, N>) -> (Tensor<i64, 2>, Tensor<i32, 2>) {
    top_k(x, 2)
}

#[graph]
fn top_symbolic(x: Tensor<f32, B, M>) -> (Tensor<f32, B, 3>, Tensor<i32, B, 3>) {
    top_k(x, 3)
}

#[test]
fn top_k_of_integers_and_a_symbolic_last_axis() {
    let x = Array1::from(vec![5i64, i64::MIN, 9, 9, -3]);
    for (how, (v, i)) in runs_ok!(top_int(&x)) {
        assert_eq!(v.to_vec(), [9, 9], "{how}");
        assert_eq!(i.to_vec(), [2, 3], "{how}: ties by lower index");
    }
    let fits = Array2::from_shape_fn((2, 4), |(i, j)| (i * 4 + j) as f32);
    for (how, (v, i)) in runs_ok!(top_symbolic(&fits)) {
        assert_eq!(v.row(1).to_vec(), [7.0, 6.0, 5.0], "{how}");
        assert_eq!(i.row(0).to_vec(), [3, 2, 1], "{how}");
    }
    // k above the run-time last axis: an `Err` from every path (TF raises), not a panic.
    let narrow = Array2::<f32>::zeros((2, 2));
    for (how, r) in runs!(top_symbolic(&narrow)) {
        let err = r.expect_err(how).to_string();
        assert!(
            err.contains("top_k") && err.contains("larger"),
            "{how}: {err}"
        );
    }
    let (v, i) = grafo::eager::top_k(&fits, 2).unwrap();
    assert_eq!((v.shape(), i.shape()), (&[2usize, 2][..], &[2usize, 2][..]));
}
