//! `band_part(x, num_lower, num_upper)` through `#[graph]`: compiled == eager == `run` bit for
//! bit, and against TF's definition written as plain loops, over batches of 0, 1, 7 and 1023
//! matrices, square and not, symbolic sizes, every sign of the bounds, NaN and -0 in and out
//! of the band, and bool matrices.

use grafo::ndarray::{Array2, Array3};
use grafo::prelude::*;

#[path = "common/entry_points.rs"]
#[macro_use]
mod entry_points;

/// TF's `in_band(m, n)`.
fn in_band(m: usize, n: usize, lower: i64, upper: i64) -> bool {
    let (m, n) = (m as i64, n as i64);
    (lower < 0 || m - n <= lower) && (upper < 0 || n - m <= upper)
}

fn ref_band(x: &Array3<f32>, lower: i64, upper: i64) -> Array3<f32> {
    Array3::from_shape_fn(x.dim(), |(b, m, n)| {
        if in_band(m, n, lower, upper) {
            x[(b, m, n)]
        } else {
            0.0
        }
    })
}

fn same_bits(a: &Array3<f32>, b: &Array3<f32>) -> bool {
    a.shape() == b.shape()
        && a.iter()
            .zip(b)
            .all(|(x, y)| x.to_bits() == y.to_bits() || x.is_nan() && y.is_nan())
}

/// The six results of `bands`.
type Bands = (
    Array3<f32>,
    Array3<f32>,
    Array3<f32>,
    Array3<f32>,
    Array3<f32>,
    Array3<f32>,
);

#[graph]
fn bands(
    x: Tensor<f32, B, M, N>,
) -> (
    Tensor<f32, B, M, N>,
    Tensor<f32, B, M, N>,
    Tensor<f32, B, M, N>,
    Tensor<f32, B, M, N>,
    Tensor<f32, B, M, N>,
    Tensor<f32, B, M, N>,
) {
    (
        band_part(x, -1, 0),
        band_part(x, 0, -1),
        band_part(x, 0, 0),
        band_part(x, 1, 2),
        band_part(x, -1, -1),
        band_part(x, 3, -5),
    )
}

#[test]
fn band_part_matches_the_reference() {
    for (b, m, n) in [(0, 3, 3), (1, 1, 1), (7, 4, 6), (1023, 3, 2), (2, 0, 4)] {
        let x = Array3::from_shape_fn((b, m, n), |(i, r, c)| match (i + r * 3 + c) % 9 {
            0 => f32::NAN,
            1 => -0.0,
            2 => f32::NEG_INFINITY,
            k => k as f32 * 1.5 - (i % 5) as f32,
        });
        let [(_, c), (_, e), (_, r)] = runs_ok!(bands(&x));
        let outs = |t: &Bands| [&t.0, &t.1, &t.2, &t.3, &t.4, &t.5].map(Array3::clone);
        let got = outs(&c);
        for (how, o) in [("eager", &e), ("run", &r)] {
            for (k, (a, w)) in got.iter().zip(outs(o)).enumerate() {
                assert!(same_bits(a, &w), "band {k} compiled vs {how}, {b}x{m}x{n}");
            }
        }
        for (k, (lower, upper)) in [(-1, 0), (0, -1), (0, 0), (1, 2), (-1, -1), (3, -5)]
            .into_iter()
            .enumerate()
        {
            assert!(
                same_bits(&got[k], &ref_band(&x, lower, upper)),
                "band_part(x, {lower}, {upper}) on {b}x{m}x{n}"
            );
        }
    }
}

#[graph]
fn causal(
    scores: Tensor<f32, T, T>,
    mask: Tensor<bool, T, T>,
) -> (Tensor<f32, T, T>, Tensor<bool, T, T>) {
    // A causal attention mask in one call: -inf above the diagonal, then softmax.
    let keep = band_part(ones::<bool>([T, T]), -1, 0);
    (
        softmax(select(keep, scores, f32::NEG_INFINITY), -1),
        band_part(mask, 1, 0),
    )
}

#[test]
fn a_causal_mask_and_bool_matrices() {
    for t in [1usize, 7] {
        let scores = Array2::from_shape_fn((t, t), |(i, j)| (i * t + j) as f32 * 0.1);
        let mask = Array2::from_shape_fn((t, t), |(i, j)| (i + j) % 3 != 1);
        let [(_, c), (_, e), (_, r)] = runs_ok!(causal(&scores, &mask));
        assert_eq!(c, e);
        assert_eq!(c, r);
        for i in 0..t {
            let denom: f64 = (0..=i).map(|j| (scores[(i, j)] as f64).exp()).sum();
            for j in 0..t {
                let want = if j <= i {
                    (scores[(i, j)] as f64).exp() / denom
                } else {
                    0.0
                };
                assert!(
                    (c.0[(i, j)] as f64 - want).abs() < 1e-6,
                    "softmax at {i},{j}"
                );
                assert_eq!(
                    c.1[(i, j)],
                    mask[(i, j)] && (i as i64 - j as i64) <= 1 && j <= i
                );
            }
        }
    }
}
