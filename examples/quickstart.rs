//! The README's first example: the eager tutorial's convolutional network with its `if`, compiled by `#[graph]` and run op by op, timed side by side.
//!
//! `cargo run --release --example quickstart`

use grafo::prelude::*;
use std::time::{Duration, Instant};

/// Two 3x3 convolutions of 16 filters over a 512x512 RGB image (NHWC); the second one runs
/// only when the L2 norm of the first one's output is below `limit` (a cond node).
#[graph]
pub fn convnet(
    x: Tensor<f32, B, 512, 512, 3>,
    k0: Tensor<f32, 3, 3, 3, 16>,
    b0: Tensor<f32, 16>,
    k1: Tensor<f32, 3, 3, 16, 16>,
    b1: Tensor<f32, 16>,
    limit: Tensor<f32>,
) -> Tensor<f32, B, 512, 512, 16> {
    let mut y = conv2d(x, k0, 1, SAME) + b0;
    if norm(y) < limit {
        y = conv2d(y, k1, 1, SAME) + b1;
    }
    y
}

/// The norm the `if` above tests, to report which arm ran.
#[graph]
pub fn first_layer_norm(
    x: Tensor<f32, B, 512, 512, 3>,
    k0: Tensor<f32, 3, 3, 3, 16>,
    b0: Tensor<f32, 16>,
) -> Tensor<f32> {
    norm(conv2d(x, k0, 1, SAME) + b0)
}

/// Deterministic values in [-scale, scale).
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

/// The fastest of `reps` timed calls (after one untimed call).
fn best_of<T>(reps: usize, mut f: impl FnMut() -> T) -> Duration {
    std::hint::black_box(f());
    (0..reps)
        .map(|_| {
            let t = Instant::now();
            std::hint::black_box(f());
            t.elapsed()
        })
        .min()
        .unwrap()
}

fn main() -> Result<(), grafo::Error> {
    // The tutorial's `datos = np.ones((1, 512, 512, 3))`, and small random filters.
    let x = Array4::<f32>::ones((1, 512, 512, 3));
    let k0 = Array4::from_shape_vec((3, 3, 3, 16), uniform(432, 1, 0.01)).unwrap();
    let b0 = Array1::from_vec(uniform(16, 2, 0.01));
    let k1 = Array4::from_shape_vec((3, 3, 16, 16), uniform(2304, 3, 0.05)).unwrap();
    let b1 = Array1::from_vec(uniform(16, 4, 0.01));
    let limit = arr0(1000.0f32);

    let fast = convnet(&x, &k0, &b0, &k1, &b1, &limit)?; // compiled, fused
    let slow = convnet::eager(&x, &k0, &b0, &k1, &b1, &limit)?; // op by op
    assert_eq!(fast.shape(), &[1, 512, 512, 16]);
    let mut max_diff = 0.0f32;
    for (a, b) in fast.iter().zip(slow.iter()) {
        assert!((a - b).abs() <= 1e-4 * (1.0 + b.abs()), "{a} vs {b}");
        max_diff = max_diff.max((a - b).abs());
    }

    let n = first_layer_norm(&x, &k0, &b0)?[()];
    let second = n < limit[()];
    println!(
        "L2 norm after the first conv: {n:.1} (limit {}) -> {}",
        limit[()],
        if second {
            "the second conv ran"
        } else {
            "the second conv was skipped"
        }
    );
    println!("compiled == eager (max |diff| {max_diff:.2e})");

    let reps = 5;
    let t_compiled = best_of(reps, || convnet(&x, &k0, &b0, &k1, &b1, &limit).unwrap());
    let t_eager = best_of(reps, || {
        convnet::eager(&x, &k0, &b0, &k1, &b1, &limit).unwrap()
    });
    let speedup = t_eager.as_secs_f64() / t_compiled.as_secs_f64();
    println!("compiled: {:8.2} ms (best of {reps})", ms(t_compiled));
    println!("eager:    {:8.2} ms (best of {reps})", ms(t_eager));
    println!("speed-up: {speedup:.2}x");

    let graph = convnet::graph();
    let dot = graph.to_dot();
    assert!(dot.starts_with("digraph") || dot.contains("digraph"));
    let path = std::env::temp_dir().join("grafo_quickstart_convnet.dot");
    std::fs::write(&path, &dot).map_err(|e| grafo::Error::Io(e.to_string()))?;
    println!(
        "graph: {} nodes, {} fusion groups, DOT ({} bytes) written to {}",
        graph.nodes.len(),
        graph.groups.len(),
        dot.len(),
        path.display()
    );
    println!(
        "render it with: dot -Tsvg {} -o convnet.svg",
        path.display()
    );
    Ok(())
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}
