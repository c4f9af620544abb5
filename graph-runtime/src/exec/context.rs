//! The execution context that compiled graphs run in: the buffer arena of the static plan and the profiling hook.
//!
//! A compiled graph asks its context for the buffer of each slot of its plan
//! ([`ExecCtx::take`]) and hands it back when the plan says the slot is free
//! ([`ExecCtx::give`]). A plain call uses its thread's [`Arena`] for the graph and a
//! `Session` one arena per graph, so steady-state runs allocate nothing but their outputs.
//! A new buffer comes zeroed from [`super::buffer`] (never uninitialised memory), and one
//! that cannot be allocated is an `Err`, not an abort.

use super::out_buf::{self, OutBlock, OutBuf};
use crate::dtype::{DType, Element};
use crate::error::Error;
use std::time::Instant;

/// A typed buffer held by one slot of an arena.
#[derive(Debug, Default)]
pub enum SlotBuffer {
    #[default]
    Empty,
    F32(Vec<f32>),
    F64(Vec<f64>),
    I32(Vec<i32>),
    I64(Vec<i64>),
    Bool(Vec<bool>),
}

/// Element types that can live in an arena slot.
pub trait SlotElement: Element {
    fn wrap(v: Vec<Self>) -> SlotBuffer;
    fn unwrap(b: SlotBuffer) -> Option<Vec<Self>>;
}

macro_rules! slot_element {
    ($t:ty, $v:ident) => {
        impl SlotElement for $t {
            fn wrap(v: Vec<Self>) -> SlotBuffer {
                SlotBuffer::$v(v)
            }
            fn unwrap(b: SlotBuffer) -> Option<Vec<Self>> {
                match b {
                    SlotBuffer::$v(v) => Some(v),
                    _ => None,
                }
            }
        }
    };
}
slot_element!(f32, F32);
slot_element!(f64, F64);
slot_element!(i32, I32);
slot_element!(i64, I64);
slot_element!(bool, Bool);

/// The buffers of one graph's static plan, kept between runs by a session.
#[derive(Debug, Default)]
pub struct Arena {
    slots: Vec<SlotBuffer>,
    /// The arenas of the two branches of a forked section (see [`ExecCtx::fork2`]).
    children: Vec<Arena>,
}

impl Arena {
    /// An empty arena; allocates nothing until a slot is first taken.
    pub const fn new() -> Arena {
        Arena {
            slots: Vec::new(),
            children: Vec::new(),
        }
    }

    /// Total bytes held by all slots.
    pub fn bytes(&self) -> usize {
        self.slots
            .iter()
            .map(|s| match s {
                SlotBuffer::Empty => 0,
                SlotBuffer::F32(v) => v.capacity() * 4,
                SlotBuffer::F64(v) => v.capacity() * 8,
                SlotBuffer::I32(v) => v.capacity() * 4,
                SlotBuffer::I64(v) => v.capacity() * 8,
                SlotBuffer::Bool(v) => v.capacity(),
            })
            .sum::<usize>()
            + self.children.iter().map(Arena::bytes).sum::<usize>()
    }
}

/// Per-group wall-time accumulation, filled when a session profiles.
#[derive(Debug, Default, Clone)]
pub struct Profiler {
    /// One entry per (graph, group) seen, in first-seen order.
    pub groups: Vec<GroupTiming>,
    /// Trace events (start, duration) for the Chrome trace export.
    pub events: Vec<TraceEvent>,
    /// When profiling started; trace timestamps are relative to it.
    pub epoch: Option<Instant>,
}

/// Accumulated time of one fusion group.
#[derive(Debug, Clone)]
pub struct GroupTiming {
    pub graph: &'static str,
    pub group: usize,
    /// The ops of the group and its output shape, as the macro described them.
    pub label: &'static str,
    pub calls: u64,
    pub total_ns: u128,
}

/// One timed execution of a group.
#[derive(Debug, Clone)]
pub struct TraceEvent {
    pub graph: &'static str,
    pub group: usize,
    pub start_ns: u128,
    pub duration_ns: u128,
}

impl Profiler {
    /// Adds one timed execution of `group` of `graph`.
    pub fn record(
        &mut self,
        graph: &'static str,
        group: usize,
        label: &'static str,
        start: Instant,
    ) {
        let now = Instant::now();
        let epoch = *self.epoch.get_or_insert(start);
        let duration_ns = now.duration_since(start).as_nanos();
        let entry = match self
            .groups
            .iter_mut()
            .position(|g| g.group == group && std::ptr::eq(g.graph, graph))
        {
            Some(i) => &mut self.groups[i],
            None => {
                self.groups.push(GroupTiming {
                    graph,
                    group,
                    label,
                    calls: 0,
                    total_ns: 0,
                });
                self.groups.last_mut().expect("just pushed")
            }
        };
        entry.calls += 1;
        entry.total_ns += duration_ns;
        self.events.push(TraceEvent {
            graph,
            group,
            start_ns: start.saturating_duration_since(epoch).as_nanos(),
            duration_ns,
        });
    }
}

/// What a compiled graph runs with: an arena for its buffer plan and an optional profiler.
pub struct ExecCtx<'a> {
    graph: &'static str,
    arena: &'a mut Arena,
    profiler: Option<&'a mut Profiler>,
    inter_op_threads: usize,
}

impl<'a> ExecCtx<'a> {
    pub fn new(
        graph: &'static str,
        arena: &'a mut Arena,
        profiler: Option<&'a mut Profiler>,
    ) -> ExecCtx<'a> {
        ExecCtx {
            graph,
            arena,
            profiler,
            inter_op_threads: 1,
        }
    }

    /// Lets independent branches of the schedule run concurrently on up to `n` threads.
    pub fn with_inter_op_threads(mut self, n: usize) -> ExecCtx<'a> {
        self.inter_op_threads = n.max(1);
        self
    }

    /// Whether a forked section should run its two branches concurrently: more than one
    /// inter-op thread, and no profiler (whose record is one sequence).
    #[inline]
    pub fn run_branches_concurrently(&self) -> bool {
        self.inter_op_threads > 1 && self.profiler.is_none()
    }

    /// Two contexts over the two child arenas of this one, for the two branches of a forked
    /// section; each keeps its buffers between runs like the parent.
    pub fn fork2(&mut self) -> (ExecCtx<'_>, ExecCtx<'_>) {
        if self.arena.children.len() < 2 {
            self.arena.children.resize_with(2, Arena::new);
        }
        let (a, b) = self.arena.children.split_at_mut(1);
        let n = self.inter_op_threads;
        (
            ExecCtx {
                graph: self.graph,
                arena: &mut a[0],
                profiler: None,
                inter_op_threads: n,
            },
            ExecCtx {
                graph: self.graph,
                arena: &mut b[0],
                profiler: None,
                inter_op_threads: n,
            },
        )
    }

    /// The buffer of `slot`, resized to `len` elements, for the value of op `op`.
    ///
    /// Its contents are unspecified but initialised (zeros in a fresh buffer, an earlier
    /// value in a reused one): the kernel that writes it overwrites all of it. It allocates
    /// only when the slot is new, of another dtype, or too small; a buffer that cannot be
    /// allocated is [`Error::OutOfMemory`] (or [`Error::SizeOverflow`]) naming `op`.
    #[inline]
    pub fn take<T: SlotElement>(
        &mut self,
        slot: usize,
        len: usize,
        op: &'static str,
    ) -> Result<Vec<T>, Error> {
        if let Some(v) = self.reusable(slot, len) {
            return Ok(v);
        }
        out_buf::fresh(op, len)
    }

    /// The buffer of `slot` with `len` elements, written by `body`: the slot's own buffer
    /// when it holds one large enough (initialised), else a fresh one nothing has
    /// initialised (see [`out_buf::fresh_with`]).
    #[inline]
    pub fn take_with<T: SlotElement>(
        &mut self,
        slot: usize,
        len: usize,
        op: &'static str,
        body: impl FnOnce(&mut OutBuf<T>),
    ) -> Result<Vec<T>, Error> {
        let Some(v) = self.reusable(slot, len) else {
            return out_buf::fresh_with(op, len, body);
        };
        let mut out = OutBuf::reused(v);
        body(&mut out);
        Ok(out.into_vec())
    }

    /// The buffer of `slot` with `len` elements, written by `body` over whole units of
    /// `unit_len` elements in parallel (as [`super::parallel::for_each_chunk`]), each block
    /// handed over write-only ([`OutBlock`]).
    ///
    /// The slot's own buffer when it holds one large enough; otherwise (a result moved out
    /// by the previous run, a first run) a fresh one made by
    /// [`out_buf::fresh_by_blocks`], never zeroed: the kernel's stores are the only
    /// ones. An empty result makes one call with an empty block.
    #[inline]
    pub fn take_written<T: SlotElement, F>(
        &mut self,
        slot: usize,
        len: usize,
        op: &'static str,
        unit_len: usize,
        work_per_unit: usize,
        body: F,
    ) -> Result<Vec<T>, Error>
    where
        F: Fn(usize, OutBlock<'_, T>) + Sync,
    {
        let Some(v) = self.reusable(slot, len) else {
            return out_buf::fresh_by_blocks(op, len, unit_len, work_per_unit, body);
        };
        let mut out = OutBuf::reused(v);
        out.for_each_block(unit_len, work_per_unit, body);
        Ok(out.into_vec())
    }

    /// The buffer of `slot` with `len` elements as an [`OutBuf`] for a
    /// kernel that writes it in parallel blocks: the slot's own buffer when it holds one large
    /// enough, else a fresh one initialised block by block.
    #[inline]
    pub fn take_out<T: SlotElement>(
        &mut self,
        slot: usize,
        len: usize,
        op: &'static str,
    ) -> Result<OutBuf<T>, Error> {
        match self.reusable(slot, len) {
            Some(v) => Ok(OutBuf::reused(v)),
            None => OutBuf::fresh(op, len),
        }
    }

    /// Returns a buffer to `slot` so that a later step (or run) reuses it.
    #[inline]
    pub fn give<T: SlotElement>(&mut self, slot: usize, v: Vec<T>) {
        *self.slot_mut(slot) = T::wrap(v);
    }

    /// Slot `slot` of the arena, which grows to hold it.
    #[inline]
    fn slot_mut(&mut self, slot: usize) -> &mut SlotBuffer {
        if slot >= self.arena.slots.len() {
            self.arena.slots.resize_with(slot + 1, || SlotBuffer::Empty);
        }
        &mut self.arena.slots[slot]
    }

    /// The buffer `slot` holds, resized to `len` elements, when it holds one of type `T` with
    /// room for them; otherwise `None`, with whatever it held already dropped, so that the
    /// caller's fresh buffer makes the peak one buffer, not two.
    #[inline]
    fn reusable<T: SlotElement>(&mut self, slot: usize, len: usize) -> Option<Vec<T>> {
        let held = std::mem::take(self.slot_mut(slot));
        let mut v = T::unwrap(held).unwrap_or_default();
        if v.capacity() < len {
            return None;
        }
        v.resize(len, T::default());
        Some(v)
    }

    /// The start time of a group, when profiling.
    #[inline]
    pub fn start(&self) -> Option<Instant> {
        if self.profiler.is_some() {
            Some(Instant::now())
        } else {
            None
        }
    }

    /// Records the time of `group` since `start`, when profiling.
    #[inline]
    pub fn record(&mut self, group: usize, label: &'static str, start: Option<Instant>) {
        if let (Some(p), Some(s)) = (self.profiler.as_deref_mut(), start) {
            p.record(self.graph, group, label, s);
        }
    }

    /// The dtype tag of a slot's current buffer (for tests).
    pub fn slot_dtype(&self, slot: usize) -> Option<DType> {
        match self.arena.slots.get(slot)? {
            SlotBuffer::Empty => None,
            SlotBuffer::F32(_) => Some(DType::F32),
            SlotBuffer::F64(_) => Some(DType::F64),
            SlotBuffer::I32(_) => Some(DType::I32),
            SlotBuffer::I64(_) => Some(DType::I64),
            SlotBuffer::Bool(_) => Some(DType::Bool),
        }
    }
}
