//! Unit tests of the convolutions' gradients: the input and filter gradients against plain
//! loops in f64 (strides, padding, dilation, depthwise), bit-equality of the packed-once kernel.

use super::*;
use crate::kernels::padding::Padding;

/// Deterministic values in [-1, 1).
fn values(n: usize, seed: u64) -> Vec<f64> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
        })
        .collect()
}

/// The forward convolution's taps as plain loops: `(x index, k index, y index)` triples.
fn taps(x_shape: [usize; 4], k_shape: [usize; 4], p: ConvGeneral) -> Vec<(usize, usize, usize)> {
    let g = Geometry::new(x_shape, k_shape, p).unwrap();
    let mut out = Vec::new();
    for img in 0..g.n {
        for oh in 0..g.oh {
            for ow in 0..g.ow {
                for ki in 0..g.kh {
                    for kj in 0..g.kw {
                        let (Some(r), Some(cc)) = (g.in_row(oh, ki), g.in_col(ow, kj)) else {
                            continue;
                        };
                        for ch in 0..g.c {
                            for mi in 0..g.m {
                                let xi = ((img * g.h + r) * g.w + cc) * g.c + ch;
                                let ki_ = ((ki * g.kw + kj) * g.c + ch) * g.m + mi;
                                let o = if g.depthwise { ch * g.m + mi } else { mi };
                                let yi = ((img * g.oh + oh) * g.ow + ow) * g.f() + o;
                                out.push((xi, ki_, yi));
                            }
                        }
                    }
                }
            }
        }
    }
    out
}

fn check(x_shape: [usize; 4], k_shape: [usize; 4], p: ConvGeneral) {
    let g = Geometry::new(x_shape, k_shape, p).unwrap();
    let (x, k, dy) = (
        values(g.x_len(), 1),
        values(g.k_len(), 2),
        values(g.y_len(), 3),
    );
    let (mut dx_ref, mut dk_ref) = (vec![0.0; g.x_len()], vec![0.0; g.k_len()]);
    for (xi, ki, yi) in taps(x_shape, k_shape, p) {
        dx_ref[xi] += dy[yi] * k[ki];
        dk_ref[ki] += dy[yi] * x[xi];
    }
    let mut dx = vec![f64::NAN; g.x_len()];
    conv2d_backprop_input_into(&dy, &k, x_shape, k_shape, p, &mut dx);
    let mut dk = vec![f64::NAN; g.k_len()];
    conv2d_backprop_filter_into(&x, &dy, x_shape, k_shape, p, &mut dk);
    for (what, got, want) in [("dx", &dx, &dx_ref), ("dk", &dk, &dk_ref)] {
        for (i, (a, b)) in got.iter().zip(want.iter()).enumerate() {
            assert!(
                (a - b).abs() <= 1e-12 * (1.0 + b.abs()),
                "{what}[{i}] {x_shape:?} {k_shape:?} {p:?}: {a} != {b}"
            );
        }
    }
}

/// The input gradient's products on `kᵀ` packed once and on `k` read transposed by each
/// product give the same bits.
#[test]
fn prepacked_kernel_gives_the_same_bits() {
    fn both<T: GemmElement>(cast: fn(f64) -> T) {
        for (xs, ks, stride, padding) in [
            ([2, 13, 13, 32], [3, 3, 32, 64], 1, Padding::Valid),
            ([1, 9, 7, 5], [3, 2, 5, 19], 2, Padding::Same),
            ([1, 30, 4, 3], [1, 1, 3, 300], 1, Padding::Valid),
        ] {
            let p = ConvGeneral {
                stride,
                dilation: [1, 1],
                padding,
                depthwise: false,
            };
            let g = Geometry::new(xs, ks, p).unwrap();
            let k: Vec<T> = values(g.k_len(), 5).into_iter().map(cast).collect();
            let dy: Vec<T> = values(g.y_len(), 6).into_iter().map(cast).collect();
            let mut packed = vec![T::ZERO; g.x_len()];
            conv2d_backprop_input_into(&dy, &k, xs, ks, p, &mut packed);
            let row_len = g.w * g.c;
            let mut raw = vec![T::ZERO; g.x_len()];
            for (img, image) in raw.chunks_exact_mut(g.h * row_len).enumerate() {
                // Two blocks of rows, so windows straddle them.
                let (top, bottom) = image.split_at_mut(g.h / 2 * row_len);
                input_rows(&dy, &k, None, &g, img, 0, top);
                input_rows(&dy, &k, None, &g, img, g.h / 2, bottom);
            }
            for (i, (a, b)) in packed.iter().zip(&raw).enumerate() {
                assert!(
                    a.to_f64().to_bits() == b.to_f64().to_bits(),
                    "{xs:?} {ks:?} [{i}]: {a:?} != {b:?}"
                );
            }
        }
    }
    both::<f32>(|v| v as f32);
    both::<f64>(|v| v);
}

#[test]
fn gradients_match_the_taps() {
    for depthwise in [false, true] {
        for padding in [Padding::Same, Padding::Valid] {
            for stride in [1, 2, 3] {
                for dilation in [[1, 1], [2, 1], [2, 2]] {
                    let p = ConvGeneral {
                        stride,
                        dilation,
                        padding,
                        depthwise,
                    };
                    for (xs, ks) in [
                        ([2, 7, 6, 3], [3, 3, 3, 4]),
                        ([1, 5, 5, 2], [2, 3, 2, 1]),
                        ([1, 1, 1, 1], [1, 1, 1, 1]),
                        ([0, 5, 5, 2], [1, 1, 2, 3]),
                        ([3, 9, 8, 5], [3, 2, 5, 2]),
                        ([1, 40, 37, 6], [3, 3, 6, 7]),
                    ] {
                        if Geometry::new(xs, ks, p).is_some() {
                            check(xs, ks, p);
                        }
                    }
                }
            }
        }
    }
}
