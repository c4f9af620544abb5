//! Unrolled loops whose eager steps are emitted once and called per step (`emit/eager/outline.rs`):
//! compiled vs eager bit for bit vs a plain-loop reference, on odd sizes (batch 1, 7 and 0),
//! with NaN and infinities in the inputs, through a cond per step and a stack of blocks.

use grafo::ndarray::{Array1, Array2, Array3};
use grafo::prelude::*;

#[graph]
mod steps {
    /// Twelve steps of a gated update, each one in a cond that stops early once the state
    /// moves less than `tol` (the GRU example's shape): every step's eager code is one call.
    pub fn gated(
        x: Tensor<f32, B, 12, 3>,
        h0: Tensor<f32, B, 3>,
        w: Tensor<f32, 3, 3>,
        u: Tensor<f32, 3, 3>,
        b: Tensor<f32, 3>,
        tol: Tensor<f32>,
    ) -> (Tensor<f32, B, 3>, Tensor<f32>) {
        let mut h = h0;
        let mut running = constant(1.0);
        let mut taken = constant(0.0);
        for t in 0..12 {
            if running > 0.5 {
                let z = sigmoid(matmul(x[s![.., t, ..]], w) + matmul(h, u) + b);
                let n = tanh(matmul(h * z, u) - b);
                let next = (1.0 - z) * n + z * h;
                running = select(reduce_max(abs(next - h)) < tol, 0.0, 1.0);
                taken = taken + 1.0;
                h = next;
            }
        }
        (h, taken)
    }

    /// Five residual blocks with their own weights, stacked (the GPT-2 example's shape).
    pub fn blocks(
        x: Tensor<f32, B, 4>,
        w: Tensor<f32, 5, 4, 4>,
        b: Tensor<f32, 5, 4>,
    ) -> Tensor<f32, B, 4> {
        let mut h = x;
        for k in 0..5 {
            let y = relu(matmul(h, w[s![k, .., ..]]) + b[s![k, ..]]);
            let m = reduce_mean(y, 1, true);
            let c = y - m;
            h = h + c * rsqrt(reduce_mean(c * c, 1, true) + 0.001);
        }
        h
    }
}

/// Seeded values in [-scale, scale).
fn values(n: usize, seed: u32, scale: f32) -> Vec<f32> {
    let mut s = seed.wrapping_mul(2654435761).wrapping_add(7);
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 17;
            s ^= s << 5;
            ((s >> 8) as f32 / (1u32 << 23) as f32 - 1.0) * scale
        })
        .collect()
}

fn same_bits<D: grafo::ndarray::Dimension>(
    what: &str,
    a: &grafo::ndarray::Array<f32, D>,
    b: &grafo::ndarray::Array<f32, D>,
) {
    assert_eq!(a.shape(), b.shape(), "{what}: shape");
    for (i, (x, y)) in a.iter().zip(b.iter()).enumerate() {
        assert_eq!(x.to_bits(), y.to_bits(), "{what}[{i}]: {x} vs {y}");
    }
}

fn sigmoid(v: f64) -> f64 {
    1.0 / (1.0 + (-v).exp())
}

/// `gated` in plain loops, in f64: the final state and the steps taken.
fn gated_reference(
    x: &Array3<f32>,
    h0: &Array2<f32>,
    w: &Array2<f32>,
    u: &Array2<f32>,
    b: &Array1<f32>,
    tol: f32,
) -> (Array2<f64>, f64) {
    let batch = h0.nrows();
    let mut h = h0.mapv(f64::from);
    let mut taken = 0.0;
    for t in 0..12 {
        let mut next = Array2::<f64>::zeros((batch, 3));
        let mut moved = f64::NEG_INFINITY;
        for r in 0..batch {
            let mut z = [0.0f64; 3];
            for (j, zj) in z.iter_mut().enumerate() {
                let mut acc = f64::from(b[j]);
                for k in 0..3 {
                    acc += f64::from(x[[r, t, k]]) * f64::from(w[[k, j]]);
                    acc += h[[r, k]] * f64::from(u[[k, j]]);
                }
                *zj = sigmoid(acc);
            }
            for j in 0..3 {
                let mut acc = -f64::from(b[j]);
                for (k, zk) in z.iter().enumerate() {
                    acc += h[[r, k]] * zk * f64::from(u[[k, j]]);
                }
                let n = acc.tanh();
                next[[r, j]] = (1.0 - z[j]) * n + z[j] * h[[r, j]];
                moved = moved.max((next[[r, j]] - h[[r, j]]).abs());
            }
        }
        taken += 1.0;
        h = next;
        if moved < f64::from(tol) {
            break;
        }
    }
    (h, taken)
}

#[test]
fn gated_steps_compiled_eager_and_reference_agree() -> Result<(), grafo::Error> {
    let w = Array2::from_shape_vec((3, 3), values(9, 1, 0.5)).unwrap();
    let u = Array2::from_shape_vec((3, 3), values(9, 2, 0.5)).unwrap();
    let b = Array1::from_vec(values(3, 3, 0.2));
    for batch in [1usize, 7, 0] {
        for tol in [0.0f32, 0.05] {
            let x = Array3::from_shape_vec((batch, 12, 3), values(batch * 36, 4, 1.0)).unwrap();
            let h0 = Array2::from_shape_vec((batch, 3), values(batch * 3, 5, 1.0)).unwrap();
            let tol_a = grafo::ndarray::arr0(tol);
            let (h, taken) = steps::gated(&x, &h0, &w, &u, &b, &tol_a)?;
            let (h_e, taken_e) = steps::gated::eager(&x, &h0, &w, &u, &b, &tol_a)?;
            same_bits("gated", &h, &h_e);
            same_bits("gated steps", &taken, &taken_e);
            if batch == 0 {
                // The largest move over no elements is -inf, below any tolerance: one step.
                assert_eq!(taken[()], 1.0);
                continue;
            }
            let (h_ref, taken_ref) = gated_reference(&x, &h0, &w, &u, &b, tol);
            assert_eq!(f64::from(taken[()]), taken_ref, "batch {batch}, tol {tol}");
            for (g, r) in h.iter().zip(h_ref.iter()) {
                assert!((f64::from(*g) - r).abs() < 1e-5, "{g} vs {r}");
            }
        }
    }
    Ok(())
}

#[test]
fn gated_steps_carry_nan_and_infinities_alike() -> Result<(), grafo::Error> {
    let w = Array2::from_shape_vec((3, 3), values(9, 1, 0.5)).unwrap();
    let u = Array2::from_shape_vec((3, 3), values(9, 2, 0.5)).unwrap();
    let b = Array1::from_vec(values(3, 3, 0.2));
    let mut x = Array3::from_shape_vec((7, 12, 3), values(7 * 36, 4, 1.0)).unwrap();
    x[[0, 3, 1]] = f32::NAN;
    x[[2, 0, 0]] = f32::INFINITY;
    x[[4, 11, 2]] = f32::NEG_INFINITY;
    let h0 = Array2::from_shape_vec((7, 3), values(21, 5, 1.0)).unwrap();
    let tol = grafo::ndarray::arr0(0.0f32);
    let (h, taken) = steps::gated(&x, &h0, &w, &u, &b, &tol)?;
    let (h_e, taken_e) = steps::gated::eager(&x, &h0, &w, &u, &b, &tol)?;
    same_bits("gated with NaN", &h, &h_e);
    same_bits("gated with NaN, steps", &taken, &taken_e);
    assert!(
        h.row(0).iter().any(|v| v.is_nan()),
        "the NaN reaches the state"
    );
    Ok(())
}

#[test]
fn stacked_blocks_compiled_eager_and_reference_agree() -> Result<(), grafo::Error> {
    let w = Array3::from_shape_vec((5, 4, 4), values(80, 6, 0.6)).unwrap();
    let bias = Array2::from_shape_vec((5, 4), values(20, 7, 0.3)).unwrap();
    for batch in [1usize, 7, 0] {
        let x = Array2::from_shape_vec((batch, 4), values(batch * 4, 8, 2.0)).unwrap();
        let h = steps::blocks(&x, &w, &bias)?;
        let h_e = steps::blocks::eager(&x, &w, &bias)?;
        same_bits("blocks", &h, &h_e);
        // The same blocks in plain loops, in f64.
        for r in 0..batch {
            let mut s: Vec<f64> = x.row(r).iter().map(|&v| f64::from(v)).collect();
            for k in 0..5 {
                let y: Vec<f64> = (0..4)
                    .map(|j| {
                        let acc: f64 = (0..4).map(|i| s[i] * f64::from(w[[k, i, j]])).sum::<f64>()
                            + f64::from(bias[[k, j]]);
                        acc.max(0.0)
                    })
                    .collect();
                let m = y.iter().sum::<f64>() / 4.0;
                let c: Vec<f64> = y.iter().map(|v| v - m).collect();
                let var = c.iter().map(|v| v * v).sum::<f64>() / 4.0;
                let scale = 1.0 / (var + 0.001).sqrt();
                s = s.iter().zip(&c).map(|(a, c)| a + c * scale).collect();
            }
            for (j, want) in s.iter().enumerate() {
                let got = f64::from(h[[r, j]]);
                assert!(
                    (got - want).abs() < 1e-4 * (1.0 + want.abs()),
                    "{got} vs {want}"
                );
            }
        }
    }
    Ok(())
}
