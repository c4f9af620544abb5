//! Compiled vs eager over random graphs (issue 11): every graph `build.rs` wrote from its
//! seed runs compiled, in a session, eager and with every pass disabled (compiled and
//! eager); all must give the same bits (NaNs are equal whatever their payload), or the same
//! error. The inputs of each graph are ordinary values, values sprinkled with NaN, ±inf, -0
//! and huge or subnormal magnitudes, and huge values only.

use grafo::ndarray::{ArrayD, IxDyn};
use grafo::prelude::*;

/// Input sets per graph: ordinary, sprinkled with special values, huge.
const CASES: usize = 3;

/// The special values sprinkled into the inputs.
const SPECIALS: &[f32] = &[
    f32::NAN,
    f32::INFINITY,
    f32::NEG_INFINITY,
    -0.0,
    0.0,
    3e38,
    -3e38,
    1e-40,
    -1e-45,
    1.0,
];

/// A deterministic input of `shape` for graph `k`, input set `case`, parameter `which`.
fn input(shape: &[usize], k: usize, case: usize, which: usize) -> ArrayD<f32> {
    let mut state = (k as u64) << 32 ^ (case as u64) << 16 ^ which as u64 ^ 0x9e37_79b9;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let n: usize = shape.iter().product();
    let data = (0..n)
        .map(|_| {
            let r = next();
            let u = (r >> 11) as f64 / (1u64 << 53) as f64;
            match case {
                0 => (u * 6.0 - 3.0) as f32,
                1 if r % 3 == 0 => SPECIALS[(r >> 7) as usize % SPECIALS.len()],
                1 => (u * 6.0 - 3.0) as f32,
                _ => ((u * 2.0 - 1.0) * 3e38) as f32,
            }
        })
        .collect();
    ArrayD::from_shape_vec(IxDyn(shape), data).expect("the shape's element count")
}

fn bits(v: f32) -> u32 {
    if v.is_nan() {
        u32::MAX
    } else {
        v.to_bits()
    }
}

/// All results must be the same bits (or all the same error).
fn agree<const P: usize>(
    name: &str,
    source: &str,
    case: usize,
    results: [(&str, Result<ArrayD<f32>, grafo::Error>); P],
) {
    let describe = |r: &Result<ArrayD<f32>, grafo::Error>| match r {
        Ok(a) => Ok((
            a.shape().to_vec(),
            a.iter().map(|&v| bits(v)).collect::<Vec<u32>>(),
        )),
        Err(e) => Err(e.to_string()),
    };
    let (first_path, first) = &results[0];
    let want = describe(first);
    for (path, got) in &results[1..] {
        let g = describe(got);
        if g != want {
            let show = |r: &Result<ArrayD<f32>, grafo::Error>| match r {
                Ok(a) => format!("{:?}", a.iter().collect::<Vec<_>>()),
                Err(e) => format!("error: {e}"),
            };
            panic!(
                "{name} (input set {case}): {path} differs from {first_path}\n{path}: {}\n{first_path}: {}\nthe graph:\n{source}",
                show(got),
                show(first)
            );
        }
    }
}

include!(concat!(env!("OUT_DIR"), "/random.rs"));
