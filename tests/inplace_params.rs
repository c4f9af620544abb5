//! In-place parameters (`w: &mut Tensor<..>`): compiled, in a `Session` and eager, each call
//! updates the caller's arrays bit for bit alike and as a naive reference does; any layout;
//! an `Err` leaves every parameter untouched; a reassignment in a cond arm, through `*w`, in
//! a tuple, in an inlined callee; a Session train step allocates only its loss.

#[path = "common/counting_alloc.rs"]
mod counting_alloc;

use counting_alloc::serial;
use grafo::ndarray::{s, Array0, Array1, Array2};
use grafo::prelude::*;

fn session() -> Session {
    Session::new(SessionConfig {
        intra_op_threads: 2,
        ..Default::default()
    })
    .unwrap()
}

/// Deterministic values in [-0.5, 0.5).
fn ramp(n: usize, seed: usize) -> Vec<f32> {
    (0..n)
        .map(|i| ((i * 31 + seed * 17) % 97) as f32 / 97.0 - 0.5)
        .collect()
}

/// The four paths over one state: compiled, compiled in a session, eager, and a reference.
struct Paths<T> {
    compiled: T,
    session: T,
    eager: T,
    reference: T,
}

impl<T: Clone> Paths<T> {
    fn new(state: T) -> Self {
        Paths {
            compiled: state.clone(),
            session: state.clone(),
            eager: state.clone(),
            reference: state,
        }
    }
}

// ----- SGD -------------------------------------------------------------------------------

#[graph]
fn sgd(w: &mut Tensor<f32, N>, g: Tensor<f32, N>, lr: f32) -> Tensor<f32> {
    w = apply_gradient_descent(w, lr, g);
    reduce_sum(g)
}

#[test]
fn sgd_steps_update_the_parameter_in_place_on_every_path() {
    let _guard = serial();
    let mut s = session();
    for n in [0usize, 1, 7, 1023] {
        let mut p = Paths::new(Array1::from_vec(ramp(n, 1)));
        for step in 0..4 {
            let g = Array1::from_vec(ramp(n, step + 2));
            let lr = 0.1 * (step + 1) as f32;
            let a = sgd(&mut p.compiled, &g, lr).unwrap();
            let b = sgd::run(&mut s, &mut p.session, &g, lr).unwrap();
            let c = sgd::eager(&mut p.eager, &g, lr).unwrap();
            p.reference.zip_mut_with(&g, |w, g| *w -= lr * g);
            assert_eq!((&a, &b), (&c, &c), "n {n}, step {step}: the results");
            assert_eq!(p.compiled, p.eager, "n {n}, step {step}: compiled vs eager");
            assert_eq!(p.session, p.eager, "n {n}, step {step}: session vs eager");
            assert_eq!(p.compiled, p.reference, "n {n}, step {step}: vs reference");
        }
    }
}

// ----- Adam ------------------------------------------------------------------------------

#[graph]
fn adam(
    w: &mut Tensor<f32, N>,
    m: &mut Tensor<f32, N>,
    v: &mut Tensor<f32, N>,
    g: Tensor<f32, N>,
    t: f32,
) -> Tensor<f32> {
    (w, m, v) = apply_adam(
        w,
        m,
        v,
        pow(0.9, t),
        pow(0.999, t),
        0.01,
        0.9,
        0.999,
        1e-8,
        g,
    );
    reduce_max(abs(g))
}

type AdamState = (Array1<f32>, Array1<f32>, Array1<f32>);

/// TF's ApplyAdam, written out in f32 in the order the op table composes it.
fn adam_reference((w, m, v): &mut AdamState, g: &Array1<f32>, t: f32) {
    let (b1, b2, lr, eps) = (0.9f32, 0.999f32, 0.01f32, 1e-8f32);
    let lr_t = lr * (1.0 - b2.powf(t)).sqrt() / (1.0 - b1.powf(t));
    for i in 0..w.len() {
        m[i] += (g[i] - m[i]) * (1.0 - b1);
        v[i] += (g[i] * g[i] - v[i]) * (1.0 - b2);
        w[i] -= m[i] / (v[i].sqrt() + eps) * lr_t;
    }
}

fn close(a: &Array1<f32>, b: &Array1<f32>) -> bool {
    a.iter()
        .zip(b)
        .all(|(x, y)| (x - y).abs() <= 1e-6 * (1.0 + y.abs()))
}

#[test]
fn adam_steps_update_parameter_and_state_in_place_on_every_path() {
    let _guard = serial();
    let mut s = session();
    for n in [0usize, 1, 7, 1023] {
        let w0 = Array1::from_vec(ramp(n, 3));
        let zero = Array1::<f32>::zeros(n);
        let mut p: Paths<AdamState> = Paths::new((w0, zero.clone(), zero));
        for step in 1..=4 {
            let g = Array1::from_vec(ramp(n, step * 5));
            let t = step as f32;
            let (w, m, v) = &mut p.compiled;
            adam(w, m, v, &g, t).unwrap();
            let (w, m, v) = &mut p.session;
            adam::run(&mut s, w, m, v, &g, t).unwrap();
            let (w, m, v) = &mut p.eager;
            adam::eager(w, m, v, &g, t).unwrap();
            adam_reference(&mut p.reference, &g, t);
            assert_eq!(p.compiled, p.eager, "n {n}, step {step}: compiled vs eager");
            assert_eq!(p.session, p.eager, "n {n}, step {step}: session vs eager");
            let (rw, rm, rv) = &p.reference;
            let (w, m, v) = &p.compiled;
            assert!(
                close(w, rw) && close(m, rm) && close(v, rv),
                "n {n}, step {step}"
            );
        }
    }
}

/// Each in-place parameter the body reassigns is written by its own loop (no buffer of the
/// plan holds its new value), and `graph()` says which node is written where.
#[test]
fn adam_writes_its_loops_into_the_parameters_and_graph_shows_them() {
    let _guard = serial();
    let def = adam::graph();
    for name in ["w", "m", "v"] {
        let input = def.inputs.iter().find(|i| i.name == name).unwrap();
        let from = input.written_from.expect("a new value");
        assert!(
            def.buffers.iter().all(|b| !b.values.contains(&from)),
            "{name}'s new value is written into the parameter, not a buffer"
        );
    }
    let g = def.inputs.iter().find(|i| i.name == "g").unwrap();
    assert_eq!(g.written_from, None);
    let dot = def.to_dot();
    assert!(dot.contains("new value of w"), "{dot}");
}

// ----- layouts -----------------------------------------------------------------------------

#[graph]
fn scale_step(w: &mut Tensor<f32, 3, 5>, g: Tensor<f32, 3, 5>) -> Tensor<f32, 3, 5> {
    w = w * 0.5 - g;
    g * 2.0
}

#[graph]
fn read_after_step(w: &mut Tensor<f32, 3, 5>, g: Tensor<f32, 3, 5>) -> Tensor<f32> {
    w = w * 0.5 - g;
    reduce_sum(w * g)
}

#[test]
fn views_in_any_layout_are_updated_through_the_copy_path() {
    let _guard = serial();
    let mut s = session();
    let g = Array2::from_shape_vec((3, 5), ramp(15, 7)).unwrap();
    let start = Array2::from_shape_vec((3, 5), ramp(15, 8)).unwrap();
    let mut want = start.clone();
    scale_step(&mut want, &g).unwrap();
    let mut want_read = start.clone();
    let sum = read_after_step(&mut want_read, &g).unwrap();
    assert_eq!(want, want_read);
    for path in 0..3 {
        // Transposed: the caller holds [5, 3] and passes its transpose.
        let mut t = start.t().to_owned();
        // Sliced: every other column of a [3, 10] array.
        let mut wide = Array2::<f32>::from_elem((3, 10), 9.0);
        wide.slice_mut(s![.., ..;2]).assign(&start);
        let (mut t2, mut wide2) = (t.clone(), wide.clone());
        match path {
            0 => {
                scale_step(t.view_mut().reversed_axes(), &g).unwrap();
                scale_step(wide.slice_mut(s![.., ..;2]), &g).unwrap();
                assert_eq!(
                    read_after_step(t2.view_mut().reversed_axes(), &g).unwrap(),
                    sum
                );
                read_after_step(wide2.slice_mut(s![.., ..;2]), &g).unwrap();
            }
            1 => {
                scale_step::run(&mut s, t.view_mut().reversed_axes(), &g).unwrap();
                scale_step::run(&mut s, wide.slice_mut(s![.., ..;2]), &g).unwrap();
                read_after_step::run(&mut s, t2.view_mut().reversed_axes(), &g).unwrap();
                read_after_step::run(&mut s, wide2.slice_mut(s![.., ..;2]), &g).unwrap();
            }
            _ => {
                scale_step::eager(t.view_mut().reversed_axes(), &g).unwrap();
                scale_step::eager(wide.slice_mut(s![.., ..;2]), &g).unwrap();
                read_after_step::eager(t2.view_mut().reversed_axes(), &g).unwrap();
                read_after_step::eager(wide2.slice_mut(s![.., ..;2]), &g).unwrap();
            }
        }
        for (got, what) in [(&t, "transposed"), (&t2, "transposed, read after")] {
            assert_eq!(got.t(), want, "path {path}: {what}");
        }
        for (got, what) in [(&wide, "sliced"), (&wide2, "sliced, read after")] {
            assert_eq!(got.slice(s![.., ..;2]), want, "path {path}: {what}");
            assert!(
                got.slice(s![.., 1..;2]).iter().all(|&x| x == 9.0),
                "path {path}: {what}: the columns between are not touched"
            );
        }
    }
}

// ----- errors ------------------------------------------------------------------------------

#[graph]
fn classifier_step(
    x: Tensor<f32, B, 4>,
    labels: Tensor<i32, B>,
    w: &mut Tensor<f32, 4, 3>,
    lr: f32,
) -> Tensor<f32> {
    let loss = reduce_mean(sparse_softmax_cross_entropy_with_logits(
        labels,
        matmul(x, w),
    ));
    w = apply_gradient_descent(w, lr, gradients(loss, w));
    loss
}

/// The check comes after the update in the body; the update still runs after it.
#[graph]
fn step_then_check(w: &mut Tensor<f32, N>, g: Tensor<f32, N>, limit: Tensor<f32>) -> Tensor<f32> {
    w = w - g;
    let s = reduce_sum(g);
    assert_less(s, limit);
    s
}

/// The new value is read after the update (the copy path), then a check fails.
#[graph]
fn step_read_then_check(
    w: &mut Tensor<f32, N>,
    g: Tensor<f32, N>,
    limit: Tensor<f32>,
) -> Tensor<f32> {
    w = w - g;
    let s = reduce_sum(w);
    assert_less(s, limit);
    s
}

#[test]
fn an_err_leaves_every_parameter_untouched() {
    let _guard = serial();
    let mut s = session();
    let x = Array2::from_shape_vec((2, 4), ramp(8, 1)).unwrap();
    let w0 = Array2::from_shape_vec((4, 3), ramp(12, 2)).unwrap();
    let bad = Array1::from_vec(vec![0, 3]);
    let mut w = w0.clone();
    assert!(classifier_step(&x, &bad, &mut w, 0.1).is_err());
    assert!(classifier_step::run(&mut s, &x, &bad, &mut w, 0.1).is_err());
    assert!(classifier_step::eager(&x, &bad, &mut w, 0.1).is_err());
    assert_eq!(w, w0, "a label out of range");
    let short = Array1::from_vec(vec![0]);
    assert!(classifier_step(&x, &short, &mut w, 0.1).is_err());
    assert_eq!(w, w0, "a symbol bound to two sizes");
    // And with good labels the step does update it, alike on every path.
    let good = Array1::from_vec(vec![0, 2]);
    let mut p = Paths::new(w0.clone());
    let a = classifier_step(&x, &good, &mut p.compiled, 0.1).unwrap();
    let b = classifier_step::run(&mut s, &x, &good, &mut p.session, 0.1).unwrap();
    let c = classifier_step::eager(&x, &good, &mut p.eager, 0.1).unwrap();
    assert_eq!((a.clone(), b), (c.clone(), c));
    assert_ne!(p.compiled, w0);
    assert_eq!((&p.compiled, &p.session), (&p.eager, &p.eager));

    let g = Array1::from_vec(ramp(7, 4));
    let sum: f32 = g.sum();
    let w1 = Array1::from_vec(ramp(7, 5));
    let low = Array0::from_elem((), sum - 1.0);
    let mut w = w1.clone();
    assert!(step_then_check(&mut w, &g, &low).is_err());
    assert!(step_then_check::run(&mut s, &mut w, &g, &low).is_err());
    assert!(step_then_check::eager(&mut w, &g, &low).is_err());
    assert_eq!(w, w1, "a check after the update in the body");
    let low = Array0::from_elem((), (&w1 - &g).sum() - 1.0);
    assert!(step_read_then_check(&mut w, &g, &low).is_err());
    assert!(step_read_then_check::run(&mut s, &mut w, &g, &low).is_err());
    assert!(step_read_then_check::eager(&mut w, &g, &low).is_err());
    assert_eq!(w, w1, "a check of the new value");
    let high = Array0::from_elem((), 1e9f32);
    step_then_check(&mut w, &g, &high).unwrap();
    step_read_then_check(&mut w, &g, &high).unwrap();
    assert_eq!(w, &(&w1 - &g) - &g);
}

// ----- conds, syntax, results ----------------------------------------------------------------

/// Gradient clipping: the update is assigned in both arms, or only in one.
#[graph]
fn clipped(
    w: &mut Tensor<f32, N>,
    u: &mut Tensor<f32, N>,
    g: Tensor<f32, N>,
    max_norm: Tensor<f32>,
) -> Tensor<f32> {
    let n = norm(g);
    if n > max_norm {
        w = w - g * (max_norm / n);
    } else {
        w = w - g;
    }
    if n < max_norm {
        u = u - g;
    }
    n
}

#[test]
fn a_parameter_reassigned_in_a_cond_arm() {
    let _guard = serial();
    let mut s = session();
    let g = Array1::from_vec(ramp(7, 6));
    let norm = g.iter().map(|x| x * x).sum::<f32>().sqrt();
    for limit in [norm * 0.5, norm * 2.0] {
        let max = Array0::from_elem((), limit);
        let start = (Array1::from_vec(ramp(7, 7)), Array1::from_vec(ramp(7, 8)));
        let mut p = Paths::new(start.clone());
        clipped(&mut p.compiled.0, &mut p.compiled.1, &g, &max).unwrap();
        clipped::run(&mut s, &mut p.session.0, &mut p.session.1, &g, &max).unwrap();
        clipped::eager(&mut p.eager.0, &mut p.eager.1, &g, &max).unwrap();
        assert_eq!(p.compiled, p.eager);
        assert_eq!(p.session, p.eager);
        let (w, u) = &p.compiled;
        if limit < norm {
            assert_eq!(
                u, &start.1,
                "u is not reassigned when the norm is over the limit"
            );
            let scale = limit / norm;
            let want: Array1<f32> = &start.0 - &g.mapv(|x| x * scale);
            assert!(close(w, &want));
        } else {
            assert_eq!(w, &(&start.0 - &g));
            assert_eq!(u, &(&start.1 - &g));
        }
    }
}

/// `*w = ...` and `*w` are `w = ...` and `w`; a tuple assignment swaps two parameters; a
/// parameter never reassigned (or shadowed by `let`) is not written.
#[graph]
fn syntax(
    w: &mut Tensor<f32, N>,
    a: &mut Tensor<f32, N>,
    b: &mut Tensor<f32, N>,
    keep: &mut Tensor<f32, N>,
    shadowed: &mut Tensor<f32, N>,
) -> (Tensor<f32, N>, Tensor<f32, N>) {
    *w = *w * 2.0 + 1.0;
    (a, b) = (b, a);
    let shadowed = shadowed * 3.0;
    (keep + 0.0, shadowed)
}

#[test]
fn deref_tuple_assignment_and_shadowing() {
    let _guard = serial();
    let mut s = session();
    let start: Vec<Array1<f32>> = (0..5).map(|k| Array1::from_vec(ramp(7, k))).collect();
    for path in 0..3 {
        let mut st = start.clone();
        let [w, a, b, keep, sh] = &mut st[..] else {
            unreachable!()
        };
        let (k, s3) = match path {
            0 => syntax(w, a, b, keep, sh).unwrap(),
            1 => syntax::run(&mut s, w, a, b, keep, sh).unwrap(),
            _ => syntax::eager(w, a, b, keep, sh).unwrap(),
        };
        assert_eq!(st[0], start[0].mapv(|x| x * 2.0 + 1.0), "path {path}: *w");
        assert_eq!(
            (&st[1], &st[2]),
            (&start[2], &start[1]),
            "path {path}: swap"
        );
        assert_eq!(
            (&st[3], &k),
            (&start[3], &start[3]),
            "path {path}: untouched"
        );
        assert_eq!(
            st[4], start[4],
            "path {path}: a `let` shadows, nothing is written"
        );
        assert_eq!(s3, start[4].mapv(|x| x * 3.0));
    }
    let def = syntax::graph();
    let written: Vec<&str> = def
        .inputs
        .iter()
        .filter(|i| i.written_from.is_some())
        .map(|i| i.name.as_str())
        .collect();
    assert_eq!(written, ["w", "a", "b"]);
}

/// The new value is also returned; the old one too; a rank-0 counter and an integer one.
#[graph]
fn returns(
    w: &mut Tensor<f32, N>,
    t: &mut Tensor<f32>,
    n: &mut Tensor<i32, N>,
) -> (Tensor<f32, N>, Tensor<f32, N>, Tensor<f32>) {
    let old = w;
    t = t + 1.0;
    w = w * t;
    n = n + 1;
    (w, old, t)
}

#[test]
fn new_values_that_are_also_results() {
    let _guard = serial();
    let mut s = session();
    let w0 = Array1::from_vec(ramp(7, 9));
    for path in 0..3 {
        let (mut w, mut t, mut n) = (
            w0.clone(),
            Array0::from_elem((), 1.0f32),
            Array1::<i32>::zeros(7),
        );
        for step in 0..3 {
            let before = w.clone();
            let (new, old, tt) = match path {
                0 => returns(&mut w, &mut t, &mut n).unwrap(),
                1 => returns::run(&mut s, &mut w, &mut t, &mut n).unwrap(),
                _ => returns::eager(&mut w, &mut t, &mut n).unwrap(),
            };
            let k = (step + 2) as f32;
            assert_eq!(old, before, "path {path}");
            assert_eq!(new, before.mapv(|x| x * k), "path {path}");
            assert_eq!((&w, tt[()], t[()]), (&new, k, k), "path {path}");
            assert_eq!(n, Array1::from_elem(7, step + 1), "path {path}");
        }
    }
}

// ----- inlined callees ---------------------------------------------------------------------

#[graph]
mod optim {
    /// One SGD step; the caller's variable passed as `&mut w` takes the new value.
    pub fn sgd(w: &mut Tensor<f32, N>, g: Tensor<f32, N>, lr: f32) -> Tensor<f32> {
        w = w - lr * g;
        reduce_sum(g)
    }

    pub fn two_steps(w: &mut Tensor<f32, N>, g: Tensor<f32, N>) -> (Tensor<f32>, Tensor<f32, N>) {
        let a = sgd(&mut w, g, 0.5);
        let mut u = w * 1.0;
        let b = sgd(&mut u, g * 2.0, 0.25);
        w = u;
        (a + b, u)
    }
}

#[test]
fn an_inlined_callee_updates_the_callers_variable() {
    let _guard = serial();
    let g = Array1::from_vec(ramp(7, 10));
    let w0 = Array1::from_vec(ramp(7, 11));
    let want = &(&w0 - &g.mapv(|x| 0.5 * x)) - &g.mapv(|x| 0.25 * (x * 2.0));
    let mut p = Paths::new(w0.clone());
    let (a, u) = optim::two_steps(&mut p.compiled, &g).unwrap();
    optim::two_steps::eager(&mut p.eager, &g).unwrap();
    optim::two_steps::run(&mut session(), &mut p.session, &g).unwrap();
    assert_eq!(p.compiled, p.eager);
    assert_eq!(p.session, p.eager);
    assert_eq!((&p.compiled, &u), (&want, &want));
    assert!((a[()] - g.sum() * 3.0).abs() < 1e-5);
    optim::sgd(&mut p.reference, &g, 0.5).unwrap();
    assert_eq!(p.reference, &w0 - &g.mapv(|x| 0.5 * x));
}

// ----- shadowing in a block around an `if` -------------------------------------------------

#[graph]
fn shadow_in_block(x: Tensor<f32, N>, c: Tensor<bool>) -> Tensor<f32, N> {
    let y = x + 1.0;
    {
        let y = x * 10.0;
        let _unused = if c { y } else { y * 2.0 };
    }
    y
}

#[test]
fn an_if_inside_a_block_leaves_the_shadowed_outer_binding_alone() {
    let _guard = serial();
    let x = Array1::from_vec(ramp(5, 12));
    for c in [true, false] {
        let c = Array0::from_elem((), c);
        assert_eq!(shadow_in_block(&x, &c).unwrap(), x.mapv(|v| v + 1.0));
        assert_eq!(shadow_in_block::eager(&x, &c).unwrap(), x.mapv(|v| v + 1.0));
    }
}

// ----- a train step in a Session allocates only its loss -----------------------------------

#[graph]
#[allow(clippy::too_many_arguments)]
fn mlp_adam_step(
    x: Tensor<f32, B, 64>,
    labels: Tensor<i32, B>,
    w1: &mut Tensor<f32, 64, 32>,
    b1: &mut Tensor<f32, 32>,
    w2: &mut Tensor<f32, 32, 10>,
    b2: &mut Tensor<f32, 10>,
    mw1: &mut Tensor<f32, 64, 32>,
    mb1: &mut Tensor<f32, 32>,
    mw2: &mut Tensor<f32, 32, 10>,
    mb2: &mut Tensor<f32, 10>,
    vw1: &mut Tensor<f32, 64, 32>,
    vb1: &mut Tensor<f32, 32>,
    vw2: &mut Tensor<f32, 32, 10>,
    vb2: &mut Tensor<f32, 10>,
    t: f32,
) -> Tensor<f32> {
    let h = relu(matmul(x, w1) + b1);
    let logits = matmul(h, w2) + b2;
    let loss = reduce_mean(sparse_softmax_cross_entropy_with_logits(labels, logits));
    let (gw1, gb1, gw2, gb2) = gradients(loss, (w1, b1, w2, b2));
    let (b1t, b2t) = (pow(0.9, t), pow(0.999, t));
    (w1, mw1, vw1) = apply_adam(w1, mw1, vw1, b1t, b2t, 0.001, 0.9, 0.999, 1e-8, gw1);
    (b1, mb1, vb1) = apply_adam(b1, mb1, vb1, b1t, b2t, 0.001, 0.9, 0.999, 1e-8, gb1);
    (w2, mw2, vw2) = apply_adam(w2, mw2, vw2, b1t, b2t, 0.001, 0.9, 0.999, 1e-8, gw2);
    (b2, mb2, vb2) = apply_adam(b2, mb2, vb2, b1t, b2t, 0.001, 0.9, 0.999, 1e-8, gb2);
    loss
}

#[graph]
fn mlp_sgd_step(
    x: Tensor<f32, B, 64>,
    labels: Tensor<i32, B>,
    w1: &mut Tensor<f32, 64, 32>,
    b1: &mut Tensor<f32, 32>,
    w2: &mut Tensor<f32, 32, 10>,
    b2: &mut Tensor<f32, 10>,
    lr: f32,
) -> Tensor<f32> {
    let h = relu(matmul(x, w1) + b1);
    let logits = matmul(h, w2) + b2;
    let loss = reduce_mean(sparse_softmax_cross_entropy_with_logits(labels, logits));
    w1 = apply_gradient_descent(w1, lr, gradients(loss, w1));
    b1 = apply_gradient_descent(b1, lr, gradients(loss, b1));
    w2 = apply_gradient_descent(w2, lr, gradients(loss, w2));
    b2 = apply_gradient_descent(b2, lr, gradients(loss, b2));
    loss
}

fn array2(r: usize, c: usize, seed: usize) -> Array2<f32> {
    Array2::from_shape_vec((r, c), ramp(r * c, seed)).unwrap()
}

#[test]
fn a_session_train_step_allocates_only_its_loss() {
    let _guard = serial();
    let mut s = session();
    let x = array2(48, 64, 1);
    let labels = Array1::from_iter((0..48).map(|i: i32| i * 7 % 10));
    let params = (
        array2(64, 32, 2),
        Array1::from_vec(ramp(32, 3)),
        array2(32, 10, 4),
        Array1::from_vec(ramp(10, 5)),
    );

    // Adam: parameters and both moments, every one written by its own loop.
    let def = mlp_adam_step::graph();
    assert_eq!(
        def.inputs
            .iter()
            .filter(|i| i.written_from.is_some())
            .count(),
        12
    );
    for i in &def.inputs {
        if let Some(from) = i.written_from {
            assert!(
                def.buffers.iter().all(|b| !b.values.contains(&from)),
                "{}",
                i.name
            );
        }
    }
    let (mut w1, mut b1, mut w2, mut b2) = params.clone();
    let zeros = |p: &(Array2<f32>, Array1<f32>, Array2<f32>, Array1<f32>)| {
        (
            p.0.mapv(|_| 0.0),
            p.1.mapv(|_| 0.0),
            p.2.mapv(|_| 0.0),
            p.3.mapv(|_| 0.0),
        )
    };
    let (mut mw1, mut mb1, mut mw2, mut mb2) = zeros(&params);
    let (mut vw1, mut vb1, mut vw2, mut vb2) = zeros(&params);
    let mut e = (params.clone(), zeros(&params), zeros(&params));
    let mut losses = Vec::new();
    for step in 1..=6 {
        let t = step as f32;
        let (counts, loss) = counting_alloc::allocations(|| {
            mlp_adam_step::run(
                &mut s, &x, &labels, &mut w1, &mut b1, &mut w2, &mut b2, &mut mw1, &mut mb1,
                &mut mw2, &mut mb2, &mut vw1, &mut vb1, &mut vw2, &mut vb2, t,
            )
            .unwrap()
        });
        let ((ew1, eb1, ew2, eb2), (emw1, emb1, emw2, emb2), (evw1, evb1, evw2, evb2)) = &mut e;
        let eloss = mlp_adam_step::eager(
            &x, &labels, &mut *ew1, &mut *eb1, &mut *ew2, &mut *eb2, &mut *emw1, emb1, emw2, emb2,
            evw1, evb1, evw2, &mut *evb2, t,
        )
        .unwrap();
        assert_eq!(loss, eloss, "step {step}: the loss");
        assert_eq!(
            (&w1, &b1, &w2, &b2),
            (&*ew1, &*eb1, &*ew2, &*eb2),
            "step {step}"
        );
        assert_eq!((&mw1, &vb2), (&*emw1, &*evb2), "step {step}");
        if step > 2 {
            assert_eq!(
                (counts.all, counts.all_bytes),
                (1, 4),
                "step {step}: the loss only"
            );
        }
        losses.push(loss[()]);
    }
    assert!(losses[5] < losses[0], "the loss goes down: {losses:?}");

    // SGD through `gradients` of each parameter.
    let (mut w1, mut b1, mut w2, mut b2) = params.clone();
    let mut losses = Vec::new();
    for step in 0..6 {
        let (counts, loss) = counting_alloc::allocations(|| {
            mlp_sgd_step::run(&mut s, &x, &labels, &mut w1, &mut b1, &mut w2, &mut b2, 0.5).unwrap()
        });
        if step > 1 {
            assert_eq!(
                (counts.all, counts.all_bytes),
                (1, 4),
                "step {step}: the loss only"
            );
        }
        losses.push(loss[()]);
    }
    assert!(losses[5] < losses[0], "the loss goes down: {losses:?}");
    let def = mlp_sgd_step::graph();
    for i in &def.inputs {
        if let Some(from) = i.written_from {
            assert!(
                def.buffers.iter().all(|b| !b.values.contains(&from)),
                "{}",
                i.name
            );
        }
    }
}
