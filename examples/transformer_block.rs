//! W6: one post-LN transformer encoder block (4-head self-attention, GELU feed-forward) over a
//! symbolic batch `B`, written with reshape, transpose and 4-D matmul as in PyTorch or TF.
//!
//! `cargo run --release --example transformer_block`

use grafo::prelude::*;
use std::time::Instant;

/// The block's sizes: sequence 64, model width 256, 4 heads of 64, feed-forward 1024.
pub const SEQ: usize = 64;
pub const MODEL: usize = 256;
pub const FFN: usize = 1024;

#[graph]
pub mod encoder {
    /// Multi-head self-attention: the heads are split by a reshape and a transpose, scored
    /// with a 4-D matmul against the transposed keys (read in place), and merged back.
    pub fn attention(
        x: Tensor<f32, B, 64, 256>,
        wq: Tensor<f32, 256, 256>,
        wk: Tensor<f32, 256, 256>,
        wv: Tensor<f32, 256, 256>,
        wo: Tensor<f32, 256, 256>,
    ) -> Tensor<f32, B, 64, 256> {
        let q = transpose(reshape(matmul(x, wq), [B, 64, 4, 64]), [0, 2, 1, 3]);
        let k = transpose(reshape(matmul(x, wk), [B, 64, 4, 64]), [0, 2, 1, 3]);
        let v = transpose(reshape(matmul(x, wv), [B, 64, 4, 64]), [0, 2, 1, 3]);
        let scores = matmul(q, transpose(k, [0, 1, 3, 2])) * 0.125;
        let context = matmul(softmax(scores, -1), v);
        let merged = reshape(transpose(context, [0, 2, 1, 3]), [B, 64, 256]);
        matmul(merged, wo)
    }

    /// The block: attention and a GELU feed-forward, each with a residual and a layer norm.
    #[allow(clippy::too_many_arguments)]
    pub fn block(
        x: Tensor<f32, B, 64, 256>,
        wq: Tensor<f32, 256, 256>,
        wk: Tensor<f32, 256, 256>,
        wv: Tensor<f32, 256, 256>,
        wo: Tensor<f32, 256, 256>,
        gamma1: Tensor<f32, 256>,
        beta1: Tensor<f32, 256>,
        w1: Tensor<f32, 256, 1024>,
        c1: Tensor<f32, 1024>,
        w2: Tensor<f32, 1024, 256>,
        c2: Tensor<f32, 256>,
        gamma2: Tensor<f32, 256>,
        beta2: Tensor<f32, 256>,
    ) -> Tensor<f32, B, 64, 256> {
        let y = layer_norm(x + attention(x, wq, wk, wv, wo), gamma1, beta1, -1, 1e-5);
        let ff = matmul(gelu(matmul(y, w1) + c1), w2) + c2;
        layer_norm(y + ff, gamma2, beta2, -1, 1e-5)
    }
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

/// The block's weights, seeded.
pub struct Weights {
    pub wq: Array2<f32>,
    pub wk: Array2<f32>,
    pub wv: Array2<f32>,
    pub wo: Array2<f32>,
    pub gamma1: Array1<f32>,
    pub beta1: Array1<f32>,
    pub w1: Array2<f32>,
    pub c1: Array1<f32>,
    pub w2: Array2<f32>,
    pub c2: Array1<f32>,
    pub gamma2: Array1<f32>,
    pub beta2: Array1<f32>,
}

impl Weights {
    pub fn seeded() -> Weights {
        let square = |seed| {
            Array2::from_shape_vec((MODEL, MODEL), uniform(MODEL * MODEL, seed, 0.0625)).unwrap()
        };
        Weights {
            wq: square(1),
            wk: square(2),
            wv: square(3),
            wo: square(4),
            gamma1: Array1::from_vec(uniform(MODEL, 5, 0.1)) + 1.0,
            beta1: Array1::from_vec(uniform(MODEL, 6, 0.1)),
            w1: Array2::from_shape_vec((MODEL, FFN), uniform(MODEL * FFN, 7, 0.0625)).unwrap(),
            c1: Array1::from_vec(uniform(FFN, 8, 0.1)),
            w2: Array2::from_shape_vec((FFN, MODEL), uniform(FFN * MODEL, 9, 0.03125)).unwrap(),
            c2: Array1::from_vec(uniform(MODEL, 10, 0.1)),
            gamma2: Array1::from_vec(uniform(MODEL, 11, 0.1)) + 1.0,
            beta2: Array1::from_vec(uniform(MODEL, 12, 0.1)),
        }
    }

    /// A batch of `batch` sequences.
    pub fn input(batch: usize) -> Array3<f32> {
        Array3::from_shape_vec((batch, SEQ, MODEL), uniform(batch * SEQ * MODEL, 13, 1.0)).unwrap()
    }

    pub fn compiled(&self, x: &Array3<f32>) -> Result<Array3<f32>, grafo::Error> {
        let w = self;
        encoder::block(
            x, &w.wq, &w.wk, &w.wv, &w.wo, &w.gamma1, &w.beta1, &w.w1, &w.c1, &w.w2, &w.c2,
            &w.gamma2, &w.beta2,
        )
    }

    pub fn eager(&self, x: &Array3<f32>) -> Result<Array3<f32>, grafo::Error> {
        let w = self;
        encoder::block::eager(
            x, &w.wq, &w.wk, &w.wv, &w.wo, &w.gamma1, &w.beta1, &w.w1, &w.c1, &w.w2, &w.c2,
            &w.gamma2, &w.beta2,
        )
    }
}

#[allow(dead_code)]
fn main() -> Result<(), grafo::Error> {
    let w = Weights::seeded();
    for batch in [1usize, 8] {
        let x = Weights::input(batch);
        let compiled = w.compiled(&x)?;
        let eager = w.eager(&x)?;
        assert_eq!(compiled.shape(), &[batch, SEQ, MODEL]);
        assert_eq!(compiled, eager, "compiled and eager agree bit for bit");
        // Each position is layer-normalised: mean beta2's mean, spread set by gamma2.
        let row = compiled.slice(s![0, 0, ..]);
        assert!(row.iter().all(|v| v.is_finite()));

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
            "transformer block, batch {batch}: compiled {fast:.2} ms, eager {slow:.2} ms (a rough loop; `cargo bench -p grafo-benches --bench models` measures)"
        );
    }
    let def = encoder::block::graph();
    println!(
        "the block's graph: {} nodes, {} fusion groups",
        def.nodes.len(),
        def.groups.len()
    );
    Ok(())
}
