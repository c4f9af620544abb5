//! The eager-execution tutorial's network: two 3x3 convolutions of 16 filters, the second only when the L2 norm of the first's output is below 1000; eager (op by op) vs compiled, both arms.
//!
//! `cargo run --release --example seed_eager_vs_graph`

use grafo::prelude::*;
use std::time::Instant;

/// `red(entrada)`: the tutorial's Python `if` on a tensor value becomes a cond node.
#[graph]
fn red(
    entrada: Tensor<f32, B, 512, 512, 3>,
    k0: Tensor<f32, 3, 3, 3, 16>,
    b0: Tensor<f32, 16>,
    k1: Tensor<f32, 3, 3, 16, 16>,
    b1: Tensor<f32, 16>,
    limite: Tensor<f32>,
) -> Tensor<f32, B, 512, 512, 16> {
    let mut salida = conv2d(entrada, k0, 1, SAME) + b0;
    let norma_l2 = sqrt(reduce_sum(square(salida)));
    if norma_l2 < limite {
        salida = conv2d(salida, k1, 1, SAME) + b1;
    }
    salida
}

/// The first layer alone, to tell which arm the `if` takes.
#[graph]
fn capa0(
    entrada: Tensor<f32, B, 512, 512, 3>,
    k0: Tensor<f32, 3, 3, 3, 16>,
    b0: Tensor<f32, 16>,
) -> Tensor<f32, B, 512, 512, 16> {
    conv2d(entrada, k0, 1, SAME) + b0
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
    let k0 = Array4::from_shape_vec((3, 3, 3, 16), uniform(432, 1, 0.05)).unwrap();
    let b0 = Array1::from_vec(uniform(16, 2, 0.01));
    let k1 = Array4::from_shape_vec((3, 3, 16, 16), uniform(2304, 3, 0.05)).unwrap();
    let b1 = Array1::from_vec(uniform(16, 4, 0.01));
    let limite = arr0(1000.0f32);

    // `datos = np.ones((1, 512, 512, 3))` takes one arm; ten times those values the other.
    for escala in [0.1f32, 10.0] {
        let datos = Array4::<f32>::from_elem((1, 512, 512, 3), escala);
        let y0 = capa0(&datos, &k0, &b0)?;
        let norma = y0.iter().map(|v| (*v as f64).powi(2)).sum::<f64>().sqrt();
        let segunda = norma < limite[()] as f64;

        let t = Instant::now();
        let eager = red::eager(&datos, &k0, &b0, &k1, &b1, &limite)?;
        let t_eager = t.elapsed();
        red(&datos, &k0, &b0, &k1, &b1, &limite)?; // first call, then a timed one
        let t = Instant::now();
        let compiled = red(&datos, &k0, &b0, &k1, &b1, &limite)?;
        let t_compiled = t.elapsed();

        for (a, b) in compiled.iter().zip(eager.iter()) {
            assert!((a - b).abs() <= 1e-4 * (1.0 + b.abs()), "{a} vs {b}");
        }
        // The skipped arm returns the first layer's output unchanged.
        let same_as_first = compiled
            .iter()
            .zip(y0.iter())
            .all(|(a, b)| (a - b).abs() <= 1e-5 * (1.0 + b.abs()));
        assert_eq!(same_as_first, !segunda);
        println!(
            "datos = {escala} * ones: norma_l2 = {norma:9.1} -> {:<24} eager {:7.2} ms, compiled {:7.2} ms ({:.2}x)",
            if segunda { "second conv runs;" } else { "second conv skipped;" },
            t_eager.as_secs_f64() * 1e3,
            t_compiled.as_secs_f64() * 1e3,
            t_eager.as_secs_f64() / t_compiled.as_secs_f64()
        );
    }
    Ok(())
}
