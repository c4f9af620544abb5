//! `Session`: its thread count is honoured, its arenas make steady-state runs allocation-free, it profiles, and it is `Send`.
//!
//! These drive `Session::__run` by hand with the same `take`/`give`/`start`/`record` calls
//! the code emitted by `#[graph]` makes, so they do not depend on the macro.

use graph_runtime::exec::ExecCtx;
use graph_runtime::session::{Session, SessionConfig};
use rayon::prelude::*;
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Counts allocations and freed bytes made by threads that have switched counting on.
struct CountingAlloc;

static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);
static FREED_BYTES: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static COUNTING: Cell<bool> = const { Cell::new(false) };
}

fn counting() -> bool {
    COUNTING.try_with(Cell::get).unwrap_or(false)
}

unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if counting() {
            ALLOCATIONS.fetch_add(1, Ordering::SeqCst);
        }
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if counting() {
            ALLOCATIONS.fetch_add(1, Ordering::SeqCst);
        }
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if counting() {
            ALLOCATIONS.fetch_add(1, Ordering::SeqCst);
        }
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if counting() {
            FREED_BYTES.fetch_add(layout.size(), Ordering::SeqCst);
        }
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc;

/// Tests that count allocations run one at a time, so the global counters are theirs alone.
static COUNTER_LOCK: Mutex<()> = Mutex::new(());

fn set_counting(on: bool) {
    COUNTING.with(|c| c.set(on));
}

fn session(threads: usize) -> Session {
    Session::new(SessionConfig {
        intra_op_threads: threads,
        ..Default::default()
    })
    .expect("the session's pool starts")
}

/// One run of a two-slot plan, like the code `#[graph]` emits: take both buffers, write
/// them, give them back. Counting is switched on inside, on the pool's thread, when `count`.
fn plan_step(ctx: &mut ExecCtx<'_>, n: usize, count: bool) -> f32 {
    set_counting(count);
    let mut a: Vec<f32> = ctx.take(0, n, "a").expect("n f32 fit");
    let mut b: Vec<i64> = ctx.take(1, n / 2, "b").expect("n / 2 i64 fit");
    a.iter_mut().enumerate().for_each(|(i, v)| *v = i as f32);
    b.iter_mut().for_each(|v| *v = 3);
    let checksum = a[n - 1] + b[0] as f32;
    ctx.give(0, a);
    ctx.give(1, b);
    set_counting(false);
    checksum
}

/// Allocations made by one `__run` of `plan_step`, on the calling thread and inside the run.
fn allocations_of_run(s: &mut Session, graph: &'static str, n: usize) -> usize {
    let before = ALLOCATIONS.load(Ordering::SeqCst);
    set_counting(true);
    let checksum = s.__run(graph, |ctx| plan_step(ctx, n, true));
    set_counting(false);
    assert_eq!(checksum, (n - 1) as f32 + 3.0);
    ALLOCATIONS.load(Ordering::SeqCst) - before
}

#[test]
fn steady_state_runs_allocate_nothing() {
    let _guard = COUNTER_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let mut s = session(1);
    let first = allocations_of_run(&mut s, "plan", 1000);
    assert!(
        first >= 2,
        "the first run allocates its buffers (counted {first})"
    );
    let bytes = s.arena_bytes();
    assert_eq!(bytes, 1000 * 4 + 500 * 8);
    // Enough runs to cross rayon's injector block size (63 jobs), which allocates when
    // work is installed on a pool from outside it.
    for run in 2..=200 {
        assert_eq!(
            allocations_of_run(&mut s, "plan", 1000),
            0,
            "run {run} allocated"
        );
    }
    // The same name at another address finds the same arena, still without allocating.
    let same_name: &'static str = Box::leak(String::from("plan").into_boxed_str());
    assert_eq!(allocations_of_run(&mut s, same_name, 1000), 0);
    // Smaller symbolic dims fit in the buffers already held.
    assert_eq!(allocations_of_run(&mut s, "plan", 600), 0);
    assert_eq!(s.arena_bytes(), bytes);
    // Larger ones re-plan once, then are allocation-free again.
    assert!(allocations_of_run(&mut s, "plan", 4000) > 0);
    assert_eq!(allocations_of_run(&mut s, "plan", 4000), 0);
    // Another graph gets its own arena.
    assert!(allocations_of_run(&mut s, "other", 10) > 0);
    assert_eq!(allocations_of_run(&mut s, "other", 10), 0);
    assert_eq!(s.arena_bytes(), 4000 * 4 + 2000 * 8 + 10 * 4 + 5 * 8);
}

#[test]
fn dropping_the_session_frees_its_buffers() {
    let _guard = COUNTER_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let mut s = session(1);
    s.__run("big", |ctx| plan_step(ctx, 1 << 20, false));
    let held = s.arena_bytes();
    assert!(held >= (1 << 20) * 4);
    let before = FREED_BYTES.load(Ordering::SeqCst);
    set_counting(true);
    drop(s);
    set_counting(false);
    let freed = FREED_BYTES.load(Ordering::SeqCst) - before;
    assert!(
        freed >= held,
        "dropping freed {freed} bytes of the {held} held"
    );
}

#[test]
fn one_thread_session_runs_every_kernel_on_one_thread() {
    let mut s = session(1);
    assert_eq!(s.threads(), 1);
    let caller = std::thread::current().id();
    let (threads, ids) = s.__run("t1", |_ctx| {
        let ids = Mutex::new(HashSet::new());
        (0..100_000).into_par_iter().for_each(|_| {
            if let Ok(mut ids) = ids.lock() {
                ids.insert(std::thread::current().id());
            }
        });
        (
            rayon::current_num_threads(),
            ids.into_inner().unwrap_or_default(),
        )
    });
    assert_eq!(threads, 1);
    assert_eq!(
        ids.len(),
        1,
        "a 1-thread session used {} threads",
        ids.len()
    );
    assert!(
        !ids.contains(&caller),
        "the run happens on the session's own thread"
    );
}

/// Whether both halves of a `rayon::join` ran at the same time: each announces itself and
/// waits (up to a deadline) to see the other.
fn join_runs_concurrently() -> bool {
    let arrived = [AtomicBool::new(false), AtomicBool::new(false)];
    let wait_for_other = |me: usize| {
        arrived[me].store(true, Ordering::SeqCst);
        let deadline = Instant::now() + Duration::from_secs(10);
        while !arrived[1 - me].load(Ordering::SeqCst) {
            if Instant::now() > deadline {
                return false;
            }
            std::thread::yield_now();
        }
        true
    };
    let (a, b) = rayon::join(|| wait_for_other(0), || wait_for_other(1));
    a && b
}

#[test]
fn two_thread_session_uses_two_threads() {
    let mut s = session(2);
    assert_eq!(s.threads(), 2);
    let (threads, concurrent) = s.__run("t2", |_ctx| {
        (rayon::current_num_threads(), join_runs_concurrently())
    });
    assert_eq!(threads, 2);
    assert!(concurrent, "the two halves of a join did not run at once");
}

#[test]
fn default_session_uses_all_cores_and_no_profiling() {
    let config = SessionConfig::default();
    assert_eq!(config.intra_op_threads, 0);
    assert_eq!(config.inter_op_threads, 1);
    assert!(!config.profile);
    let mut s = Session::default();
    assert_eq!(s.config(), &config);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    if std::env::var_os("RAYON_NUM_THREADS").is_none() {
        assert_eq!(s.threads(), cores);
    }
    assert!(s.profile().is_empty());
    let started = s.__run("g", |ctx| ctx.start().is_some());
    assert!(!started, "no timing without `profile: true`");
}

#[test]
fn session_is_send_and_runs_on_another_thread() {
    fn assert_send<T: Send>() {}
    assert_send::<Session>();
    let mut s = session(1);
    s.__run("moved", |ctx| plan_step(ctx, 8, false));
    let bytes = std::thread::spawn(move || {
        s.__run("moved", |ctx| plan_step(ctx, 8, false));
        s.arena_bytes()
    })
    .join()
    .expect("the other thread finishes");
    assert_eq!(bytes, 8 * 4 + 4 * 8);
}

/// Busy-waits, so that a group's time does not depend on the scheduler's sleep granularity.
fn spin(d: Duration) {
    let start = Instant::now();
    while start.elapsed() < d {
        std::hint::spin_loop();
    }
}

#[test]
fn profiling_records_groups_sorted_by_time() {
    let mut s = Session::new(SessionConfig {
        intra_op_threads: 1,
        profile: true,
        ..Default::default()
    })
    .expect("the session's pool starts");
    for _ in 0..3 {
        s.__run("mlp", |ctx| {
            for (group, label, time) in [
                (0, "matmul+add+relu [B, 512]", Duration::from_micros(200)),
                (1, "matmul+add [B, 10]", Duration::from_millis(3)),
                (2, "softmax [B, 10]", Duration::ZERO),
            ] {
                let start = ctx.start();
                assert!(start.is_some());
                spin(time);
                ctx.record(group, label, start);
            }
        });
    }
    let report = s.profile();
    let rows = report.rows();
    assert_eq!(rows.len(), 3);
    assert_eq!(rows[0].group, 1);
    assert_eq!(rows[0].label, "matmul+add [B, 10]");
    assert_eq!(rows[1].group, 0);
    assert!(rows.windows(2).all(|w| w[0].total >= w[1].total));
    assert!(rows.iter().all(|r| r.calls == 3 && r.graph == "mlp"));
    assert!(rows[0].total >= Duration::from_millis(9));
    assert!(rows[0].mean >= Duration::from_millis(3));
    let share: f64 = rows.iter().map(|r| r.share).sum();
    assert!((share - 1.0).abs() < 1e-9, "shares add up to {share}");
    assert_eq!(report.events().len(), 9);

    let table = report.to_string();
    let lines: Vec<&str> = table.lines().collect();
    assert!(
        lines[0].starts_with("graph  group  ops and shape"),
        "{table}"
    );
    assert!(
        lines[2].contains("matmul+add [B, 10]") && lines[2].contains(" 3 "),
        "{table}"
    );
    assert!(lines[4].contains("softmax [B, 10]"), "{table}");
    assert!(table.contains("3 groups, 9 executions"), "{table}");
    // The calls column is right-aligned under its header.
    let calls_end = lines[0].find("calls").map_or(0, |i| i + "calls".len());
    for row in &lines[2..5] {
        assert_eq!(
            row.get(calls_end - 2..calls_end + 1),
            Some(" 3 "),
            "{table}"
        );
    }

    let trace = report.to_chrome_trace();
    assert_eq!(trace.matches("\"ph\":\"X\"").count(), 9, "{trace}");
    assert!(
        trace.starts_with("{\"") && trace.contains("\"traceEvents\":["),
        "{trace}"
    );

    s.reset_profile();
    assert!(s.profile().is_empty());
    s.__run("mlp", |ctx| {
        let start = ctx.start();
        ctx.record(0, "matmul+add+relu [B, 512]", start);
    });
    assert_eq!(s.profile().rows().len(), 1);
}

#[test]
fn chrome_trace_is_written_to_a_file() {
    let mut s = Session::new(SessionConfig {
        intra_op_threads: 1,
        profile: true,
        ..Default::default()
    })
    .expect("the session's pool starts");
    s.__run("g", |ctx| {
        let start = ctx.start();
        ctx.record(0, "relu [4]", start);
    });
    let path = std::env::temp_dir().join(format!("grafo-trace-{}.json", std::process::id()));
    s.profile()
        .write_chrome_trace(&path)
        .expect("trace written");
    let text = std::fs::read_to_string(&path).expect("trace read");
    assert_eq!(text, s.profile().to_chrome_trace());
    let _ = std::fs::remove_file(&path);
    let missing_dir = std::env::temp_dir()
        .join("grafo-no-such-dir")
        .join("trace.json");
    assert!(matches!(
        s.profile().write_chrome_trace(&missing_dir),
        Err(graph_runtime::Error::Io(_))
    ));
}

#[test]
fn a_panicking_run_propagates_and_the_session_stays_usable() {
    let mut s = session(2);
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        s.__run("p", |_ctx| -> usize { panic!("kernel bug") })
    }));
    let payload = result.expect_err("the panic reaches the caller");
    assert_eq!(payload.downcast_ref::<&str>(), Some(&"kernel bug"));
    assert_eq!(s.__run("p", |ctx| plan_step(ctx, 4, false)), 6.0);
}
