//! `depthwise_conv2d`'s vectorised forward kernel against plain loops doing the same arithmetic (bit for bit), on odd sizes, strides, dilations, SAME/VALID, channel multipliers and special values, and compiled vs eager vs session in fused graphs.
//!
//! The reference sums each output's taps in row-major order from +0, skipping padding
//! taps, with the multiply-add the kernel uses at this CPU level: fused (`mul_add`) at the
//! AVX2 and AVX-512 levels, a product then a sum at the baseline level. `.ci/run` runs this
//! file at every level (`GRAFO_CPU_LEVEL=baseline|avx2|avx512`).

use grafo::ndarray::{Array1, Array4, ArrayD};
use grafo::prelude::*;
use graph_runtime::exec::cpu::{level, Level};
use graph_runtime::kernels::padding::Padding;

/// A small seeded generator (SplitMix64).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn uniform(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
    }
}

/// A float the reference can compute in.
trait Float: Copy + PartialEq + std::fmt::Debug + graph_runtime::Numeric {
    fn from(v: f64) -> Self;
    fn is_nan(self) -> bool;
    fn step(fused: bool, x: Self, k: Self, acc: Self) -> Self;
}

impl Float for f32 {
    fn from(v: f64) -> f32 {
        v as f32
    }
    fn is_nan(self) -> bool {
        f32::is_nan(self)
    }
    fn step(fused: bool, x: f32, k: f32, acc: f32) -> f32 {
        if fused {
            x.mul_add(k, acc)
        } else {
            acc + x * k
        }
    }
}

impl Float for f64 {
    fn from(v: f64) -> f64 {
        v
    }
    fn is_nan(self) -> bool {
        f64::is_nan(self)
    }
    fn step(fused: bool, x: f64, k: f64, acc: f64) -> f64 {
        if fused {
            x.mul_add(k, acc)
        } else {
            acc + x * k
        }
    }
}

/// One convolution's parameters.
#[derive(Debug, Clone, Copy)]
struct Case {
    n: usize,
    h: usize,
    w: usize,
    c: usize,
    kh: usize,
    kw: usize,
    m: usize,
    stride: usize,
    dilation: [usize; 2],
    same: bool,
}

/// TF's output size and padding before along one axis, or `None` when VALID does not fit.
fn axis(len: usize, k: usize, d: usize, stride: usize, same: bool) -> Option<(usize, usize)> {
    let span = (k - 1) * d + 1;
    if same {
        let out = len.div_ceil(stride);
        let total = ((out.max(1) - 1) * stride + span).saturating_sub(len);
        Some((out, total / 2))
    } else {
        (span <= len).then(|| ((len - span) / stride + 1, 0))
    }
}

/// The plain loops: output channel `ch * m + mm` sums `x[.., ch] * k[di, dj, ch, mm]` over
/// the taps inside the input, in row-major order from +0.
fn reference<T: Float>(x: &Array4<T>, k: &Array4<T>, p: &Case) -> Option<Array4<T>> {
    let fused = level() >= Level::Avx2Fma;
    let (oh, pt) = axis(p.h, p.kh, p.dilation[0], p.stride, p.same)?;
    let (ow, pl) = axis(p.w, p.kw, p.dilation[1], p.stride, p.same)?;
    Some(Array4::from_shape_fn(
        (p.n, oh, ow, p.c * p.m),
        |(b, i, j, f)| {
            let (ch, mm) = (f / p.m, f % p.m);
            let mut acc = T::ZERO;
            for di in 0..p.kh {
                let y = (i * p.stride + di * p.dilation[0]) as isize - pt as isize;
                if y < 0 || y >= p.h as isize {
                    continue;
                }
                for dj in 0..p.kw {
                    let xx = (j * p.stride + dj * p.dilation[1]) as isize - pl as isize;
                    if xx < 0 || xx >= p.w as isize {
                        continue;
                    }
                    acc = T::step(
                        fused,
                        x[[b, y as usize, xx as usize, ch]],
                        k[[di, dj, ch, mm]],
                        acc,
                    );
                }
            }
            acc
        },
    ))
}

/// Seeded inputs, with NaN, ±inf and -0 sprinkled in when `special`.
fn inputs<T: Float>(p: &Case, seed: u64, special: bool) -> (Array4<T>, Array4<T>) {
    let mut rng = Rng(seed);
    let value = |rng: &mut Rng| {
        let r = rng.next() % 97;
        match (special, r) {
            (true, 0) => f64::NAN,
            (true, 1) => f64::INFINITY,
            (true, 2) => f64::NEG_INFINITY,
            (true, 3) => -0.0,
            _ => rng.uniform(),
        }
    };
    let x = Array4::from_shape_simple_fn((p.n, p.h, p.w, p.c), || T::from(value(&mut rng)));
    let k = Array4::from_shape_simple_fn((p.kh, p.kw, p.c, p.m), || T::from(value(&mut rng)));
    (x, k)
}

/// Bit equality, any NaN equal to any NaN.
fn assert_same<T: Float>(what: &str, got: &ArrayD<T>, want: &Array4<T>) {
    assert_eq!(got.shape(), want.shape(), "{what}: shape");
    for (i, (&g, &w)) in got.iter().zip(want.iter()).enumerate() {
        let same = if w.is_nan() {
            g.is_nan()
        } else {
            g == w && (g.to_f64().is_sign_negative() == w.to_f64().is_sign_negative())
        };
        assert!(same, "{what}: element {i}: got {g:?}, want {w:?}");
    }
}

fn check<T: Float>(p: Case, seed: u64, special: bool) {
    let (x, k) = inputs::<T>(&p, seed, special);
    let padding = if p.same {
        Padding::Same
    } else {
        Padding::Valid
    };
    let got = grafo::eager::depthwise_conv2d(&x, &k, p.stride, padding, p.dilation);
    let what = format!("{p:?} special={special} {}", std::any::type_name::<T>());
    match reference(&x, &k, &p) {
        Some(want) => assert_same(&what, &got.unwrap(), &want),
        None => assert!(
            got.is_err(),
            "{what}: a VALID window larger than the input is an error"
        ),
    }
}

/// Geometries: every size 1 and 7, channel counts around the kernel's blocks (1, 7, 8,
/// 17, 33, 48 for f32's 32 + 16, 1023), multipliers 1-3, strides 1-3, dilations.
fn cases() -> Vec<Case> {
    let mut out = Vec::new();
    let base = Case {
        n: 2,
        h: 7,
        w: 7,
        c: 7,
        kh: 3,
        kw: 3,
        m: 1,
        stride: 1,
        dilation: [1, 1],
        same: true,
    };
    for same in [true, false] {
        for c in [1, 7, 8, 17, 33, 48, 61] {
            for m in [1, 2, 3] {
                for stride in [1, 2, 3] {
                    for dilation in [[1, 1], [2, 1], [2, 3]] {
                        out.push(Case {
                            c,
                            m,
                            stride,
                            dilation,
                            same,
                            ..base
                        });
                    }
                }
            }
        }
        for (h, w, kh, kw) in [
            (1, 1, 1, 1),
            (1, 1, 3, 3),
            (1, 9, 1, 3),
            (9, 5, 2, 5),
            (11, 13, 5, 3),
        ] {
            for stride in [1, 2] {
                out.push(Case {
                    h,
                    w,
                    kh,
                    kw,
                    c: 33,
                    stride,
                    same,
                    ..base
                });
            }
        }
        // Many channels on few pixels, and an empty batch.
        out.push(Case {
            n: 1,
            h: 3,
            w: 5,
            c: 1023,
            same,
            ..base
        });
        out.push(Case { n: 0, same, ..base });
    }
    out
}

#[test]
fn depthwise_matches_plain_loops_f32() {
    for (s, p) in cases().into_iter().enumerate() {
        check::<f32>(p, s as u64, false);
    }
}

#[test]
fn depthwise_matches_plain_loops_f64() {
    for (s, p) in cases().into_iter().enumerate() {
        check::<f64>(p, 1000 + s as u64, false);
    }
}

#[test]
fn depthwise_propagates_nan_inf_and_signed_zeros_as_the_loops_do() {
    for (s, p) in cases().into_iter().enumerate() {
        check::<f32>(p, 2000 + s as u64, true);
        check::<f64>(p, 3000 + s as u64, true);
    }
    // An infinite weight on a padding tap is skipped, not multiplied by a zero (no NaN).
    let p = Case {
        n: 1,
        h: 1,
        w: 1,
        c: 3,
        kh: 3,
        kw: 3,
        m: 1,
        stride: 1,
        dilation: [1, 1],
        same: true,
    };
    let x = Array4::from_elem((1, 1, 1, 3), 2.0f32);
    let mut k = Array4::from_elem((3, 3, 3, 1), f32::INFINITY);
    k[[1, 1, 0, 0]] = 0.5;
    k[[1, 1, 1, 0]] = -0.0;
    k[[1, 1, 2, 0]] = 1.0;
    let got = grafo::eager::depthwise_conv2d(&x, &k, 1, SAME, [1, 1]).unwrap();
    assert_eq!(got.as_slice().unwrap(), &[1.0, 0.0, 2.0]);
    assert!(got[[0, 0, 0, 1]].is_sign_positive(), "+0 + (2 * -0) is +0");
    assert_same("inf on padding", &got, &reference(&x, &k, &p).unwrap());
}

/// Big enough for the parallel chunks (pixels split over threads mid-row): MobileNetV2's
/// depthwise layer, and its stride-2 twin.
#[test]
fn depthwise_parallel_chunks_match_plain_loops() {
    for stride in [1, 2] {
        let p = Case {
            n: 2,
            h: 56,
            w: 56,
            c: 144,
            kh: 3,
            kw: 3,
            m: 1,
            stride,
            dilation: [1, 1],
            same: true,
        };
        check::<f32>(p, 77 + stride as u64, false);
    }
}

/// Depthwise convolutions with fused epilogues (bias, relu6, batch normalisation) in one
/// graph, symbolic batch.
#[graph]
fn depthwise_variants(
    x: Tensor<f32, N, 9, 11, 7>,
    k1: Tensor<f32, 3, 3, 7, 1>,
    k3: Tensor<f32, 2, 5, 7, 3>,
    bias: Tensor<f32, 21>,
    mean: Tensor<f32, 7>,
    var: Tensor<f32, 7>,
) -> (
    Tensor<f32, N, 9, 11, 7>,
    Tensor<f32, N, 5, 6, 21>,
    Tensor<f32, N, 3, 3, 21>,
    Tensor<f32, N, 5, 6, 7>,
) {
    (
        relu6(batch_normalization(
            depthwise_conv2d(x, k1, 1, SAME),
            mean,
            var,
            mean,
            var,
            1e-3,
        )),
        relu6(depthwise_conv2d(x, k3, 2, SAME, [2, 1]) + bias),
        depthwise_conv2d(x, k3, 3, VALID),
        depthwise_conv2d(x, k1, 2, SAME, 2),
    )
}

#[test]
fn compiled_eager_and_session_agree_with_the_loops() {
    for n in [1usize, 3, 0] {
        let case = |h, w, kh, kw, m, stride, dilation, same| Case {
            n,
            h,
            w,
            c: 7,
            kh,
            kw,
            m,
            stride,
            dilation,
            same,
        };
        let c1 = case(9, 11, 3, 3, 1, 1, [1, 1], true);
        let (x, k1) = inputs::<f32>(&c1, 10 + n as u64, false);
        let c3 = case(9, 11, 2, 5, 3, 2, [2, 1], true);
        let (_, k3) = inputs::<f32>(&c3, 20, false);
        let bias = Array1::from_shape_fn(21, |i| i as f32 * 0.05 - 0.5);
        let mean = Array1::from_shape_fn(7, |i| i as f32 * 0.1 - 0.3);
        let var = Array1::from_shape_fn(7, |i| 0.5 + i as f32 * 0.1);
        let compiled = depthwise_variants(&x, &k1, &k3, &bias, &mean, &var).unwrap();
        let eager = depthwise_variants::eager(&x, &k1, &k3, &bias, &mean, &var).unwrap();
        let mut session = Session::default();
        let run = depthwise_variants::run(&mut session, &x, &k1, &k3, &bias, &mean, &var).unwrap();
        assert_eq!(compiled, eager, "n={n}: compiled == eager");
        assert_eq!(compiled, run, "n={n}: session == eager");
        // The plain convolutions, before their epilogues.
        let plain = reference(&x, &k3, &case(9, 11, 2, 5, 3, 3, [1, 1], false)).unwrap();
        assert_same("VALID stride 3", &compiled.2.clone().into_dyn(), &plain);
        let dilated = reference(&x, &k1, &case(9, 11, 3, 3, 1, 2, [2, 2], true)).unwrap();
        assert_same(
            "SAME stride 2 dilation 2",
            &compiled.3.clone().into_dyn(),
            &dilated,
        );
        let biased = reference(&x, &k3, &c3).unwrap();
        let want = Array4::from_shape_fn(biased.raw_dim(), |(b, i, j, f)| {
            (biased[[b, i, j, f]] + bias[f]).clamp(0.0, 6.0)
        });
        let got = &compiled.1;
        for (g, w) in got.iter().zip(want.iter()) {
            assert!(
                (g - w).abs() <= 1e-6 * (1.0 + w.abs()),
                "relu6(conv + bias): {g} vs {w}"
            );
        }
    }
}
