//! Entry checks of the functions `#[graph]` emits: static dims and symbols are checked at the
//! call (an `Err` naming the parameter, never a panic or a wrong answer), and any ndarray
//! view (transposed, strided, reversed) is accepted without a copy and computed correctly.
//! Every check runs through `NAME`, `NAME::eager` and `NAME::run`.

mod refs;

use grafo::ndarray::{s, ArrayD, Ix2};
use grafo::prelude::*;
use grafo::Error;
use refs::{assert_close, rand_arr, ref_conv2d, ref_matmul, ref_reduce, to_f64, view_f64, zip2};

#[graph]
fn affine(x: Tensor<f32, B, 4>, w: Tensor<f32, 4, 3>, b: Tensor<f32, 3>) -> Tensor<f32, B, 3> {
    matmul(x, w) + b
}

#[graph]
fn add_same(a: Tensor<f32, N>, b: Tensor<f32, N>) -> Tensor<f32, N> {
    a + b
}

#[graph]
fn square_only(x: Tensor<f32, N, N>) -> Tensor<f32, N, N> {
    x * 2.0
}

#[graph]
fn ew2(a: Tensor<f32, M, N>, b: Tensor<f32, M, N>) -> Tensor<f32, M, N> {
    a * b + exp(a) - 1.0
}

#[graph]
fn rowsum(x: Tensor<f32, M, N>) -> Tensor<f32, M> {
    reduce_sum(x, 1)
}

#[graph]
fn mm(a: Tensor<f32, M, K>, b: Tensor<f32, K, N>) -> Tensor<f32, M, N> {
    matmul(a, b)
}

#[graph]
fn conv(x: Tensor<f32, B, H, W, 2>, k: Tensor<f32, 3, 3, 2, 4>) -> Tensor<f32, B, H, W, 4> {
    relu(conv2d(x, k, 1, SAME))
}

fn input_dim(r: Result<impl std::fmt::Debug, Error>) -> (String, usize, usize, usize) {
    match r {
        Err(Error::InputDim {
            param,
            axis,
            expected,
            found,
            ..
        }) => (param, axis, expected, found),
        other => panic!("expected Error::InputDim, got {other:?}"),
    }
}

#[test]
fn wrong_static_dim_names_the_parameter() {
    let x = Array2::<f32>::ones((2, 5)); // axis 1 must be 4
    let w = Array2::<f32>::ones((4, 3));
    let b = Array1::<f32>::ones(3);
    let want = ("x".to_string(), 1, 4, 5);
    assert_eq!(input_dim(affine(&x, &w, &b)), want);
    assert_eq!(input_dim(affine::eager(&x, &w, &b)), want);
    assert_eq!(
        input_dim(affine::run(&mut Session::default(), &x, &w, &b)),
        want
    );

    let x = Array2::<f32>::ones((2, 4));
    let w = Array2::<f32>::ones((4, 2)); // axis 1 must be 3
    let want = ("w".to_string(), 1, 3, 2);
    assert_eq!(input_dim(affine(&x, &w, &b)), want);
    assert_eq!(input_dim(affine::eager(&x, &w, &b)), want);
    assert_eq!(
        input_dim(affine::run(&mut Session::default(), &x, &w, &b)),
        want
    );

    let w = Array2::<f32>::ones((4, 3));
    let b7 = Array1::<f32>::ones(7);
    let want = ("b".to_string(), 0, 3, 7);
    assert_eq!(input_dim(affine(&x, &w, &b7)), want);
    assert_eq!(input_dim(affine::eager(&x, &w, &b7)), want);
    assert_eq!(
        input_dim(affine::run(&mut Session::default(), &x, &w, &b7)),
        want
    );

    // The error text names the parameter, the axis and both sizes.
    let msg = affine(&x, &w, &b7).unwrap_err().to_string();
    assert!(
        msg.contains('b') && msg.contains('3') && msg.contains('7'),
        "{msg}"
    );

    // And the right shapes work, with B bound to 2.
    let r = affine(&x, &w, &b).unwrap();
    assert_eq!(r, Array2::from_elem((2, 3), 5.0));
}

fn symbol_conflict(
    r: Result<impl std::fmt::Debug, Error>,
) -> (String, usize, String, String, usize, usize) {
    match r {
        Err(Error::SymbolConflict {
            symbol,
            bound,
            bound_by,
            param,
            axis,
            found,
        }) => (symbol, bound, bound_by, param, axis, found),
        other => panic!("expected Error::SymbolConflict, got {other:?}"),
    }
}

#[test]
fn symbol_bound_to_two_sizes() {
    let a = Array1::<f32>::ones(3);
    let b = Array1::<f32>::ones(4);
    let want = ("N".to_string(), 3, "a".to_string(), "b".to_string(), 0, 4);
    assert_eq!(symbol_conflict(add_same(&a, &b)), want);
    assert_eq!(symbol_conflict(add_same::eager(&a, &b)), want);
    assert_eq!(
        symbol_conflict(add_same::run(&mut Session::default(), &a, &b)),
        want
    );
    let msg = add_same(&a, &b).unwrap_err().to_string();
    assert!(msg.contains('N'), "{msg}");

    // One symbol twice in one parameter.
    let x = Array2::<f32>::ones((2, 3));
    let want = ("N".to_string(), 2, "x".to_string(), "x".to_string(), 1, 3);
    assert_eq!(symbol_conflict(square_only(&x)), want);
    assert_eq!(symbol_conflict(square_only::eager(&x)), want);
    assert_eq!(
        symbol_conflict(square_only::run(&mut Session::default(), &x)),
        want
    );
    assert_eq!(
        square_only(&Array2::<f32>::ones((3, 3))).unwrap(),
        Array2::from_elem((3, 3), 2.0)
    );

    // Matmul's shared K checked at the call.
    let a = Array2::<f32>::ones((2, 3));
    let b = Array2::<f32>::ones((4, 5));
    let (sym, bound, by, param, axis, found) = symbol_conflict(mm(&a, &b));
    assert_eq!(
        (
            sym.as_str(),
            bound,
            by.as_str(),
            param.as_str(),
            axis,
            found
        ),
        ("K", 3, "a", "b", 0, 4)
    );
    symbol_conflict(mm::eager(&a, &b));
    symbol_conflict(mm::run(&mut Session::default(), &a, &b));
}

#[test]
fn a_failed_check_leaves_the_session_usable() {
    let mut s = Session::default();
    let (a, b) = (Array1::<f32>::ones(3), Array1::<f32>::ones(4));
    assert!(add_same::run(&mut s, &a, &b).is_err());
    assert_eq!(
        add_same::run(&mut s, &a, &a).unwrap(),
        Array1::from_elem(3, 2.0)
    );
}

/// compiled, eager and run on the same arguments, each against `want`.
macro_rules! all_three {
    ($what:expr, $f:ident, $want:expr, $($arg:expr),*) => {{
        let want: &ArrayD<f64> = $want;
        assert_close(&format!("{} compiled", $what), &$f($($arg),*).unwrap(), want);
        assert_close(&format!("{} eager", $what), &$f::eager($($arg),*).unwrap(), want);
        assert_close(&format!("{} run", $what), &$f::run(&mut Session::default(), $($arg),*).unwrap(), want);
    }};
}

fn ew2_ref(a: &ArrayD<f64>, b: &ArrayD<f64>) -> ArrayD<f64> {
    zip2(a, b, |a, b| a * b + a.exp() - 1.0)
}

#[test]
fn owned_references_and_views_accepted() {
    let a = rand_arr(1, Ix2(5, 7), -1.0, 1.0);
    let b = rand_arr(2, Ix2(5, 7), -1.0, 1.0);
    let want = ew2_ref(&to_f64(&a), &to_f64(&b));
    all_three!("&Array", ew2, &want, &a, &b);
    all_three!("ArrayView", ew2, &want, a.view(), b.view());
    let (av, bv) = (a.view(), b.view());
    all_three!("&ArrayView", ew2, &want, &av, &bv);
    all_three!("mixed", ew2, &want, &a, b.view());
}

#[test]
fn transposed_views() {
    let at = rand_arr(3, Ix2(7, 5), -1.0, 1.0);
    let bt = rand_arr(4, Ix2(7, 5), -1.0, 1.0);
    let (a, b) = (at.t(), bt.t()); // [5, 7], column-major
    let want = ew2_ref(&view_f64(&a), &view_f64(&b));
    all_three!("ew transposed", ew2, &want, a, b);
    // One transposed, one standard.
    let b2 = b.to_owned();
    all_three!("ew one transposed", ew2, &want, a, &b2);
    // Reductions over a transposed view.
    let want = ref_reduce(&view_f64(&a), &[1], false, "sum");
    all_three!("rowsum transposed", rowsum, &want, a);
    // Matmul of transposed operands.
    let x = rand_arr(5, Ix2(9, 6), -1.0, 1.0);
    let y = rand_arr(6, Ix2(4, 9), -1.0, 1.0);
    let want = ref_matmul(&view_f64(&x.t()), &view_f64(&y.t()));
    all_three!("matmul transposed", mm, &want, x.t(), y.t());
}

#[test]
fn strided_and_reversed_views() {
    let big_a = rand_arr(7, Ix2(11, 15), -1.0, 1.0);
    let big_b = rand_arr(8, Ix2(11, 15), -1.0, 1.0);
    let a = big_a.slice(s![..;2, 1..;2]); // [6, 7], strides (30, 2)
    let b = big_b.slice(s![..;-2, 2..;2]); // [6, 7], negative row stride
    assert_eq!(a.shape(), b.shape());
    let want = ew2_ref(&view_f64(&a), &view_f64(&b));
    all_three!("ew strided", ew2, &want, a, b);
    let want = ref_reduce(&view_f64(&b), &[1], false, "sum");
    all_three!("rowsum strided", rowsum, &want, b);
    let x = big_a.slice(s![..;3, ..;2]); // [4, 8]
    let y = big_b.slice(s![3.., ..;-3]); // [8, 5], negative column stride
    assert_eq!(y.shape(), &[8, 5]);
    let want = ref_matmul(&view_f64(&x), &view_f64(&y));
    all_three!("matmul strided", mm, &want, x, y);
    // A 1-D view with a negative stride.
    let v = Array1::from_iter((0..9).map(|i| i as f32));
    let r = v.slice(s![..;-1]);
    let want = zip2(&view_f64(&r), &to_f64(&v), |a, b| a + b);
    all_three!("add reversed", add_same, &want, r, &v);
}

#[test]
fn conv_on_a_strided_nhwc_view() {
    let big = rand_arr(9, grafo::ndarray::Ix4(2, 10, 12, 4), -1.0, 1.0);
    let x = big.slice(s![.., ..;2, 1..;2, 1..;2]); // [2, 5, 6, 2]
    let k = rand_arr(10, grafo::ndarray::Ix4(3, 3, 2, 4), -0.5, 0.5);
    let want = ref_conv2d(&view_f64(&x), &to_f64(&k), 1, true).mapv(|v| v.max(0.0));
    all_three!("conv strided", conv, &want, x, &k);
    // The permuted view: NHWC from an NCHW-like buffer.
    let nchw = rand_arr(11, grafo::ndarray::Ix4(1, 2, 5, 6), -1.0, 1.0);
    let x = nchw.view().permuted_axes([0, 2, 3, 1]);
    let want = ref_conv2d(&view_f64(&x), &to_f64(&k), 1, true).mapv(|v| v.max(0.0));
    all_three!("conv permuted", conv, &want, x, &k);
}

#[test]
fn empty_inputs() {
    let a = Array2::<f32>::zeros((0, 7));
    let want = ew2_ref(&to_f64(&a), &to_f64(&a));
    all_three!("ew empty", ew2, &want, &a, &a);
    let want = ref_reduce(&to_f64(&a), &[1], false, "sum");
    all_three!("rowsum empty", rowsum, &want, &a);
    let b = Array2::<f32>::zeros((7, 0));
    let want = ArrayD::<f64>::zeros(grafo::ndarray::IxDyn(&[7, 7]));
    all_three!("matmul K=0", mm, &want, &b, &a);
}
