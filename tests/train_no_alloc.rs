//! The training workloads allocate nothing in steady state in a `Session`: after two warm-up steps, a W8 step (W2's MLP, batch 256, Adam in place) and a W9 step (W7's CNN, batch 64, Adam in place) allocate only the loss they return, on any thread, and still agree with the eager path bit for bit.
//!
//! `.ci/run` runs this file in release at every CPU level the machine has, while two busy
//! loops load it, so rayon hands the kernels' blocks to the threads in other orders than on
//! an idle machine (a warm-up whose blocks all ran on one thread, a worker's first block in
//! steady state): a kernel that grows a thread's scratch on first use fails it there.

#[path = "common/counting_alloc.rs"]
mod counting_alloc;
#[path = "common/training.rs"]
mod training;

use counting_alloc::{allocations, serial, Counts};
use grafo::ndarray::{Array0, Array1, Array2, Array4};
use grafo::prelude::*;
use training::{cnn_train_step, mlp_train_step_in_place};

/// Steps counted after the warm-up.
const COUNTED_STEPS: usize = 4;

fn session() -> Session {
    Session::new(SessionConfig {
        intra_op_threads: 2,
        ..Default::default()
    })
    .unwrap()
}

/// Deterministic values in [-1, 1) (xorshift32).
fn uniform(n: usize, seed: u32) -> Vec<f32> {
    let mut s = seed.wrapping_mul(2654435761).wrapping_add(1);
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 17;
            s ^= s << 5;
            (s >> 8) as f32 / (1u32 << 23) as f32 - 1.0
        })
        .collect()
}

/// Checks the counts of one step after the warm-up: the returned loss (one scalar of 4 bytes)
/// and nothing else.
fn assert_loss_only(workload: &str, step: usize, counts: Counts) {
    assert_eq!(
        (counts.all, counts.all_bytes),
        (1, 4),
        "{workload}, step {step}: a steady-state step allocated more than its loss ({} of them >= {} bytes, {} bytes)",
        counts.big,
        counting_alloc::BIG,
        counts.big_bytes
    );
}

/// W8's parameters or one of Adam's states: w1 b1 w2 b2.
#[derive(Clone, PartialEq, Debug)]
struct Mlp(Array2<f32>, Array1<f32>, Array2<f32>, Array1<f32>);

impl Mlp {
    fn seeded() -> Mlp {
        Mlp(
            Array2::from_shape_vec((784, 512), uniform(784 * 512, 2)).unwrap() / 28.0,
            Array1::zeros(512),
            Array2::from_shape_vec((512, 10), uniform(5120, 3)).unwrap() / 22.6,
            Array1::zeros(10),
        )
    }
    fn zeros() -> Mlp {
        Mlp(
            Array2::zeros((784, 512)),
            Array1::zeros(512),
            Array2::zeros((512, 10)),
            Array1::zeros(10),
        )
    }
}

/// One W8 step in `session` (or eager, without one) on `(p, m, v)`.
fn mlp_step(
    session: Option<&mut Session>,
    x: &Array2<f32>,
    y: &Array1<i32>,
    (p, m, v): &mut (Mlp, Mlp, Mlp),
    t: f32,
) -> Array0<f32> {
    let r = match session {
        Some(s) => mlp_train_step_in_place::run(
            s, x, y, &mut p.0, &mut p.1, &mut p.2, &mut p.3, &mut m.0, &mut m.1, &mut m.2,
            &mut m.3, &mut v.0, &mut v.1, &mut v.2, &mut v.3, t,
        ),
        None => mlp_train_step_in_place::eager(
            x, y, &mut p.0, &mut p.1, &mut p.2, &mut p.3, &mut m.0, &mut m.1, &mut m.2, &mut m.3,
            &mut v.0, &mut v.1, &mut v.2, &mut v.3, t,
        ),
    };
    r.unwrap()
}

#[test]
fn w8_steady_state_steps_allocate_only_their_loss() {
    let _guard = serial();
    let b = 256;
    let x = Array2::from_shape_vec((b, 784), uniform(b * 784, 1)).unwrap();
    let y = Array1::from_iter((0..b).map(|i| (i * 7 % 10) as i32));
    let mut s = session();
    let mut state = (Mlp::seeded(), Mlp::zeros(), Mlp::zeros());
    let mut eager_state = state.clone();
    for step in 1..=2 + COUNTED_STEPS {
        let t = step as f32;
        let (counts, loss) = allocations(|| mlp_step(Some(&mut s), &x, &y, &mut state, t));
        let eager_loss = mlp_step(None, &x, &y, &mut eager_state, t);
        assert_eq!(
            loss, eager_loss,
            "W8, step {step}: the loss, session vs eager"
        );
        assert!(
            state == eager_state,
            "W8, step {step}: parameters and Adam's state, session vs eager"
        );
        if step > 2 {
            assert_loss_only("W8", step, counts);
        }
    }
}

/// W9's parameters or one of Adam's states: k1 c1 k2 c2 w c.
#[derive(Clone, PartialEq, Debug)]
struct Cnn {
    k1: Array4<f32>,
    c1: Array1<f32>,
    k2: Array4<f32>,
    c2: Array1<f32>,
    w: Array2<f32>,
    c: Array1<f32>,
}

impl Cnn {
    fn seeded() -> Cnn {
        Cnn {
            k1: Array4::from_shape_vec((3, 3, 1, 32), uniform(288, 21)).unwrap() * 0.3,
            c1: Array1::zeros(32),
            k2: Array4::from_shape_vec((3, 3, 32, 64), uniform(18432, 23)).unwrap() * 0.06,
            c2: Array1::zeros(64),
            w: Array2::from_shape_vec((1600, 10), uniform(16000, 25)).unwrap() * 0.05,
            c: Array1::zeros(10),
        }
    }
    fn zeros() -> Cnn {
        Cnn {
            k1: Array4::zeros((3, 3, 1, 32)),
            c1: Array1::zeros(32),
            k2: Array4::zeros((3, 3, 32, 64)),
            c2: Array1::zeros(64),
            w: Array2::zeros((1600, 10)),
            c: Array1::zeros(10),
        }
    }
}

/// One W9 step in `session` (or eager, without one) on `(p, m, v)`.
fn cnn_step(
    session: Option<&mut Session>,
    x: &Array4<f32>,
    y: &Array1<i32>,
    (p, m, v): &mut (Cnn, Cnn, Cnn),
    t: f32,
) -> Array0<f32> {
    let r = match session {
        Some(s) => cnn_train_step::run(
            s, x, y, &mut p.k1, &mut p.c1, &mut p.k2, &mut p.c2, &mut p.w, &mut p.c, &mut m.k1,
            &mut m.c1, &mut m.k2, &mut m.c2, &mut m.w, &mut m.c, &mut v.k1, &mut v.c1, &mut v.k2,
            &mut v.c2, &mut v.w, &mut v.c, t,
        ),
        None => cnn_train_step::eager(
            x, y, &mut p.k1, &mut p.c1, &mut p.k2, &mut p.c2, &mut p.w, &mut p.c, &mut m.k1,
            &mut m.c1, &mut m.k2, &mut m.c2, &mut m.w, &mut m.c, &mut v.k1, &mut v.c1, &mut v.k2,
            &mut v.c2, &mut v.w, &mut v.c, t,
        ),
    };
    r.unwrap()
}

#[test]
fn w9_steady_state_steps_allocate_only_their_loss() {
    let _guard = serial();
    let b = 64;
    let x = Array4::from_shape_vec((b, 28, 28, 1), uniform(b * 784, 1)).unwrap();
    let y = Array1::from_iter((0..b).map(|i| (i * 7 % 10) as i32));
    let mut s = session();
    let mut state = (Cnn::seeded(), Cnn::zeros(), Cnn::zeros());
    let mut eager_state = state.clone();
    for step in 1..=2 + COUNTED_STEPS {
        let t = step as f32;
        let (counts, loss) = allocations(|| cnn_step(Some(&mut s), &x, &y, &mut state, t));
        let eager_loss = cnn_step(None, &x, &y, &mut eager_state, t);
        assert_eq!(
            loss, eager_loss,
            "W9, step {step}: the loss, session vs eager"
        );
        assert!(
            state == eager_state,
            "W9, step {step}: parameters and Adam's state, session vs eager"
        );
        if step > 2 {
            assert_loss_only("W9", step, counts);
        }
    }
}
