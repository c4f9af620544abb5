//! `concat` and `split` along symbolic axes: `concat` of `[B, 4]` and `[B, 4]` is `[B*2, 4]`
//! (and of `B*4` with `B*4`, `B*8`), `split` of a `B*2` axis into 2 gives `B`s; run compiled,
//! eager and in a `Session` and compared element for element with plain loops, for B = 0, 1,
//! 7 and 1023, and `split`'s TF `size_splits` with one -1.

use grafo::ndarray::{Array2, Array3, ArrayD, Dimension, IxDyn};
use grafo::prelude::*;

#[path = "common/entry_points.rs"]
#[macro_use]
mod entry_points;

const SIZES: [usize; 4] = [0, 1, 7, 1023];

/// Equal shapes and identical elements (these ops copy).
fn same<D: grafo::ndarray::Dimension>(what: &str, got: &Array<f32, D>, want: &ArrayD<f32>) {
    assert_eq!(got.shape(), want.shape(), "{what}: shape");
    for (i, (g, w)) in got.iter().zip(want.iter()).enumerate() {
        assert_eq!(g.to_bits(), w.to_bits(), "{what}: element {i}");
    }
}

/// `concat(parts, axis)` in plain loops.
fn ref_concat(parts: &[ArrayD<f32>], axis: usize) -> ArrayD<f32> {
    let mut shape = parts[0].shape().to_vec();
    shape[axis] = parts.iter().map(|p| p.shape()[axis]).sum();
    ArrayD::from_shape_fn(IxDyn(&shape), |ix| {
        let mut at = ix[axis];
        for p in parts {
            let len = p.shape()[axis];
            if at < len {
                let mut jx: Vec<usize> = ix.slice().to_vec();
                jx[axis] = at;
                return p[IxDyn(&jx)];
            }
            at -= len;
        }
        unreachable!("index inside the joined axis")
    })
}

/// Piece `i` of `n` equal pieces of `x` along `axis`, in plain loops.
fn ref_piece(x: &ArrayD<f32>, n: usize, i: usize, axis: usize) -> ArrayD<f32> {
    let mut shape = x.shape().to_vec();
    let len = shape[axis] / n;
    shape[axis] = len;
    ArrayD::from_shape_fn(IxDyn(&shape), |ix| {
        let mut jx: Vec<usize> = ix.slice().to_vec();
        jx[axis] += i * len;
        x[IxDyn(&jx)]
    })
}

/// The same row-major elements under another shape.
fn reshaped(x: &ArrayD<f32>, shape: &[usize]) -> ArrayD<f32> {
    ArrayD::from_shape_vec(IxDyn(shape), x.iter().copied().collect()).unwrap()
}

#[graph]
#[allow(clippy::type_complexity)]
fn join_and_split(
    a: Tensor<f32, B, 4>,
    b: Tensor<f32, B, 4>,
    x: Tensor<f32, B, 4, 3>,
) -> (
    (Tensor<f32, B, 4>, Tensor<f32, B, 4>, Tensor<f32, 2, B, 4>),
    (Tensor<f32, B, 4>, Tensor<f32, B, 4>, Tensor<f32, B, 4>),
    (
        Tensor<f32, B, 2, 3>,
        Tensor<f32, B, 2, 3>,
        Tensor<f32, B, 4, 3>,
    ),
    Tensor<f32, 4>,
) {
    // [2*B, 4]: split back into its two halves, and viewed as [2, B, 4].
    let ab = concat([a, b], 0);
    let (p, q) = split(ab, 2, 0);
    // [3*B, 4] from B + 2*B, split into three.
    let aab = concat([a, ab], -2);
    let (r, s, t) = split(aab, 3, 0);
    // [B*4, 3] twice is [B*8, 3]; four pieces of [B*2, 3], viewed as [B, 2, 3].
    let rows = reshape(x, [B * 4, 3]);
    let (u, v, w, z) = split(concat([rows, rows], 0), 4, 0);
    let _ = (w, z);
    // A `B*4` axis into 2 pieces of `B*2`, then back to [B, 4, 3] by concat of the halves.
    let (h0, h1) = split(rows, 2, 0);
    let back = reshape(concat([h0, h1], 0), [B, 4, 3]);
    (
        (p, q, reshape(ab, [2, B, 4])),
        (r, s, t),
        (reshape(u, [B, 2, 3]), reshape(v, [B, 2, 3]), back),
        reduce_sum(ab, 0),
    )
}

#[test]
fn concat_and_split_on_symbolic_axes() {
    for &n in &SIZES {
        let a = Array2::from_shape_fn((n, 4), |(i, j)| (i * 10 + j) as f32);
        let b = Array2::from_shape_fn((n, 4), |(i, j)| -((i * 10 + j) as f32) - 0.5);
        let x = Array3::from_shape_fn((n, 4, 3), |(i, j, k)| (i * 100 + j * 10 + k) as f32);
        let (ad, bd, xd) = (
            a.clone().into_dyn(),
            b.clone().into_dyn(),
            x.clone().into_dyn(),
        );
        let ab = ref_concat(&[ad.clone(), bd.clone()], 0);
        let aab = ref_concat(&[ad.clone(), ab.clone()], 0);
        let rows = reshaped(&xd, &[n * 4, 3]);
        let rr = ref_concat(&[rows.clone(), rows.clone()], 0);
        let halves = ref_concat(&[ref_piece(&rows, 2, 0, 0), ref_piece(&rows, 2, 1, 0)], 0);
        let sums = ArrayD::from_shape_fn(IxDyn(&[4]), |ix| {
            let mut acc = 0.0f64;
            for i in 0..2 * n {
                acc += ab[[i, ix[0]]] as f64;
            }
            acc as f32
        });
        for (how, r) in runs!(join_and_split(&a, &b, &x)) {
            let what = format!("{how} B={n}");
            let ((p, q, ab2), (r0, s0, t0), (u, v, back), total) = r.unwrap();
            same(&what, &p, &ref_piece(&ab, 2, 0, 0));
            same(&what, &q, &ref_piece(&ab, 2, 1, 0));
            same(&what, &p, &ad);
            same(&what, &q, &bd);
            same(&what, &ab2, &reshaped(&ab, &[2, n, 4]));
            same(&what, &r0, &ref_piece(&aab, 3, 0, 0));
            same(&what, &s0, &ref_piece(&aab, 3, 1, 0));
            same(&what, &t0, &ref_piece(&aab, 3, 2, 0));
            same(&what, &u, &reshaped(&ref_piece(&rr, 4, 0, 0), &[n, 2, 3]));
            same(&what, &v, &reshaped(&ref_piece(&rr, 4, 1, 0), &[n, 2, 3]));
            same(&what, &back, &reshaped(&halves, &[n, 4, 3]));
            same(&what, &back, &xd);
            assert_eq!(total.shape(), &[4]);
            for (g, w) in total.iter().zip(sums.iter()) {
                assert_eq!(g, w, "{what}: reduce_sum of the joined axis");
            }
        }
    }
}

/// TF's `size_splits` with one -1 (the rest of the axis), on a static axis.
#[graph]
fn split_rest(x: Tensor<f32, B, 7>) -> (Tensor<f32, B, 2>, Tensor<f32, B, 4>, Tensor<f32, B, 1>) {
    split(x, [2, -1, 1], 1)
}

#[test]
fn split_sizes_with_the_rest() {
    for &n in &SIZES {
        let x = Array2::from_shape_fn((n, 7), |(i, j)| (i * 10 + j) as f32);
        let xd = x.clone().into_dyn();
        let cols = |lo: usize, hi: usize| {
            ArrayD::from_shape_fn(IxDyn(&[n, hi - lo]), |ix| xd[[ix[0], lo + ix[1]]])
        };
        for (how, r) in runs!(split_rest(&x)) {
            let (p, q, s) = r.unwrap();
            same(how, &p, &cols(0, 2));
            same(how, &q, &cols(2, 6));
            same(how, &s, &cols(6, 7));
        }
    }
}

/// `graph()` names the joined axis `B*2`.
#[test]
fn graph_shows_the_joined_dim() {
    let g = join_and_split::graph();
    let concat = g
        .nodes
        .iter()
        .find(|n| n.op == "concat")
        .expect("a concat node");
    let dims: Vec<String> = concat.shape.iter().map(|d| d.to_string()).collect();
    assert_eq!(dims, ["B*2", "4"]);
}
