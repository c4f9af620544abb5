//! Selection and assembly ops through `#[graph]`: indexing with ndarray's `s![..]`, `slice`,
//! `strided_slice`, `concat`, `stack`, `split`, `tile`, `pad`, `expand_dims`, `squeeze`,
//! `gather`, `one_hot`, `argmax`/`argmin` and `range`. Each is run compiled, eager and in a
//! `Session`, and compared element for element (these ops copy, so exactly, NaN bits too)
//! with a naive reference written here in plain loops (or, for `s![..]`, with ndarray's own
//! slicing, whose meaning grafo follows), on sizes 0, 1, 7 and 1023, with negative indices
//! and steps, and with the run-time errors of TF's rules.

mod refs;

use grafo::ndarray::{Array1, Array2, Array3, ArrayD, Dimension, IxDyn};
use grafo::prelude::*;
use refs::*;

#[path = "common/entry_points.rs"]
#[macro_use]
mod entry_points;

/// The sizes every op is checked on (the symbolic dim of each function).
const SIZES: [usize; 4] = [0, 1, 7, 1023];

/// Equal shapes and bit-identical elements (NaN payloads included).
fn same<T: Copy + std::fmt::Debug + PartialEq + AsF64, D: Dimension, E: Dimension>(
    what: &str,
    got: &Array<T, D>,
    want: &Array<T, E>,
) {
    assert_eq!(got.shape(), want.shape(), "{what}: shape");
    for (i, (g, w)) in got.iter().zip(want.iter()).enumerate() {
        let (g64, w64) = (g.as_f64(), w.as_f64());
        let ok = g == w || (g64.is_nan() && w64.is_nan());
        assert!(ok, "{what}: element {i}: got {g:?}, want {w:?}");
    }
}

// ----- indexing with s![..] -----------------------------------------------------------------

#[graph]
#[allow(clippy::type_complexity)]
fn index_forms(
    x: Tensor<f32, B, 9>,
    t: usize,
    u: i64,
) -> (
    Tensor<f32, B>,
    Tensor<f32, B>,
    Tensor<f32, B, 3>,
    Tensor<f32, B, 9>,
    Tensor<f32, B, 4>,
    Tensor<f32, B>,
    Tensor<f32, B, 5>,
    Tensor<f32, B>,
    Tensor<f32, B, 0>,
    Tensor<f32, B, 2>,
) {
    (
        x[s![.., 0]],
        x[s![.., -1]],
        x[s![.., 1..7;2]],
        x[s![..;-1, ..]],
        x[s![.., 0..8;-2]],
        x[s![.., t]],
        x[s![.., 2..=6]],
        x[s![.., u]],
        x[s![.., 6..2]],
        x[s![.., -3..;-2]],
    )
}

#[test]
fn index_matches_ndarray_slicing() {
    for &b in &SIZES {
        let x = Array2::from_shape_fn((b, 9), |(i, j)| (i * 100 + j) as f32);
        for (how, r) in runs!(index_forms(&x, 4, -2)) {
            let (a0, a1, a2, a3, a4, a5, a6, a7, a8, a9) = r.unwrap();
            let w = |what: &str| format!("{what} b={b} {how}");
            same(&w("[.., 0]"), &a0, &x.slice(s![.., 0]).to_owned());
            same(&w("[.., -1]"), &a1, &x.slice(s![.., -1]).to_owned());
            same(&w("[.., 1..7;2]"), &a2, &x.slice(s![.., 1..7;2]).to_owned());
            same(&w("[..;-1, ..]"), &a3, &x.slice(s![..;-1, ..]).to_owned());
            same(
                &w("[.., 0..8;-2]"),
                &a4,
                &x.slice(s![.., 0..8;-2]).to_owned(),
            );
            same(&w("[.., t]"), &a5, &x.slice(s![.., 4]).to_owned());
            same(&w("[.., 2..=6]"), &a6, &x.slice(s![.., 2..=6]).to_owned());
            same(&w("[.., u]"), &a7, &x.slice(s![.., -2]).to_owned());
            assert_eq!(a8.shape(), &[b, 0], "{}", w("[.., 6..2]"));
            same(
                &w("[.., -3..;-2]"),
                &a9,
                &x.slice(s![.., -3..;-2]).to_owned(),
            );
        }
    }
}

#[test]
fn negative_step_is_ndarrays_not_numpys() {
    // ndarray walks the range 0..8 backwards from its last element: 7, 5, 3, 1
    // (NumPy's x[0:8:-2] would be empty). A plain-loop reference of that rule:
    let x = Array2::from_shape_fn((1, 9), |(_, j)| j as f32);
    let (.., a4, _, _, _, _, _) = index_forms(&x, 0, 0).unwrap();
    let want: Vec<f32> = (0..8).rev().step_by(2).map(|j| j as f32).collect();
    assert_eq!(a4.iter().copied().collect::<Vec<_>>(), want);
}

#[test]
fn run_time_index_out_of_range_is_an_error() {
    let x = Array2::<f32>::zeros((3, 9));
    for (how, r) in runs!(index_forms(&x, 9, 0)) {
        let e = r.unwrap_err().to_string();
        assert!(
            e.contains("index 9 is out of range for axis 1 of size 9"),
            "{how}: {e}"
        );
    }
    for (how, r) in runs!(index_forms(&x, 0, -10)) {
        let e = r.unwrap_err().to_string();
        assert!(e.contains("index -10 is out of range"), "{how}: {e}");
    }
    // -9 is the first element.
    let (.., a7, _, _) = index_forms(&x, 0, -9).unwrap();
    assert_eq!(a7.len(), 3);
}

#[graph]
fn symbolic_bounds(x: Tensor<f32, B, 4>) -> (Tensor<f32, 3, 4>, Tensor<f32, 2, 4>, Tensor<f32, 4>) {
    (x[s![0..3, ..]], x[s![-2.., ..]], x[s![2, ..]])
}

#[test]
fn static_bounds_on_a_symbolic_dim_are_checked_at_run_time() {
    let x = Array2::from_shape_fn((7, 4), |(i, j)| (i * 4 + j) as f32);
    for (how, r) in runs!(symbolic_bounds(&x)) {
        let (a, b, c) = r.unwrap();
        same(how, &a, &x.slice(s![0..3, ..]).to_owned());
        same(how, &b, &x.slice(s![-2.., ..]).to_owned());
        same(how, &c, &x.slice(s![2, ..]).to_owned());
    }
    let small = Array2::<f32>::zeros((2, 4));
    for (how, r) in runs!(symbolic_bounds(&small)) {
        let e = r.unwrap_err().to_string();
        assert!(
            e.contains("out of range for axis 0 of size 2"),
            "{how}: {e}"
        );
    }
}

#[graph]
fn element(x: Tensor<i32, 5, 4>) -> Tensor<i32> {
    x[s![-1, 2]] + x[s![0, -4]]
}

#[graph]
fn unrolled_steps(x: Tensor<f32, B, 6, 3>) -> Tensor<f32, B, 3> {
    let mut h = x[s![.., 0, ..]];
    for t in 1..6 {
        h = tanh(h + x[s![.., t, ..]]);
    }
    h
}

#[test]
fn rank_0_results_and_for_variables() {
    let x = Array2::from_shape_fn((5, 4), |(i, j)| (i * 4 + j) as i32);
    for (how, r) in runs!(element(&x)) {
        assert_eq!(r.unwrap().into_scalar(), x[[4, 2]] + x[[0, 0]], "{how}");
    }
    for &b in &SIZES {
        let x = rand_arr(3, IxDyn(&[b, 6, 3]), -1.0, 1.0)
            .into_dimensionality()
            .unwrap();
        let mut h = x.slice(s![.., 0, ..]).mapv(|v: f32| v as f64);
        for t in 1..6 {
            h = (&h + &x.slice(s![.., t, ..]).mapv(|v: f32| v as f64)).mapv(f64::tanh);
        }
        let eager = unrolled_steps::eager(&x).unwrap();
        for (how, r) in runs!(unrolled_steps(&x)) {
            let r = r.unwrap();
            same(&format!("gru-like b={b} {how} vs eager"), &r, &eager);
            assert_close(&format!("gru-like b={b} {how}"), &r, &h.clone().into_dyn());
        }
    }
}

// ----- TF's slice and strided_slice -----------------------------------------------------------

/// NumPy's `x[begin:end:stride]` on one axis of size `n` (TF's strided_slice rule).
fn numpy_range(n: usize, begin: i64, end: i64, stride: i64) -> Vec<usize> {
    let n = n as i64;
    let norm = |v: i64| if v < 0 { v + n } else { v };
    let mut out = Vec::new();
    if stride > 0 {
        let (mut i, e) = (norm(begin).clamp(0, n), norm(end).clamp(0, n));
        while i < e {
            out.push(i as usize);
            i += stride;
        }
    } else {
        let (mut i, e) = (norm(begin).clamp(-1, n - 1), norm(end).clamp(-1, n - 1));
        while i > e {
            out.push(i as usize);
            i += stride;
        }
    }
    out
}

fn pick2(x: &Array2<f32>, rows: &[usize], cols: &[usize]) -> Array2<f32> {
    Array2::from_shape_fn((rows.len(), cols.len()), |(i, j)| x[[rows[i], cols[j]]])
}

#[graph]
#[allow(clippy::type_complexity)]
fn tf_slices(
    x: Tensor<f32, 7, 5>,
) -> (
    Tensor<f32, 3, 5>,
    Tensor<f32, 6, 2>,
    Tensor<f32, 3, 5>,
    Tensor<f32, 2, 2>,
    Tensor<f32, 7, 5>,
) {
    (
        slice(x, [2, 0], [3, -1]),
        slice(x, [1, 3], [-1, 2]),
        strided_slice(x, [0], [7], [3]),
        strided_slice(x, [5, -1], [1, -100], [-2, -3]),
        strided_slice(x, [-100, 0], [100, 5], [1, 1]),
    )
}

#[test]
fn slice_and_strided_slice_follow_tf() {
    let x = Array2::from_shape_fn((7, 5), |(i, j)| (i * 10 + j) as f32);
    let all = |n: usize| (0..n).collect::<Vec<_>>();
    for (how, r) in runs!(tf_slices(&x)) {
        let (a, b, c, d, e) = r.unwrap();
        same(how, &a, &pick2(&x, &[2, 3, 4], &all(5)));
        same(how, &b, &pick2(&x, &[1, 2, 3, 4, 5, 6], &[3, 4]));
        same(how, &c, &pick2(&x, &numpy_range(7, 0, 7, 3), &all(5)));
        same(
            how,
            &d,
            &pick2(&x, &numpy_range(7, 5, 1, -2), &numpy_range(5, -1, -100, -3)),
        );
        same(how, &e, &x);
    }
    // The eager API's own forms, and TF's checks.
    let xd = x.clone().into_dyn();
    assert!(grafo::eager::slice(&xd, &[5, 0], &[3, 1]).is_err());
    assert!(grafo::eager::slice(&xd, &[-1, 0], &[1, 1]).is_err());
    let r = grafo::eager::strided_slice(&xd, &[6], &[-8], &[-1]).unwrap();
    same(
        "eager strided",
        &r,
        &pick2(&x, &numpy_range(7, 6, -8, -1), &all(5)).into_dyn(),
    );
}

// ----- concat, stack, split -------------------------------------------------------------------

#[graph]
#[allow(clippy::type_complexity)]
fn assemble(
    a: Tensor<f32, B, 3>,
    b: Tensor<f32, B, 2>,
) -> (
    Tensor<f32, B, 5>,
    Tensor<f32, B, 2, 2>,
    Tensor<f32, B, 1>,
    Tensor<f32, B, 2>,
    Tensor<f32, 2, B, 3>,
    Tensor<f32, B, 3>,
) {
    let c = concat([a, b], -1);
    let st = stack([b, b * 2.0], 1);
    let (p, q) = split(a, [1, 2], 1);
    let (l, m, r) = split(a, 3, -1);
    (c, st, p, q, stack([a, a + 1.0], 0), concat([r, m, l], 1))
}

#[graph]
fn concat_rows(
    a: Tensor<i32, 2, 3>,
    b: Tensor<i32, 5, 3>,
    s: Tensor<i32, B, 3>,
) -> (Tensor<i32, 7, 3>, Tensor<i32, B, 3>) {
    (concat([a, b], 0), concat([s], 0))
}

#[test]
fn concat_stack_split() {
    for &n in &SIZES {
        let a = Array2::from_shape_fn((n, 3), |(i, j)| (i * 3 + j) as f32);
        let b = Array2::from_shape_fn((n, 2), |(i, j)| -((i * 2 + j) as f32));
        // Naive references with plain loops.
        let c = Array2::from_shape_fn(
            (n, 5),
            |(i, j)| if j < 3 { a[[i, j]] } else { b[[i, j - 3]] },
        );
        let st = Array3::from_shape_fn((n, 2, 2), |(i, k, j)| {
            b[[i, j]] * if k == 0 { 1.0 } else { 2.0 }
        });
        let p = Array2::from_shape_fn((n, 1), |(i, _)| a[[i, 0]]);
        let q = Array2::from_shape_fn((n, 2), |(i, j)| a[[i, j + 1]]);
        let st0 = Array3::from_shape_fn((2, n, 3), |(k, i, j)| a[[i, j]] + k as f32);
        let rev = Array2::from_shape_fn((n, 3), |(i, j)| a[[i, 2 - j]]);
        for (how, r) in runs!(assemble(&a, &b)) {
            let (c_, st_, p_, q_, st0_, rev_) = r.unwrap();
            let w = format!("n={n} {how}");
            same(&w, &c_, &c);
            same(&w, &st_, &st);
            same(&w, &p_, &p);
            same(&w, &q_, &q);
            same(&w, &st0_, &st0);
            same(&w, &rev_, &rev);
        }
    }
    let a = rand_i32(1, grafo::ndarray::Ix2(2, 3), -9, 9);
    let b = rand_i32(2, grafo::ndarray::Ix2(5, 3), -9, 9);
    let s = rand_i32(3, grafo::ndarray::Ix2(4, 3), -9, 9);
    let want = Array2::from_shape_fn(
        (7, 3),
        |(i, j)| if i < 2 { a[[i, j]] } else { b[[i - 2, j]] },
    );
    for (how, r) in runs!(concat_rows(&a, &b, &s)) {
        let (c, s2) = r.unwrap();
        same(how, &c, &want);
        same(how, &s2, &s);
    }
    // The eager forms' run-time checks.
    let (ad, bd) = (a.clone().into_dyn(), b.clone().into_dyn());
    assert!(grafo::eager::concat(&[ad.view(), bd.view()], 1).is_err());
    assert!(grafo::eager::stack(&[ad.view(), bd.view()], 0).is_err());
    assert!(grafo::eager::split(&bd, 2, 0).is_err());
    assert_eq!(grafo::eager::split(&bd, 5, 0).unwrap().len(), 5);
}

// ----- gather, one_hot, argmax/argmin, range --------------------------------------------------

#[graph]
#[allow(clippy::type_complexity)]
fn pick(
    x: Tensor<f32, N, 4>,
    i: Tensor<i32, K>,
    j: Tensor<i64, 2, 3>,
) -> (
    Tensor<f32, K, 4>,
    Tensor<f32, N, 2, 3>,
    Tensor<f32, K, 5>,
    Tensor<i64, 4>,
    Tensor<i64, N>,
    Tensor<i32, N>,
    Tensor<f32, 5>,
    Tensor<i64, 3>,
    Tensor<f64, K, 3>,
) {
    (
        gather(x, i, 0),
        gather(x, j, 1),
        one_hot(i, 5),
        argmax(x, 0),
        argmin(x, -1),
        range(N),
        range(0.5, 3.0, 0.5),
        range::<i64>(2, 11, 3),
        one_hot::<f64>(i, 3, 2, -1),
    )
}

/// The index of the first NaN, else of the first extreme (argmax when `max`).
fn ref_arg(v: &[f32], max: bool) -> i64 {
    if let Some(p) = v.iter().position(|x| x.is_nan()) {
        return p as i64;
    }
    let mut best = 0;
    for k in 1..v.len() {
        if (max && v[k] > v[best]) || (!max && v[k] < v[best]) {
            best = k;
        }
    }
    best as i64
}

#[test]
fn gather_one_hot_arg_reduce_range() {
    for &n in &[1usize, 7, 1023] {
        let mut x = Array2::from_shape_fn((n, 4), |(r, c)| ((r * 7 + c * 3) % 5) as f32);
        if n > 2 {
            x[[1, 2]] = f32::NAN;
            x[[n - 1, 3]] = f32::NAN;
        }
        for &k in &[0usize, 1, 7, 1023] {
            let i = Array1::from_shape_fn(k, |p| ((p * 31) % n) as i32);
            let j = grafo::ndarray::arr2(&[[3i64, 0, 1], [2, 2, 3]]);
            let g0 = Array2::from_shape_fn((k, 4), |(p, c)| x[[i[p] as usize, c]]);
            let g1 = Array3::from_shape_fn((n, 2, 3), |(r, a, b)| x[[r, j[[a, b]] as usize]]);
            let oh = Array2::from_shape_fn(
                (k, 5),
                |(p, d)| if i[p] as usize == d { 1.0f32 } else { 0.0 },
            );
            let am = Array1::from_shape_fn(4, |c| ref_arg(&x.column(c).to_vec(), true));
            let an = Array1::from_shape_fn(n, |r| ref_arg(&x.row(r).to_vec(), false));
            let rn = Array1::from_shape_fn(n, |p| p as i32);
            let oh3 = Array2::from_shape_fn(
                (k, 3),
                |(p, d)| if i[p] as usize == d { 2.0f64 } else { -1.0 },
            );
            for (how, r) in runs!(pick(&x, &i, &j)) {
                let w = format!("n={n} k={k} {how}");
                let (a, b, c, d, e, f, g, h, o) = r.unwrap();
                same(&format!("gather0 {w}"), &a, &g0);
                same(&format!("gather1 {w}"), &b, &g1);
                same(&format!("one_hot {w}"), &c, &oh);
                same(&format!("argmax {w}"), &d, &am);
                same(&format!("argmin {w}"), &e, &an);
                same(&format!("range(N) {w}"), &f, &rn);
                same(
                    &format!("range f32 {w}"),
                    &g,
                    &grafo::ndarray::arr1(&[0.5f32, 1.0, 1.5, 2.0, 2.5]),
                );
                same(
                    &format!("range i64 {w}"),
                    &h,
                    &grafo::ndarray::arr1(&[2i64, 5, 8]),
                );
                same(&format!("one_hot f64 {w}"), &o, &oh3);
            }
        }
    }
}

#[test]
fn arg_reduce_ties_take_the_first_index_and_nan_wins() {
    let x = grafo::ndarray::arr2(&[
        [1.0f32, 3.0, 3.0, 0.0],
        [2.0, f32::NAN, 5.0, f32::NAN],
        [-1.0, -1.0, f32::NAN, -1.0],
    ]);
    let xd = x.clone().into_dyn();
    let max = grafo::eager::argmax(&xd, 1).unwrap();
    let min = grafo::eager::argmin(&xd, 1).unwrap();
    assert_eq!(max.into_raw_vec_and_offset().0, vec![1, 1, 2]);
    assert_eq!(min.into_raw_vec_and_offset().0, vec![3, 1, 2]);
    let empty = ArrayD::<f32>::zeros(IxDyn(&[3, 0]));
    assert!(grafo::eager::argmax(&empty, 1).is_err());
}

#[test]
fn gather_out_of_range_is_an_error_and_one_hot_gives_a_zero_row() {
    let x = Array2::<f32>::ones((3, 4));
    let j = grafo::ndarray::arr2(&[[0i64, 0, 0], [0, 0, 0]]);
    for bad in [3, -1] {
        let i = grafo::ndarray::arr1(&[0, bad]);
        for (how, r) in runs!(pick(&x, &i, &j)) {
            let e = r.unwrap_err().to_string();
            assert!(
                e.contains(&format!("indices[1] = {bad} is not in [0, 3)")),
                "{how}: {e}"
            );
        }
        let oh = grafo::eager::one_hot(&i, 3, 1.0f32, 0.0).unwrap();
        assert_eq!(
            oh.into_raw_vec_and_offset().0,
            vec![1.0, 0.0, 0.0, 0.0, 0.0, 0.0]
        );
    }
    assert!(grafo::eager::range(5, 1, 1).is_err());
    assert!(grafo::eager::range(1, 5, 0).is_err());
    assert_eq!(
        grafo::eager::range(5, 1, -2)
            .unwrap()
            .into_raw_vec_and_offset()
            .0,
        vec![5, 3]
    );
}

/// Integer ranges at the edges of their dtype: i32 from its least value by its greatest, and
/// i64 beyond 2^53, where a length counted through f64 would round (to 4 here, not 2).
#[graph]
#[allow(clippy::type_complexity)]
fn wide_ranges() -> (
    Tensor<i32, 3>,
    Tensor<i64, 2>,
    Tensor<i64, 5>,
    Tensor<i64, 3>,
) {
    (
        range(-2147483648, 2147483647, 2147483647),
        range::<i64>(9007199254740993, 9007199254740995),
        range::<i64>(0, 5000000000, 1000000000),
        range::<i64>(
            9223372036854775807,
            -9223372036854775808,
            -9223372036854775807,
        ),
    )
}

#[test]
fn integer_ranges_at_the_edges_of_their_dtype() {
    for (how, (a, b, c, d)) in runs_ok!(wide_ranges()) {
        same(
            &format!("i32 {how}"),
            &a,
            &grafo::ndarray::arr1(&[i32::MIN, -1, i32::MAX - 1]),
        );
        same(
            &format!("i64 past 2^53 {how}"),
            &b,
            &grafo::ndarray::arr1(&[9007199254740993i64, 9007199254740994]),
        );
        same(
            &format!("i64 past i32 {how}"),
            &c,
            &grafo::ndarray::Array1::from_shape_fn(5, |k| k as i64 * 1_000_000_000),
        );
        same(
            &format!("i64 down {how}"),
            &d,
            &grafo::ndarray::arr1(&[i64::MAX, 0, -i64::MAX]),
        );
    }
}

// ----- tile, pad, expand_dims, squeeze --------------------------------------------------------

#[graph]
#[allow(clippy::type_complexity)]
fn reshape_family(
    x: Tensor<f32, B, 3>,
    y: Tensor<f32, 1, 4, 1>,
) -> (
    Tensor<f32, B, 6>,
    Tensor<f32, B, 6>,
    Tensor<f32, B, 5>,
    Tensor<f32, B, 3, 1>,
    Tensor<f32, 1, B, 3>,
    Tensor<f32, 4>,
    Tensor<f32, 4, 1>,
    Tensor<f32, 2, 4, 3>,
    Tensor<f32, 3, 4, 1>,
    Tensor<f32, 3>,
) {
    (
        tile(x, [1, 2]),
        pad(x, [[0, 0], [1, 2]]),
        pad(x, [[0, 0], [2, 0]], -1.5),
        expand_dims(x, -1),
        expand_dims(x, 0),
        squeeze(y),
        squeeze(y, [0]),
        tile(y, [2, 1, 3]),
        pad(y, [[1, 1], [0, 0], [0, 0]], 7),
        reduce_sum(tile(x, [2, 1]), 0),
    )
}

#[test]
fn tile_pad_expand_squeeze() {
    let y = Array3::from_shape_fn((1, 4, 1), |(_, j, _)| j as f32 + 0.5);
    for &b in &SIZES {
        let x = Array2::from_shape_fn((b, 3), |(i, j)| (i * 3 + j) as f32);
        let t = Array2::from_shape_fn((b, 6), |(i, j)| x[[i, j % 3]]);
        let p = Array2::from_shape_fn((b, 6), |(i, j)| {
            if (1..4).contains(&j) {
                x[[i, j - 1]]
            } else {
                0.0
            }
        });
        let p2 = Array2::from_shape_fn((b, 5), |(i, j)| if j >= 2 { x[[i, j - 2]] } else { -1.5 });
        let e1 = Array3::from_shape_fn((b, 3, 1), |(i, j, _)| x[[i, j]]);
        let e0 = Array3::from_shape_fn((1, b, 3), |(_, i, j)| x[[i, j]]);
        let sq = Array1::from_shape_fn(4, |j| y[[0, j, 0]]);
        let sq0 = Array2::from_shape_fn((4, 1), |(j, _)| y[[0, j, 0]]);
        let ty = Array3::from_shape_fn((2, 4, 3), |(_, j, _)| y[[0, j, 0]]);
        let py = Array3::from_shape_fn(
            (3, 4, 1),
            |(i, j, _)| if i == 1 { y[[0, j, 0]] } else { 7.0 },
        );
        for (how, r) in runs!(reshape_family(&x, &y)) {
            let w = format!("b={b} {how}");
            let (a, bb, c, d, e, f, g, h, i, ts) = r.unwrap();
            let colsum = Array1::from_shape_fn(3, |j| 2.0 * (0..b).map(|i| x[[i, j]]).sum::<f32>());
            assert_close(&format!("tile of B {w}"), &ts, &to_f64(&colsum));
            same(&format!("tile {w}"), &a, &t);
            same(&format!("pad {w}"), &bb, &p);
            same(&format!("pad value {w}"), &c, &p2);
            same(&format!("expand_dims -1 {w}"), &d, &e1);
            same(&format!("expand_dims 0 {w}"), &e, &e0);
            same(&format!("squeeze {w}"), &f, &sq);
            same(&format!("squeeze [0] {w}"), &g, &sq0);
            same(&format!("tile y {w}"), &h, &ty);
            same(&format!("pad y {w}"), &i, &py);
        }
    }
    let yd = y.clone().into_dyn();
    assert!(grafo::eager::squeeze(&yd, Some(&[1])).is_err());
    assert!(grafo::eager::expand_dims(&yd, 5).is_err());
    assert!(grafo::eager::tile(&yd, &[1, 2]).is_err());
    assert!(grafo::eager::pad(&yd, &[[1, 1]], 0.0).is_err());
}

#[test]
fn graph_describes_selection_nodes() {
    let g = index_forms::graph();
    let ops: Vec<&str> = g.nodes.iter().map(|n| n.op.as_str()).collect();
    assert!(ops.contains(&"index"), "{ops:?}");
    let n = g.nodes.iter().find(|n| n.op == "index").unwrap();
    assert!(n.attrs.iter().any(|(k, _)| k == "axes"), "{:?}", n.attrs);
    let g = pick::graph();
    for op in ["gather", "one_hot", "argmax", "argmin", "range"] {
        assert!(g.nodes.iter().any(|n| n.op == op), "{op}");
    }
}

// ----- run-time indices from tensors, scalars, other dtypes, conds, passes off ----------------

#[graph]
fn index_by_argmax(v: Tensor<f32, N>, x: Tensor<f32, N, 3>) -> (Tensor<f32, 3>, Tensor<f32, 2>) {
    let best = argmax(v, 0);
    (x[s![best, ..]], stack([reduce_sum(v), reduce_max(v)]))
}

#[test]
fn a_rank_0_tensor_is_a_run_time_index() {
    for &n in &[1usize, 7, 1023] {
        let v = Array1::from_shape_fn(n, |i| ((i * 37) % 101) as f32);
        let x = Array2::from_shape_fn((n, 3), |(i, j)| (i * 3 + j) as f32);
        let best = ref_arg(&v.to_vec(), true) as usize;
        for (how, r) in runs!(index_by_argmax(&v, &x)) {
            let (row, st) = r.unwrap();
            same(&format!("n={n} {how}"), &row, &x.row(best).to_owned());
            assert_eq!(st[1], v.iter().cloned().fold(f32::MIN, f32::max), "{how}");
        }
    }
}

#[graph]
#[allow(clippy::type_complexity)]
fn other_dtypes(
    m: Tensor<bool, B, 4>,
    k: Tensor<i64, B, 4>,
    i: Tensor<i64, 3>,
) -> (
    Tensor<bool, B, 2>,
    Tensor<i64, 3, 4>,
    Tensor<bool, B, 8>,
    Tensor<i64, B, 6>,
    Tensor<f64, 4>,
) {
    (
        m[s![.., 1..;2]],
        gather(k, i, 0),
        concat([m, m], 1),
        pad(k, [[0, 0], [1, 1]], -7),
        range::<f64>(0, 2, 0.5),
    )
}

#[test]
fn bool_and_i64_tensors() {
    for &b in &[3usize, 7, 1023] {
        let m = Array2::from_shape_fn((b, 4), |(r, c)| (r + c) % 3 == 0);
        let k = Array2::from_shape_fn((b, 4), |(r, c)| (r * 4 + c) as i64 - 100);
        let i = grafo::ndarray::arr1(&[2i64, 0, 2]);
        let g = Array2::from_shape_fn((3, 4), |(p, c)| k[[i[p] as usize, c]]);
        let cm = Array2::from_shape_fn((b, 8), |(r, c)| m[[r, c % 4]]);
        let pk = Array2::from_shape_fn((b, 6), |(r, c)| {
            if (1..5).contains(&c) {
                k[[r, c - 1]]
            } else {
                -7
            }
        });
        for (how, r) in runs!(other_dtypes(&m, &k, &i)) {
            let (a, g_, c, p, rg) = r.unwrap();
            assert_eq!(a, m.slice(s![.., 1..;2]).to_owned(), "{how}");
            assert_eq!(g_, g, "{how}");
            assert_eq!(c, cm, "{how}");
            assert_eq!(p, pk, "{how}");
            assert_eq!(rg.to_vec(), vec![0.0, 0.5, 1.0, 1.5], "{how}");
        }
    }
}

#[graph]
fn slice_in_arms(x: Tensor<f32, B, 6>, t: usize) -> Tensor<f32, B, 2> {
    let mut y = x[s![.., 0..2]];
    if reduce_sum(y) > 0.0 {
        y = x[s![.., -2..]] * 2.0;
    } else {
        y = stack([x[s![.., t]], x[s![.., 5 - t]]], 1);
    }
    y
}

#[test]
fn slices_inside_cond_arms() {
    for &b in &SIZES {
        for sign in [1.0f32, -1.0] {
            let x = Array2::from_shape_fn((b, 6), |(i, j)| sign * (1 + i * 6 + j) as f32);
            let want = if b > 0 && sign > 0.0 {
                x.slice(s![.., -2..]).mapv(|v| v * 2.0)
            } else {
                Array2::from_shape_fn((b, 2), |(i, k)| x[[i, if k == 0 { 1 } else { 4 }]])
            };
            for (how, r) in runs!(slice_in_arms(&x, 1)) {
                same(&format!("b={b} sign={sign} {how}"), &r.unwrap(), &want);
            }
        }
    }
    let x = Array2::<f32>::from_elem((2, 6), -1.0);
    for (how, r) in runs!(slice_in_arms(&x, 6)) {
        assert!(r.is_err(), "{how}");
    }
}

#[graph(disable(fold, simplify, cse, dce, fusion))]
fn passes_off(x: Tensor<f32, B, 6>) -> (Tensor<f32, B, 3>, Tensor<f32, 6, 1>, Tensor<i64, B>) {
    let (a, b) = split(x, 2, 1);
    let y = concat([b, a], 1);
    (y[s![.., ..;2]], expand_dims(x[s![0, ..]], 1), argmax(x, 1))
}

#[graph]
fn passes_on(x: Tensor<f32, B, 6>) -> (Tensor<f32, B, 3>, Tensor<f32, 6, 1>, Tensor<i64, B>) {
    let (a, b) = split(x, 2, 1);
    let y = concat([b, a], 1);
    (y[s![.., ..;2]], expand_dims(x[s![0, ..]], 1), argmax(x, 1))
}

#[test]
fn results_do_not_depend_on_the_passes() {
    for &b in &[1usize, 7, 1023] {
        let x = rand_arr(9, grafo::ndarray::Ix2(b, 6), -5.0, 5.0);
        let y = Array2::from_shape_fn((b, 3), |(i, k)| x[[i, (2 * k + 3) % 6]]);
        let e = Array2::from_shape_fn((6, 1), |(j, _)| x[[0, j]]);
        let am = Array1::from_shape_fn(b, |i| ref_arg(&x.row(i).to_vec(), true));
        for (how, r) in runs!(passes_off(&x))
            .into_iter()
            .chain(runs!(passes_on(&x)))
        {
            let (y_, e_, am_) = r.unwrap();
            same(&format!("b={b} {how}"), &y_, &y);
            same(&format!("b={b} {how}"), &e_, &e);
            same(&format!("b={b} {how}"), &am_, &am);
        }
    }
    let empty = Array2::<f32>::zeros((0, 6));
    for (how, r) in runs!(passes_off(&empty)) {
        assert!(r.is_err(), "x[s![0, ..]] of an empty B: {how}");
    }
}

#[graph]
#[allow(clippy::type_complexity)]
fn big(
    x: Tensor<f32, B, 300>,
    i: Tensor<i32, K>,
) -> (
    Tensor<f32, B, 100>,
    Tensor<f32, K, 300>,
    Tensor<f32, B, 600>,
    Tensor<f32, B, 302>,
    Tensor<i64, B>,
    Tensor<f32, K, 300>,
    Tensor<f32, B, 300>,
) {
    (
        x[s![.., ..;-3]],
        gather(x, i, 0),
        concat([x, x * 2.0], 1),
        pad(x, [[0, 0], [1, 1]], 9.0),
        argmin(x, 1),
        one_hot(i, 300),
        tile(x[s![0..1, ..]], [1, 1]) + x * 0.0,
    )
}

#[test]
fn large_outputs_split_over_threads() {
    let b = 1000;
    let x = rand_arr(11, grafo::ndarray::Ix2(b, 300), -1.0, 1.0);
    let i = Array1::from_shape_fn(400, |p| ((p * 7919) % b) as i32);
    let rev = x.slice(s![.., ..;-3]).to_owned();
    let g = Array2::from_shape_fn((400, 300), |(p, c)| x[[i[p] as usize, c]]);
    let c = Array2::from_shape_fn((b, 600), |(r, k)| {
        if k < 300 {
            x[[r, k]]
        } else {
            x[[r, k - 300]] * 2.0
        }
    });
    let p = Array2::from_shape_fn((b, 302), |(r, k)| {
        if (1..301).contains(&k) {
            x[[r, k - 1]]
        } else {
            9.0
        }
    });
    let am = Array1::from_shape_fn(b, |r| ref_arg(&x.row(r).to_vec(), false));
    let oh = Array2::from_shape_fn(
        (400, 300),
        |(q, d)| if i[q] as usize == d { 1.0f32 } else { 0.0 },
    );
    let t = Array2::from_shape_fn((b, 300), |(_, k)| x[[0, k]] + 0.0);
    let sess = |threads| {
        Session::new(SessionConfig {
            intra_op_threads: threads,
            ..Default::default()
        })
        .unwrap()
    };
    let results = [
        ("compiled", big(&x, &i).unwrap()),
        ("eager", big::eager(&x, &i).unwrap()),
        ("run 1 thread", big::run(&mut sess(1), &x, &i).unwrap()),
        ("run 2 threads", big::run(&mut sess(2), &x, &i).unwrap()),
    ];
    for (how, (a, g_, c_, p_, am_, oh_, t_)) in results {
        same(how, &a, &rev);
        same(how, &g_, &g);
        same(how, &c_, &c);
        same(how, &p_, &p);
        same(how, &am_, &am);
        same(how, &oh_, &oh);
        same(how, &t_, &t);
    }
}

#[test]
fn eager_results_too_large_are_errors() {
    let x = ArrayD::<f32>::zeros(IxDyn(&[2, 3]));
    assert!(grafo::eager::tile(&x, &[usize::MAX, 2]).is_err());
    assert!(grafo::eager::pad(&x, &[[0, 0], [usize::MAX, 1]], 0.0).is_err());
    let i = grafo::ndarray::arr1(&[0i32; 4]);
    assert!(grafo::eager::one_hot(&i, usize::MAX / 2, 1.0f32, 0.0).is_err());
}

#[graph]
fn new_axes(x: Tensor<f32, B, 9>) -> (Tensor<f32, 1, B, 1>, Tensor<f32, B, 1, 3>) {
    (x[s![NewAxis, .., 0, NewAxis]], x[s![.., NewAxis, 1..4]])
}

#[test]
fn new_axis_as_ndarray() {
    for &b in &SIZES {
        let x = Array2::from_shape_fn((b, 9), |(i, j)| (i * 9 + j) as f32);
        for (how, r) in runs!(new_axes(&x)) {
            let (a, c) = r.unwrap();
            same(how, &a, &x.slice(s![NewAxis, .., 0, NewAxis]).to_owned());
            same(how, &c, &x.slice(s![.., NewAxis, 1..4]).to_owned());
        }
    }
}

#[graph]
mod gru_like {
    /// One step reads its column of the sequence; the callee's `R` is the caller's `B`.
    pub fn step(h: Tensor<f32, R, 2>, xt: Tensor<f32, R, 2>) -> Tensor<f32, R, 2> {
        let (a, b) = split(concat([h, xt], 1), 2, 1);
        tanh(a + b)
    }

    /// The position of each row, as a column (`range` of the callee's own symbol).
    pub fn positions(x: Tensor<f32, R, 2>) -> Tensor<f32, R, 1> {
        expand_dims(cast::<f32>(range(R)), -1) + x[s![.., 0..1]] * 0.0
    }

    pub fn run_steps(x: Tensor<f32, B, 4, 2>) -> (Tensor<f32, B, 2>, Tensor<f32, B, 1>) {
        let mut h = x[s![.., 0, ..]];
        for t in 1..4 {
            h = step(h, x[s![.., t, ..]]);
        }
        (h, positions(h))
    }
}

#[test]
fn selection_inside_composed_graph_functions() {
    for &b in &SIZES {
        let x = rand_arr(5, IxDyn(&[b, 4, 2]), -1.0, 1.0)
            .into_dimensionality::<grafo::ndarray::Ix3>()
            .unwrap();
        let mut h = x.slice(s![.., 0, ..]).mapv(|v| v as f64);
        for t in 1..4 {
            let xt = x.slice(s![.., t, ..]).mapv(|v| v as f64);
            h = Array2::from_shape_fn((b, 2), |(i, j)| {
                let cat = [h[[i, 0]], h[[i, 1]], xt[[i, 0]], xt[[i, 1]]];
                (cat[j] + cat[j + 2]).tanh()
            });
        }
        let pos = Array2::from_shape_fn((b, 1), |(i, _)| i as f32);
        let (he, pe) = gru_like::run_steps::eager(&x).unwrap();
        for (how, r) in [
            ("compiled", gru_like::run_steps(&x)),
            ("run", gru_like::run_steps::run(&mut Session::default(), &x)),
        ] {
            let (h_, p_) = r.unwrap();
            same(&format!("b={b} {how} vs eager"), &h_, &he);
            same(&format!("b={b} {how} vs eager"), &p_, &pe);
            assert_close(&format!("b={b} {how}"), &h_, &h.clone().into_dyn());
            same(&format!("b={b} {how} positions"), &p_, &pos);
        }
    }
}
