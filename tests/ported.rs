//! Issue 31's ported models (tests/common/ported.rs, timed by benches/ported.rs): compiled == eager == session bit for bit, and all three against plain f64 loops, on batch 1, 7 and empty batches; a bad token id is an error.

#[path = "common/ported.rs"]
mod ported;

use grafo::ndarray::{Array1, Array2, Array4};
use grafo::Session;
use ported::{BatchNorm, BlockWeights, TextWeights, CHANNELS, CHANNELS_OUT_S2, SIDE, VOCAB};

/// `y = conv1x1(x, k)` in f64 on `[N, H, W, C]` (loops over slices: the tests run unoptimised).
fn pointwise(x: &Array4<f64>, k: &Array4<f32>) -> Array4<f64> {
    let (n, h, w, c) = x.dim();
    let o = k.dim().3;
    let (xs, ks) = (x.as_slice().unwrap(), k.as_slice().unwrap());
    let mut out = vec![0.0; n * h * w * o];
    for (px, row) in xs.chunks_exact(c).zip(out.chunks_exact_mut(o)) {
        for (&v, taps) in px.iter().zip(ks.chunks_exact(o)) {
            for (acc, &t) in row.iter_mut().zip(taps) {
                *acc += v * t as f64;
            }
        }
    }
    Array4::from_shape_vec((n, h, w, o), out).unwrap()
}

/// TF's inference batch normalisation in f64, then relu6 when `relu6`.
fn batch_norm(x: Array4<f64>, bn: &BatchNorm, relu6: bool) -> Array4<f64> {
    let (mean, var, offset, scale) = bn;
    let c = mean.len();
    let mut y = x;
    for px in y.as_slice_mut().unwrap().chunks_exact_mut(c) {
        for (f, v) in px.iter_mut().enumerate() {
            let inv = scale[f] as f64 / (var[f] as f64 + 1e-5).sqrt();
            *v = (*v - mean[f] as f64) * inv + offset[f] as f64;
            if relu6 {
                *v = v.clamp(0.0, 6.0);
            }
        }
    }
    y
}

/// The 3x3 depthwise convolution with TF's SAME padding, in f64.
fn depthwise(x: &Array4<f64>, k: &Array4<f32>, stride: usize) -> Array4<f64> {
    let (n, h, w, c) = x.dim();
    let (oh, ow) = (h.div_ceil(stride), w.div_ceil(stride));
    let pad = |len: usize, out: usize| ((out - 1) * stride + 3).saturating_sub(len) / 2;
    let (pt, pl) = (pad(h, oh), pad(w, ow));
    let (xs, ks) = (x.as_slice().unwrap(), k.as_slice().unwrap());
    let mut out = vec![0.0; n * oh * ow * c];
    for (p, px) in out.chunks_exact_mut(c).enumerate() {
        let (b, i, j) = (p / (oh * ow), p / ow % oh, p % ow);
        for di in 0..3 {
            for dj in 0..3 {
                let y = (i * stride + di) as isize - pt as isize;
                let xx = (j * stride + dj) as isize - pl as isize;
                if y >= 0 && xx >= 0 && (y as usize) < h && (xx as usize) < w {
                    let src = &xs[((b * h + y as usize) * w + xx as usize) * c..][..c];
                    let taps = &ks[(di * 3 + dj) * c..][..c];
                    for ((acc, &v), &t) in px.iter_mut().zip(src).zip(taps) {
                        *acc += v * t as f64;
                    }
                }
            }
        }
    }
    Array4::from_shape_vec((n, oh, ow, c), out).unwrap()
}

/// The inverted-residual block in f64.
fn block_reference(wt: &BlockWeights, x: &Array4<f32>, stride: usize) -> Array4<f64> {
    let x64 = x.mapv(f64::from);
    let h = batch_norm(pointwise(&x64, &wt.k_expand), &wt.bn1, true);
    let h = batch_norm(depthwise(&h, &wt.k_depthwise, stride), &wt.bn2, true);
    let y = batch_norm(pointwise(&h, &wt.k_project), &wt.bn3, false);
    if stride == 1 {
        y + x64
    } else {
        y
    }
}

fn assert_close<D: grafo::ndarray::Dimension>(
    what: &str,
    got: &grafo::ndarray::Array<f32, D>,
    want: &grafo::ndarray::Array<f64, D>,
) {
    assert_eq!(got.shape(), want.shape(), "{what}: shape");
    for (g, w) in got.iter().zip(want.iter()) {
        assert!(
            (*g as f64 - w).abs() <= 1e-4 * (1.0 + w.abs()),
            "{what}: {g} vs {w}"
        );
    }
}

#[test]
fn inverted_residual_blocks_match_the_loops() {
    for (stride, out) in [(1, CHANNELS), (2, CHANNELS_OUT_S2)] {
        let wt = BlockWeights::seeded(out);
        for batch in [1usize, 0] {
            let x = BlockWeights::input(batch);
            let mut session = Session::default();
            let (compiled, eager, run) = if stride == 1 {
                (wt.compiled(&x), wt.eager(&x), wt.session(&mut session, &x))
            } else {
                (
                    wt.compiled_s2(&x),
                    wt.eager_s2(&x),
                    wt.session_s2(&mut session, &x),
                )
            };
            let (compiled, eager, run) = (compiled.unwrap(), eager.unwrap(), run.unwrap());
            let what = format!("block stride {stride} batch {batch}");
            assert_eq!(compiled, eager, "{what}: compiled == eager");
            assert_eq!(compiled, run, "{what}: session == compiled");
            assert_eq!(compiled.dim(), (batch, SIDE / stride, SIDE / stride, out));
            assert_close(&what, &compiled, &block_reference(&wt, &x, stride));
        }
    }
}

/// The classifier in f64: the mean of the token rows, dense + relu, dense.
fn classifier_reference(wt: &TextWeights, ids: &Array2<i32>) -> Array2<f64> {
    let (batch, tokens) = ids.dim();
    let embed = wt.table.dim().1;
    let mean = Array2::from_shape_fn((batch, embed), |(b, e)| {
        (0..tokens)
            .map(|t| wt.table[[ids[[b, t]] as usize, e]] as f64)
            .sum::<f64>()
            / tokens as f64
    });
    let dense = |x: &Array2<f64>, w: &Array2<f32>, bias: &Array1<f32>, relu: bool| {
        Array2::from_shape_fn((x.dim().0, w.dim().1), |(r, o)| {
            let v = (0..w.dim().0)
                .map(|i| x[[r, i]] * w[[i, o]] as f64)
                .sum::<f64>()
                + bias[o] as f64;
            if relu {
                v.max(0.0)
            } else {
                v
            }
        })
    };
    dense(&dense(&mean, &wt.w1, &wt.b1, true), &wt.w2, &wt.b2, false)
}

#[test]
fn text_classifier_matches_the_loops() {
    let wt = TextWeights::seeded();
    for batch in [1usize, 7, 0] {
        let ids = TextWeights::ids(batch);
        let mut session = Session::default();
        let compiled = wt.compiled(&ids).unwrap();
        assert_eq!(
            compiled,
            wt.eager(&ids).unwrap(),
            "batch {batch}: compiled == eager"
        );
        assert_eq!(
            compiled,
            wt.session(&mut session, &ids).unwrap(),
            "batch {batch}: session"
        );
        assert_close(
            &format!("classifier batch {batch}"),
            &compiled,
            &classifier_reference(&wt, &ids),
        );
    }
}

#[test]
fn a_token_id_outside_the_table_is_an_error_everywhere() {
    let wt = TextWeights::seeded();
    for bad in [VOCAB as i32, -1] {
        let mut ids = TextWeights::ids(2);
        ids[[1, 100]] = bad;
        let mut session = Session::default();
        for (how, r) in [
            ("compiled", wt.compiled(&ids)),
            ("eager", wt.eager(&ids)),
            ("session", wt.session(&mut session, &ids)),
        ] {
            let e = r.expect_err(how).to_string();
            assert!(
                e.contains("gather") && e.contains(&bad.to_string()),
                "{how}: {e}"
            );
        }
    }
}
