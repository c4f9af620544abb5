//! The last-axis softmax kernel (attention's rows) against plain loops: bit for bit against the same arithmetic with one running maximum, and within rounding of an f64 softmax, on odd widths with NaN, infinities, signed zeros and rows masked to -inf.

use graph_runtime::math::{exp_f32, log_f32};
use graph_runtime::softmax::softmax_into;

/// Row widths around the kernel's 8 lanes, GPT-2's 128 and an odd large one.
const WIDTHS: &[usize] = &[1, 2, 7, 8, 9, 17, 127, 128, 1023];

/// The kernel's arithmetic with one running maximum over the row, in plain loops: the sum
/// in 8 running sums in the kernel's order, `exp` the crate's own.
fn reference_row(x: &[f32], log: bool) -> Vec<f32> {
    let mut m = f32::NEG_INFINITY;
    for &v in x {
        m = if v > m { v } else { m };
    }
    let mut acc = [0.0f32; 8];
    for (i, &v) in x.iter().enumerate() {
        acc[i % 8] += exp_f32(v - m);
    }
    let sum = acc.iter().fold(0.0f32, |a, &b| a + b);
    if log {
        let shift = m + log_f32(sum);
        x.iter().map(|&v| v - shift).collect()
    } else {
        let scale = 1.0 / sum;
        x.iter().map(|&v| exp_f32(v - m) * scale).collect()
    }
}

/// Seeded values in [-8, 8).
fn values(len: usize, seed: u32) -> Vec<f32> {
    let mut s = seed.wrapping_mul(2654435761).wrapping_add(1);
    (0..len)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 17;
            s ^= s << 5;
            (s >> 8) as f32 / (1u32 << 19) as f32 - 8.0
        })
        .collect()
}

/// Rows of every width with special values planted: a causal mask's -inf tail, an all -inf
/// row, a NaN, +inf, and the largest value as both +0 and -0.
fn rows(width: usize, seed: u32) -> Vec<Vec<f32>> {
    let mut out = vec![values(width, seed)];
    let mut causal = values(width, seed + 1);
    for v in causal.iter_mut().skip(width / 2 + 1) {
        *v = f32::NEG_INFINITY;
    }
    out.push(causal);
    out.push(vec![f32::NEG_INFINITY; width]);
    let mut nan = values(width, seed + 2);
    nan[width / 3] = f32::NAN;
    out.push(nan);
    let mut inf = values(width, seed + 3);
    inf[width - 1] = f32::INFINITY;
    out.push(inf);
    let mut zeros: Vec<f32> = values(width, seed + 4)
        .iter()
        .map(|v| -v.abs() - 1.0)
        .collect();
    zeros[0] = -0.0;
    zeros[width - 1] = 0.0;
    out.push(zeros);
    out
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

#[test]
fn last_axis_softmax_matches_one_running_maximum_bit_for_bit() {
    for &width in WIDTHS {
        let rows = rows(width, width as u32);
        let x: Vec<f32> = rows.concat();
        for log in [false, true] {
            let mut got = vec![0.5f32; x.len()];
            softmax_into(&x, &[rows.len(), width], 1, log, &mut got);
            for (r, row) in rows.iter().enumerate() {
                assert_eq!(
                    bits(&got[r * width..][..width]),
                    bits(&reference_row(row, log)),
                    "width {width}, row {r}, log {log}"
                );
            }
        }
    }
}

#[test]
fn last_axis_softmax_matches_f64_on_finite_rows() {
    for &width in WIDTHS {
        let x = values(3 * width, 7 + width as u32);
        let mut got = vec![0.0f32; x.len()];
        softmax_into(&x, &[3, width], 1, false, &mut got);
        for (xr, gr) in x.chunks(width).zip(got.chunks(width)) {
            let m = xr.iter().fold(f64::NEG_INFINITY, |m, &v| m.max(v as f64));
            let s: f64 = xr.iter().map(|&v| (v as f64 - m).exp()).sum();
            for (&v, &g) in xr.iter().zip(gr) {
                let want = (v as f64 - m).exp() / s;
                assert!(
                    (g as f64 - want).abs() <= 1e-6,
                    "width {width}: {g} vs {want}"
                );
            }
        }
    }
    // A masked tail is exactly 0, a fully masked row NaN (0 / 0), as PyTorch gives.
    let mut row = values(7, 3);
    row[4..].fill(f32::NEG_INFINITY);
    row.extend([f32::NEG_INFINITY; 7]);
    let mut got = vec![0.0f32; 14];
    softmax_into(&row, &[2, 7], 1, false, &mut got);
    assert!(got[4..7].iter().all(|&v| v == 0.0) && got[7..].iter().all(|v| v.is_nan()));
    // No rows, or rows of no element: nothing is written.
    let mut none: Vec<f32> = vec![];
    softmax_into(&[], &[0, 128], 1, false, &mut none);
    softmax_into(&[], &[4, 0], 1, false, &mut none);
}
