//! `strided_slice` with TensorFlow's five masks (`begin_mask`, `end_mask`, `ellipsis_mask`,
//! `new_axis_mask`, `shrink_axis_mask`), run compiled, eager and in a `Session` and compared
//! element for element with a naive reference written here after TensorFlow's own algorithm
//! (`BuildDenseSpec` and the canonicalisation of `strided_slice_op.cc`), on static and
//! symbolic dims of sizes 0, 1, 7 and 1023: negative indices and strides, out-of-range bounds
//! clamped, masks combined, and the run-time errors of bounds on a symbolic axis.

use grafo::ndarray::{Array1, Array2, Array3, ArrayD, IxDyn};
use grafo::prelude::*;

#[path = "common/entry_points.rs"]
#[macro_use]
mod entry_points;

/// The sizes of the symbolic dim.
const SIZES: [usize; 4] = [0, 1, 7, 1023];

/// One axis of the reference's dense spec: the input indices it reads, and whether the axis
/// is dropped (shrunk) from the result.
struct RefAxis {
    picks: Vec<usize>,
    shrink: bool,
}

/// TensorFlow's `tf.strided_slice(x, begin, end, strides, masks...)`, as its C++ kernel
/// computes it, in plain loops: `None` where TensorFlow raises.
fn tf_strided_slice(
    x: &ArrayD<f32>,
    begin: &[i64],
    end: &[i64],
    strides: &[i64],
    [begin_mask, end_mask, ellipsis_mask, new_axis_mask, shrink_mask]: [u64; 5],
) -> Option<ArrayD<f32>> {
    let dims = x.ndim();
    let bit = |m: u64, i: usize| (m >> i) & 1 == 1;
    if ellipsis_mask & ellipsis_mask.wrapping_sub(1) != 0 {
        return None; // "Multiple ellipses in slice spec not allowed"
    }
    // Step 1: an implicit ellipsis at the end when there is none.
    let mut sparse_dims = begin.len();
    let mut ellipsis = ellipsis_mask;
    let ellipsis_seen = (0..sparse_dims).any(|i| bit(ellipsis, i));
    let mut add_after = 0;
    let mut seen = false;
    for i in 0..sparse_dims {
        if seen && bit(new_axis_mask, i) {
            add_after += 1;
        }
        if bit(ellipsis, i) {
            seen = true;
        }
    }
    if !ellipsis_seen {
        ellipsis |= 1 << sparse_dims;
        sparse_dims += 1;
    }
    // Step 2: the dense spec, one entry per input axis, and where each result axis comes from
    // (`Some(axis)`, or `None` for a new axis).
    let mut dense: Vec<(i64, i64, i64, bool, bool, bool)> = Vec::new(); // begin, end, stride, bm, em, shrink
    let mut gather: Vec<Option<usize>> = Vec::new();
    for i in 0..sparse_dims {
        if bit(ellipsis, i) {
            let next = (dims as i64 - (sparse_dims - i) as i64 + 1 + add_after).min(dims as i64);
            while (dense.len() as i64) < next {
                gather.push(Some(dense.len()));
                dense.push((0, 0, 1, true, true, false));
            }
        } else if bit(new_axis_mask, i) {
            gather.push(None);
        } else {
            if dense.len() == dims {
                return None; // "Index out of range using input dim"
            }
            let shrink = bit(shrink_mask, i);
            if !shrink {
                gather.push(Some(dense.len()));
            }
            dense.push((
                begin[i],
                end[i],
                strides[i],
                bit(begin_mask, i),
                bit(end_mask, i),
                shrink,
            ));
        }
    }
    // Step 3: each dense axis canonicalised (TF's `canonical` with its `valid_range`).
    let mut axes = Vec::new();
    for (a, &(b, e, s, bm, em, shrink)) in dense.iter().enumerate() {
        let n = x.shape()[a] as i64;
        if s == 0 || (shrink && s <= 0) {
            return None;
        }
        let picks = if shrink {
            let at = if b < 0 { b + n } else { b };
            if at < 0 || at >= n {
                return None;
            }
            vec![at as usize]
        } else {
            let valid = if s > 0 { [0, n] } else { [-1, n - 1] };
            let canonical = |v: i64, c: usize, masked: bool| {
                if masked {
                    if s > 0 {
                        valid[c]
                    } else {
                        valid[(c + 1) & 1]
                    }
                } else {
                    let fwd = if v < 0 { n + v } else { v };
                    fwd.clamp(valid[0], valid[1])
                }
            };
            let (mut i, stop) = (canonical(b, 0, bm), canonical(e, 1, em));
            let mut picks = Vec::new();
            while (s > 0 && i < stop) || (s < 0 && i > stop) {
                picks.push(i as usize);
                i += s;
            }
            picks
        };
        axes.push(RefAxis { picks, shrink });
    }
    for a in dense.len()..dims {
        axes.push(RefAxis {
            picks: (0..x.shape()[a]).collect(),
            shrink: false,
        });
        gather.push(Some(a));
    }
    // The result: the kept axes' picks, with the new axes of size 1 where they stand.
    let shape: Vec<usize> = gather
        .iter()
        .map(|g| g.map_or(1, |a| axes[a].picks.len()))
        .collect();
    let kept: Vec<usize> = gather.iter().flatten().copied().collect();
    let out = ArrayD::from_shape_fn(IxDyn(&shape), |idx| {
        let mut at = vec![0usize; dims];
        let mut k = 0;
        for (pos, g) in gather.iter().enumerate() {
            if let Some(a) = g {
                at[*a] = axes[*a].picks[idx[pos]];
                k += 1;
            }
        }
        debug_assert_eq!(k, kept.len());
        for (a, ax) in axes.iter().enumerate() {
            if ax.shrink {
                at[a] = ax.picks[0];
            }
        }
        x[IxDyn(&at)]
    });
    Some(out)
}

/// Equal shapes and identical elements (these ops copy).
fn same<D: grafo::ndarray::Dimension>(what: &str, got: &Array<f32, D>, want: &ArrayD<f32>) {
    assert_eq!(got.shape(), want.shape(), "{what}: shape");
    for (i, (g, w)) in got.iter().zip(want.iter()).enumerate() {
        assert_eq!(g.to_bits(), w.to_bits(), "{what}: element {i}");
    }
}

fn cube(a: usize, b: usize, c: usize) -> Array3<f32> {
    Array3::from_shape_fn((a, b, c), |(i, j, k)| (i * 100 + j * 10 + k) as f32)
}

// ----- static dims ------------------------------------------------------------------------------

#[graph]
#[allow(clippy::type_complexity)]
fn masked_static(
    x: Tensor<f32, 7, 5, 3>,
) -> (
    (
        Tensor<f32, 5, 4, 3>,
        Tensor<f32, 7, 3, 3>,
        Tensor<f32, 7, 5, 2>,
        Tensor<f32, 1, 3, 5, 3>,
        Tensor<f32, 5>,
        Tensor<f32, 7, 5, 1>,
    ),
    (
        Tensor<f32, 3, 5, 3>,
        Tensor<f32, 7, 5, 3>,
        Tensor<f32, 6, 5, 3>,
        Tensor<f32, 2, 1, 3>,
        Tensor<f32, 5, 3>,
        Tensor<f32, 7, 5, 3, 1>,
    ),
    (
        Tensor<f32, 0, 5, 3>,
        Tensor<f32, 1, 7, 1, 5, 3>,
        Tensor<f32, 3>,
        Tensor<f32, 4, 5, 3>,
        Tensor<f32, 7, 5>,
    ),
) {
    (
        (
            // x[:5, 1:]
            strided_slice(x, [2, 1], [5, 4], [1, 1], 1, 2),
            // x[::-1... ] on axis 0 with both masks, x[::-2] on axis 1
            strided_slice(x, [0, 0], [0, 0], [-1, -2], 3, 3),
            // x[..., 1:3]
            strided_slice(x, [0, 1], [0, 3], [1, 1], 0, 0, 1),
            // x[tf.newaxis, 1:6:2]
            strided_slice(x, [0, 1], [0, 6], [1, 2], 0, 0, 0, 1),
            // x[-1, :, 1]
            strided_slice(x, [-1, 0, 1], [0, 0, 2], [1, 1, 1], 2, 2, 0, 0, 5),
            // x[..., tf.newaxis, -2]
            strided_slice(x, [0, 0, -2], [0, 0, -1], [1, 1, 1], 0, 0, 1, 2, 4),
        ),
        (
            // Out-of-range bounds clamp: x[-100:100:3].
            strided_slice(x, [-100], [100], [3]),
            // Masked bounds ignore their values: x[:] with begin 99 and end -99.
            strided_slice(x, [99], [-99], [1], 1, 1),
            // x[1:, ..., ::-1] (an ellipsis in the middle) with a negative stride masked.
            strided_slice(x, [1, 0, 0], [0, 0, 0], [1, 1, -1], 0b100, 0b101, 0b010),
            // x[0:2, 1:2, ..., 0:3]: the ellipsis covers no axis.
            strided_slice(x, [0, 1, 0, 0], [2, 2, 0, 3], [1, 1, 1, 1], 0, 0, 1 << 2),
            // A shrunk axis ignores its end and a positive stride: x[3] with end 0, stride 2.
            strided_slice(x, [3], [0], [2], 0, 0, 0, 0, 1),
            // x[..., tf.newaxis] (new axis after the ellipsis), strides left out.
            strided_slice(x, [0, 0], [0, 0], [1, 1], 0, 0, 1, 2),
        ),
        (
            // An empty range: x[3:1].
            strided_slice(x, [3], [1]),
            // new axes around an ellipsis: x[tf.newaxis, :, tf.newaxis]; ellipsis wins over a
            // new-axis bit on the same entry, new axis wins over shrink.
            strided_slice(
                x,
                [0, 0, 0, 0],
                [0, 0, 0, 0],
                [1, 1, 1, 1],
                2,
                2,
                8,
                5 | 8,
                4,
            ),
            // x[-2, 4] with negative begin on a shrunk axis, then a negative stride: x[-2, 4, ::-1].
            strided_slice(x, [-2, 4, -1], [0, 0, -4], [1, 1, -1], 0, 0, 0, 0, 3),
            // A negative stride from a clamped begin: x[100:2:-1].
            strided_slice(x, [100], [2], [-1]),
            // x[..., 0]: a shrink after the ellipsis.
            strided_slice(x, [0, 0], [0, 1], [1, 1], 0, 0, 1, 0, 2),
        ),
    )
}

#[test]
fn masks_follow_tf_on_static_dims() {
    let x = cube(7, 5, 3);
    let xd = x.clone().into_dyn();
    let tf = |b: &[i64], e: &[i64], s: &[i64], m: [u64; 5]| {
        tf_strided_slice(&xd, b, e, s, m).expect("TF accepts this spec")
    };
    let one = [1i64];
    for (how, r) in runs!(masked_static(&x)) {
        let ((a0, a1, a2, a3, a4, a5), (b0, b1, b2, b3, b4, b5), (c0, c1, c2, c3, c4)) = r.unwrap();
        same(how, &a0, &tf(&[2, 1], &[5, 4], &[1, 1], [1, 2, 0, 0, 0]));
        same(how, &a1, &tf(&[0, 0], &[0, 0], &[-1, -2], [3, 3, 0, 0, 0]));
        same(how, &a2, &tf(&[0, 1], &[0, 3], &[1, 1], [0, 0, 1, 0, 0]));
        same(how, &a3, &tf(&[0, 1], &[0, 6], &[1, 2], [0, 0, 0, 1, 0]));
        same(
            how,
            &a4,
            &tf(&[-1, 0, 1], &[0, 0, 2], &[1, 1, 1], [2, 2, 0, 0, 5]),
        );
        same(
            how,
            &a5,
            &tf(&[0, 0, -2], &[0, 0, -1], &[1, 1, 1], [0, 0, 1, 2, 4]),
        );
        same(how, &b0, &tf(&[-100], &[100], &[3], [0; 5]));
        same(how, &b1, &tf(&[99], &[-99], &one, [1, 1, 0, 0, 0]));
        same(
            how,
            &b2,
            &tf(&[1, 0, 0], &[0, 0, 0], &[1, 1, -1], [4, 5, 2, 0, 0]),
        );
        same(
            how,
            &b3,
            &tf(&[0, 1, 0, 0], &[2, 2, 0, 3], &[1, 1, 1, 1], [0, 0, 4, 0, 0]),
        );
        same(how, &b4, &tf(&[3], &[0], &[2], [0, 0, 0, 0, 1]));
        same(how, &b5, &tf(&[0, 0], &[0, 0], &[1, 1], [0, 0, 1, 2, 0]));
        same(how, &c0, &tf(&[3], &[1], &one, [0; 5]));
        same(
            how,
            &c1,
            &tf(&[0; 4], &[0; 4], &[1; 4], [2, 2, 8, 5 | 8, 4]),
        );
        same(
            how,
            &c2,
            &tf(&[-2, 4, -1], &[0, 0, -4], &[1, 1, -1], [0, 0, 0, 0, 3]),
        );
        same(how, &c3, &tf(&[100], &[2], &[-1], [0; 5]));
        same(how, &c4, &tf(&[0, 0], &[0, 1], &[1, 1], [0, 0, 1, 0, 2]));
    }
    // The reference itself against hand-written NumPy results, so it cannot agree with
    // grafo by sharing a mistake: x[-1, :, 1] is the column x[6, j, 1].
    let col = tf(&[-1, 0, 1], &[0, 0, 2], &[1, 1, 1], [2, 2, 0, 0, 5]);
    let want: Vec<f32> = (0..5).map(|j| (600 + j * 10 + 1) as f32).collect();
    assert_eq!(col.iter().copied().collect::<Vec<_>>(), want);
    // x[1:, ..., ::-1][0, 0] is x[1, 0, 2, 1, 0] reversed on the last axis.
    let rev = tf(&[1, 0, 0], &[0, 0, 0], &[1, 1, -1], [4, 5, 2, 0, 0]);
    assert_eq!(rev.shape(), &[6, 5, 3]);
    assert_eq!(rev[[0, 0, 0]], 102.0);
    assert_eq!(rev[[5, 4, 2]], 640.0);
    // TF's errors in the reference: two ellipses, shrink with a negative stride, too many entries.
    assert!(tf_strided_slice(&xd, &[0, 0], &[0, 0], &[1, 1], [0, 0, 3, 0, 0]).is_none());
    assert!(tf_strided_slice(&xd, &[0], &[0], &[-1], [0, 0, 0, 0, 1]).is_none());
    assert!(tf_strided_slice(&xd, &[0; 4], &[1; 4], &[1; 4], [0; 5]).is_none());
}

#[graph]
fn masked_one_element(x: Tensor<f32, 1, 1>) -> (Tensor<f32, 1>, Tensor<f32>, Tensor<f32, 1, 1, 1>) {
    (
        strided_slice(x, [0, -1], [0, 0], [1, 1], 1, 1, 0, 0, 2),
        strided_slice(x, [-1, 0], [0, 0], [1, 1], 0, 0, 0, 0, 3),
        strided_slice(x, [0, 0], [0, 0], [-1, 1], 1, 1, 0, 2),
    )
}

#[test]
fn masks_on_one_element_and_empty() {
    let x = Array2::from_elem((1, 1), -0.0f32);
    let xd = x.clone().into_dyn();
    for (how, r) in runs!(masked_one_element(&x)) {
        let (a, b, c) = r.unwrap();
        let tf = |b: &[i64], e: &[i64], s: &[i64], m| tf_strided_slice(&xd, b, e, s, m).unwrap();
        same(how, &a, &tf(&[0, -1], &[0, 0], &[1, 1], [1, 1, 0, 0, 2]));
        same(how, &b, &tf(&[-1, 0], &[0, 0], &[1, 1], [0, 0, 0, 0, 3]));
        same(how, &c, &tf(&[0, 0], &[0, 0], &[-1, 1], [1, 1, 0, 2, 0]));
    }
}

// ----- symbolic dims ----------------------------------------------------------------------------

#[graph]
#[allow(clippy::type_complexity)]
fn masked_symbolic(
    x: Tensor<f32, B, 5>,
) -> (
    Tensor<f32, B, 3>,
    Tensor<f32, B, 5>,
    Tensor<f32, B>,
    Tensor<f32, B, 5, 1>,
    Tensor<f32, 1, B, 2>,
    Tensor<f32, B, 5>,
) {
    (
        // x[:, 1:4]
        strided_slice(x, [0, 1], [0, 4], [1, 1], 1, 1),
        // x[::-1]
        strided_slice(x, [0], [0], [-1], 1, 1),
        // x[:, -1]
        strided_slice(x, [0, -1], [0, 0], [1, 1], 1, 1, 0, 0, 2),
        // x[..., tf.newaxis]
        strided_slice(x, [0, 0], [0, 0], [1, 1], 0, 0, 1, 2),
        // x[tf.newaxis, ..., 3:-4:-1]: a negative stride inside the static axis
        strided_slice(x, [0, 0, 3], [0, 0, -4], [1, 1, -1], 0, 0, 2, 1),
        // x[...]: the ellipsis alone is the whole tensor
        strided_slice(x, [0], [0], [1], 0, 0, 1),
    )
}

#[test]
fn masks_follow_tf_on_symbolic_dims() {
    for &b in &SIZES {
        let x = Array2::from_shape_fn((b, 5), |(i, j)| (i * 10 + j) as f32);
        let xd = x.clone().into_dyn();
        let tf = |b: &[i64], e: &[i64], s: &[i64], m| tf_strided_slice(&xd, b, e, s, m).unwrap();
        for (how, r) in runs!(masked_symbolic(&x)) {
            let what = format!("{how} B={b}");
            let (s0, s1, s2, s3, s4, s5) = r.unwrap();
            same(&what, &s0, &tf(&[0, 1], &[0, 4], &[1, 1], [1, 1, 0, 0, 0]));
            same(&what, &s1, &tf(&[0], &[0], &[-1], [1, 1, 0, 0, 0]));
            same(&what, &s2, &tf(&[0, -1], &[0, 0], &[1, 1], [1, 1, 0, 0, 2]));
            same(&what, &s3, &tf(&[0, 0], &[0, 0], &[1, 1], [0, 0, 1, 2, 0]));
            same(
                &what,
                &s4,
                &tf(&[0, 0, 3], &[0, 0, -4], &[1, 1, -1], [0, 0, 2, 1, 0]),
            );
            same(&what, &s5, &xd);
        }
    }
}

/// Bounds on a symbolic axis that are assumed to fit: `x[-3:]` (end masked) and `x[2]`
/// (shrunk); a smaller run-time size is an `Err` on every path.
#[graph]
fn masked_symbolic_bounds(x: Tensor<f32, B, 5>) -> (Tensor<f32, 3, 5>, Tensor<f32, 5>) {
    (
        strided_slice(x, [-3], [0], [1], 0, 1),
        strided_slice(x, [2], [3], [1], 0, 0, 0, 0, 1),
    )
}

#[test]
fn masked_bounds_on_symbolic_dims_are_checked_at_run_time() {
    for &b in &SIZES {
        let x = Array2::from_shape_fn((b, 5), |(i, j)| (i * 10 + j) as f32);
        let xd = x.clone().into_dyn();
        for (how, r) in runs!(masked_symbolic_bounds(&x)) {
            if b < 3 {
                let e = r.expect_err("a size below 3 cannot give x[-3:] of 3 rows");
                assert!(
                    matches!(e, grafo::Error::InvalidArgument { .. }),
                    "{how} B={b}: {e}"
                );
                continue;
            }
            let (t, row) = r.unwrap();
            let want_t = tf_strided_slice(&xd, &[-3], &[0], &[1], [0, 1, 0, 0, 0]).unwrap();
            let want_row = tf_strided_slice(&xd, &[2], &[3], &[1], [0, 0, 0, 0, 1]).unwrap();
            same(how, &t, &want_t);
            same(how, &row, &want_row);
        }
    }
}

/// A long axis: every 7th element backwards from a masked begin, on 1023 elements.
#[graph]
fn masked_long(x: Tensor<f32, 1023>) -> Tensor<f32, 147> {
    strided_slice(x, [5], [0], [-7], 1, 1)
}

#[test]
fn masked_long_axis() {
    let x = Array1::from_shape_fn(1023, |i| i as f32 * 0.5);
    let xd = x.clone().into_dyn();
    let want = tf_strided_slice(&xd, &[5], &[0], &[-7], [1, 1, 0, 0, 0]).unwrap();
    assert_eq!(want.len(), 147);
    for (how, r) in runs!(masked_long(&x)) {
        same(how, &r.unwrap(), &want);
    }
}

/// The extreme bounds of i64 are clamped as TF clamps them: `i64::MIN` and `i64::MAX` (also
/// written `-9223372036854775808`, whose magnitude is beyond i64) as begin and end, forwards
/// and backwards.
#[graph]
#[allow(clippy::type_complexity)]
fn extreme_bounds(
    x: Tensor<f32, 4, 6>,
) -> (Tensor<f32, 4, 6>, Tensor<f32, 4, 6>, Tensor<f32, 2, 3>) {
    (
        strided_slice(
            x,
            [0, -9223372036854775808],
            [4, 9223372036854775807],
            [1, 1],
        ),
        strided_slice(
            x,
            [-1, i64::MAX],
            [i64::MIN, -9223372036854775808],
            [-1, -1],
        ),
        strided_slice(x, [i64::MIN, 1], [2, i64::MAX], [1, 2]),
    )
}

#[test]
fn extreme_bounds_are_clamped() {
    let x = Array2::from_shape_fn((4, 6), |(i, j)| (i * 6 + j) as f32);
    let xd = x.clone().into_dyn();
    let (min, max) = (i64::MIN, i64::MAX);
    let want = [
        tf_strided_slice(&xd, &[0, min], &[4, max], &[1, 1], [0; 5]).unwrap(),
        tf_strided_slice(&xd, &[-1, max], &[min, min], &[-1, -1], [0; 5]).unwrap(),
        tf_strided_slice(&xd, &[min, 1], &[2, max], &[1, 2], [0; 5]).unwrap(),
    ];
    assert_eq!(want[0], xd);
    for (how, (a, b, c)) in runs_ok!(extreme_bounds(&x)) {
        same(how, &a, &want[0]);
        same(how, &b, &want[1]);
        same(how, &c, &want[2]);
    }
}

/// `graph()` shows a masked bound as NumPy's empty one.
#[test]
fn graph_shows_masked_bounds() {
    let g = masked_symbolic::graph();
    let axes: Vec<String> = g
        .nodes
        .iter()
        .filter(|n| n.op == "strided_slice")
        .flat_map(|n| {
            n.attrs
                .iter()
                .filter(|a| a.0 == "axes")
                .map(|a| a.1.clone())
        })
        .collect();
    assert!(axes.contains(&"[::1, 1:4:1]".to_string()), "{axes:?}");
    assert!(axes.contains(&"[::-1, 0..]".to_string()), "{axes:?}");
}
