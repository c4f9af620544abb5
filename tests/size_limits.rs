//! Results too large to address or to allocate: every path (compiled, eager, `Session`, the
//! eager API) returns `Error::SizeOverflow` or `Error::OutOfMemory` naming the op, never a
//! panic, a wrapped size or an abort.
//!
//! The symbols are bound by inputs that hold few or no elements (an `[0, 2^40]` array is
//! empty), so the tests need no memory. The "huge but valid" sizes are at least 2^57 bytes,
//! under `isize::MAX` but beyond any machine's address space, so the allocation fails
//! whatever the OS's overcommit policy.

use grafo::eager as E;
use grafo::ndarray::{Array1, Array2, Array3, ArrayD, IxDyn};
use grafo::prelude::*;
use grafo::Error;

/// `fill` with two symbols bound by empty inputs: `[A, B]` may overflow.
#[graph]
fn fill_ab(x: Tensor<f32, N, A>, y: Tensor<f32, M, B>, v: Tensor<f32>) -> Tensor<f32, A, B> {
    fill([A, B], v)
}

/// Three operands broadcast to `[A, B, C]` in one op.
#[graph]
fn select3(
    c: Tensor<bool, A, 1, 1>,
    a: Tensor<f32, 1, B, 1>,
    b: Tensor<f32, 1, 1, C>,
) -> Tensor<f32, A, B, C> {
    select(c, a, b)
}

/// The same broadcast, then fused elementwise work and a reduction over it.
#[graph]
fn select3_sum(
    c: Tensor<bool, A, 1, 1>,
    a: Tensor<f32, 1, B, 1>,
    b: Tensor<f32, 1, 1, C>,
) -> Tensor<f32, A> {
    reduce_sum(exp(select(c, a, b)) * 2.0, [1, 2])
}

/// `matmul` with an empty inner dimension: `[M, 0] x [0, N]` is `[M, N]` zeros.
#[graph]
fn mm(a: Tensor<f32, M, K>, b: Tensor<f32, K, N>) -> Tensor<f32, M, N> {
    matmul(a, b)
}

/// A huge value computed only in the arm that is taken.
#[graph]
fn huge_in_arm(x: Tensor<f32, N, A>, y: Tensor<f32, M, B>, v: Tensor<f32>) -> Tensor<f32> {
    let mut s = v;
    if v > 0.0 {
        s = reduce_sum(fill([A, B], v));
    }
    s
}

fn empty2(cols: usize) -> Array2<f32> {
    Array2::from_shape_vec((0, cols), vec![]).expect("an empty array of any width")
}

fn size_overflow<T: std::fmt::Debug>(r: Result<T, Error>) -> (&'static str, Vec<usize>) {
    match r {
        Err(Error::SizeOverflow { op, shape, .. }) => (op, shape),
        other => panic!("expected Error::SizeOverflow, got {other:?}"),
    }
}

fn out_of_memory<T: std::fmt::Debug>(r: Result<T, Error>) -> (&'static str, usize) {
    match r {
        Err(Error::OutOfMemory { op, bytes, .. }) => (op, bytes),
        other => panic!("expected Error::OutOfMemory, got {other:?}"),
    }
}

#[test]
fn fill_whose_size_overflows_is_an_error_on_every_path() {
    let (x, y) = (empty2(1 << 40), empty2(1 << 40));
    let v = grafo::ndarray::arr0(1.5f32);
    let want = ("fill", vec![1 << 40, 1 << 40]);
    assert_eq!(size_overflow(fill_ab(&x, &y, &v)), want);
    assert_eq!(size_overflow(fill_ab::eager(&x, &y, &v)), want);
    let mut sess = Session::default();
    assert_eq!(size_overflow(fill_ab::run(&mut sess, &x, &y, &v)), want);
    // The session is intact: a small run afterwards works.
    let (x, y) = (empty2(3), empty2(2));
    let r = fill_ab::run(&mut sess, &x, &y, &v).expect("a 3x2 fill");
    assert_eq!(r, Array2::from_elem((3, 2), 1.5f32));
    assert_eq!(fill_ab(&x, &y, &v).unwrap(), r);
    assert_eq!(fill_ab::eager(&x, &y, &v).unwrap(), r);
}

#[test]
fn fill_too_large_to_allocate_is_out_of_memory_on_every_path() {
    // 2^30 x 2^30 f32: 2^62 bytes, a valid size that no machine can provide.
    let (x, y) = (empty2(1 << 30), empty2(1 << 30));
    let v = grafo::ndarray::arr0(1.5f32);
    let want = ("fill", 1usize << 62);
    assert_eq!(out_of_memory(fill_ab(&x, &y, &v)), want);
    assert_eq!(out_of_memory(fill_ab::eager(&x, &y, &v)), want);
    let mut sess = Session::default();
    assert_eq!(out_of_memory(fill_ab::run(&mut sess, &x, &y, &v)), want);
    let (x, y) = (empty2(1), empty2(7));
    assert_eq!(
        fill_ab::run(&mut sess, &x, &y, &v).unwrap(),
        Array2::from_elem((1, 7), 1.5f32)
    );
}

fn select_inputs(a: usize, b: usize, c: usize) -> (Array3<bool>, Array3<f32>, Array3<f32>) {
    let cond = Array3::from_shape_fn((a, 1, 1), |(i, _, _)| i % 2 == 0);
    let x = Array3::from_shape_fn((1, b, 1), |(_, j, _)| j as f32);
    let y = Array3::from_shape_fn((1, 1, c), |(_, _, k)| -(k as f32));
    (cond, x, y)
}

#[test]
fn broadcast_whose_size_overflows_is_an_error_on_every_path() {
    // 2^21 cubed is 2^63 elements: the element count itself overflows the address space.
    let n = 1 << 21;
    let (c, a, b) = select_inputs(n, n, n);
    let want = ("select", vec![n, n, n]);
    assert_eq!(size_overflow(select3(&c, &a, &b)), want);
    assert_eq!(size_overflow(select3::eager(&c, &a, &b)), want);
    assert_eq!(size_overflow(E::select(&c, &a, &b)), want);
    let mut sess = Session::default();
    assert_eq!(size_overflow(select3::run(&mut sess, &c, &a, &b)), want);
    // Fused into a reduction the [A, B, C] value is never stored, but its size is still
    // checked: compiled and eager fail alike.
    assert_eq!(size_overflow(select3_sum(&c, &a, &b)), want);
    assert_eq!(size_overflow(select3_sum::eager(&c, &a, &b)), want);
    assert_eq!(size_overflow(select3_sum::run(&mut sess, &c, &a, &b)), want);
}

#[test]
fn broadcast_too_large_to_allocate_is_out_of_memory_on_every_path() {
    // 2^21 x 2^21 x 2^15 f32: 2^59 bytes.
    let (c, a, b) = select_inputs(1 << 21, 1 << 21, 1 << 15);
    let want = ("select", 1usize << 59);
    assert_eq!(out_of_memory(select3(&c, &a, &b)), want);
    assert_eq!(out_of_memory(select3::eager(&c, &a, &b)), want);
    assert_eq!(out_of_memory(E::select(&c, &a, &b)), want);
    let mut sess = Session::default();
    assert_eq!(out_of_memory(select3::run(&mut sess, &c, &a, &b)), want);
    // Small sizes through the same session and functions: compiled, eager and a naive loop agree.
    for (p, q, r) in [(1, 1, 1), (7, 3, 2), (2, 0, 5)] {
        let (c, a, b) = select_inputs(p, q, r);
        let want = Array3::from_shape_fn((p, q, r), |(i, j, k)| {
            if c[[i, 0, 0]] {
                a[[0, j, 0]]
            } else {
                b[[0, 0, k]]
            }
        });
        assert_eq!(select3::run(&mut sess, &c, &a, &b).unwrap(), want);
        assert_eq!(select3(&c, &a, &b).unwrap(), want);
        assert_eq!(select3::eager(&c, &a, &b).unwrap(), want);
    }
}

#[test]
fn matmul_of_empty_operands_with_a_huge_result() {
    // [2^32, 0] x [0, 2^31]: 2^63 elements overflow.
    let (a, b) = (empty_rows(1 << 32), empty2(1 << 31));
    let want = ("matmul", vec![1 << 32, 1 << 31]);
    assert_eq!(size_overflow(mm(&a, &b)), want);
    assert_eq!(size_overflow(mm::eager(&a, &b)), want);
    assert_eq!(size_overflow(E::matmul(&a, &b)), want);
    let mut sess = Session::default();
    assert_eq!(size_overflow(mm::run(&mut sess, &a, &b)), want);
    // [2^30, 0] x [0, 2^30]: 2^62 bytes of zeros, valid but not allocatable.
    let (a, b) = (empty_rows(1 << 30), empty2(1 << 30));
    let want = ("matmul", 1usize << 62);
    assert_eq!(out_of_memory(mm(&a, &b)), want);
    assert_eq!(out_of_memory(mm::eager(&a, &b)), want);
    assert_eq!(out_of_memory(mm::run(&mut sess, &a, &b)), want);
    // [3, 0] x [0, 2] is zeros, as in TensorFlow.
    let (a, b) = (empty_rows(3), empty2(2));
    assert_eq!(
        mm::run(&mut sess, &a, &b).unwrap(),
        Array2::<f32>::zeros((3, 2))
    );
    assert_eq!(mm(&a, &b).unwrap(), Array2::<f32>::zeros((3, 2)));
    assert_eq!(mm::eager(&a, &b).unwrap(), Array2::<f32>::zeros((3, 2)));
}

fn empty_rows(rows: usize) -> Array2<f32> {
    Array2::from_shape_vec((rows, 0), vec![]).expect("an empty array of any height")
}

#[test]
fn a_huge_value_in_a_cond_arm_fails_only_when_the_arm_runs() {
    let (x, y) = (empty2(1 << 40), empty2(1 << 40));
    let want = ("fill", vec![1 << 40, 1 << 40]);
    let taken = grafo::ndarray::arr0(1.0f32);
    assert_eq!(size_overflow(huge_in_arm(&x, &y, &taken)), want);
    assert_eq!(size_overflow(huge_in_arm::eager(&x, &y, &taken)), want);
    let mut sess = Session::default();
    assert_eq!(
        size_overflow(huge_in_arm::run(&mut sess, &x, &y, &taken)),
        want
    );
    // Not taken: nothing of that size is computed, so every path returns the input.
    let skipped = grafo::ndarray::arr0(-2.0f32);
    assert_eq!(huge_in_arm(&x, &y, &skipped).unwrap(), skipped);
    assert_eq!(huge_in_arm::eager(&x, &y, &skipped).unwrap(), skipped);
    assert_eq!(
        huge_in_arm::run(&mut sess, &x, &y, &skipped).unwrap(),
        skipped
    );
    // Taken with small sizes: 3 x 2 elements of 1.0.
    let (x, y) = (empty2(3), empty2(2));
    assert_eq!(
        huge_in_arm(&x, &y, &taken).unwrap(),
        grafo::ndarray::arr0(6.0f32)
    );
    assert_eq!(
        huge_in_arm::eager(&x, &y, &taken).unwrap(),
        grafo::ndarray::arr0(6.0f32)
    );
}

#[test]
fn eager_creation_ops_check_their_size() {
    let huge = [1usize << 40, 1 << 40];
    assert_eq!(
        size_overflow(E::zeros::<f32>(&huge)),
        ("zeros", huge.to_vec())
    );
    assert_eq!(
        size_overflow(E::ones::<i64>(&huge)),
        ("ones", huge.to_vec())
    );
    assert_eq!(size_overflow(E::fill(&huge, true)), ("fill", huge.to_vec()));
    // 2^60 f64 is 2^63 bytes, one past isize::MAX; 2^60 f32 is 2^62 bytes, valid.
    assert_eq!(
        size_overflow(E::zeros::<f64>(&[1 << 60])),
        ("zeros", vec![1 << 60])
    );
    assert_eq!(
        out_of_memory(E::zeros::<f32>(&[1 << 60])),
        ("zeros", 1 << 62)
    );
    assert_eq!(
        out_of_memory(E::fill(&[1 << 30, 1 << 30], 7i32)),
        ("fill", 1 << 62)
    );
    // A zero dim makes any shape empty, as ndarray and TensorFlow allow.
    assert_eq!(
        E::zeros::<f32>(&[0, 1 << 40]).unwrap().shape(),
        &[0, 1 << 40]
    );
    assert_eq!(
        E::fill(&[1, 7], -0.0f32)
            .unwrap()
            .iter()
            .filter(|v| v.is_sign_negative())
            .count(),
        7
    );
}

#[test]
fn eager_shape_ops_check_their_size() {
    let x = Array1::<f32>::zeros(0);
    let to = [1usize << 40, 1 << 40, 0];
    // The product of all dims is 0, but the nonzero dims overflow: ndarray refuses such a shape.
    assert_eq!(size_overflow(E::reshape(&x, &to)), ("reshape", to.to_vec()));
    let x = ArrayD::<f32>::zeros(IxDyn(&[6]));
    let r = E::reshape(&x, &[2, 3]).unwrap();
    assert_eq!(r.shape(), &[2, 3]);
    // conv2d with no input channels: the output [N, H, W, Cout] is zeros and may be huge.
    let x = ArrayD::<f32>::zeros(IxDyn(&[1 << 20, 1 << 20, 1, 0]));
    let k = ArrayD::<f32>::zeros(IxDyn(&[1, 1, 0, 1 << 30]));
    assert_eq!(
        size_overflow(E::conv2d(&x, &k, 1, grafo::__private::conv::Padding::Valid)),
        ("conv2d", vec![1 << 20, 1 << 20, 1, 1 << 30])
    );
}

#[test]
fn eager_selection_ops_check_their_size() {
    let x = Array1::<f32>::zeros(3);
    // pad: 3 + 2^63 + 2^63 overflows usize; 3 + 2^61 elements of f32 is beyond isize::MAX bytes.
    assert_eq!(
        size_overflow(E::pad(&x, &[[1 << 63, 1 << 63]], 0.0)),
        ("pad", vec![3])
    );
    assert_eq!(
        size_overflow(E::pad(&x, &[[1 << 61, 0]], 0.0)),
        ("pad", vec![3 + (1 << 61)])
    );
    // 3 + 2^57 elements: valid, not allocatable.
    assert_eq!(
        out_of_memory(E::pad(&x, &[[1 << 57, 0]], 0.0)),
        ("pad", (3 + (1 << 57)) * 4)
    );
    // one_hot of 3 indices with depth 2^62 (f32): 3 * 2^62 elements overflow.
    let ind = Array1::<i64>::from_vec(vec![0, 1, 2]);
    assert_eq!(
        size_overflow(E::one_hot(&ind, 1 << 62, 1.0f32, 0.0)),
        ("one_hot", vec![3, 1 << 62])
    );
    assert_eq!(
        out_of_memory(E::one_hot(&ind, 1 << 57, 1.0f32, 0.0)),
        ("one_hot", 3 << 59)
    );
    // range over all of i64 is 2^64 - 1 elements.
    assert!(matches!(
        E::range(i64::MIN, i64::MAX, 1),
        Err(Error::SizeOverflow { op: "range", .. } | Error::InvalidArgument { op: "range", .. })
    ));
    assert_eq!(
        out_of_memory(E::range(0i64, 1 << 58, 1)),
        ("range", 1 << 61)
    );
    // concat of empty tensors whose axis sizes add up past isize::MAX, then past usize.
    let big = ArrayD::<f32>::zeros(IxDyn(&[0, 1 << 62]));
    assert_eq!(
        size_overflow(E::concat(&[big.view(), big.view()], 1)),
        ("concat", vec![0, 1 << 63])
    );
    assert_eq!(
        size_overflow(E::concat(
            &[big.view(), big.view(), big.view(), big.view()],
            1
        )),
        ("concat", vec![0, 1 << 62])
    );
    // Small sizes still work: a naive reference for pad and one_hot.
    let p = E::pad(&x, &[[1, 2]], 9.0).unwrap();
    assert_eq!(
        p.iter().copied().collect::<Vec<_>>(),
        vec![9.0, 0.0, 0.0, 0.0, 9.0, 9.0]
    );
    let h = E::one_hot(&ind, 3, 1.0f32, 0.0).unwrap();
    let mut want = vec![0.0f32; 9];
    for i in 0..3 {
        want[i * 3 + i] = 1.0;
    }
    assert_eq!(h.iter().copied().collect::<Vec<_>>(), want);
}

/// softmax along the rows of a matrix (issue 31: its eager form aborted on a broadcast view).
#[graph]
fn softmax_rows(x: Tensor<f32, A, B>) -> Tensor<f32, A, B> {
    softmax(x, -1)
}

/// Whether a single allocation far beyond this machine's memory fails rather than being
/// granted lazily: Linux refuses one under its default heuristic (`overcommit_memory` 0) or
/// strict policy (2), not under "always" (1).
fn large_allocations_fail() -> bool {
    std::fs::read_to_string("/proc/sys/vm/overcommit_memory")
        .map(|s| s.trim() != "1")
        .unwrap_or(false)
}

#[test]
fn a_huge_broadcast_view_is_out_of_memory_on_every_path() {
    let one = Array2::<f32>::from_elem((1, 1), 0.5);
    // The case: a 2^18 x 2^18 view of one element, 2^38 bytes (256 GiB) to copy,
    // which ndarray's `as_standard_layout` aborted on inside `softmax::eager`.
    if large_allocations_fail() {
        let view = one.broadcast((1 << 18, 1 << 18)).unwrap();
        assert_eq!(out_of_memory(softmax_rows::eager(view)).1, 1 << 38);
        assert_eq!(out_of_memory(E::softmax(view, -1)), ("softmax", 1 << 38));
    }
    // 2^28 x 2^28: 2^58 bytes, which no machine grants whatever its policy, through every
    // eager op that copies a non-contiguous operand, and the compiled paths.
    let view = one.broadcast((1 << 28, 1 << 28)).unwrap();
    let bytes = 1usize << 58;
    assert_eq!(out_of_memory(softmax_rows::eager(view)).1, bytes);
    assert_eq!(out_of_memory(softmax_rows(view)).1, bytes);
    let mut sess = Session::default();
    assert_eq!(out_of_memory(softmax_rows::run(&mut sess, view)).1, bytes);
    assert_eq!(out_of_memory(E::softmax(view, -1)), ("softmax", bytes));
    assert_eq!(
        out_of_memory(E::log_softmax(view, 0)),
        ("log_softmax", bytes)
    );
    assert_eq!(out_of_memory(E::exp(view)), ("exp", bytes));
    assert_eq!(out_of_memory(E::neg(view)), ("neg", bytes));
    assert_eq!(out_of_memory(E::add(view, &one)), ("add", bytes));
    assert_eq!(
        out_of_memory(E::reduce_sum(view, None, false)),
        ("reduce_sum", bytes)
    );
    assert_eq!(out_of_memory(E::cumsum(view, 1, false, false)).0, "cumsum");
    assert_eq!(
        out_of_memory(E::transpose(view, None)),
        ("transpose", bytes)
    );
    assert_eq!(out_of_memory(E::matmul(view, view)), ("matmul", bytes));
    assert_eq!(out_of_memory(E::tile(view, &[1, 1])), ("tile", bytes));
    assert_eq!(
        out_of_memory(E::expand_dims(view, 0)),
        ("expand_dims", bytes)
    );
    assert_eq!(out_of_memory(E::squeeze(view, None)), ("squeeze", bytes));
    assert_eq!(
        out_of_memory(E::reshape(view, &[1 << 56])),
        ("reshape", bytes)
    );
    assert_eq!(out_of_memory(E::argmax(view, 1)), ("argmax", bytes));
    assert_eq!(out_of_memory(E::norm(view)), ("norm", bytes));
    let bools = Array2::from_elem((1, 1), true);
    let bview = bools.broadcast((1 << 28, 1 << 28)).unwrap();
    assert_eq!(
        out_of_memory(E::reduce_any(bview, None, false)),
        ("reduce_any", bytes)
    );
    assert_eq!(
        out_of_memory(E::select(bview, view, view)),
        ("select", 1 << 56)
    );
    assert!(matches!(
        E::assert_all_finite(view, "finite"),
        Err(Error::OutOfMemory {
            op: "assert_all_finite",
            ..
        })
    ));
    // A 4-d view for the image ops: 2^19 images of 2^19 x 2^19 x 1, 2^59 bytes.
    let px = grafo::ndarray::Array4::<f32>::from_elem((1, 1, 1, 1), 0.5);
    let images = px.broadcast((1 << 19, 1 << 19, 1 << 19, 1)).unwrap();
    let k = grafo::ndarray::Array4::<f32>::from_elem((1, 1, 1, 1), 2.0);
    let valid = grafo::__private::conv::Padding::Valid;
    assert_eq!(
        out_of_memory(E::conv2d(images, &k, 1, valid)),
        ("conv2d", 1 << 59)
    );
    assert_eq!(
        out_of_memory(E::max_pool2d(images, [1, 1], [1, 1], valid)).1,
        1 << 59
    );
    // Small views through the same functions: the copies hold the view's elements.
    let small = one.broadcast((2, 3)).unwrap();
    let want = Array2::from_elem((2, 3), 1.0f32 / 3.0);
    assert_eq!(softmax_rows::eager(small).unwrap(), want);
    assert_eq!(E::softmax(small, -1).unwrap(), want.into_dyn());
    assert_eq!(
        E::expand_dims(small, 0).unwrap(),
        Array3::from_elem((1, 2, 3), 0.5f32).into_dyn()
    );
    assert_eq!(
        E::reduce_any(bools.broadcast((2, 3)).unwrap(), None, false).unwrap(),
        grafo::ndarray::arr0(true).into_dyn()
    );
}
