//! W2: a two-layer perceptron with a symbolic batch dim `B`, fed with batches of 32 and 256 from the same compiled graph.
//!
//! `cargo run --release --example mlp`

use grafo::prelude::*;
use std::time::Instant;

#[graph]
fn mlp(
    x: Tensor<f32, B, 784>,
    w1: Tensor<f32, 784, 512>,
    b1: Tensor<f32, 512>,
    w2: Tensor<f32, 512, 10>,
    b2: Tensor<f32, 10>,
) -> Tensor<f32, B, 10> {
    let h = relu(matmul(x, w1) + b1);
    softmax(matmul(h, w2) + b2, -1)
}

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
    let w1 = Array2::from_shape_vec((784, 512), uniform(784 * 512, 1, 0.05)).unwrap();
    let b1 = Array1::from_vec(uniform(512, 2, 0.1));
    let w2 = Array2::from_shape_vec((512, 10), uniform(5120, 3, 0.05)).unwrap();
    let b2 = Array1::from_vec(uniform(10, 4, 0.1));
    let mut sess = Session::default();

    for batch in [32usize, 256] {
        let x = Array2::from_shape_vec((batch, 784), uniform(batch * 784, 5, 1.0)).unwrap();
        let compiled = mlp(&x, &w1, &b1, &w2, &b2)?;
        let eager = mlp::eager(&x, &w1, &b1, &w2, &b2)?;
        let in_session = mlp::run(&mut sess, &x, &w1, &b1, &w2, &b2)?;
        assert_eq!(compiled.shape(), &[batch, 10]);
        for row in compiled.rows() {
            let s: f32 = row.sum();
            assert!((s - 1.0).abs() < 1e-4, "a softmax row sums to {s}");
        }
        for ((a, b), c) in compiled.iter().zip(eager.iter()).zip(in_session.iter()) {
            assert!((a - b).abs() <= 1e-5 + 1e-4 * b.abs(), "{a} vs eager {b}");
            assert_eq!(a, c);
        }
        let t = Instant::now();
        for _ in 0..10 {
            mlp::run(&mut sess, &x, &w1, &b1, &w2, &b2)?;
        }
        let per_call = t.elapsed().as_secs_f64() * 1e3 / 10.0;
        let classes: Vec<usize> = compiled
            .rows()
            .into_iter()
            .take(8)
            .map(|r| {
                r.iter()
                    .enumerate()
                    .max_by(|a, b| a.1.total_cmp(b.1))
                    .unwrap()
                    .0
            })
            .collect();
        println!(
            "batch {batch:3}: output {:?}, rows sum to 1, compiled == eager == session; \
             argmax of the first rows {classes:?}; {per_call:.3} ms per run",
            compiled.shape()
        );
    }

    // A batch that does not match the declared 784 features is an error naming the axis.
    let bad = Array2::<f32>::zeros((4, 783));
    let err = mlp(&bad, &w1, &b1, &w2, &b2).unwrap_err();
    println!("x of shape [4, 783] -> Err: {err}");
    assert!(matches!(
        err,
        grafo::Error::InputDim {
            axis: 1,
            expected: 784,
            found: 783,
            ..
        }
    ));
    Ok(())
}
