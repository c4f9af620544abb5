//! `resize(x, [h, w], NEAREST | BILINEAR)` through `#[graph]`: compiled == eager == `run` bit
//! for bit, and against a naive reference written here (TF 2's half-pixel sampling, plain
//! loops), up and down, on batches of 0, 1 and 7, a 1023-pixel row, integer, f64, HWC and
//! symbolic-size images, with NaN and infinities among the pixels.

use grafo::ndarray::{Array3, Array4};
use grafo::prelude::*;

#[path = "common/entry_points.rs"]
#[macro_use]
mod entry_points;

/// The input pixel each output pixel copies with `NEAREST` (TF's, in f32).
fn ref_nearest_source(out: usize, input: usize, o: usize) -> usize {
    let scale = input as f32 / out as f32;
    let at = ((o as f32 + 0.5) * scale).floor() as i64;
    at.clamp(0, input as i64 - 1) as usize
}

/// `NEAREST` by plain loops.
fn ref_nearest<T: Copy + Default>(x: &Array4<T>, h: usize, w: usize) -> Array4<T> {
    let (n, ih, iw, c) = x.dim();
    Array4::from_shape_fn((n, h, w, c), |(b, y, xx, ch)| {
        x[(
            b,
            ref_nearest_source(h, ih, y),
            ref_nearest_source(w, iw, xx),
            ch,
        )]
    })
}

/// The rows below and above output row `o` and the weight of the one above (TF's
/// `compute_interpolation_weights` with half-pixel centres), in f32.
fn ref_lerp(out: usize, input: usize, o: usize) -> (usize, usize, f32) {
    let scale = input as f32 / out as f32;
    let at = (o as f32 + 0.5) * scale - 0.5;
    let lower = (at.floor() as i64).max(0) as usize;
    let upper = (at.ceil() as i64).min(input as i64 - 1) as usize;
    (lower, upper, at - at.floor())
}

/// `BILINEAR` by plain loops, TF's formula in f32.
fn ref_bilinear(x: &Array4<f32>, h: usize, w: usize) -> Array4<f32> {
    let (n, ih, iw, c) = x.dim();
    Array4::from_shape_fn((n, h, w, c), |(b, y, xx, ch)| {
        let (y0, y1, ly) = ref_lerp(h, ih, y);
        let (x0, x1, lx) = ref_lerp(w, iw, xx);
        let (tl, tr) = (x[(b, y0, x0, ch)], x[(b, y0, x1, ch)]);
        let (bl, br) = (x[(b, y1, x0, ch)], x[(b, y1, x1, ch)]);
        let top = tl + (tr - tl) * lx;
        let bottom = bl + (br - bl) * lx;
        top + (bottom - top) * ly
    })
}

fn same_bits(a: &Array4<f32>, b: &Array4<f32>) -> bool {
    a.shape() == b.shape()
        && a.iter()
            .zip(b)
            .all(|(x, y)| x.to_bits() == y.to_bits() || x.is_nan() && y.is_nan())
}

/// Pixels with a NaN and both infinities in the first image.
fn images(n: usize, h: usize, w: usize, c: usize) -> Array4<f32> {
    Array4::from_shape_fn((n, h, w, c), |(b, y, x, ch)| match (b, y, x, ch) {
        (0, 1, 1, 0) => f32::NAN,
        (0, 2, 0, 1) => f32::INFINITY,
        (0, 0, 2, 1) => f32::NEG_INFINITY,
        _ => ((b * 131 + y * 17 + x * 7 + ch) as f32 * 0.37).sin() * 10.0,
    })
}

#[graph]
fn resizes(
    x: Tensor<f32, N, 4, 3, 2>,
) -> (
    Tensor<f32, N, 7, 5, 2>,
    Tensor<f32, N, 7, 5, 2>,
    Tensor<f32, N, 2, 2, 2>,
    Tensor<f32, N, 2, 2, 2>,
    Tensor<f32, N, 4, 3, 2>,
    Tensor<f32, N, 8, 6, 2>,
) {
    (
        resize(x, [7, 5], NEAREST),
        resize(x, [7, 5], BILINEAR),
        resize(x, [2, 2], NEAREST),
        resize(x, [2, 2], BILINEAR),
        resize(x, [4, 3], BILINEAR),
        resize(x, [8, 6], BILINEAR),
    )
}

#[test]
fn resize_matches_the_reference() {
    for n in [0, 1, 7] {
        let x = images(n, 4, 3, 2);
        let [(_, c), (_, e), (_, r)] = runs_ok!(resizes(&x));
        for (how, o) in [("eager", &e), ("run", &r)] {
            let pairs = [
                (&c.0, &o.0),
                (&c.1, &o.1),
                (&c.2, &o.2),
                (&c.3, &o.3),
                (&c.4, &o.4),
                (&c.5, &o.5),
            ];
            for (k, (a, b)) in pairs.into_iter().enumerate() {
                assert!(same_bits(a, b), "output {k} compiled vs {how}, n={n}");
            }
        }
        assert!(same_bits(&c.0, &ref_nearest(&x, 7, 5)), "nearest up, n={n}");
        assert!(
            same_bits(&c.1, &ref_bilinear(&x, 7, 5)),
            "bilinear up, n={n}"
        );
        assert!(
            same_bits(&c.2, &ref_nearest(&x, 2, 2)),
            "nearest down, n={n}"
        );
        assert!(
            same_bits(&c.3, &ref_bilinear(&x, 2, 2)),
            "bilinear down, n={n}"
        );
        assert!(
            same_bits(&c.4, &ref_bilinear(&x, 4, 3)),
            "bilinear same size, n={n}"
        );
        assert!(
            same_bits(&c.5, &ref_bilinear(&x, 8, 6)),
            "bilinear x2, n={n}"
        );
        if n > 0 {
            // The same size reads each pixel at weight 0 from its neighbour: itself again
            // (except where a neighbour is infinite or NaN: inf * 0 is NaN, as in TF).
            assert_eq!(c.4[(1.min(n - 1), 3, 2, 0)], x[(1.min(n - 1), 3, 2, 0)]);
        }
    }
}

#[graph]
fn long_row(
    x: Tensor<f32, 1, 1, 1023, 1>,
) -> (Tensor<f32, 1, 3, 511, 1>, Tensor<f32, 1, 2, 2047, 1>) {
    (resize(x, [3, 511], BILINEAR), resize(x, [2, 2047], NEAREST))
}

#[test]
fn a_long_row_down_and_up() {
    let x = images(1, 1, 1023, 1);
    let [(_, c), (_, e), (_, r)] = runs_ok!(long_row(&x));
    for (how, o) in [("eager", &e), ("run", &r)] {
        assert!(
            same_bits(&c.0, &o.0) && same_bits(&c.1, &o.1),
            "compiled vs {how}"
        );
    }
    assert!(same_bits(&c.0, &ref_bilinear(&x, 3, 511)));
    assert!(same_bits(&c.1, &ref_nearest(&x, 2, 2047)));
}

#[graph]
fn int_and_f64(
    n: Tensor<i32, 2, 3, 3, 1>,
    d: Tensor<f64, 1, 3, 3, 1>,
    hwc: Tensor<f32, 3, 2, 4>,
) -> (
    Tensor<f32, 2, 5, 4, 1>,
    Tensor<i32, 2, 5, 4, 1>,
    Tensor<f64, 1, 5, 4, 1>,
    Tensor<f32, 6, 3, 4>,
) {
    (
        resize(n, [5, 4], BILINEAR),
        resize(n, [5, 4], NEAREST),
        resize(d, [5, 4], BILINEAR),
        resize(hwc, [6, 3], BILINEAR),
    )
}

#[test]
fn integer_f64_and_hwc_images() {
    let n = Array4::from_shape_fn((2, 3, 3, 1), |(b, y, x, _)| {
        (b * 9 + y * 3 + x) as i32 * 1000 - 7000
    });
    let d = Array4::from_shape_fn((1, 3, 3, 1), |(_, y, x, _)| (y * 3 + x) as f64 / 3.0);
    let hwc = Array3::from_shape_fn((3, 2, 4), |(y, x, ch)| (y * 8 + x * 4 + ch) as f32 * 0.5);
    let [(_, c), (_, e), (_, r)] = runs_ok!(int_and_f64(&n, &d, &hwc));
    for (how, o) in [("eager", &e), ("run", &r)] {
        assert!(same_bits(&c.0, &o.0), "int bilinear compiled vs {how}");
        assert_eq!(c.1, o.1, "int nearest compiled vs {how}");
        assert_eq!(c.2, o.2, "f64 bilinear compiled vs {how}");
        assert_eq!(c.3, o.3, "hwc compiled vs {how}");
    }
    // Integer images interpolate in f32, as TF's `ResizeBilinear` (its output is float).
    assert!(same_bits(&c.0, &ref_bilinear(&n.mapv(|v| v as f32), 5, 4)));
    assert_eq!(c.1, ref_nearest(&n, 5, 4));
    // f64 images interpolate in f64: within rounding of the f32 reference's weights.
    let want = ref_bilinear(&d.mapv(|v| v as f32), 5, 4);
    for (g, w) in c.2.iter().zip(&want) {
        assert!((g - *w as f64).abs() < 1e-6, "f64 bilinear: {g} vs {w}");
    }
    let x4 = hwc.clone().insert_axis(grafo::ndarray::Axis(0));
    let want = ref_bilinear(&x4, 6, 3).index_axis_move(grafo::ndarray::Axis(0), 0);
    assert!(
        c.3.iter()
            .zip(&want)
            .all(|(a, b)| a.to_bits() == b.to_bits()),
        "HWC images"
    );
}

#[graph]
fn upsample(
    x: Tensor<f32, B, H, W, C>,
) -> (
    Tensor<f32, B, { H * 2 }, { W * 2 }, C>,
    Tensor<f32, B, { H * 2 }, { W * 2 }, C>,
) {
    (
        resize(x, [H * 2, W * 2], NEAREST),
        resize(x, [H * 2, W * 2], BILINEAR),
    )
}

#[test]
fn symbolic_sizes() {
    for (b, h, w, c) in [(0, 2, 3, 1), (1, 1, 1, 1), (3, 5, 2, 3)] {
        let x = images(b, h, w, c);
        let [(_, comp), (_, e), (_, r)] = runs_ok!(upsample(&x));
        for (how, o) in [("eager", &e), ("run", &r)] {
            assert!(
                same_bits(&comp.0, &o.0) && same_bits(&comp.1, &o.1),
                "compiled vs {how}"
            );
        }
        assert!(same_bits(&comp.0, &ref_nearest(&x, 2 * h, 2 * w)));
        assert!(same_bits(&comp.1, &ref_bilinear(&x, 2 * h, 2 * w)));
    }
}

#[test]
fn the_eager_op_outside_a_graph() {
    let x = images(1, 4, 3, 2);
    let y = grafo::ops::resize(&x, [7, 5], BILINEAR).unwrap();
    let y = y.into_dimensionality().unwrap();
    assert!(same_bits(&y, &ref_bilinear(&x, 7, 5)));
    assert!(
        grafo::ops::resize(&x, [0, 5], NEAREST).is_err(),
        "a zero size is an error"
    );
}
