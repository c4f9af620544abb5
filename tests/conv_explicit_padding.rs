//! TensorFlow's explicit padding, `[[top, bottom], [left, right]]` (or the NHWC 4-pair form),
//! on `conv2d`, `depthwise_conv2d` and `max_pool2d`: compiled vs eager bit for bit vs plain
//! loops (PyTorch's `padding=1` convolutions and pooling, asymmetric pads, strides, odd and
//! empty sizes, NaN and -inf), the same bits as a hand-written `pad` then `VALID`, and the
//! gradients through it against central finite differences.

use grafo::ndarray::{Array4, ArrayD, IxDyn};
use grafo::prelude::*;

#[graph]
mod explicit {
    /// PyTorch's `Conv2d(.., stride=2, padding=1)`.
    pub fn torch_stride2(
        x: Tensor<f32, B, 7, 9, 3>,
        k: Tensor<f32, 3, 3, 3, 4>,
    ) -> Tensor<f32, B, 4, 5, 4> {
        conv2d(x, k, 2, [[1, 1], [1, 1]])
    }

    /// The same as a `pad` then `VALID`, as the docs said to write it before.
    pub fn by_hand(
        x: Tensor<f32, B, 7, 9, 3>,
        k: Tensor<f32, 3, 3, 3, 4>,
    ) -> Tensor<f32, B, 4, 5, 4> {
        conv2d(pad(x, [[0, 0], [1, 1], [1, 1], [0, 0]]), k, 2, VALID)
    }

    /// Asymmetric pads in TF's NHWC form, stride 1, with dilation.
    pub fn asymmetric(
        x: Tensor<f32, B, 5, 6, 2>,
        k: Tensor<f32, 2, 3, 2, 3>,
    ) -> Tensor<f32, B, 5, 8, 3> {
        conv2d(x, k, 1, [[0, 0], [0, 2], [3, 1], [0, 0]], [2, 1])
    }

    pub fn depthwise(
        x: Tensor<f32, B, 6, 6, 3>,
        k: Tensor<f32, 3, 3, 3, 2>,
    ) -> Tensor<f32, B, 3, 3, 6> {
        depthwise_conv2d(x, k, 2, [[1, 1], [1, 1]])
    }

    /// PyTorch's `MaxPool2d(3, stride=2, padding=1)` (ResNet's stem).
    pub fn max_pool(x: Tensor<f32, B, 7, 8, 2>) -> Tensor<f32, B, 4, 4, 2> {
        max_pool2d(x, 3, 2, [[1, 1], [1, 1]])
    }

    pub fn max_pool_i32(x: Tensor<i32, B, 4, 4, 1>) -> Tensor<i32, B, 3, 3, 1> {
        max_pool2d(x, 2, 2, [[1, 1], [1, 1]])
    }
}

#[graph]
mod gradient {
    pub fn loss(
        x: Tensor<f64, 2, 5, 6, 2>,
        k: Tensor<f64, 3, 3, 2, 3>,
    ) -> (
        Tensor<f64>,
        Tensor<f64, 2, 5, 6, 2>,
        Tensor<f64, 3, 3, 2, 3>,
    ) {
        let y = max_pool2d(
            tanh(conv2d(x, k, 2, [[1, 2], [0, 1]])),
            2,
            1,
            [[1, 0], [1, 0]],
        );
        let l = reduce_sum(y * y);
        let (gx, gk) = gradients(l, (x, k));
        (l, gx, gk)
    }
}

/// Deterministic values in [-1, 1).
fn values(n: usize, seed: u64) -> Vec<f64> {
    let mut s = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 11) as f64 / (1u64 << 52) as f64 - 1.0
        })
        .collect()
}

fn array4(shape: [usize; 4], seed: u64) -> Array4<f32> {
    let v = values(shape.iter().product(), seed)
        .into_iter()
        .map(|x| x as f32)
        .collect();
    Array4::from_shape_vec(shape, v).unwrap()
}

/// The NHWC convolution of plain loops, in f64, with explicit pads and a dilation; a
/// depthwise one when `multiplier` is given.
#[allow(clippy::too_many_arguments)]
fn reference_conv(
    x: &Array4<f32>,
    k: &Array4<f32>,
    stride: usize,
    pads: [(usize, usize); 2],
    dilation: [usize; 2],
    multiplier: Option<usize>,
) -> Array4<f64> {
    let (b, h, w, c) = x.dim();
    let (kh, kw, _, kout) = k.dim();
    let span = |size: usize, pad: (usize, usize), k: usize, d: usize| {
        (size + pad.0 + pad.1 - (d * (k - 1) + 1)) / stride + 1
    };
    let oh = span(h, pads[0], kh, dilation[0]);
    let ow = span(w, pads[1], kw, dilation[1]);
    let channels = multiplier.map_or(kout, |m| c * m);
    let mut out = Array4::zeros((b, oh, ow, channels));
    for n in 0..b {
        for i in 0..oh {
            for j in 0..ow {
                for o in 0..channels {
                    let mut acc = 0.0f64;
                    for di in 0..kh {
                        for dj in 0..kw {
                            let r = (i * stride + di * dilation[0]) as isize - pads[0].0 as isize;
                            let q = (j * stride + dj * dilation[1]) as isize - pads[1].0 as isize;
                            if r < 0 || q < 0 || r as usize >= h || q as usize >= w {
                                continue;
                            }
                            let (r, q) = (r as usize, q as usize);
                            match multiplier {
                                Some(m) => {
                                    let (ci, mi) = (o / m, o % m);
                                    acc += f64::from(x[[n, r, q, ci]])
                                        * f64::from(k[[di, dj, ci, mi]]);
                                }
                                None => {
                                    for ci in 0..c {
                                        acc += f64::from(x[[n, r, q, ci]])
                                            * f64::from(k[[di, dj, ci, o]]);
                                    }
                                }
                            }
                        }
                    }
                    out[[n, i, j, o]] = acc;
                }
            }
        }
    }
    out
}

fn assert_close(what: &str, got: &Array4<f32>, want: &Array4<f64>) {
    assert_eq!(got.shape(), want.shape(), "{what}: shape");
    for (i, (g, w)) in got.iter().zip(want.iter()).enumerate() {
        assert!(
            (f64::from(*g) - w).abs() <= 1e-5 * (1.0 + w.abs()),
            "{what}[{i}]: got {g}, loops {w}"
        );
    }
}

fn assert_bits(what: &str, a: &Array4<f32>, b: &Array4<f32>) {
    assert_eq!(a.shape(), b.shape(), "{what}: shape");
    for (i, (x, y)) in a.iter().zip(b.iter()).enumerate() {
        assert_eq!(x.to_bits(), y.to_bits(), "{what}[{i}]: {x} vs {y}");
    }
}

#[test]
fn explicit_padding_convolutions_match_loops_eager_and_pad_then_valid() -> Result<(), grafo::Error>
{
    for batch in [1, 3, 0] {
        let x = array4([batch, 7, 9, 3], 1);
        let k = array4([3, 3, 3, 4], 2);
        let y = explicit::torch_stride2(&x, &k)?;
        assert_bits(
            "stride 2: compiled vs eager",
            &y,
            &explicit::torch_stride2::eager(&x, &k)?,
        );
        assert_bits(
            "stride 2: explicit vs pad + VALID",
            &y,
            &explicit::by_hand(&x, &k)?,
        );
        assert_close(
            "stride 2",
            &y,
            &reference_conv(&x, &k, 2, [(1, 1), (1, 1)], [1, 1], None),
        );

        let x = array4([batch, 5, 6, 2], 3);
        let k = array4([2, 3, 2, 3], 4);
        let y = explicit::asymmetric(&x, &k)?;
        assert_bits(
            "asymmetric: compiled vs eager",
            &y,
            &explicit::asymmetric::eager(&x, &k)?,
        );
        assert_close(
            "asymmetric",
            &y,
            &reference_conv(&x, &k, 1, [(0, 2), (3, 1)], [2, 1], None),
        );

        let x = array4([batch, 6, 6, 3], 5);
        let k = array4([3, 3, 3, 2], 6);
        let y = explicit::depthwise(&x, &k)?;
        assert_bits(
            "depthwise: compiled vs eager",
            &y,
            &explicit::depthwise::eager(&x, &k)?,
        );
        assert_close(
            "depthwise",
            &y,
            &reference_conv(&x, &k, 2, [(1, 1), (1, 1)], [1, 1], Some(2)),
        );
    }
    Ok(())
}

#[test]
fn explicit_padding_max_pool_never_picks_the_padding() -> Result<(), grafo::Error> {
    // All values negative (a zero padding would win), a NaN, and a window of -inf.
    let mut x = array4([2, 7, 8, 2], 7).mapv(|v| -v.abs() - 0.5);
    x[[0, 3, 3, 0]] = f32::NAN;
    for (r, c) in [(0, 0), (0, 1), (1, 0), (1, 1)] {
        x[[1, r, c, 1]] = f32::NEG_INFINITY;
    }
    let y = explicit::max_pool(&x)?;
    assert_eq!(y.shape(), &[2, 4, 4, 2]);
    let e = explicit::max_pool::eager(&x)?;
    for (a, b) in y.iter().zip(e.iter()) {
        assert_eq!(a.to_bits(), b.to_bits(), "compiled vs eager");
    }
    for n in 0..2 {
        for i in 0..4 {
            for j in 0..4 {
                for ch in 0..2 {
                    // PyTorch's MaxPool2d(3, 2, padding=1): the window's real elements only.
                    let mut want = f32::NEG_INFINITY;
                    let mut nan = false;
                    for di in 0..3 {
                        for dj in 0..3 {
                            let (r, q) = ((i * 2 + di) as isize - 1, (j * 2 + dj) as isize - 1);
                            if (0..7).contains(&r) && (0..8).contains(&q) {
                                let v = x[[n, r as usize, q as usize, ch]];
                                nan |= v.is_nan();
                                want = want.max(v);
                            }
                        }
                    }
                    let got = y[[n, i, j, ch]];
                    if nan {
                        assert!(got.is_nan(), "NaN propagates at {n},{i},{j},{ch}");
                    } else {
                        assert_eq!(got, want, "at {n},{i},{j},{ch}");
                    }
                }
            }
        }
    }
    assert_eq!(
        y[[1, 0, 0, 1]],
        f32::NEG_INFINITY,
        "a window of -inf and padding"
    );

    let xi = Array4::from_shape_fn((1, 4, 4, 1), |(_, r, c, _)| -(r as i32 * 4 + c as i32) - 1);
    let yi = explicit::max_pool_i32(&xi)?;
    assert_eq!(yi, explicit::max_pool_i32::eager(&xi)?);
    let want =
        Array4::from_shape_vec((1, 3, 3, 1), vec![-1, -2, -4, -5, -6, -8, -13, -14, -16]).unwrap();
    assert_eq!(yi, want, "integer padding is the lowest i32, never chosen");
    Ok(())
}

#[test]
fn gradients_through_explicit_padding_match_finite_differences() -> Result<(), grafo::Error> {
    let x = ArrayD::from_shape_vec(IxDyn(&[2, 5, 6, 2]), values(120, 11)).unwrap();
    let k = ArrayD::from_shape_vec(IxDyn(&[3, 3, 2, 3]), values(54, 12)).unwrap();
    let x = x.into_dimensionality().unwrap();
    let k = k.into_dimensionality().unwrap();
    let (l, gx, gk) = gradient::loss(&x, &k)?;
    let (le, gxe, gke) = gradient::loss::eager(&x, &k)?;
    assert_eq!(l.into_scalar().to_bits(), le.into_scalar().to_bits());
    assert!(gx
        .iter()
        .zip(gxe.iter())
        .all(|(a, b)| a.to_bits() == b.to_bits()));
    assert!(gk
        .iter()
        .zip(gke.iter())
        .all(|(a, b)| a.to_bits() == b.to_bits()));
    let loss = |x: &grafo::ndarray::Array4<f64>, k: &grafo::ndarray::Array4<f64>| {
        gradient::loss(x, k).unwrap().0.into_scalar()
    };
    let h = 1e-6;
    for i in 0..x.len() {
        let (mut p, mut m) = (x.clone(), x.clone());
        p.as_slice_mut().unwrap()[i] += h;
        m.as_slice_mut().unwrap()[i] -= h;
        let fd = (loss(&p, &k) - loss(&m, &k)) / (2.0 * h);
        let g = gx.as_slice().unwrap()[i];
        assert!(
            (g - fd).abs() <= 1e-6 * (1.0 + fd.abs()),
            "x[{i}]: {g} vs {fd}"
        );
    }
    for i in 0..k.len() {
        let (mut p, mut m) = (k.clone(), k.clone());
        p.as_slice_mut().unwrap()[i] += h;
        m.as_slice_mut().unwrap()[i] -= h;
        let fd = (loss(&x, &p) - loss(&x, &m)) / (2.0 * h);
        let g = gk.as_slice().unwrap()[i];
        assert!(
            (g - fd).abs() <= 1e-6 * (1.0 + fd.abs()),
            "k[{i}]: {g} vs {fd}"
        );
    }
    Ok(())
}
