//! Checks the selection kernels (through the eager API) on random shapes and arguments:
//! `index` against ndarray's own slicing (an error exactly where ndarray would panic),
//! `strided_slice` against a naive NumPy-style walk, and `gather`, `tile`, `pad`, `concat`
//! against plain loops.

mod harness;

use graph_runtime::eager as E;
use graph_runtime::selection::AxisSlice;
use harness::*;
use ndarray::{ArrayD, IxDyn, Slice, SliceInfoElem};
use proptest::prelude::*;
use std::panic::{catch_unwind, AssertUnwindSafe};

fn arange(shape: &[usize]) -> ArrayD<i64> {
    let n: usize = shape.iter().product();
    ArrayD::from_shape_vec(IxDyn(shape), (0..n as i64).collect()).unwrap()
}

/// ndarray's `x.slice(spec)`, or `None` where ndarray panics (out of range, zero step).
fn ndarray_slice(x: &ArrayD<i64>, spec: &[AxisSlice]) -> Option<ArrayD<i64>> {
    let mut info: Vec<SliceInfoElem> = spec
        .iter()
        .map(|s| match *s {
            AxisSlice::Index(i) => SliceInfoElem::Index(i as isize),
            AxisSlice::Range { start, end, step } => SliceInfoElem::Slice {
                start: start as isize,
                end: end.map(|e| e as isize),
                step: step as isize,
            },
            AxisSlice::Strided { .. } => unreachable!("not ndarray's"),
        })
        .collect();
    while info.len() < x.ndim() {
        info.push(Slice::from(..).into());
    }
    quiet_panics();
    SILENT.with(|s| s.set(true));
    let r = catch_unwind(AssertUnwindSafe(|| {
        let info = ndarray::SliceInfo::<Vec<SliceInfoElem>, IxDyn, IxDyn>::try_from(info).unwrap();
        x.slice(info).to_owned()
    }));
    SILENT.with(|s| s.set(false));
    r.ok()
}

thread_local! {
    /// Set while ndarray is asked for a slice that may panic: its message is expected.
    static SILENT: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Installs, once, a panic hook that stays quiet for the expected panics of [`ndarray_slice`].
fn quiet_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !SILENT.with(|s| s.get()) {
                default(info);
            }
        }));
    });
}

/// NumPy's indices of `begin:end:stride` over an axis of `n` (TF's strided_slice).
fn numpy_indices(n: usize, begin: i64, end: i64, stride: i64) -> Vec<usize> {
    let n = n as i64;
    let norm = |v: i64| if v < 0 { v + n } else { v };
    let mut out = Vec::new();
    if stride > 0 {
        let (mut i, e) = (norm(begin).clamp(0, n), norm(end).clamp(0, n));
        while i < e {
            out.push(i as usize);
            i += stride;
        }
    } else {
        let (mut i, e) = (norm(begin).clamp(-1, n - 1), norm(end).clamp(-1, n - 1));
        while i > e {
            out.push(i as usize);
            i += stride;
        }
    }
    out
}

fn axis_slice() -> impl Strategy<Value = AxisSlice> {
    prop_oneof![
        (-7i64..7).prop_map(AxisSlice::Index),
        (-7i64..8, prop::option::of(-7i64..8), -4i64..5)
            .prop_map(|(start, end, step)| AxisSlice::Range { start, end, step }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn index_is_ndarrays_slicing(
        shape in prop::collection::vec(0usize..6, 1..4),
        spec in prop::collection::vec(axis_slice(), 0..4),
    ) {
        let x = arange(&shape);
        let spec: Vec<AxisSlice> = spec.into_iter().take(shape.len()).collect();
        let want = ndarray_slice(&x, &spec);
        let got = E::index(&x, &spec);
        match (got, want) {
            (Ok(g), Some(w)) => prop_assert_eq!(g, w),
            (Err(_), None) => {}
            (g, w) => prop_assert!(false, "grafo {:?} vs ndarray {:?} for {:?} on {:?}", g, w, spec, shape),
        }
    }

    #[test]
    fn strided_slice_is_numpys(
        shape in prop::collection::vec(0usize..6, 1..4),
        b in prop::collection::vec(-8i64..8, 3),
        e in prop::collection::vec(-8i64..8, 3),
        s in prop::collection::vec(prop_oneof![-3i64..0, 1i64..4], 3),
    ) {
        let x = arange(&shape);
        let r = shape.len();
        let got = E::strided_slice(&x, &b[..r], &e[..r], &s[..r]).unwrap();
        let idx: Vec<Vec<usize>> = (0..r).map(|a| numpy_indices(shape[a], b[a], e[a], s[a])).collect();
        let out_shape: Vec<usize> = idx.iter().map(|v| v.len()).collect();
        let want = ArrayD::from_shape_fn(IxDyn(&out_shape), |ix| {
            let src: Vec<usize> = (0..r).map(|a| idx[a][ix[a]]).collect();
            x[IxDyn(&src)]
        });
        prop_assert_eq!(got, want);
    }

    #[test]
    fn gather_tile_pad_concat_match_loops(
        shape in prop::collection::vec(1usize..5, 1..4),
        axis_seed in 0usize..3,
        ind in prop::collection::vec(0usize..100, 0..6),
        reps in prop::collection::vec(0usize..3, 3),
        pads in prop::collection::vec((0usize..3, 0usize..3), 3),
    ) {
        let r = shape.len();
        let axis = axis_seed % r;
        let x = arange(&shape);
        // gather
        let ind: Vec<i64> = ind.iter().map(|&i| (i % shape[axis]) as i64).collect();
        let iv = ArrayD::from_shape_vec(IxDyn(&[ind.len()]), ind.clone()).unwrap();
        let got = E::gather(&x, &iv, axis as isize).unwrap();
        let mut gs = shape.clone();
        gs[axis] = ind.len();
        let want = ArrayD::from_shape_fn(IxDyn(&gs), |ix| {
            let mut src: Vec<usize> = ix.slice().to_vec();
            src[axis] = ind[src[axis]] as usize;
            x[IxDyn(&src)]
        });
        prop_assert_eq!(got, want);
        // tile
        let m = &reps[..r];
        let got = E::tile(&x, m).unwrap();
        let ts: Vec<usize> = (0..r).map(|a| shape[a] * m[a]).collect();
        let want = ArrayD::from_shape_fn(IxDyn(&ts), |ix| {
            let src: Vec<usize> = (0..r).map(|a| ix[a] % shape[a]).collect();
            x[IxDyn(&src)]
        });
        prop_assert_eq!(got, want);
        // pad
        let p: Vec<[usize; 2]> = pads[..r].iter().map(|&(b, a)| [b, a]).collect();
        let got = E::pad(&x, &p, -1).unwrap();
        let ps: Vec<usize> = (0..r).map(|a| shape[a] + p[a][0] + p[a][1]).collect();
        let want = ArrayD::from_shape_fn(IxDyn(&ps), |ix| {
            let inside = (0..r).all(|a| ix[a] >= p[a][0] && ix[a] < p[a][0] + shape[a]);
            if inside {
                let src: Vec<usize> = (0..r).map(|a| ix[a] - p[a][0]).collect();
                x[IxDyn(&src)]
            } else {
                -1
            }
        });
        prop_assert_eq!(got, want);
        // concat with itself plus one along `axis`
        let y = x.mapv(|v| v + 1000);
        let got = E::concat(&[x.view(), y.view()], axis as isize).unwrap();
        let mut cs = shape.clone();
        cs[axis] *= 2;
        let want = ArrayD::from_shape_fn(IxDyn(&cs), |ix| {
            let mut src: Vec<usize> = ix.slice().to_vec();
            if src[axis] < shape[axis] {
                x[IxDyn(&src)]
            } else {
                src[axis] -= shape[axis];
                y[IxDyn(&src)]
            }
        });
        prop_assert_eq!(got, want);
    }
}

#[test]
fn fortran_order_inputs_are_read_logically() {
    let x = arange(&[4, 5]);
    let f = fortran(&x);
    let spec = [AxisSlice::Range {
        start: 1,
        end: None,
        step: -2,
    }];
    assert_eq!(E::index(&f, &spec).unwrap(), E::index(&x, &spec).unwrap());
    let iv = ArrayD::from_shape_vec(IxDyn(&[2]), vec![3i32, 0]).unwrap();
    assert_eq!(
        E::gather(&f, &iv, 1).unwrap(),
        E::gather(&x, &iv, 1).unwrap()
    );
}
