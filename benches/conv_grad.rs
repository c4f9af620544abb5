//! The gradient kernels of the convolutions against plain loops: the input and filter gradients of W7/W9's two convolutions (the MNIST CNN's, batch 64) and of a MobileNetV2 depthwise layer.
//!
//! Each group runs the same gradient two ways: `grafo` (`conv_backprop`: the GEMM and col2im
//! for the input gradient, im2col and the GEMM for the filter gradient, rayon over row blocks
//! and pixel groups; the depthwise pair as loops over the channels) and `naive` (the forward
//! convolution's taps walked once, single-threaded, each product added into place: the loop a
//! first implementation would write). Throughput is the forward convolution's multiply-adds.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use graph_runtime::conv::Padding;
use graph_runtime::conv_backprop::{conv2d_backprop_filter_into, conv2d_backprop_input_into};
use graph_runtime::conv_general::{out_and_pad, ConvGeneral};
use std::time::Duration;

/// Deterministic values in [-1, 1), cheap to make.
fn values(len: usize, seed: usize) -> Vec<f32> {
    (0..len)
        .map(|i| ((i.wrapping_mul(2_654_435_761).wrapping_add(seed) % 1000) as f32) / 500.0 - 1.0)
        .collect()
}

/// One convolution whose gradients are measured.
struct Case {
    name: &'static str,
    x: [usize; 4],
    k: [usize; 4],
    p: ConvGeneral,
}

impl Case {
    /// The output's shape.
    fn y(&self) -> [usize; 4] {
        let [n, h, w, c] = self.x;
        let [kh, kw, _, m] = self.k;
        let (oh, _) =
            out_and_pad(h, kh, self.p.dilation[0], self.p.stride, self.p.padding).unwrap();
        let (ow, _) =
            out_and_pad(w, kw, self.p.dilation[1], self.p.stride, self.p.padding).unwrap();
        [n, oh, ow, if self.p.depthwise { c * m } else { m }]
    }

    /// The forward convolution's multiply-adds.
    fn macs(&self) -> u64 {
        let [n, oh, ow, _] = self.y();
        let [kh, kw, c, m] = self.k;
        (n * oh * ow * kh * kw * c * m) as u64
    }

    /// Calls `tap(x index, k index, y index)` for every tap of the forward convolution.
    fn for_each_tap(&self, mut tap: impl FnMut(usize, usize, usize)) {
        let [n, h, w, c] = self.x;
        let [kh, kw, _, m] = self.k;
        let [_, oh, ow, f] = self.y();
        let (_, pt) =
            out_and_pad(h, kh, self.p.dilation[0], self.p.stride, self.p.padding).unwrap();
        let (_, pl) =
            out_and_pad(w, kw, self.p.dilation[1], self.p.stride, self.p.padding).unwrap();
        let s = self.p.stride;
        for b in 0..n {
            for i in 0..oh {
                for j in 0..ow {
                    let yo = ((b * oh + i) * ow + j) * f;
                    for di in 0..kh {
                        let r = (i * s + di * self.p.dilation[0]) as isize - pt as isize;
                        if r < 0 || r >= h as isize {
                            continue;
                        }
                        for dj in 0..kw {
                            let q = (j * s + dj * self.p.dilation[1]) as isize - pl as isize;
                            if q < 0 || q >= w as isize {
                                continue;
                            }
                            let xo = ((b * h + r as usize) * w + q as usize) * c;
                            for ch in 0..c {
                                for mm in 0..m {
                                    let ki = ((di * kw + dj) * c + ch) * m + mm;
                                    let o = if self.p.depthwise { ch * m + mm } else { mm };
                                    tap(xo + ch, ki, yo + o);
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

fn cases() -> Vec<Case> {
    let valid = |stride| ConvGeneral {
        stride,
        dilation: [1, 1],
        padding: Padding::Valid,
        depthwise: false,
    };
    vec![
        Case {
            name: "mnist_conv1",
            x: [64, 28, 28, 1],
            k: [3, 3, 1, 32],
            p: valid(1),
        },
        Case {
            name: "mnist_conv2",
            x: [64, 13, 13, 32],
            k: [3, 3, 32, 64],
            p: valid(1),
        },
        Case {
            name: "mobilenet_depthwise",
            x: [8, 56, 56, 144],
            k: [3, 3, 144, 1],
            p: ConvGeneral {
                stride: 2,
                dilation: [1, 1],
                padding: Padding::Same,
                depthwise: true,
            },
        },
    ]
}

fn input_gradient(c: &mut Criterion) {
    let mut group = c.benchmark_group("conv2d_backprop_input");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(3));
    for case in cases() {
        let (xs, ks, ys) = (case.x, case.k, case.y());
        let k = values(ks.iter().product(), 1);
        let dy = values(ys.iter().product(), 2);
        let mut dx = vec![0.0f32; xs.iter().product()];
        group.throughput(Throughput::Elements(case.macs()));
        group.bench_function(BenchmarkId::new("grafo", case.name), |b| {
            b.iter(|| conv2d_backprop_input_into(&dy, &k, xs, ks, case.p, &mut dx))
        });
        group.bench_function(BenchmarkId::new("naive", case.name), |b| {
            b.iter(|| {
                dx.fill(0.0);
                case.for_each_tap(|xi, ki, yi| dx[xi] += dy[yi] * k[ki]);
            })
        });
    }
    group.finish();
}

fn filter_gradient(c: &mut Criterion) {
    let mut group = c.benchmark_group("conv2d_backprop_filter");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(3));
    for case in cases() {
        let (xs, ks, ys) = (case.x, case.k, case.y());
        let x = values(xs.iter().product(), 3);
        let dy = values(ys.iter().product(), 4);
        let mut dk = vec![0.0f32; ks.iter().product()];
        group.throughput(Throughput::Elements(case.macs()));
        group.bench_function(BenchmarkId::new("grafo", case.name), |b| {
            b.iter(|| conv2d_backprop_filter_into(&x, &dy, xs, ks, case.p, &mut dk))
        });
        group.bench_function(BenchmarkId::new("naive", case.name), |b| {
            b.iter(|| {
                dk.fill(0.0);
                case.for_each_tap(|xi, ki, yi| dk[ki] += dy[yi] * x[xi]);
            })
        });
    }
    group.finish();
}

criterion_group!(benches, input_gradient, filter_gradient);
criterion_main!(benches);
