//! Output buffers that kernels write in parallel blocks, write-only and each element once ([`OutBuf`], its blocks and row writers), and the fresh results made with them.

use super::buffer;
use crate::dtype::Element;
use crate::error::Error;
use rayon::prelude::*;
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A fresh zero-initialised buffer of `len` elements for the value of op `op`, or the error
/// of an allocation that failed.
#[inline]
pub fn fresh<T: Element>(op: &'static str, len: usize) -> Result<Vec<T>, Error> {
    let v = buffer::zeroed(op, len)?;
    super::pages::advise_huge(&v);
    Ok(v)
}

/// A fresh result of `len` elements written by `body`, run in parallel over whole units of
/// `unit_len` elements as [`super::parallel::for_each_chunk`] does; or the error of an
/// allocation that failed.
///
/// The buffer is never zeroed: `body(first_unit, block)` gets each block as a write-only
/// [`OutBlock`] and fills it with [`OutBlock::write_with`] or [`OutBlock::write_rows`], so
/// every element is stored once, by the kernel (zeroing first cost W1 a second pass over its
/// output). `body` sees every unit exactly once, in blocks of whole units; an empty result
/// makes one call with an empty block. Should `body` leave a block unwritten, the result
/// is zero-filled rather than uninitialised (see [`OutBuf::into_vec`]).
pub fn fresh_by_blocks<T: Element, F>(
    op: &'static str,
    len: usize,
    unit_len: usize,
    work_per_unit: usize,
    body: F,
) -> Result<Vec<T>, Error>
where
    F: Fn(usize, OutBlock<'_, T>) + Sync,
{
    let mut out = OutBuf::fresh(op, len)?;
    out.for_each_block(unit_len, work_per_unit, body);
    Ok(out.into_vec())
}

/// A result of `len` elements written by `body`, which gets the buffer as an [`OutBuf`]
/// (fresh: nothing initialised yet); or the error of an allocation that failed. For runtime
/// kernels that store every element themselves (conv2d: [`crate::linalg::conv::conv2d_buf`]).
pub fn fresh_with<T: Element>(
    op: &'static str,
    len: usize,
    body: impl FnOnce(&mut OutBuf<T>),
) -> Result<Vec<T>, Error> {
    let mut out = OutBuf::fresh(op, len)?;
    body(&mut out);
    Ok(out.into_vec())
}

/// The output buffer of a kernel that writes it in parallel blocks: either a reused buffer
/// (already initialised) or a fresh one whose blocks the kernel stores write-only, each
/// element once ([`OutBlock::write_with`], [`OutBlock::write_rows`], [`OutBlock::rows`]).
///
/// [`OutBuf::into_vec`] is safe whatever the kernel did: it knows from a count of the
/// elements the blocks initialised whether all of them were, and initialises the whole
/// buffer itself otherwise.
pub struct OutBuf<T> {
    buf: Vec<MaybeUninit<T>>,
    /// How many elements the blocks have initialised (each block once, blocks disjoint).
    initialised: AtomicUsize,
    /// The buffer was reused and all of it is initialised already.
    reused: bool,
}

/// One block of an [`OutBuf`], handed to one kernel call.
pub struct OutBlock<'a, T> {
    data: &'a mut [MaybeUninit<T>],
    initialised: &'a AtomicUsize,
    reused: bool,
}

impl<T: Element> OutBuf<T> {
    /// A fresh buffer of `len` elements, none initialised yet; or the error of an
    /// allocation that failed.
    pub fn fresh(op: &'static str, len: usize) -> Result<OutBuf<T>, Error> {
        let mut buf: Vec<MaybeUninit<T>> = buffer::with_capacity(op, len)?;
        // SAFETY: the capacity is at least `len` (reserved above), and a `MaybeUninit<T>`
        // needs no initialisation.
        unsafe { buf.set_len(len) };
        super::pages::advise_huge(&buf);
        Ok(OutBuf {
            buf,
            initialised: AtomicUsize::new(0),
            reused: false,
        })
    }

    /// A reused buffer, whose elements are initialised already.
    pub fn reused(v: Vec<T>) -> OutBuf<T> {
        let mut v = std::mem::ManuallyDrop::new(v);
        // SAFETY: `MaybeUninit<T>` has the size and alignment of `T`, so this is the same
        // allocation with the same length and capacity, now owned by `buf` alone.
        let buf = unsafe { Vec::from_raw_parts(v.as_mut_ptr().cast(), v.len(), v.capacity()) };
        OutBuf {
            buf,
            initialised: AtomicUsize::new(0),
            reused: true,
        }
    }

    /// All of the buffer as one block (for a kernel that runs on the calling thread).
    pub fn whole_block(&mut self) -> OutBlock<'_, T> {
        OutBlock {
            data: &mut self.buf[..],
            initialised: &self.initialised,
            reused: self.reused,
        }
    }

    /// The buffer in blocks of `block_len` elements (the last may be shorter), to be
    /// written in parallel.
    pub fn par_blocks(
        &mut self,
        block_len: usize,
    ) -> impl IndexedParallelIterator<Item = OutBlock<'_, T>> + '_ {
        let (initialised, reused) = (&self.initialised, self.reused);
        self.buf
            .par_chunks_mut(block_len.max(1))
            .map(move |data| OutBlock {
                data,
                initialised,
                reused,
            })
    }

    /// Calls `body(first_unit, block)` over the buffer cut into blocks of whole units of
    /// `unit_len` elements, as [`super::parallel::for_each_chunk`] cuts a slice: one call on
    /// this thread when the work is small (even for an empty buffer), else blocks on rayon.
    pub fn for_each_block<F>(&mut self, unit_len: usize, work_per_unit: usize, body: F)
    where
        F: Fn(usize, OutBlock<'_, T>) + Sync,
    {
        let unit_len = unit_len.max(1);
        let units = self.buf.len() / unit_len;
        let size = super::parallel::units_per_chunk(units, work_per_unit);
        if size >= units {
            let block = OutBlock {
                data: &mut self.buf[..],
                initialised: &self.initialised,
                reused: self.reused,
            };
            body(0, block);
            return;
        }
        self.par_blocks(size * unit_len)
            .enumerate()
            .for_each(|(i, block)| body(i * size, block));
    }

    /// How many elements the buffer holds.
    pub fn len(&self) -> usize {
        self.buf.len()
    }

    /// Whether the buffer holds no element.
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// Whether every element is initialised (a reused buffer, or a fresh one written whole).
    pub fn is_initialised(&self) -> bool {
        self.reused || self.initialised.load(Ordering::Relaxed) == self.buf.len()
    }

    /// The buffer as initialised elements, writing `T::default()` over all of them first if
    /// they were not all initialised: for kernels that take a `&mut [T]`.
    pub fn initialise_mut(&mut self) -> &mut [T] {
        self.initialise_all();
        // SAFETY: every element is initialised (checked, or written just above), and
        // `MaybeUninit<T>` has the layout of `T`.
        unsafe { &mut *(self.buf.as_mut_slice() as *mut [MaybeUninit<T>] as *mut [T]) }
    }

    /// Writes `T::default()` over every element unless all are initialised already (some
    /// block was not handed to a kernel, or a kernel left it incomplete).
    fn initialise_all(&mut self) {
        if !self.is_initialised() {
            // Writing over a `MaybeUninit` is always allowed.
            for x in self.buf.iter_mut() {
                x.write(T::default());
            }
            *self.initialised.get_mut() = self.buf.len();
        }
    }

    /// The whole buffer as possibly uninitialised memory, for a runtime kernel that stores
    /// every element through it (conv2d's gather kernel); see
    /// [`OutBuf::assume_all_initialised`].
    pub(crate) fn uninit_mut(&mut self) -> &mut [MaybeUninit<T>] {
        &mut self.buf
    }

    /// Records that every element has been initialised.
    ///
    /// # Safety
    /// Every element of the buffer has been written since it was made.
    pub(crate) unsafe fn assume_all_initialised(&mut self) {
        *self.initialised.get_mut() = self.buf.len();
    }

    /// The written buffer.
    pub fn into_vec(mut self) -> Vec<T> {
        self.initialise_all();
        let mut buf = std::mem::ManuallyDrop::new(std::mem::take(&mut self.buf));
        // SAFETY: every element is initialised: the buffer was reused (initialised when it
        // came in), or the blocks initialised `len` elements in all, and since blocks are
        // disjoint chunks of the buffer each initialised at most once (`init` takes the
        // block by value), that is every element; otherwise `initialise_all` initialised them.
        // `MaybeUninit<T>` has the layout of `T`, so the allocation is the one a `Vec<T>` of
        // this capacity frees.
        unsafe { Vec::from_raw_parts(buf.as_mut_ptr().cast::<T>(), buf.len(), buf.capacity()) }
    }
}

impl<'a, T: Element> OutBlock<'a, T> {
    /// Stores `f(j)` into element `j` of the block, for every `j` in order: the write-only
    /// path of a kernel that computes each element once, with no zeroing before. Inlined into
    /// the kernel (compiled for its instruction set), so the loop vectorises as a plain one.
    #[inline(always)]
    pub fn write_with(self, mut f: impl FnMut(usize) -> T) {
        for (j, x) in self.data.iter_mut().enumerate() {
            x.write(f(j));
        }
        if !self.reused {
            self.initialised
                .fetch_add(self.data.len(), Ordering::Relaxed);
        }
    }

    /// Stores the block row by row, `row` elements a row: for the `i`-th row of the block,
    /// `row_fn(i)` is called once (to bind what the row reads) and gives the function whose
    /// value at `j` is the row's element `j`. Elements after the last whole row, if any, are
    /// left unwritten (and so the result zero-filled, see [`OutBuf::into_vec`]).
    #[inline(always)]
    pub fn write_rows<G: FnMut(usize) -> T>(self, row: usize, mut row_fn: impl FnMut(usize) -> G) {
        if row == 0 {
            return;
        }
        let mut written = 0;
        for (i, r) in self.data.chunks_exact_mut(row).enumerate() {
            let mut f = row_fn(i);
            for (j, x) in r.iter_mut().enumerate() {
                x.write(f(j));
            }
            written += row;
        }
        if !self.reused {
            self.initialised.fetch_add(written, Ordering::Relaxed);
        }
    }

    /// The block as a row writer, `row` elements a row (see [`OutRows`]).
    #[inline]
    pub fn rows(self, row: usize) -> OutRows<'a, T> {
        OutRows {
            data: self.data,
            row,
            next: 0,
            initialised: self.initialised,
            reused: self.reused,
        }
    }

    /// How many elements the block holds.
    #[inline]
    pub fn len(&self) -> usize {
        self.data.len()
    }

    /// Whether the block holds no element.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }
}

/// A block of an [`OutBuf`] written one row after the other by a row-fused kernel (W4's
/// statistics and normalised rows): each [`OutRows::write_row`] stores the next row whole
/// and hands it back for the later ops of the same row to read. What was written is counted
/// when the writer is dropped, so [`OutBuf::into_vec`] knows whether every element was.
pub struct OutRows<'a, T: Element> {
    data: &'a mut [MaybeUninit<T>],
    row: usize,
    /// Elements written so far: `data[..next]`.
    next: usize,
    initialised: &'a AtomicUsize,
    reused: bool,
}

impl<T: Element> OutRows<'_, T> {
    /// Stores the next row, of `n` elements (the writer's row length), its element `j`
    /// being `f(j)`, and returns it.
    ///
    /// `n` is the loop bound the caller's slices were cut to, so that the optimiser sees
    /// `j < n` and drops their bounds checks (with the writer's own length it keeps them, and
    /// runs the last vector's worth of the row as scalar code).
    ///
    /// Panics if `n` is not the row length or the block has no row left (the kernels write
    /// exactly the rows they are given).
    #[inline(always)]
    pub fn write_row(&mut self, n: usize, mut f: impl FnMut(usize) -> T) -> &[T] {
        assert_eq!(n, self.row, "row length");
        let start = self.next;
        let row = &mut self.data[start..start + n];
        #[allow(clippy::needless_range_loop)] // The bound must be `n` itself (see above).
        for j in 0..n {
            row[j].write(f(j));
        }
        self.next = start + self.row;
        // SAFETY: every element of `row` was written just above, and `MaybeUninit<T>` has the
        // layout of `T`; the shared borrow lives no longer than the writer's.
        unsafe { &*(row as *const [MaybeUninit<T>] as *const [T]) }
    }

    /// Stores the next row from `fast` when `try_fast` and `accept` takes the largest of the
    /// range checks `fast` returns with its elements, else from `exact`, and returns the row.
    /// The rows that divide by a [`SharedDivisor`] pass its fused quotients as `fast` and the
    /// plain tree as `exact`, which then overwrites a row whose checks failed.
    ///
    /// Panics as [`OutRows::write_row`].
    ///
    /// [`SharedDivisor`]: crate::kernels::division::SharedDivisor
    #[inline(always)]
    pub fn write_row_with_fallback<K: Copy + Ord + Default>(
        &mut self,
        n: usize,
        try_fast: bool,
        mut fast: impl FnMut(usize) -> (T, K),
        accept: impl FnOnce(K) -> bool,
        exact: impl FnMut(usize) -> T,
    ) -> &[T] {
        if try_fast {
            assert_eq!(n, self.row, "row length");
            let start = self.next;
            let row = &mut self.data[start..start + n];
            let mut worst = K::default();
            #[allow(clippy::needless_range_loop)] // The bound must be `n` itself (see `write_row`).
            for j in 0..n {
                let (v, k) = fast(j);
                row[j].write(v);
                worst = worst.max(k);
            }
            if accept(worst) {
                self.next = start + n;
                // SAFETY: every element of `row` was written just above, and `MaybeUninit<T>`
                // has the layout of `T`; the shared borrow lives no longer than the writer's.
                return unsafe { &*(row as *const [MaybeUninit<T>] as *const [T]) };
            }
        }
        self.write_row(n, exact)
    }
}

impl<T: Element> Drop for OutRows<'_, T> {
    fn drop(&mut self) {
        if !self.reused {
            self.initialised.fetch_add(self.next, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `fresh_by_blocks` hands every unit to the kernel exactly once, at its own index, in
    /// blocks of whole units, and returns what the kernel wrote, through both write-only
    /// forms; sizes around the parallel cut-off, units that do not divide the chunks, and
    /// nothing at all.
    #[test]
    fn fresh_by_blocks_writes_every_unit_once() {
        let big = crate::exec::parallel::PARALLEL_CUTOFF;
        for (len, unit) in [
            (0usize, 1usize),
            (0, 0),
            (1, 1),
            (7, 7),
            (1023, 1),
            (big - 1, 1),
            (big + 1, 1),
            (3 * big + 5, 1),
            (1021 * 97, 97),
            (2 * 7 * big, 7 * big),
        ] {
            for by_rows in [false, true] {
                let calls = std::sync::atomic::AtomicUsize::new(0);
                let u = unit.max(1);
                let v: Vec<f32> = fresh_by_blocks("test", len, unit, 64, |first, out| {
                    calls.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    assert_eq!(out.len() % u, 0, "len {len}: a block of whole units");
                    let base = first * u;
                    if by_rows {
                        out.write_rows(u, |i| move |j| (base + i * u + j) as f32 + 0.5);
                    } else {
                        out.write_with(|k| (base + k) as f32 + 0.5);
                    }
                })
                .unwrap();
                assert_eq!(v.len(), len);
                assert!(
                    v.iter().enumerate().all(|(i, &x)| x == i as f32 + 0.5),
                    "len {len} unit {unit} rows {by_rows}"
                );
                assert!(calls.into_inner() >= 1);
            }
        }
    }

    /// A kernel that leaves part of a fresh block unwritten gets zeros there, never
    /// uninitialised memory (a row form handed a block that is not whole rows, a block
    /// dropped unwritten).
    #[test]
    fn unwritten_elements_read_as_zero() {
        let v: Vec<i64> = fresh_by_blocks("test", 10, 1, 1, |_, out| {
            out.write_rows(3, |_| |_| 7);
        })
        .unwrap();
        assert_eq!(v, vec![0; 10]);
        let v: Vec<f64> = fresh_by_blocks("test", 5, 1, 1, |_, _out| {}).unwrap();
        assert_eq!(v, vec![0.0; 5]);
    }

    /// An `OutBuf` gives back what its blocks were written with, fresh or reused; blocks a
    /// kernel never took leave zeros, never uninitialised memory.
    #[test]
    fn out_buf_blocks_cover_the_buffer() {
        for len in [0usize, 1, 7, 1023, 3 * 16384 + 3] {
            for block in [1usize, 7, 4096] {
                let mut fresh = OutBuf::<f64>::fresh("test", len).unwrap();
                let mut reused = OutBuf::reused(vec![-1.0f64; len]);
                for buf in [&mut fresh, &mut reused] {
                    buf.par_blocks(block).enumerate().for_each(|(i, b)| {
                        b.write_with(|k| (i * block + k) as f64);
                    });
                }
                for (what, v) in [("fresh", fresh.into_vec()), ("reused", reused.into_vec())] {
                    assert_eq!(v.len(), len);
                    assert!(
                        v.iter().enumerate().all(|(i, &x)| x == i as f64),
                        "{what} {len} {block}"
                    );
                }
            }
            let mut partly = OutBuf::<i32>::fresh("test", len).unwrap();
            partly.par_blocks(5).enumerate().for_each(|(i, b)| {
                if i % 2 == 0 {
                    b.write_with(|_| 3);
                }
            });
            let v = partly.into_vec();
            assert!(v.iter().all(|&x| x == 0 || x == 3) && v.len() == len);
            let mut whole = OutBuf::<f32>::fresh("test", len).unwrap();
            whole.whole_block().write_with(|_| 0.5);
            let v = whole.into_vec();
            assert!(v.len() == len && v.iter().all(|&x| x == 0.5));
        }
    }

    /// Row writers store whole rows in order and hand each back; a block whose writer stopped
    /// early makes the result zero-filled, fresh or not partly uninitialised.
    #[test]
    fn out_rows_write_rows_in_order() {
        for (rows, row) in [(0usize, 3usize), (1, 1), (7, 5), (1023, 1), (4, 0)] {
            let len = rows * row;
            let mut buf = OutBuf::<f32>::fresh("test", len).unwrap();
            buf.par_blocks(row.max(1) * 3)
                .enumerate()
                .for_each(|(i, b)| {
                    let n = b.len() / row.max(1);
                    let mut w = b.rows(row);
                    for r in 0..n {
                        let got = w.write_row(row, |j| ((i * 3 + r) * row + j) as f32);
                        assert_eq!(got.len(), row);
                        assert!(got
                            .iter()
                            .enumerate()
                            .all(|(j, &x)| x == ((i * 3 + r) * row + j) as f32));
                    }
                });
            let v = buf.into_vec();
            assert!(
                v.iter().enumerate().all(|(i, &x)| x == i as f32),
                "{rows}x{row}"
            );
        }
        let mut buf = OutBuf::<i64>::fresh("test", 12).unwrap();
        {
            let mut w = buf.whole_block().rows(4);
            w.write_row(4, |j| j as i64 + 1);
        }
        assert_eq!(buf.into_vec(), vec![0; 12]);
    }

    /// A row with a fallback keeps the fast values when their largest check is accepted, and
    /// is written by the exact function over them when it is not, or when not tried.
    #[test]
    fn out_rows_fall_back_on_a_rejected_check() {
        let mut buf = OutBuf::<f32>::fresh("test", 9).unwrap();
        {
            let mut w = buf.whole_block().rows(3);
            let mut seen = None;
            let fast = |j: usize| (j as f32, [4u32, 9, 2][j]);
            let row = w.write_row_with_fallback(
                3,
                true,
                fast,
                |k| {
                    seen = Some(k);
                    k < 10
                },
                |j| -(j as f32),
            );
            assert_eq!(row, &[0.0, 1.0, 2.0]);
            assert_eq!(seen, Some(9));
            let row = w.write_row_with_fallback(3, true, fast, |k| k < 9, |j| -(j as f32));
            assert_eq!(row, &[0.0, -1.0, -2.0]);
            let row = w.write_row_with_fallback(
                3,
                false,
                |j| (j as f32, 0u64),
                |_| true,
                |j| j as f32 + 10.0,
            );
            assert_eq!(row, &[10.0, 11.0, 12.0]);
        }
        assert_eq!(
            buf.into_vec(),
            vec![0.0, 1.0, 2.0, 0.0, -1.0, -2.0, 10.0, 11.0, 12.0]
        );
    }

    /// A result whose size does not fit is an error, not an abort.
    #[test]
    fn fresh_by_blocks_reports_an_allocation_that_cannot_succeed() {
        let e = fresh_by_blocks::<f64, _>("huge", usize::MAX / 4, 1, 1, |_, _| {}).unwrap_err();
        assert!(e.to_string().contains("huge"), "{e}");
    }
}
