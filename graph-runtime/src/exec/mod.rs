//! Where work runs and values live: CPU dispatch, the parallel drivers, buffers, the helpers of emitted code, the execution context of a compiled graph, and `Session`.
//!
//! Nothing here knows a kernel: this folder depends only on [`crate::dtype`] and
//! [`crate::error`], and the kernels build on it (never the other way round).
//!
//! - [`cpu`]: the instruction-set level, detected once, and the `multiversion!` macro;
//! - [`parallel`]: the drivers that split work over rayon or keep it on the calling thread;
//! - [`buffer`] and [`pages`]: checked, fallible allocation, huge pages for large buffers;
//! - [`out_buf`]: output buffers written in parallel blocks, each element once;
//! - [`compiled`]: the helpers code emitted by `#[graph]` calls (entry checks, views, results);
//! - [`context`]: [`ExecCtx`] and its buffer [`Arena`], re-exported here;
//! - [`session`] and [`profile`]: `Session`, and the profile of its runs.

pub mod buffer;
pub mod compiled;
pub mod context;
pub mod cpu;
pub mod out_buf;
pub mod pages;
pub mod parallel;
pub mod profile;
pub mod session;

pub use context::{Arena, ExecCtx, GroupTiming, Profiler, SlotBuffer, SlotElement, TraceEvent};
