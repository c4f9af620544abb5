//! Gradients of whole models with control flow, against central finite differences in f64:
//! the eager tutorial's dynamic convnet (the second convolution only when the L2 norm is below
//! 1000) with each arm of its `if` taken, and the GRU example through its 16 unrolled steps,
//! run to the end and stopped early by its cond. Compiled == eager bit for bit on every output.

use grafo::ndarray::{Array2, ArrayD, Ix0, Ix1, Ix2, Ix3, Ix4, IxDyn};
use grafo::prelude::*;

/// Deterministic values in [-1, 1) (a small LCG: the test needs no exact distribution).
fn values(n: usize, seed: u64) -> Vec<f64> {
    let mut s = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
        })
        .collect()
}

/// Seeded values in [-scale, scale) of the given shape.
fn array(shape: &[usize], seed: u64, scale: f64) -> ArrayD<f64> {
    let n = shape.iter().product();
    ArrayD::from_shape_vec(IxDyn(shape), values(n, seed)).unwrap() * scale
}

fn scalar(a: &ArrayD<f64>) -> f64 {
    *a.first().expect("a scalar")
}

fn bits_equal(a: &ArrayD<f64>, b: &ArrayD<f64>) -> bool {
    a.shape() == b.shape()
        && a.iter()
            .zip(b.iter())
            .all(|(x, y)| x.to_bits() == y.to_bits())
}

type V<'a, D> = grafo::ndarray::ArrayView<'a, f64, D>;
fn d<D: grafo::ndarray::Dimension>(a: &ArrayD<f64>) -> V<'_, D> {
    a.view().into_dimensionality::<D>().unwrap()
}

/// Runs a `(loss, grads..., extras...)` function on inputs, compiled (`false`) or eagerly (`true`).
type Runner<'a> = &'a dyn Fn(&[ArrayD<f64>], bool) -> Vec<ArrayD<f64>>;

/// Checks a model's gradients: every output of the compiled function equals the eager one bit
/// for bit, and for each input in `wrt` (the gradients follow the loss in that order),
/// `coords` seeded coordinates (all of them for a smaller input) against central differences
/// of the compiled loss, within `tol` absolute plus relative. Returns the compiled outputs.
fn check(
    what: &str,
    inputs: &[ArrayD<f64>],
    wrt: &[usize],
    run: Runner<'_>,
    coords: usize,
) -> Vec<ArrayD<f64>> {
    let (h, tol) = (1e-6, 1e-6);
    let got = run(inputs, false);
    let eager = run(inputs, true);
    assert_eq!(got.len(), eager.len());
    for (k, (g, e)) in got.iter().zip(&eager).enumerate() {
        assert!(bits_equal(g, e), "{what}, output {k}: compiled != eager");
    }
    let loss = |v: &[ArrayD<f64>]| scalar(&run(v, false)[0]);
    for (k, &p) in wrt.iter().enumerate() {
        let grad = &got[k + 1];
        assert_eq!(grad.shape(), inputs[p].shape(), "{what}, input {p}: shape");
        let n = inputs[p].len();
        let picks: Vec<usize> = if n <= coords {
            (0..n).collect()
        } else {
            values(coords, 1000 + p as u64)
                .iter()
                .map(|v| ((v + 1.0) / 2.0 * n as f64) as usize % n)
                .collect()
        };
        for i in picks {
            let mut plus = inputs.to_vec();
            let mut minus = inputs.to_vec();
            plus[p].as_slice_mut().unwrap()[i] += h;
            minus[p].as_slice_mut().unwrap()[i] -= h;
            let fd = (loss(&plus) - loss(&minus)) / (2.0 * h);
            let g = grad.as_slice().unwrap()[i];
            assert!(
                (g - fd).abs() <= tol * (1.0 + fd.abs()),
                "{what}, input {p}[{i}]: gradients gave {g}, finite differences {fd}"
            );
        }
    }
    got
}

// ----- the eager tutorial's dynamic convnet -----------------------------------------------------

#[graph]
mod tutorial {
    /// tests/seeds.rs's `red_dinamica` (the tutorial's code, SAME padding so that both arms
    /// have one shape) in f64, also returning the norm its `if` tests.
    pub fn red_dinamica(
        entrada: Tensor<f64, B, 16, 16, 3>,
        k0: Tensor<f64, 3, 3, 3, 16>,
        b0: Tensor<f64, 16>,
        k1: Tensor<f64, 3, 3, 16, 16>,
        b1: Tensor<f64, 16>,
    ) -> (Tensor<f64, B, 16, 16, 16>, Tensor<f64>) {
        let mut salida = bias_add(conv2d(entrada, k0, 1, SAME), b0);
        let norma_l2 = sqrt(reduce_sum(square(salida)));
        if norma_l2 < 1000.0 {
            salida = bias_add(conv2d(salida, k1, 1, SAME), b1);
        }
        (salida, norma_l2)
    }

    /// A loss of the network's output (a fixed projection and a square) and its gradients with
    /// respect to the input and the four parameters; the norm last.
    #[allow(clippy::type_complexity)]
    pub fn loss(
        entrada: Tensor<f64, B, 16, 16, 3>,
        k0: Tensor<f64, 3, 3, 3, 16>,
        b0: Tensor<f64, 16>,
        k1: Tensor<f64, 3, 3, 16, 16>,
        b1: Tensor<f64, 16>,
        r: Tensor<f64, B, 16, 16, 16>,
    ) -> (
        Tensor<f64>,
        Tensor<f64, B, 16, 16, 3>,
        Tensor<f64, 3, 3, 3, 16>,
        Tensor<f64, 16>,
        Tensor<f64, 3, 3, 16, 16>,
        Tensor<f64, 16>,
        Tensor<f64>,
    ) {
        let (salida, norma_l2) = red_dinamica(entrada, k0, b0, k1, b1);
        let l = reduce_sum(salida * r) + 0.5 * reduce_mean(square(salida));
        let (ge, gk0, gb0, gk1, gb1) = gradients(l, (entrada, k0, b0, k1, b1));
        (l, ge, gk0, gb0, gk1, gb1, norma_l2)
    }
}

fn run_tutorial(v: &[ArrayD<f64>], eager: bool) -> Vec<ArrayD<f64>> {
    let f = if eager {
        tutorial::loss::eager
    } else {
        tutorial::loss
    };
    let (l, ge, gk0, gb0, gk1, gb1, norm) = f(
        &d::<Ix4>(&v[0]),
        &d::<Ix4>(&v[1]),
        &d::<Ix1>(&v[2]),
        &d::<Ix4>(&v[3]),
        &d::<Ix1>(&v[4]),
        &d::<Ix4>(&v[5]),
    )
    .unwrap();
    vec![
        l.into_dyn(),
        ge.into_dyn(),
        gk0.into_dyn(),
        gb0.into_dyn(),
        gk1.into_dyn(),
        gb1.into_dyn(),
        norm.into_dyn(),
    ]
}

/// The tutorial's parameters (the scales of tests/seeds.rs) and an input of values in
/// [0, `scale`), with the loss's projection `r`.
fn tutorial_inputs(scale: f64) -> Vec<ArrayD<f64>> {
    vec![
        (array(&[2, 16, 16, 3], 5, 0.5) + 0.5) * scale,
        array(&[3, 3, 3, 16], 1, 0.3),
        array(&[16], 2, 0.1),
        array(&[3, 3, 16, 16], 3, 0.2),
        array(&[16], 4, 0.1),
        array(&[2, 16, 16, 16], 6, 1.0),
    ]
}

#[test]
fn tutorial_convnet_second_conv_taken() {
    let inputs = tutorial_inputs(1.0);
    let out = check(
        "tutorial convnet, taken",
        &inputs,
        &[0, 1, 2, 3, 4],
        &run_tutorial,
        12,
    );
    let norm = scalar(&out[6]);
    assert!(
        norm < 900.0,
        "the input leaves the norm ({norm}) below 1000"
    );
    // The second convolution ran: its parameters have a gradient.
    assert!(out[4].iter().any(|&g| g != 0.0) && out[5].iter().any(|&g| g != 0.0));
}

#[test]
fn tutorial_convnet_second_conv_skipped() {
    let inputs = tutorial_inputs(100.0);
    let out = check(
        "tutorial convnet, skipped",
        &inputs,
        &[0, 1, 2, 3, 4],
        &run_tutorial,
        12,
    );
    let norm = scalar(&out[6]);
    assert!(norm > 1100.0, "the input puts the norm ({norm}) above 1000");
    // The skipped arm's parameters get zeros (TF's unconnected gradients), not NaN.
    assert!(out[4].iter().chain(out[5].iter()).all(|&g| g == 0.0));
    assert!(out[2].iter().any(|&g| g != 0.0));
}

// ----- the GRU example ------------------------------------------------------------------------

#[graph]
mod gru {
    /// examples/gru.rs's `cell` in f64 (TF's `GRUCell` with `reset_after = false`).
    #[allow(clippy::too_many_arguments)]
    pub fn cell(
        x: Tensor<f64, B, I>,
        h: Tensor<f64, B, H>,
        wz: Tensor<f64, I, H>,
        uz: Tensor<f64, H, H>,
        bz: Tensor<f64, H>,
        wr: Tensor<f64, I, H>,
        ur: Tensor<f64, H, H>,
        br: Tensor<f64, H>,
        wn: Tensor<f64, I, H>,
        un: Tensor<f64, H, H>,
        bn: Tensor<f64, H>,
    ) -> Tensor<f64, B, H> {
        let z = sigmoid(matmul(x, wz) + matmul(h, uz) + bz);
        let r = sigmoid(matmul(x, wr) + matmul(h, ur) + br);
        let n = tanh(matmul(x, wn) + matmul(r * h, un) + bn);
        (1.0 - z) * n + z * h
    }

    /// examples/gru.rs's `run_steps` in f64: 16 steps, skipped by a cond once the state moves
    /// less than `tol`.
    #[allow(clippy::too_many_arguments)]
    pub fn run_steps(
        x: Tensor<f64, B, 16, I>,
        h0: Tensor<f64, B, H>,
        wz: Tensor<f64, I, H>,
        uz: Tensor<f64, H, H>,
        bz: Tensor<f64, H>,
        wr: Tensor<f64, I, H>,
        ur: Tensor<f64, H, H>,
        br: Tensor<f64, H>,
        wn: Tensor<f64, I, H>,
        un: Tensor<f64, H, H>,
        bn: Tensor<f64, H>,
        tol: Tensor<f64>,
    ) -> (Tensor<f64, B, H>, Tensor<f32>) {
        let mut h = h0;
        let mut running = constant(1.0);
        let mut steps = constant(0.0);
        for t in 0..16 {
            if running > 0.5 {
                let next = cell(x[s![.., t, ..]], h, wz, uz, bz, wr, ur, br, wn, un, bn);
                running = select(reduce_max(abs(next - h)) < tol, 0.0, 1.0);
                steps = steps + 1.0;
                h = next;
            }
        }
        (h, steps)
    }

    /// A loss of the last state and its gradients with respect to the input sequence, the
    /// initial state and the nine weights; the number of steps run (an f32
    /// count, as the example's) last.
    #[allow(clippy::too_many_arguments, clippy::type_complexity)]
    pub fn loss(
        x: Tensor<f64, B, 16, I>,
        h0: Tensor<f64, B, H>,
        wz: Tensor<f64, I, H>,
        uz: Tensor<f64, H, H>,
        bz: Tensor<f64, H>,
        wr: Tensor<f64, I, H>,
        ur: Tensor<f64, H, H>,
        br: Tensor<f64, H>,
        wn: Tensor<f64, I, H>,
        un: Tensor<f64, H, H>,
        bn: Tensor<f64, H>,
        tol: Tensor<f64>,
        target: Tensor<f64, B, H>,
    ) -> (
        Tensor<f64>,
        (Tensor<f64, B, 16, I>, Tensor<f64, B, H>),
        (Tensor<f64, I, H>, Tensor<f64, H, H>, Tensor<f64, H>),
        (Tensor<f64, I, H>, Tensor<f64, H, H>, Tensor<f64, H>),
        (Tensor<f64, I, H>, Tensor<f64, H, H>, Tensor<f64, H>),
        Tensor<f32>,
    ) {
        let (h, steps) = run_steps(x, h0, wz, uz, bz, wr, ur, br, wn, un, bn, tol);
        let l = reduce_sum(h * target) + reduce_mean(square(h));
        let (gx, gh0, gwz, guz, gbz, gwr, gur, gbr, gwn, gun, gbn) =
            gradients(l, (x, h0, wz, uz, bz, wr, ur, br, wn, un, bn));
        (
            l,
            (gx, gh0),
            (gwz, guz, gbz),
            (gwr, gur, gbr),
            (gwn, gun, gbn),
            steps,
        )
    }
}

fn run_gru(v: &[ArrayD<f64>], eager: bool) -> Vec<ArrayD<f64>> {
    let f = if eager { gru::loss::eager } else { gru::loss };
    let (l, (gx, gh0), (a, b, c), (e, f_, g), (h, i, j), steps) = f(
        &d::<Ix3>(&v[0]),
        &d::<Ix2>(&v[1]),
        &d::<Ix2>(&v[2]),
        &d::<Ix2>(&v[3]),
        &d::<Ix1>(&v[4]),
        &d::<Ix2>(&v[5]),
        &d::<Ix2>(&v[6]),
        &d::<Ix1>(&v[7]),
        &d::<Ix2>(&v[8]),
        &d::<Ix2>(&v[9]),
        &d::<Ix1>(&v[10]),
        &d::<Ix0>(&v[11]),
        &d::<Ix2>(&v[12]),
    )
    .unwrap();
    let mut out = vec![l.into_dyn(), gx.into_dyn(), gh0.into_dyn()];
    out.extend([a.into_dyn(), b.into_dyn(), c.into_dyn()]);
    out.extend([e.into_dyn(), f_.into_dyn(), g.into_dyn()]);
    out.extend([h.into_dyn(), i.into_dyn(), j.into_dyn()]);
    out.push(steps.mapv(f64::from).into_dyn());
    out
}

const BATCH: usize = 2;
const INPUT: usize = 3;
const HIDDEN: usize = 5;

/// The GRU's inputs: `x`, `h0`, the nine weights (the example's scales), `tol`, the target.
fn gru_inputs(x: ArrayD<f64>, tol: f64) -> Vec<ArrayD<f64>> {
    let mut v = vec![x, array(&[BATCH, HIDDEN], 40, 0.5)];
    for seed in [41u64, 44, 47] {
        v.push(array(&[INPUT, HIDDEN], seed, 0.3));
        v.push(array(&[HIDDEN, HIDDEN], seed + 1, 0.3));
        v.push(array(&[HIDDEN], seed + 2, 0.1));
    }
    v.push(ArrayD::from_elem(IxDyn(&[]), tol));
    v.push(array(&[BATCH, HIDDEN], 50, 1.0));
    v
}

/// The GRU step in plain loops (f64), for the per-step state changes that place `tol`.
fn ref_cell(x: &Array2<f64>, h: &Array2<f64>, w: &[ArrayD<f64>]) -> Array2<f64> {
    let sig = |v: f64| 1.0 / (1.0 + (-v).exp());
    let mut out = Array2::zeros((BATCH, HIDDEN));
    for b in 0..BATCH {
        let pre = |wx: &ArrayD<f64>, uh: &ArrayD<f64>, bias: &ArrayD<f64>, j: usize, hv: &[f64]| {
            let mut s = bias[[j]];
            for i in 0..INPUT {
                s += x[[b, i]] * wx[[i, j]];
            }
            for (k, hk) in hv.iter().enumerate() {
                s += hk * uh[[k, j]];
            }
            s
        };
        let hrow: Vec<f64> = (0..HIDDEN).map(|k| h[[b, k]]).collect();
        let r: Vec<f64> = (0..HIDDEN)
            .map(|j| sig(pre(&w[3], &w[4], &w[5], j, &hrow)))
            .collect();
        let rh: Vec<f64> = (0..HIDDEN).map(|k| r[k] * hrow[k]).collect();
        for j in 0..HIDDEN {
            let z = sig(pre(&w[0], &w[1], &w[2], j, &hrow));
            let n = pre(&w[6], &w[7], &w[8], j, &rh).tanh();
            out[[b, j]] = (1.0 - z) * n + z * hrow[j];
        }
    }
    out
}

/// The largest change of the state at each of the 16 steps, in plain loops.
fn ref_step_changes(v: &[ArrayD<f64>]) -> Vec<f64> {
    let mut h = v[1].clone().into_dimensionality::<Ix2>().unwrap();
    (0..16)
        .map(|t| {
            let x = v[0].slice(s![.., t, ..]).to_owned();
            let next = ref_cell(&x, &h, &v[2..11]);
            let change = (&next - &h).iter().fold(0.0f64, |m, d| m.max(d.abs()));
            h = next;
            change
        })
        .collect()
}

#[test]
fn gru_backpropagates_through_all_16_steps() {
    let inputs = gru_inputs(array(&[BATCH, 16, INPUT], 30, 1.0), 0.0);
    let wrt: Vec<usize> = (0..11).collect();
    let out = check("gru, 16 steps", &inputs, &wrt, &run_gru, 10);
    assert_eq!(scalar(&out[12]), 16.0, "every step ran");
    // The first step's input reaches the loss through all 16 steps.
    let first = out[1].slice(s![.., 0, ..]).to_owned();
    assert!(first.iter().any(|&g| g.abs() > 1e-9));
}

#[test]
fn gru_backpropagates_through_the_early_stop() {
    // A constant input drives the state to a fixed point (as in the example); `tol` is put
    // halfway (geometrically) between the changes at steps 5 and 6, so the loop stops after 6.
    let x = ArrayD::from_elem(IxDyn(&[BATCH, 16, INPUT]), 0.5);
    let changes = ref_step_changes(&gru_inputs(x.clone(), 0.0));
    assert!(
        changes[..6].windows(2).all(|w| w[1] < w[0]),
        "the state settles: {changes:?}"
    );
    let tol = (changes[4] * changes[5]).sqrt();
    let inputs = gru_inputs(x, tol);
    let wrt: Vec<usize> = (0..11).collect();
    let out = check("gru, early stop", &inputs, &wrt, &run_gru, 10);
    assert_eq!(scalar(&out[12]), 6.0, "the cond stopped the loop");
    // The skipped steps' inputs do not reach the loss; the run ones do.
    assert!(out[1].slice(s![.., 6.., ..]).iter().all(|&g| g == 0.0));
    assert!(out[1].slice(s![.., 5, ..]).iter().any(|&g| g != 0.0));
}

/// The GRU functions above are the example's own text at f64 (the test would otherwise check
/// a copy that has drifted from it).
#[test]
fn gru_functions_are_the_examples() {
    let example = include_str!("../examples/gru.rs");
    let here = include_str!("gradients_models.rs").replace("f64", "f32");
    for f in ["pub fn cell(", "pub fn run_steps("] {
        let body = |src: &str| {
            let start = src.find(f).unwrap_or_else(|| panic!("{f} not found"));
            let end = start + src[start..].find("\n    }\n").unwrap();
            src[start..end]
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
        };
        assert_eq!(body(example), body(&here), "{f}");
    }
}
