//! W7: the TensorFlow tutorial's MNIST CNN over a symbolic batch `B`: conv + relu, max-pool,
//! conv + relu, max-pool, flatten, dense, softmax (NHWC, HWIO kernels, VALID padding).
//!
//! `cargo run --release --example mnist_cnn`

use grafo::prelude::*;
use std::time::Instant;

#[graph]
pub fn mnist_cnn(
    x: Tensor<f32, B, 28, 28, 1>,
    k1: Tensor<f32, 3, 3, 1, 32>,
    c1: Tensor<f32, 32>,
    k2: Tensor<f32, 3, 3, 32, 64>,
    c2: Tensor<f32, 64>,
    w: Tensor<f32, 1600, 10>,
    c: Tensor<f32, 10>,
) -> Tensor<f32, B, 10> {
    let y = max_pool2d(relu(conv2d(x, k1, 1, VALID) + c1), 2, 2, VALID); // [B, 13, 13, 32]
    let y = max_pool2d(relu(conv2d(y, k2, 1, VALID) + c2), 2, 2, VALID); // [B, 5, 5, 64]
    softmax(matmul(reshape(y, [B, 1600]), w) + c, -1)
}

/// Seeded uniform values in [-scale, scale).
pub fn uniform(n: usize, seed: u32, scale: f32) -> Vec<f32> {
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

/// The network's weights, seeded.
pub struct Weights {
    pub k1: Array4<f32>,
    pub c1: Array1<f32>,
    pub k2: Array4<f32>,
    pub c2: Array1<f32>,
    pub w: Array2<f32>,
    pub c: Array1<f32>,
}

impl Weights {
    pub fn seeded() -> Weights {
        Weights {
            k1: Array4::from_shape_vec((3, 3, 1, 32), uniform(288, 1, 0.33)).unwrap(),
            c1: Array1::from_vec(uniform(32, 2, 0.1)),
            k2: Array4::from_shape_vec((3, 3, 32, 64), uniform(3 * 3 * 32 * 64, 3, 0.06)).unwrap(),
            c2: Array1::from_vec(uniform(64, 4, 0.1)),
            w: Array2::from_shape_vec((1600, 10), uniform(16000, 5, 0.025)).unwrap(),
            c: Array1::from_vec(uniform(10, 6, 0.1)),
        }
    }

    /// A batch of `batch` images in [0, 1).
    pub fn input(batch: usize) -> Array4<f32> {
        Array4::from_shape_vec((batch, 28, 28, 1), uniform(batch * 784, 7, 0.5)).unwrap() + 0.5
    }

    pub fn compiled(&self, x: &Array4<f32>) -> Result<Array2<f32>, grafo::Error> {
        mnist_cnn(x, &self.k1, &self.c1, &self.k2, &self.c2, &self.w, &self.c)
    }

    pub fn eager(&self, x: &Array4<f32>) -> Result<Array2<f32>, grafo::Error> {
        mnist_cnn::eager(x, &self.k1, &self.c1, &self.k2, &self.c2, &self.w, &self.c)
    }
}

#[allow(dead_code)]
fn main() -> Result<(), grafo::Error> {
    let w = Weights::seeded();
    for batch in [1usize, 64] {
        let x = Weights::input(batch);
        let compiled = w.compiled(&x)?;
        let eager = w.eager(&x)?;
        assert_eq!(compiled.shape(), &[batch, 10]);
        assert_eq!(compiled, eager, "compiled and eager agree bit for bit");
        for row in compiled.rows() {
            assert!((row.sum() - 1.0).abs() < 1e-5, "a softmax row sums to 1");
        }
        let t = Instant::now();
        for _ in 0..5 {
            w.compiled(&x)?;
        }
        let fast = t.elapsed().as_secs_f64() * 1e3 / 5.0;
        let t = Instant::now();
        for _ in 0..5 {
            w.eager(&x)?;
        }
        let slow = t.elapsed().as_secs_f64() * 1e3 / 5.0;
        println!(
            "mnist cnn, batch {batch}: compiled {fast:.2} ms, eager {slow:.2} ms (a rough loop; `cargo bench -p grafo-benches --bench models` measures)"
        );
    }
    Ok(())
}
