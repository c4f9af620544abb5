//! The memory a train step holds (W8 and W9 in place, in a `Session`): planned by the buffer plan (`graph().memory`) and measured on the heap, next to `scripts/train_memory_torch.py`'s PyTorch figures.
//!
//! `cargo run --release --example train_memory`. A counting global allocator follows the
//! bytes allocated and not yet freed, on every thread. The parameters, Adam's state and the
//! batch are made first and counted apart (PyTorch's script counts the same three); then the
//! largest rise over what is held when a step starts is measured for the first step in a
//! fresh session (which allocates the buffer plan's buffers) and for the second (steady
//! state: the buffers are the session's already, as in a training loop). The plan's figures:
//! the sum of its buffers (what the session's arena holds, `Session::arena_bytes`), the peak
//! of the bytes live at one step of the schedule, and the bytes of forward values the
//! backward pass keeps.
//!
//! It measures and prints; it asserts only that the session holds what the plan says.

use grafo::prelude::*;
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

#[path = "../tests/common/training.rs"]
mod training;
use training::{cnn_train_step, mlp_train_step_in_place};

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

struct Tracking;

unsafe impl GlobalAlloc for Tracking {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        grew(layout.size());
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        grew(layout.size());
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        grew(new_size);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }
}

fn grew(size: usize) {
    let now = LIVE.fetch_add(size, Ordering::Relaxed) + size;
    PEAK.fetch_max(now, Ordering::Relaxed);
}

#[global_allocator]
static GLOBAL: Tracking = Tracking;

/// The largest rise of the live heap bytes while `f` runs, over what was live before it.
fn peak_rise<R>(f: impl FnOnce() -> R) -> (usize, R) {
    let start = LIVE.load(Ordering::SeqCst);
    PEAK.store(start, Ordering::SeqCst);
    let r = f();
    (PEAK.load(Ordering::SeqCst) - start, r)
}

fn uniform(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0
        })
        .collect()
}

fn mib(b: usize) -> String {
    format!("{:.2}", b as f64 / (1u64 << 20) as f64)
}

fn bytes<D: grafo::ndarray::Dimension>(arrays: &[&Array<f32, D>]) -> usize {
    arrays.iter().map(|a| a.len() * 4).sum()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("| workload | parameters | Adam state | batch | plan: buffers | plan: peak live | plan: saved | first step: heap peak | steady step: heap peak | held between steps |");
    println!("|---|---|---|---|---|---|---|---|---|---|");
    {
        let b = 256;
        let x = Array2::from_shape_vec((b, 784), uniform(b * 784, 41))?;
        let y = Array1::from_iter((0..b).map(|i| (i * 7 % 10) as i32));
        let mut w1 = Array2::from_shape_vec((784, 512), uniform(784 * 512, 42))? / 28.0;
        let mut w2 = Array2::from_shape_vec((512, 10), uniform(5120, 43))? / 22.6;
        let (mut b1, mut b2) = (Array1::<f32>::zeros(512), Array1::<f32>::zeros(10));
        let mut m = (w1.clone() * 0.0, b1.clone(), w2.clone() * 0.0, b2.clone());
        let mut v = m.clone();
        let params = bytes(&[&w1, &w2]) + bytes(&[&b1, &b2]);
        let batch = x.len() * 4 + y.len() * 4;
        let plan = mlp_train_step_in_place::graph().memory(&[("B", b)])?;
        let mut session = Session::new(SessionConfig {
            intra_op_threads: 2,
            ..Default::default()
        })?;
        let mut steps = Vec::new();
        let before = LIVE.load(Ordering::SeqCst);
        for t in 1..=2 {
            let (rise, loss) = peak_rise(|| {
                mlp_train_step_in_place::run(
                    &mut session,
                    &x,
                    &y,
                    &mut w1,
                    &mut b1,
                    &mut w2,
                    &mut b2,
                    &mut m.0,
                    &mut m.1,
                    &mut m.2,
                    &mut m.3,
                    &mut v.0,
                    &mut v.1,
                    &mut v.2,
                    &mut v.3,
                    t as f32,
                )
            });
            loss?;
            steps.push(rise);
        }
        let held = LIVE.load(Ordering::SeqCst).saturating_sub(before);
        assert_eq!(session.arena_bytes() as u64, plan.buffer_bytes());
        println!(
            "| W8 | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            mib(params),
            mib(2 * params),
            mib(batch),
            mib(plan.buffer_bytes() as usize),
            mib(plan.peak as usize),
            mib(plan.saved as usize),
            mib(steps[0]),
            mib(steps[1]),
            mib(held)
        );
    }
    {
        let b = 64;
        let x = Array4::from_shape_vec((b, 28, 28, 1), uniform(b * 784, 51))?;
        let y = Array1::from_iter((0..b).map(|i| (i * 7 % 10) as i32));
        let mut k1 = Array4::from_shape_vec((3, 3, 1, 32), uniform(288, 52))? * 0.3;
        let mut k2 = Array4::from_shape_vec((3, 3, 32, 64), uniform(18432, 53))? * 0.06;
        let mut w = Array2::from_shape_vec((1600, 10), uniform(16000, 54))? * 0.05;
        let (mut c1, mut c2) = (Array1::<f32>::zeros(32), Array1::<f32>::zeros(64));
        let mut c = Array1::<f32>::zeros(10);
        let zeros = (k1.clone() * 0.0, c1.clone(), k2.clone() * 0.0, c2.clone());
        let (mut m, mut v) = (
            (zeros.clone(), w.clone() * 0.0, c.clone()),
            (zeros, w.clone() * 0.0, c.clone()),
        );
        let params = bytes(&[&k1, &k2]) + w.len() * 4 + bytes(&[&c1, &c2, &c]);
        let batch = x.len() * 4 + y.len() * 4;
        let plan = cnn_train_step::graph().memory(&[("B", b)])?;
        let mut session = Session::new(SessionConfig {
            intra_op_threads: 2,
            ..Default::default()
        })?;
        let mut steps = Vec::new();
        let before = LIVE.load(Ordering::SeqCst);
        for t in 1..=2 {
            let (rise, loss) = peak_rise(|| {
                cnn_train_step::run(
                    &mut session,
                    &x,
                    &y,
                    &mut k1,
                    &mut c1,
                    &mut k2,
                    &mut c2,
                    &mut w,
                    &mut c,
                    &mut m.0 .0,
                    &mut m.0 .1,
                    &mut m.0 .2,
                    &mut m.0 .3,
                    &mut m.1,
                    &mut m.2,
                    &mut v.0 .0,
                    &mut v.0 .1,
                    &mut v.0 .2,
                    &mut v.0 .3,
                    &mut v.1,
                    &mut v.2,
                    t as f32,
                )
            });
            loss?;
            steps.push(rise);
        }
        let held = LIVE.load(Ordering::SeqCst).saturating_sub(before);
        assert_eq!(session.arena_bytes() as u64, plan.buffer_bytes());
        println!(
            "| W9 | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            mib(params),
            mib(2 * params),
            mib(batch),
            mib(plan.buffer_bytes() as usize),
            mib(plan.peak as usize),
            mib(plan.saved as usize),
            mib(steps[0]),
            mib(steps[1]),
            mib(held)
        );
    }
    println!("MiB. heap peak: the largest rise of the live heap bytes during the step, over what it starts with; the steady step's buffers are the session's already. held between steps: what the two steps left allocated (the session's buffers, kernels' kept scratch).");
    Ok(())
}
