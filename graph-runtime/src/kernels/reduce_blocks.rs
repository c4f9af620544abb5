//! All-axes f32 sums recorded block by block by the kernel that writes their input: a convolution hands each finished block of its output, still in cache, to [`BlockLanes::record`], and the reduction afterwards reads from memory only what was not recorded.
//!
//! An all-axes f32 `reduce_sum`, `reduce_mean` or `norm` follows the order of
//! [`super::reduce`]: segments of [`SEGMENT`] elements, in each one [`LANES`] f64 lanes over
//! chunks of [`LANES`] elements folded into the segment's total once per block of
//! [`BLOCK_CHUNKS`] chunks. A block of lanes therefore covers [`BLOCK`] elements starting at a
//! multiple of [`BLOCK`] (a segment is a multiple of it), and its 16 lane sums depend only on
//! those elements. [`BlockLanes::record`] computes the lanes of every whole block inside the
//! run it is given; [`BlockLanes::total`] folds the lanes of each segment in order, computing
//! from memory any block nobody recorded, then the segment's last partial block and its tail
//! one element at a time, as [`super::reduce::sum_f32`] does. The result is the same bits
//! as reducing the finished tensor, whatever runs were recorded and on which threads.

use super::reduce::{segments, BLOCK_CHUNKS, LANES, SEGMENT};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

/// Elements of one block of lanes: [`BLOCK_CHUNKS`] chunks of [`LANES`] elements.
pub const BLOCK: usize = LANES * BLOCK_CHUNKS;

const _: () = assert!(
    SEGMENT.is_multiple_of(BLOCK),
    "a segment is a whole number of blocks"
);

/// What an all-axes f32 reduction adds up, each element widened to f64 first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Summand {
    /// The values (`reduce_sum`, `reduce_mean`).
    Values,
    /// The squares (`norm`, before its square root).
    Squares,
}

/// The lane sums of whole blocks and which blocks have them.
#[derive(Default)]
struct Storage {
    /// [`LANES`] f64 bit patterns per block.
    lanes: Vec<AtomicU64>,
    recorded: Vec<AtomicBool>,
}

impl Storage {
    fn blocks(&self) -> usize {
        self.recorded.len()
    }
}

/// Storage given back by dropped [`BlockLanes`], so a graph run again allocates nothing.
static FREE: Mutex<Vec<Storage>> = Mutex::new(Vec::new());
/// How many storages [`FREE`] keeps.
const FREE_KEPT: usize = 8;

/// The lane sums of an all-axes f32 reduction of `n` elements, filled block by block by
/// the kernel that writes the reduced tensor (see the module doc).
pub struct BlockLanes {
    n: usize,
    summand: Summand,
    storage: Storage,
}

impl BlockLanes {
    /// Lanes for a reduction of `n` elements of `summand`, none recorded yet.
    pub fn new(n: usize, summand: Summand) -> BlockLanes {
        let blocks = n / BLOCK;
        let reused = {
            let mut free = FREE.lock().unwrap_or_else(|e| e.into_inner());
            // The smallest storage that is large enough.
            let best = free
                .iter()
                .enumerate()
                .filter(|(_, s)| s.blocks() >= blocks)
                .min_by_key(|(_, s)| s.blocks())
                .map(|(i, _)| i);
            best.map(|i| free.swap_remove(i))
        };
        let storage = match reused {
            Some(s) => {
                for r in &s.recorded[..blocks] {
                    r.store(false, Ordering::Relaxed);
                }
                s
            }
            None => Storage {
                lanes: (0..blocks * LANES).map(|_| AtomicU64::new(0)).collect(),
                recorded: (0..blocks).map(|_| AtomicBool::new(false)).collect(),
            },
        };
        BlockLanes {
            n,
            summand,
            storage,
        }
    }

    /// Records the lanes of every whole block inside `data`, which holds elements
    /// `first .. first + data.len()` of the reduced tensor in their final values. Runs may
    /// come in any order, from any thread, overlap, or leave gaps.
    pub fn record(&self, first: usize, data: &[f32]) {
        let storage = &self.storage;
        let end = first.saturating_add(data.len()).min(self.n);
        let (b0, b1) = (first.div_ceil(BLOCK), end / BLOCK);
        let store = |b: usize, lanes: &[f64; LANES]| {
            for (slot, lane) in storage.lanes[b * LANES..(b + 1) * LANES].iter().zip(lanes) {
                slot.store(lane.to_bits(), Ordering::Relaxed);
            }
            storage.recorded[b].store(true, Ordering::Release);
        };
        let mut b = b0;
        // Four blocks at a time: their lanes are independent chains of additions, so the
        // loop is not held up by the latency of each one.
        while b + QUAD <= b1 {
            let at = b * BLOCK - first;
            let quad = quad_lanes(self.summand, &data[at..at + QUAD * BLOCK]);
            for (i, lanes) in quad.iter().enumerate() {
                store(b + i, lanes);
            }
            b += QUAD;
        }
        for b in b..b1 {
            let at = b * BLOCK - first;
            store(b, &block_lanes(self.summand, &data[at..at + BLOCK]));
        }
    }

    /// The f64 total of the reduction of `x` (the finished tensor, `n` elements): the
    /// recorded blocks' lanes, the others read from `x`, in the order of the module doc.
    pub fn total(&self, x: &[f32]) -> f64 {
        let summand = self.summand;
        // Lanes recorded for another length are not this tensor's: reduce it from memory.
        let storage = (x.len() == self.n).then_some(&self.storage);
        let whole = x.len() / SEGMENT;
        let blocks = whole * (SEGMENT / BLOCK);
        let Some(storage) = storage.filter(|s| {
            whole >= 2
                && s.recorded[..blocks]
                    .iter()
                    .all(|r| r.load(Ordering::Acquire))
        }) else {
            // Blocks to read from memory: the segments in parallel.
            return segments(
                x.len(),
                |r| segment_total(summand, x, r, storage),
                |a, b| a + b,
            );
        };
        // Every whole segment's lanes are recorded: fold them here, several segments at once
        // (each segment's total is a chain of additions), then fold the segments' totals in
        // order as `segments` does.
        let mut grand: Option<f64> = None;
        let mut fold = |t: f64| grand = Some(grand.map_or(t, |g| g + t));
        let mut s = 0;
        while s < whole {
            let k = (whole - s).min(FOLD_SEGMENTS);
            for t in &fold_recorded(storage, s, k)[..k] {
                fold(*t);
            }
            s += k;
        }
        if whole * SEGMENT < x.len() {
            fold(segment_total(
                summand,
                x,
                whole * SEGMENT..x.len(),
                Some(storage),
            ));
        }
        grand.unwrap_or(0.0)
    }
}

impl Drop for BlockLanes {
    fn drop(&mut self) {
        let storage = std::mem::take(&mut self.storage);
        let mut free = FREE.lock().unwrap_or_else(|e| e.into_inner());
        if free.len() < FREE_KEPT {
            free.push(storage);
        }
    }
}

/// Whole segments whose recorded lanes [`fold_recorded`] folds together.
const FOLD_SEGMENTS: usize = 8;

/// The totals of the `k` (at most [`FOLD_SEGMENTS`]) whole segments from segment `first`
/// on, every block recorded: each segment's lanes added in order from `+0.0`.
fn fold_recorded(storage: &Storage, first: usize, k: usize) -> [f64; FOLD_SEGMENTS] {
    const PER_SEGMENT: usize = SEGMENT / BLOCK * LANES;
    let mut t = [0.0f64; FOLD_SEGMENTS];
    let lane = |q: usize, i: usize| {
        f64::from_bits(storage.lanes[(first + q) * PER_SEGMENT + i].load(Ordering::Relaxed))
    };
    if k == FOLD_SEGMENTS {
        // A fixed count, so the chains are unrolled side by side.
        for i in 0..PER_SEGMENT {
            for (q, total) in t.iter_mut().enumerate() {
                *total += lane(q, i);
            }
        }
    } else {
        for (q, total) in t[..k].iter_mut().enumerate() {
            for i in 0..PER_SEGMENT {
                *total += lane(q, i);
            }
        }
    }
    t
}

/// The total of the segment `r` of `x` (`r.start` a multiple of [`SEGMENT`]), with the lanes
/// of the blocks `storage` has recorded (none without it).
fn segment_total(
    summand: Summand,
    x: &[f32],
    r: std::ops::Range<usize>,
    storage: Option<&Storage>,
) -> f64 {
    let mut total = 0.0f64;
    let mut s = r.start;
    while s + BLOCK <= r.end {
        let b = s / BLOCK;
        let lanes = match storage.filter(|st| st.recorded[b].load(Ordering::Acquire)) {
            Some(st) => {
                let mut l = [0.0f64; LANES];
                for (v, slot) in l.iter_mut().zip(&st.lanes[b * LANES..(b + 1) * LANES]) {
                    *v = f64::from_bits(slot.load(Ordering::Relaxed));
                }
                l
            }
            None => block_lanes(summand, &x[s..s + BLOCK]),
        };
        for lane in lanes {
            total += lane;
        }
        s += BLOCK;
    }
    // The segment's last block, of fewer chunks, then the elements after its last whole chunk.
    let rest = &x[s..r.end];
    let whole = rest.len() / LANES * LANES;
    if whole > 0 {
        for lane in block_lanes(summand, &rest[..whole]) {
            total += lane;
        }
    }
    for &v in &rest[whole..] {
        total += widen(summand, v);
    }
    total
}

/// One element as the reduction adds it.
#[inline(always)]
fn widen(summand: Summand, v: f32) -> f64 {
    match summand {
        Summand::Values => v as f64,
        Summand::Squares => v as f64 * v as f64,
    }
}

/// The lanes of whole chunks `x` (at most one block): lane `j` adds elements `j`, `j + 16`,
/// ... in order, starting from `+0.0`.
fn block_lanes(summand: Summand, x: &[f32]) -> [f64; LANES] {
    match summand {
        Summand::Values => value_lanes(x),
        Summand::Squares => square_lanes(x),
    }
}

/// Blocks whose lanes [`quad_lanes`] computes together.
const QUAD: usize = 4;

/// The lanes of [`QUAD`] consecutive whole blocks, each as [`block_lanes`] computes it.
fn quad_lanes(summand: Summand, x: &[f32]) -> [[f64; LANES]; QUAD] {
    match summand {
        Summand::Values => value_lanes_quad(x),
        // The square of an f32 widened to f64 is exact (48 significant bits at most, far
        // from f64's overflow and underflow), so `mul_add(v, v, a)` rounds once exactly as
        // `a + v * v` does: the same bits with one instruction less, where FMA is hardware.
        Summand::Squares if crate::exec::cpu::level() >= crate::exec::cpu::Level::Avx2Fma => {
            square_lanes_quad_fma(x)
        }
        Summand::Squares => square_lanes_quad(x),
    }
}

/// The body of [`value_lanes_quad`] and [`square_lanes_quad`]: four accumulators of
/// `LANES` in registers, the chunks of the four blocks taken in turn.
macro_rules! quad_body {
    ($x:expr, |$a:ident, $v:ident| $step:expr) => {{
        let Some(x) = $x.first_chunk::<{ QUAD * BLOCK }>() else {
            unreachable!("quad_lanes is given four whole blocks")
        };
        let mut a = [[0.0f64; LANES]; QUAD];
        let [a0, a1, a2, a3] = &mut a;
        for c in 0..BLOCK_CHUNKS {
            let o = c * LANES;
            for j in 0..LANES {
                let ($a, $v) = (a0[j], x[o + j] as f64);
                a0[j] = $step;
                let ($a, $v) = (a1[j], x[BLOCK + o + j] as f64);
                a1[j] = $step;
                let ($a, $v) = (a2[j], x[2 * BLOCK + o + j] as f64);
                a2[j] = $step;
                let ($a, $v) = (a3[j], x[3 * BLOCK + o + j] as f64);
                a3[j] = $step;
            }
        }
        a
    }};
}

crate::multiversion! {
    fn value_lanes_quad(x: &[f32]) -> [[f64; LANES]; QUAD] {
        quad_body!(x, |a, v| a + v)
    }
}

crate::multiversion! {
    fn square_lanes_quad(x: &[f32]) -> [[f64; LANES]; QUAD] {
        quad_body!(x, |a, v| a + v * v)
    }
}

crate::multiversion! {
    /// [`square_lanes_quad`] with one fused multiply-add per element (the same bits, see
    /// [`quad_lanes`]); only called where FMA is hardware.
    fn square_lanes_quad_fma(x: &[f32]) -> [[f64; LANES]; QUAD] {
        quad_body!(x, |a, v| v.mul_add(v, a))
    }
}

crate::multiversion! {
    fn value_lanes(x: &[f32]) -> [f64; LANES] {
        let mut acc = [0.0f64; LANES];
        for c in x.chunks_exact(LANES) {
            for j in 0..LANES {
                acc[j] += c[j] as f64;
            }
        }
        acc
    }
}

crate::multiversion! {
    fn square_lanes(x: &[f32]) -> [f64; LANES] {
        let mut acc = [0.0f64; LANES];
        for c in x.chunks_exact(LANES) {
            for j in 0..LANES {
                acc[j] += c[j] as f64 * c[j] as f64;
            }
        }
        acc
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::reduce::{sum_f32, sum_squares_f32};

    /// The reduction of the finished tensor, as the eager path computes it.
    fn reference(summand: Summand, x: &[f32]) -> f64 {
        match summand {
            Summand::Values => segments(x.len(), |r| sum_f32(&x[r]), |a, b| a + b),
            Summand::Squares => segments(x.len(), |r| sum_squares_f32(&x[r]), |a, b| a + b),
        }
    }

    /// Values of mixed magnitude, so the order of the additions shows in the f64 bits (f32
    /// values within a few binades of each other add exactly in f64, in any order).
    fn values(n: usize, seed: u32) -> Vec<f32> {
        let mut s = seed.max(1);
        (0..n)
            .map(|i| {
                s ^= s << 13;
                s ^= s >> 17;
                s ^= s << 5;
                let u = (s >> 8) as f32 / (1u32 << 24) as f32 - 0.5;
                u * [1.0, 1e-9, 3e-5, 0.3][i % 4]
            })
            .collect()
    }

    #[test]
    fn every_cut_into_runs_gives_the_bits_of_the_whole_reduction() {
        let sizes = [
            0,
            1,
            7,
            15,
            16,
            1023,
            1024,
            1025,
            4096 + 17,
            SEGMENT - 1,
            SEGMENT,
            SEGMENT + 1,
            3 * SEGMENT + 1000 + 5,
        ];
        for &n in &sizes {
            let x = values(n, n as u32 + 3);
            for summand in [Summand::Values, Summand::Squares] {
                let want = reference(summand, &x);
                // Runs of many lengths, one not a divisor of a block; recorded out of order,
                // with every third run skipped (read from memory by `total`).
                for run in [1usize, 7, 100, 1000, BLOCK, 3 * BLOCK + 5, 98304, n.max(1)] {
                    let lanes = BlockLanes::new(n, summand);
                    let starts: Vec<usize> = (0..n).step_by(run).collect();
                    for (i, &s) in starts.iter().enumerate().rev() {
                        if i % 3 != 2 {
                            lanes.record(s, &x[s..(s + run).min(n)]);
                        }
                    }
                    let got = lanes.total(&x);
                    assert_eq!(got.to_bits(), want.to_bits(), "n {n} run {run} {summand:?}");
                }
            }
        }
    }

    #[test]
    fn specials_and_overflowing_sums_match() {
        let n = 2 * SEGMENT + 3 * BLOCK + 21;
        for special in [
            f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            3e38,
            -0.0,
            f32::MIN_POSITIVE / 8.0,
        ] {
            let mut x = values(n, 11);
            for i in (5..n).step_by(4099) {
                x[i] = special;
            }
            for summand in [Summand::Values, Summand::Squares] {
                let want = reference(summand, &x);
                let lanes = BlockLanes::new(n, summand);
                for s in (0..n).step_by(6144) {
                    lanes.record(s, &x[s..(s + 6144).min(n)]);
                }
                let got = lanes.total(&x);
                assert!(
                    got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()),
                    "{special} {summand:?}: {got} vs {want}"
                );
            }
        }
    }

    #[test]
    fn storage_is_reused_and_reset() {
        let n = 5 * BLOCK;
        let x = values(n, 5);
        let y: Vec<f32> = x.iter().map(|v| v * 2.0).collect();
        {
            let lanes = BlockLanes::new(n, Summand::Values);
            lanes.record(0, &x);
            assert_eq!(
                lanes.total(&x).to_bits(),
                reference(Summand::Values, &x).to_bits()
            );
        }
        // A second reduction of other values records nothing: stale lanes must not be read.
        let lanes = BlockLanes::new(n, Summand::Values);
        assert_eq!(
            lanes.total(&y).to_bits(),
            reference(Summand::Values, &y).to_bits()
        );
        // A tensor of another length than announced is reduced from memory.
        assert_eq!(
            lanes.total(&y[..7]).to_bits(),
            reference(Summand::Values, &y[..7]).to_bits()
        );
    }
}
