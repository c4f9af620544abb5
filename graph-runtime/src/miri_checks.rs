//! Small-shape runs through the runtime's unsafe code for Miri: `.ci/run` runs `cargo +nightly miri test -p graph-runtime --lib miri_checks` under Tree Borrows.
//!
//! Each test is sized to take seconds under Miri (which interprets every element), and
//! under Miri the parallel cutoffs are scaled down (`gemm::plan`, `conv`), so that they
//! still reach the parallel paths: the packed GEMM's parallel row blocks, a pre-packed right
//! operand shared by batches, operands read transposed in place through the scratch pool,
//! conv2d's im2col blocks and its fused pooling bands, the scratch pools themselves, the
//! fallible buffers, the eager API's copies of non-contiguous views, and a `Session`'s
//! driver (a closure handed to a pool thread through a raw pointer). Under Miri the CPU
//! level is the portable one (`cpu::detect`), so the vector kernels are not interpreted;
//! valgrind covers them at the AVX2 level in `.ci/run`. Plain `cargo test` runs these
//! tests too: every result is checked against plain loops, exactly (the values are
//! multiples of 1/8 and the sums stay far inside f32's integers).

use crate::conv::{conv2d_into, Padding};
use crate::conv_pool::conv2d_pool_into;
use crate::exec::buffer;
use crate::linalg::gemm::{matmul_into, GemmElement, MatmulDims, ScratchPool};
use crate::linalg::matmul_nd::{matmul_nd_into, NdMatmul};
use crate::pool::{Pool2d, PoolKind};
use crate::session::{Session, SessionConfig};
use ndarray::{Array2, ShapeBuilder};

fn values<T: GemmElement>(len: usize, seed: usize) -> Vec<T> {
    (0..len)
        .map(|i| T::from_f64(((i * 7 + seed * 13) % 17) as f64 / 8.0 - 1.0))
        .collect()
}

fn pool(threads: usize) -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .expect("a small pool starts")
}

/// `a[m, k] * b[k, n]` by plain loops, element `(i, p)` of `a` at `a_at(i, p)`.
fn naive<T: GemmElement>(
    m: usize,
    k: usize,
    n: usize,
    a_at: impl Fn(usize, usize) -> T,
    b_at: impl Fn(usize, usize) -> T,
) -> Vec<T> {
    let mut out = vec![T::ZERO; m * n];
    for i in 0..m {
        for j in 0..n {
            let mut acc = T::ZERO;
            for p in 0..k {
                acc = acc.add(a_at(i, p).mul(b_at(p, j)));
            }
            out[i * n + j] = acc;
        }
    }
    out
}

fn gemm_cases<T: GemmElement>() {
    // (batch, m, k, n, b shared by the batches): parallel row blocks; batches sharing a
    // pre-packed `b`; a tiny product on the calling thread; a ragged one with short tiles.
    for (batch, m, k, n, shared) in [
        (1, 24, 6, 40, false),
        (3, 7, 5, 20, true),
        (1, 3, 3, 2, false),
        (2, 13, 5, 17, false),
    ] {
        let a = values::<T>(batch * m * k, 1);
        let b = values::<T>(if shared { k * n } else { batch * k * n }, 2);
        let mut out = vec![T::ZERO; batch * m * n];
        let dims = MatmulDims {
            batch,
            m,
            k,
            n,
            a_batch_stride: m * k,
            b_batch_stride: if shared { 0 } else { k * n },
        };
        matmul_into(&a, &b, &mut out, dims, |_, _, blk: &mut [T]| {
            for v in blk {
                *v = v.add(T::ONE);
            }
        });
        for bi in 0..batch {
            let (a0, b0) = (bi * m * k, if shared { 0 } else { bi * k * n });
            let want = naive(m, k, n, |i, p| a[a0 + i * k + p], |p, j| b[b0 + p * n + j]);
            let got = &out[bi * m * n..][..m * n];
            for (g, w) in got.iter().zip(&want) {
                assert!(*g == w.add(T::ONE), "{batch} x {m}x{k}x{n}, batch {bi}");
            }
        }
    }
}

#[test]
fn miri_gemm_blocks_and_prepacked_operands() {
    pool(2).install(|| {
        gemm_cases::<f32>();
        gemm_cases::<f64>();
    });
}

fn transposed_cases<T: GemmElement>() {
    // Stored `[k, m]` and `[n, k]`: rows of `a` gathered into the scratch pool's buffers,
    // `b` packed from its transposed layout; in parallel blocks, then on one thread.
    for (m, k, n) in [(30, 4, 8), (7, 5, 3)] {
        for [at, bt] in [[true, false], [false, true], [true, true]] {
            let a = values::<T>(m * k, 3);
            let b = values::<T>(k * n, 4);
            let mut out = vec![T::ZERO; m * n];
            let spec = NdMatmul {
                a_batch: &[],
                b_batch: &[],
                m,
                k,
                n,
                a_transposed: at,
                b_transposed: bt,
            };
            matmul_nd_into(&a, &b, &mut out, spec, |_, _, _: &mut [T]| {});
            let want = naive(
                m,
                k,
                n,
                |i, p| if at { a[p * m + i] } else { a[i * k + p] },
                |p, j| if bt { b[j * k + p] } else { b[p * n + j] },
            );
            assert!(out == want, "{m}x{k}x{n}, transposed {at} {bt}");
        }
    }
}

#[test]
fn miri_transposed_operands_through_the_scratch_pool() {
    pool(2).install(|| {
        transposed_cases::<f32>();
        transposed_cases::<f64>();
    });
}

/// conv2d by plain loops: `x` `[n, h, w, c]`, `k` `[kh, kw, c, o]`, stride 1, SAME (odd
/// kernels: `(kh - 1) / 2` rows of zeros before).
fn naive_conv(x: &[f32], xs: [usize; 4], k: &[f32], ks: [usize; 4]) -> Vec<f32> {
    let ([n, h, w, c], [kh, kw, _, o]) = (xs, ks);
    let (pt, pl) = ((kh - 1) / 2, (kw - 1) / 2);
    let mut out = vec![0.0f32; n * h * w * o];
    for b in 0..n {
        for i in 0..h {
            for j in 0..w {
                for q in 0..o {
                    let mut acc = 0.0f32;
                    for di in 0..kh {
                        for dj in 0..kw {
                            let (r, s) = ((i + di).wrapping_sub(pt), (j + dj).wrapping_sub(pl));
                            if r >= h || s >= w {
                                continue;
                            }
                            for ci in 0..c {
                                acc += x[((b * h + r) * w + s) * c + ci]
                                    * k[((di * kw + dj) * c + ci) * o + q];
                            }
                        }
                    }
                    out[((b * h + i) * w + j) * o + q] = acc;
                }
            }
        }
    }
    out
}

#[test]
fn miri_conv2d_blocks_and_fused_pooling() {
    pool(2).install(|| {
        // 50 pixels of 18 x 3 multiply-adds: parallel im2col blocks; then a smaller one.
        for (xs, ks) in [([2, 5, 5, 2], [3, 3, 2, 3]), ([1, 4, 3, 1], [3, 3, 1, 2])] {
            let x = values::<f32>(xs.iter().product(), 5);
            let k = values::<f32>(ks.iter().product(), 6);
            let mut out = vec![0.0f32; xs[0] * xs[1] * xs[2] * ks[3]];
            conv2d_into(&x, xs, &k, ks, 1, Padding::Same, &mut out, |_, _| {});
            let want = naive_conv(&x, xs, &k, ks);
            assert!(out == want, "conv2d {xs:?} {ks:?}");
            // Fused with a 2x2 max pooling (VALID, stride 2), against pooling `want`.
            let [n, h, w, _] = xs;
            let o = ks[3];
            let (ph, pw) = (h / 2, w / 2);
            let mut pooled = vec![0.0f32; n * ph * pw * o];
            let pool = Pool2d {
                kind: PoolKind::Max,
                ksize: [2, 2],
                strides: [2, 2],
                padding: Padding::Valid,
            };
            conv2d_pool_into(
                &x,
                xs,
                &k,
                ks,
                1,
                Padding::Same,
                pool,
                &mut pooled,
                |_, _| {},
            );
            for b in 0..n {
                for i in 0..ph {
                    for j in 0..pw {
                        for q in 0..o {
                            let at = |r: usize, s: usize| want[((b * h + r) * w + s) * o + q];
                            let m = at(2 * i, 2 * j)
                                .max(at(2 * i, 2 * j + 1))
                                .max(at(2 * i + 1, 2 * j))
                                .max(at(2 * i + 1, 2 * j + 1));
                            assert_eq!(pooled[((b * ph + i) * pw + j) * o + q], m);
                        }
                    }
                }
            }
        }
    });
}

#[test]
fn miri_scratch_pool_across_threads() {
    let scratch = ScratchPool::<f64>::new();
    pool(2).install(|| {
        scratch.reserve(2, 16);
        rayon::scope(|s| {
            for t in 0..4 {
                let scratch = &scratch;
                s.spawn(move |_| {
                    scratch.with(8 + t, |buf| {
                        buf.fill(t as f64);
                        assert!(buf.iter().all(|&v| v == t as f64));
                    })
                });
            }
        });
    });
    assert!(scratch.made() >= 2);
}

#[test]
fn miri_buffers_and_eager_copies_of_views() {
    let z: Vec<f32> = buffer::zeroed("t", 7).unwrap();
    assert!(z.iter().all(|v| v.to_bits() == 0));
    let b: Vec<bool> = buffer::zeroed("t", 3).unwrap();
    assert_eq!(b, [false; 3]);
    assert_eq!(buffer::copied("t", &[1i64, 2, 3]).unwrap(), [1, 2, 3]);
    // A column-major (transposed) view and a broadcast view, copied by the eager API.
    let a = Array2::from_shape_vec((3, 4).f(), values::<f32>(12, 7)).unwrap();
    let sm = crate::eager::softmax(&a, -1).unwrap();
    for i in 0..3 {
        let row = a.row(i);
        let max = row.iter().fold(f32::NEG_INFINITY, |m, &v| m.max(v));
        let sum: f32 = row.iter().map(|&v| (v - max).exp()).sum();
        for j in 0..4 {
            let want = (a[[i, j]] - max).exp() / sum;
            assert!((sm[[i, j]] - want).abs() <= 1e-6 * want);
        }
    }
    let one = Array2::from_elem((1, 1), 2.0f32);
    let wide = one.broadcast((3, 5)).unwrap();
    let p = crate::eager::matmul(a.t(), wide.view()).unwrap();
    assert_eq!(p.shape(), [4, 5]);
    for (idx, v) in p.indexed_iter() {
        let want: f32 = (0..3).map(|q| a[[q, idx[0]]] * 2.0).sum();
        assert_eq!(*v, want);
    }
}

#[test]
fn miri_session_driver_runs_closures_on_its_pool() {
    let mut s = Session::new(SessionConfig {
        intra_op_threads: 2,
        ..Default::default()
    })
    .unwrap();
    let a = values::<f32>(12 * 6, 1);
    let b = values::<f32>(6 * 20, 2);
    let want = naive(12, 6, 20, |i, p| a[i * 6 + p], |p, j| b[p * 20 + j]);
    for _ in 0..2 {
        let out = s.__run("miri", |_| {
            let mut out = vec![0.0f32; 12 * 20];
            matmul_into(
                &a,
                &b,
                &mut out,
                MatmulDims::single(12, 6, 20),
                |_, _, _: &mut [f32]| {},
            );
            out
        });
        assert!(out == want);
    }
    // A panic inside the closure comes back to the caller, and the session still runs.
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        s.__run("miri", |_| -> () { panic!("inside the driver") })
    }));
    assert!(r.is_err());
    assert_eq!(s.__run("miri", |_| 7), 7);
}
