//! The parallel drivers every kernel uses: split work over rayon, or stay on the calling thread when it is small.
//!
//! Work is counted in abstract units (about one cheap arithmetic operation per element).
//! Below [`PARALLEL_CUTOFF`] units nothing touches the thread pool, so small graphs pay no
//! synchronisation. Above it, the work is cut into chunks of at least [`MIN_CHUNK_WORK`]
//! units, a few chunks per thread of the current pool (so a `Session`'s own pool, entered
//! with `ThreadPool::install`, is honoured).

use rayon::prelude::*;
use std::ops::Range;

/// Total work (in units) below which a kernel runs serially on the calling thread.
pub const PARALLEL_CUTOFF: usize = 32 * 1024;

/// The least work (in units) one parallel chunk gets, so that scheduling stays cheap.
pub const MIN_CHUNK_WORK: usize = 16 * 1024;

/// How many chunks each thread gets, so uneven chunks still balance.
const CHUNKS_PER_THREAD: usize = 4;

/// How many units each chunk holds, or `None` when the work should stay serial.
fn chunk_units(units: usize, work_per_unit: usize) -> Option<usize> {
    let work_per_unit = work_per_unit.max(1);
    let threads = rayon::current_num_threads();
    if threads <= 1 || units.saturating_mul(work_per_unit) < PARALLEL_CUTOFF || units < 2 {
        return None;
    }
    let by_work = MIN_CHUNK_WORK.div_ceil(work_per_unit);
    let by_threads = units.div_ceil(threads * CHUNKS_PER_THREAD);
    let size = by_work.max(by_threads).max(1);
    if size >= units {
        None
    } else {
        Some(size)
    }
}

/// How many units each parallel chunk should hold: all of them when the work should stay serial.
pub fn units_per_chunk(units: usize, work_per_unit: usize) -> usize {
    chunk_units(units, work_per_unit).unwrap_or(units).max(1)
}

/// Calls `body(first_unit_index, chunk)` over `out` cut into chunks of whole units of `unit_len` elements.
///
/// Serial (one call covering everything, on this thread) when the total work
/// `units * work_per_unit` is below [`PARALLEL_CUTOFF`]; otherwise the chunks run on rayon.
/// `out.len()` must be a multiple of `unit_len`; an empty `out` still makes one call.
pub fn for_each_chunk<T: Send, F>(out: &mut [T], unit_len: usize, work_per_unit: usize, body: F)
where
    F: Fn(usize, &mut [T]) + Sync,
{
    let unit_len = unit_len.max(1);
    let units = out.len() / unit_len;
    match chunk_units(units, work_per_unit) {
        None => body(0, out),
        Some(size) => out
            .par_chunks_mut(size * unit_len)
            .enumerate()
            .for_each(|(i, chunk)| body(i * size, chunk)),
    }
}

/// Maps `body` over ranges covering `0..units` and folds the results with `combine`, in order.
///
/// Serial (`body(0..units)`, even for `units == 0`) below [`PARALLEL_CUTOFF`]. The split
/// depends only on `units`, `work_per_unit` and the pool's thread count, so the result is
/// deterministic for a fixed thread count.
pub fn map_reduce<A: Send, F, C>(units: usize, work_per_unit: usize, body: F, combine: C) -> A
where
    F: Fn(Range<usize>) -> A + Sync,
    C: Fn(A, A) -> A + Sync,
{
    let Some(size) = chunk_units(units, work_per_unit) else {
        return body(0..units);
    };
    let chunks = units.div_ceil(size);
    let parts: Vec<A> = (0..chunks)
        .into_par_iter()
        .map(|c| body(c * size..((c + 1) * size).min(units)))
        .collect();
    let mut parts = parts.into_iter();
    let first = parts.next().expect("at least two chunks when parallel");
    parts.fold(first, combine)
}

/// Calls `body(index, item)` for each item of `items`, on rayon: the driver of the emitted
/// row-fused chains, whose items are tuples of their outputs' blocks.
///
/// `body` is a `&dyn Fn`, so rayon's plumbing under it is compiled once per item type in the
/// user's crate (per number and element types of a chain's outputs), not once per chain:
/// each closure is a type of its own. It is called once per block of rows, never per
/// element.
pub fn for_each_indexed<I>(items: I, body: &(dyn Fn(usize, I::Item) + Sync))
where
    I: IndexedParallelIterator,
{
    items.enumerate().for_each(|(i, item)| body(i, item));
}
