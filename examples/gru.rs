//! A GRU over 16 time steps, each step's input taken by slicing (`x[s![.., t, ..]]`), with an
//! early stop: once the state moves less than `tol` in a step, the remaining steps are
//! skipped by a cond (only the taken arm runs).
//!
//! `cargo run --release --example gru`

use grafo::prelude::*;

#[graph]
pub mod gru {
    /// One GRU step (TF's `GRUCell` with `reset_after = false`).
    #[allow(clippy::too_many_arguments)]
    pub fn cell(
        x: Tensor<f32, B, I>,
        h: Tensor<f32, B, H>,
        wz: Tensor<f32, I, H>,
        uz: Tensor<f32, H, H>,
        bz: Tensor<f32, H>,
        wr: Tensor<f32, I, H>,
        ur: Tensor<f32, H, H>,
        br: Tensor<f32, H>,
        wn: Tensor<f32, I, H>,
        un: Tensor<f32, H, H>,
        bn: Tensor<f32, H>,
    ) -> Tensor<f32, B, H> {
        let z = sigmoid(matmul(x, wz) + matmul(h, uz) + bz);
        let r = sigmoid(matmul(x, wr) + matmul(h, ur) + br);
        let n = tanh(matmul(x, wn) + matmul(r * h, un) + bn);
        (1.0 - z) * n + z * h
    }

    /// 16 steps from `h0`; returns the last state and the number of steps run.
    #[allow(clippy::too_many_arguments)]
    pub fn run_steps(
        x: Tensor<f32, B, 16, I>,
        h0: Tensor<f32, B, H>,
        wz: Tensor<f32, I, H>,
        uz: Tensor<f32, H, H>,
        bz: Tensor<f32, H>,
        wr: Tensor<f32, I, H>,
        ur: Tensor<f32, H, H>,
        br: Tensor<f32, H>,
        wn: Tensor<f32, I, H>,
        un: Tensor<f32, H, H>,
        bn: Tensor<f32, H>,
        tol: Tensor<f32>,
    ) -> (Tensor<f32, B, H>, Tensor<f32>) {
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
}

/// Seeded uniform values in [-scale, scale).
fn uniform(n: usize, seed: u32, scale: f32) -> Vec<f32> {
    let mut s = seed.wrapping_mul(2654435761).wrapping_add(1);
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 17;
            s ^= s << 5;
            ((s >> 8) as f32 / (1u32 << 23) as f32 - 1.0) * scale
        })
        .collect()
}

fn main() -> Result<(), grafo::Error> {
    let (batch, input, hidden) = (4usize, 8usize, 32usize);
    let m = |r, c, seed| Array2::from_shape_vec((r, c), uniform(r * c, seed, 0.3)).unwrap();
    let v = |n, seed| Array1::from_vec(uniform(n, seed, 0.1));
    let (wz, uz, bz) = (m(input, hidden, 1), m(hidden, hidden, 2), v(hidden, 3));
    let (wr, ur, br) = (m(input, hidden, 4), m(hidden, hidden, 5), v(hidden, 6));
    let (wn, un, bn) = (m(input, hidden, 7), m(hidden, hidden, 8), v(hidden, 9));
    // A constant input drives the state to a fixed point, so a loose tolerance stops early.
    let x = Array3::<f32>::from_elem((batch, 16, input), 0.5);
    let h0 = Array2::<f32>::zeros((batch, hidden));
    for tol in [0.0f32, 1e-2] {
        let tol = arr0(tol);
        let (h, steps) =
            gru::run_steps(&x, &h0, &wz, &uz, &bz, &wr, &ur, &br, &wn, &un, &bn, &tol)?;
        let (h_e, steps_e) =
            gru::run_steps::eager(&x, &h0, &wz, &uz, &bz, &wr, &ur, &br, &wn, &un, &bn, &tol)?;
        assert_eq!(h, h_e, "compiled and eager agree bit for bit");
        assert_eq!(steps, steps_e);
        // The same steps by hand, one `cell` call each, stopping at the same step.
        let mut state = h0.clone();
        for t in 0..steps[()] as usize {
            let xt = x.slice(s![.., t, ..]).to_owned();
            state = gru::cell(&xt, &state, &wz, &uz, &bz, &wr, &ur, &br, &wn, &un, &bn)?;
        }
        assert_eq!(
            h, state,
            "the cond-stopped loop equals the steps run one by one"
        );
        println!(
            "gru, tol {}: {} of 16 steps run, |h| = {:.4}",
            tol[()],
            steps[()],
            h.iter().map(|v| v * v).sum::<f32>().sqrt()
        );
    }
    Ok(())
}
