//! First call vs steady call of W1 (gelu), W3 (convnet, both arms), W4 (layernorm) and the train steps W8 and W9, each in fresh processes.
//!
//! `cargo run --release --example first_call [-- PROCESSES]` spawns this program again once
//! per workload and process (3 by default). Each child makes its inputs (not timed), times
//! the very first call of the compiled function in that process (which also starts rayon's
//! pool and meets fresh pages), then 15 more calls, and prints the first and the median of
//! the others. The parent prints, per workload, the median over the processes of both and
//! their ratio (the target of issue 12: the first call within 2x the steady one), for wall
//! time and for the CPU time the process used during the call (on a machine shared with
//! other work, a fresh process's new threads wait for a core, which the wall time counts),
//! and the minor page faults of the calls (fresh memory touched for the first time: they
//! do not depend on the machine's load).
//!
//! It measures and prints; it asserts only that the children ran (speed is never a test).

use grafo::prelude::*;
use std::process::Command;
use std::time::Instant;

#[path = "../tests/common/workloads.rs"]
mod workloads;
use workloads::{convnet, gelu, layernorm};

#[path = "../tests/common/training.rs"]
mod training;
use training::{cnn_train_step, mlp_train_step_in_place};

/// The workloads a child can run; `+pool` starts rayon's pool before the first call, so
/// the difference to the plain case is what starting the pool costs.
/// W8 and W9 are train steps with their parameters updated in place, so each call is the next
/// step of training (the same work as the one before).
/// `_session` runs the train step in a `Session` made before the first call, as a training
/// loop does: the session's pool has started, the step's buffers are the session's from the
/// first step on.
const CASES: [&str; 10] = [
    "W1",
    "W1+pool",
    "W3_t_inf",
    "W3_t_inf+pool",
    "W3_t_0",
    "W4",
    "W8",
    "W8_session",
    "W9",
    "W9_session",
];

/// Calls after the first; their median is the steady time.
const STEADY_CALLS: usize = 15;

/// Deterministic uniform values in [-1, 1) (xorshift32), as in the benches.
fn uniform(n: usize, seed: u32) -> Vec<f32> {
    let mut s = seed.wrapping_mul(2654435761).wrapping_add(1);
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 17;
            s ^= s << 5;
            (s >> 8) as f32 / (1u32 << 23) as f32 - 1.0
        })
        .collect()
}

/// CPU time used by this process so far (all its threads), in ms.
fn process_cpu_ms() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec to write into.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime failed");
    ts.tv_sec as f64 * 1e3 + ts.tv_nsec as f64 * 1e-6
}

/// Minor page faults of this process so far: fresh memory touched for the first time.
fn page_faults() -> f64 {
    // SAFETY: an all-zero `rusage` is a valid value to write into.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `usage` is a valid rusage to write into.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    assert_eq!(rc, 0, "getrusage failed");
    usage.ru_minflt as f64
}

/// One call's wall time and the process CPU time it used, in ms, and its page faults.
fn timed<T>(f: &mut impl FnMut() -> T) -> (f64, f64, f64) {
    let (t, cpu, faults) = (Instant::now(), process_cpu_ms(), page_faults());
    std::hint::black_box(f());
    (
        t.elapsed().as_secs_f64() * 1e3,
        process_cpu_ms() - cpu,
        page_faults() - faults,
    )
}

/// Times `f` once, then [`STEADY_CALLS`] times; returns the first call's (wall, CPU, page
/// faults) and the medians of the others'.
fn first_and_steady<T>(mut f: impl FnMut() -> T) -> [f64; 6] {
    let first = timed(&mut f);
    let (mut wall, mut cpu, mut faults) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..STEADY_CALLS {
        let (w, c, p) = timed(&mut f);
        wall.push(w);
        cpu.push(c);
        faults.push(p);
    }
    [
        first.0,
        median(&mut wall),
        first.1,
        median(&mut cpu),
        first.2,
        median(&mut faults),
    ]
}

fn session() -> Session {
    Session::new(SessionConfig {
        intra_op_threads: 2,
        ..Default::default()
    })
    .expect("a session")
}

/// Runs one workload in this (fresh) process and prints `first <ms> steady <ms>`.
fn child(case: &str) -> Result<(), Box<dyn std::error::Error>> {
    let case = match case.strip_suffix("+pool") {
        Some(workload) => {
            // Every thread of the global pool has started and run something.
            rayon::broadcast(|_| ());
            workload
        }
        None => case,
    };
    let times = match case {
        "W1" => {
            let x = Array1::from_vec(uniform(4 << 20, 1)) * 4.0;
            first_and_steady(|| gelu(&x).unwrap())
        }
        "W3_t_inf" | "W3_t_0" => {
            let x = Array4::from_shape_vec((1, 512, 512, 3), uniform(512 * 512 * 3, 21))?;
            let k0 = Array4::from_shape_vec((3, 3, 3, 16), uniform(432, 22))?;
            let b0 = Array1::from_vec(uniform(16, 23));
            let k1 = Array4::from_shape_vec((3, 3, 16, 16), uniform(2304, 24))?;
            let b1 = Array1::from_vec(uniform(16, 25));
            let limit = arr0(if case == "W3_t_inf" {
                f32::INFINITY
            } else {
                0.0
            });
            first_and_steady(|| convnet(&x, &k0, &b0, &k1, &b1, &limit).unwrap())
        }
        "W4" => {
            let x = Array2::from_shape_vec((4096, 1024), uniform(4096 * 1024, 31))?;
            let gamma = Array1::from_vec(uniform(1024, 32));
            let beta = Array1::from_vec(uniform(1024, 33));
            first_and_steady(|| layernorm(&x, &gamma, &beta).unwrap())
        }
        "W8" | "W8_session" => {
            let mut session = case.ends_with("_session").then(session);
            let b = 256;
            let x = Array2::from_shape_vec((b, 784), uniform(b * 784, 41))?;
            let y = Array1::from_iter((0..b).map(|i| (i * 7 % 10) as i32));
            let mut w1 = Array2::from_shape_vec((784, 512), uniform(784 * 512, 42))? / 28.0;
            let mut w2 = Array2::from_shape_vec((512, 10), uniform(5120, 43))? / 22.6;
            let (mut b1, mut b2) = (Array1::<f32>::zeros(512), Array1::<f32>::zeros(10));
            let mut m = (w1.clone() * 0.0, b1.clone(), w2.clone() * 0.0, b2.clone());
            let mut v = m.clone();
            let mut t = 0.0;
            first_and_steady(|| {
                t += 1.0;
                match session.as_mut() {
                    Some(s) => mlp_train_step_in_place::run(
                        s, &x, &y, &mut w1, &mut b1, &mut w2, &mut b2, &mut m.0, &mut m.1,
                        &mut m.2, &mut m.3, &mut v.0, &mut v.1, &mut v.2, &mut v.3, t,
                    ),
                    None => mlp_train_step_in_place(
                        &x, &y, &mut w1, &mut b1, &mut w2, &mut b2, &mut m.0, &mut m.1, &mut m.2,
                        &mut m.3, &mut v.0, &mut v.1, &mut v.2, &mut v.3, t,
                    ),
                }
                .unwrap()
            })
        }
        "W9" | "W9_session" => {
            let mut session = case.ends_with("_session").then(session);
            let b = 64;
            let x = Array4::from_shape_vec((b, 28, 28, 1), uniform(b * 784, 51))?;
            let y = Array1::from_iter((0..b).map(|i| (i * 7 % 10) as i32));
            let k1 = Array4::from_shape_vec((3, 3, 1, 32), uniform(288, 52))? * 0.3;
            let k2 = Array4::from_shape_vec((3, 3, 32, 64), uniform(18432, 53))? * 0.06;
            let w = Array2::from_shape_vec((1600, 10), uniform(16000, 54))? * 0.05;
            let (c1, c2) = (Array1::<f32>::zeros(32), Array1::<f32>::zeros(64));
            let c = Array1::<f32>::zeros(10);
            let zeros = (k1.clone() * 0.0, c1.clone(), k2.clone() * 0.0, c2.clone());
            let (mut m, mut v) = (
                (zeros.clone(), w.clone() * 0.0, c.clone()),
                (zeros, w.clone() * 0.0, c.clone()),
            );
            let mut p = (k1, c1, k2, c2, w, c);
            let mut t = 0.0;
            first_and_steady(|| {
                t += 1.0;
                match session.as_mut() {
                    Some(s) => cnn_train_step::run(
                        s,
                        &x,
                        &y,
                        &mut p.0,
                        &mut p.1,
                        &mut p.2,
                        &mut p.3,
                        &mut p.4,
                        &mut p.5,
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
                        t,
                    ),
                    None => cnn_train_step(
                        &x,
                        &y,
                        &mut p.0,
                        &mut p.1,
                        &mut p.2,
                        &mut p.3,
                        &mut p.4,
                        &mut p.5,
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
                        t,
                    ),
                }
                .unwrap()
            })
        }
        other => return Err(format!("unknown case {other}").into()),
    };
    let [first, steady, first_cpu, steady_cpu, first_faults, steady_faults] = times;
    println!("first {first} steady {steady} first_cpu {first_cpu} steady_cpu {steady_cpu} first_faults {first_faults} steady_faults {steady_faults}");
    Ok(())
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() == 3 && args[1] == "--child" {
        return child(&args[2]);
    }
    let processes: usize = args.get(1).map(|s| s.parse()).transpose()?.unwrap_or(3);
    let exe = std::env::current_exe()?;
    println!("Wall time, then the process CPU time of the same calls (all threads; robust to a busy machine):");
    println!("workload      | first call (ms) | steady call (ms) | first / steady | CPU first (ms) | CPU steady (ms) | CPU first / steady | page faults first / steady | processes");
    println!("--------------|----------------:|-----------------:|---------------:|---------------:|----------------:|-------------------:|---------------------------:|---------:");
    for case in CASES {
        let mut cols: [Vec<f64>; 6] = Default::default();
        for _ in 0..processes.max(1) {
            let out = Command::new(&exe).args(["--child", case]).output()?;
            let text = String::from_utf8(out.stdout)?;
            let fields: Vec<&str> = text.split_whitespace().collect();
            match (out.status.success(), fields.as_slice()) {
                (
                    true,
                    ["first", a, "steady", b, "first_cpu", c, "steady_cpu", d, "first_faults", e, "steady_faults", f],
                ) => {
                    for (col, v) in cols.iter_mut().zip([a, b, c, d, e, f]) {
                        col.push(v.parse::<f64>()?);
                    }
                }
                _ => {
                    return Err(format!(
                        "child {case} failed: {}{}",
                        text,
                        String::from_utf8_lossy(&out.stderr)
                    )
                    .into())
                }
            }
        }
        let n = cols[0].len();
        let [first, steady, first_cpu, steady_cpu, first_faults, steady_faults] =
            cols.map(|mut c| median(&mut c));
        println!(
            "{case:<13} | {first:>15.2} | {steady:>16.2} | {:>14.2} | {first_cpu:>14.2} | {steady_cpu:>15.2} | {:>18.2} | {:>26} | {n:>8}",
            first / steady,
            first_cpu / steady_cpu,
            format!("{first_faults} / {steady_faults}"),
        );
    }
    Ok(())
}
