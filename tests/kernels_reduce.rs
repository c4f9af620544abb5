//! Checks the reductions, `norm` and `softmax`/`log_softmax` against naive f64 references.

mod harness;

use graph_runtime::eager as E;
use graph_runtime::Error;
use harness::*;
use ndarray::{ArrayD, IxDyn};
use proptest::prelude::*;

#[derive(Clone, Copy, Debug)]
enum Kind {
    Sum,
    Mean,
    Max,
    Min,
}

/// The naive reduction: loops over every element, f64 accumulation.
fn ref_reduce(x: &ArrayD<f64>, axes: &[usize], keep: bool, kind: Kind) -> ArrayD<f64> {
    let out_shape: Vec<usize> = (0..x.ndim())
        .map(|a| if axes.contains(&a) { 1 } else { x.shape()[a] })
        .collect();
    let count: usize = axes.iter().map(|&a| x.shape()[a]).product();
    let init = match kind {
        Kind::Sum | Kind::Mean => 0.0,
        Kind::Max => f64::NEG_INFINITY,
        Kind::Min => f64::INFINITY,
    };
    let mut out = ArrayD::from_elem(IxDyn(&out_shape), init);
    for (idx, &v) in x.indexed_iter() {
        let o: Vec<usize> = (0..x.ndim())
            .map(|a| if axes.contains(&a) { 0 } else { idx[a] })
            .collect();
        let acc = &mut out[IxDyn(&o)];
        *acc = match kind {
            Kind::Sum | Kind::Mean => *acc + v,
            Kind::Max => {
                if v.is_nan() || acc.is_nan() {
                    f64::NAN
                } else {
                    acc.max(v)
                }
            }
            Kind::Min => {
                if v.is_nan() || acc.is_nan() {
                    f64::NAN
                } else {
                    acc.min(v)
                }
            }
        };
    }
    if let Kind::Mean = kind {
        out.mapv_inplace(|v| v / count as f64);
    }
    if keep {
        out
    } else {
        let shape: Vec<usize> = (0..x.ndim())
            .filter(|a| !axes.contains(a))
            .map(|a| x.shape()[a])
            .collect();
        out.into_shape_with_order(IxDyn(&shape)).unwrap()
    }
}

fn run(
    x: &ArrayD<f64>,
    axes: Option<&[isize]>,
    keep: bool,
    kind: Kind,
) -> Result<ArrayD<f64>, Error> {
    match kind {
        Kind::Sum => E::reduce_sum(x, axes, keep),
        Kind::Mean => E::reduce_mean(x, axes, keep),
        Kind::Max => E::reduce_max(x, axes, keep),
        Kind::Min => E::reduce_min(x, axes, keep),
    }
}

fn check(x: &ArrayD<f64>, axes: &[usize], keep: bool, kind: Kind) {
    let ax: Vec<isize> = axes.iter().map(|&a| a as isize).collect();
    let got = run(x, Some(&ax), keep, kind).unwrap();
    let want = ref_reduce(x, axes, keep, kind);
    assert_eq!(
        got.shape(),
        want.shape(),
        "{kind:?} {:?} {axes:?}",
        x.shape()
    );
    for (g, w) in got.iter().zip(&want) {
        assert!(
            close(*g, *w, 1e-9),
            "{kind:?} {:?} axes {axes:?}: got {g}, want {w}",
            x.shape()
        );
    }
}

const KINDS: [Kind; 4] = [Kind::Sum, Kind::Mean, Kind::Max, Kind::Min];

#[test]
fn every_axis_subset_matches_reference() {
    for n in SIZES {
        for shape in [
            vec![n],
            vec![n, 3],
            vec![3, n],
            vec![2, n, 3],
            vec![3, 1, n],
        ] {
            let mut x = random_f64(&shape, -2.0, 2.0, n as u64);
            if x.len() > 10 {
                x.as_slice_mut().unwrap()[9] = f64::NAN;
            }
            let rank = shape.len();
            for mask in 0..(1u32 << rank) {
                let axes: Vec<usize> = (0..rank).filter(|a| mask >> a & 1 == 1).collect();
                for kind in KINDS {
                    check(&x, &axes, false, kind);
                    check(&x, &axes, true, kind);
                }
            }
            // Strided input: the transposed view.
            let t = x.t().to_owned();
            let got = E::reduce_sum(x.t(), Some(&[0]), false).unwrap();
            let want = ref_reduce(&t, &[0], false, Kind::Sum);
            for (g, w) in got.iter().zip(&want) {
                assert!(close(*g, *w, 1e-9));
            }
        }
    }
}

#[test]
fn none_means_all_axes_and_negative_axes_count_from_the_end() {
    let x = random_f64(&[4, 5, 6], 0.0, 1.0, 3);
    let all = E::reduce_sum(&x, None, false).unwrap();
    assert_eq!(all.ndim(), 0);
    assert!(close(all[IxDyn(&[])], x.sum(), 1e-12));
    let kept = E::reduce_max(&x, None, true).unwrap();
    assert_eq!(kept.shape(), &[1, 1, 1]);
    assert_eq!(
        E::reduce_mean(&x, Some(&[-1]), false).unwrap(),
        E::reduce_mean(&x, Some(&[2]), false).unwrap()
    );
}

#[test]
fn empty_reductions_give_identities() {
    let x = ArrayD::<f32>::zeros(IxDyn(&[0, 3]));
    assert_eq!(
        E::reduce_sum(&x, Some(&[0]), false)
            .unwrap()
            .into_raw_vec_and_offset()
            .0,
        vec![0.0; 3]
    );
    assert!(E::reduce_mean(&x, None, false)
        .unwrap()
        .iter()
        .all(|v| v.is_nan()));
    assert_eq!(
        E::reduce_max(&x, None, false).unwrap()[IxDyn(&[])],
        f32::NEG_INFINITY
    );
    assert_eq!(
        E::reduce_min(&x, None, false).unwrap()[IxDyn(&[])],
        f32::INFINITY
    );
    let i = ArrayD::<i32>::zeros(IxDyn(&[0]));
    assert_eq!(E::reduce_mean(&i, None, false).unwrap()[IxDyn(&[])], 0);
    assert_eq!(
        E::reduce_max(&i, None, false).unwrap()[IxDyn(&[])],
        i32::MIN
    );
}

#[test]
fn integer_mean_truncates_and_sums_wrap() {
    let x = ArrayD::from_shape_vec(IxDyn(&[2, 3]), vec![1i32, 2, 4, -1, -2, -4]).unwrap();
    assert_eq!(
        E::reduce_mean(&x, Some(&[1]), false)
            .unwrap()
            .into_raw_vec_and_offset()
            .0,
        vec![2, -2]
    );
    let big = ArrayD::from_elem(IxDyn(&[3]), i32::MAX);
    assert_eq!(
        E::reduce_sum(&big, None, false).unwrap()[IxDyn(&[])],
        i32::MAX.wrapping_mul(3)
    );
}

#[test]
fn f32_sum_of_4m_is_accurate() {
    let n = 4 << 20;
    let x = random_f64(&[n], 0.0, 1.0, 11).mapv(|v| v as f32);
    let want: f64 = x.iter().map(|&v| v as f64).sum();
    let got = E::reduce_sum(&x, None, false).unwrap()[IxDyn(&[])] as f64;
    assert!((got - want).abs() <= 1e-5 * want, "got {got}, want {want}");
    let mean = E::reduce_mean(&x, None, false).unwrap()[IxDyn(&[])] as f64;
    assert!((mean - want / n as f64).abs() <= 1e-5 * want / n as f64);
    let rows = E::reduce_sum(
        &x.clone()
            .into_shape_with_order(IxDyn(&[1024, 4096]))
            .unwrap(),
        Some(&[0]),
        false,
    )
    .unwrap();
    assert_eq!(rows.len(), 4096);
}

#[test]
fn max_and_min_propagate_nan() {
    let mut x = random_f64(&[4097], -1.0, 1.0, 5).mapv(|v| v as f32);
    x[[4000]] = f32::NAN;
    assert!(E::reduce_max(&x, None, false).unwrap()[IxDyn(&[])].is_nan());
    assert!(E::reduce_min(&x, None, false).unwrap()[IxDyn(&[])].is_nan());
}

#[test]
fn bad_axes_are_errors() {
    let x = ArrayD::<f64>::zeros(IxDyn(&[2, 3]));
    for r in [
        E::reduce_sum(&x, Some(&[2]), false),
        E::reduce_mean(&x, Some(&[-3]), false),
        E::reduce_max(&x, Some(&[0, -2]), false),
        E::softmax(&x, 2),
        E::log_softmax(&x, -3),
    ] {
        match r {
            Err(e @ Error::InvalidArgument { .. }) => {
                let m = e.to_string();
                assert!(m.contains("axis") && m.contains("rank 2"), "{m}");
            }
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn norm_is_l2_and_overflow_safe() {
    let x = random_f64(&[1023], -1.0, 1.0, 9);
    let want = x.iter().map(|v| v * v).sum::<f64>().sqrt();
    assert!(close(E::norm(&x).unwrap()[IxDyn(&[])], want, 1e-12));
    let big = ArrayD::from_elem(IxDyn(&[4]), 1e30f32);
    assert_eq!(E::norm(&big).unwrap()[IxDyn(&[])], 2e30);
    let z = ArrayD::<f32>::zeros(IxDyn(&[0]));
    assert_eq!(E::norm(&z).unwrap()[IxDyn(&[])], 0.0);
}

fn ref_softmax(x: &ArrayD<f64>, axis: usize, log: bool) -> ArrayD<f64> {
    let mut out = x.clone();
    for mut lane in out.lanes_mut(ndarray::Axis(axis)) {
        let m = lane.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let s: f64 = lane.iter().map(|v| (v - m).exp()).sum();
        lane.mapv_inplace(|v| {
            if log {
                v - m - s.ln()
            } else {
                (v - m).exp() / s
            }
        });
    }
    out
}

#[test]
fn softmax_along_every_axis() {
    for n in SIZES {
        for shape in [vec![n], vec![3, n], vec![n, 5], vec![2, n, 3]] {
            let x = random_f64(&shape, -30.0, 30.0, n as u64 + 1);
            for axis in 0..shape.len() {
                for log in [false, true] {
                    let got = if log {
                        E::log_softmax(&x, axis as isize)
                    } else {
                        E::softmax(&x, axis as isize)
                    }
                    .unwrap();
                    let want = ref_softmax(&x, axis, log);
                    for (g, w) in got.iter().zip(&want) {
                        assert!(
                            close(*g, *w, 1e-12),
                            "{shape:?} axis {axis} log {log}: {g} vs {w}"
                        );
                    }
                    let xf = x.mapv(|v| v as f32);
                    let got = if log {
                        E::log_softmax(&xf, axis as isize - shape.len() as isize)
                    } else {
                        E::softmax(&xf, axis as isize)
                    }
                    .unwrap();
                    for (g, w) in got.iter().zip(&want) {
                        assert!(
                            (*g as f64 - w).abs() <= 1e-5 * w.abs().max(1.0),
                            "f32 {shape:?} axis {axis}: {g} vs {w}"
                        );
                    }
                }
            }
        }
    }
    // Large logits do not overflow.
    let x = ArrayD::from_shape_vec(IxDyn(&[2]), vec![1000.0f32, 1000.0]).unwrap();
    assert_eq!(
        E::softmax(&x, 0).unwrap().into_raw_vec_and_offset().0,
        vec![0.5, 0.5]
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn reductions_match_reference(shape in prop::collection::vec(0usize..5, 1..4), mask in 0u32..8, keep in any::<bool>(), k in 0usize..4) {
        let x = random_f64(&shape, -5.0, 5.0, 17);
        let axes: Vec<usize> = (0..shape.len()).filter(|a| mask >> a & 1 == 1).collect();
        check(&x, &axes, keep, KINDS[k]);
    }
}
