//! `Session`: a thread pool, one buffer arena per graph and an optional profiler, kept across runs (TF1's `tf.Session`).
//!
//! A plain call of a compiled graph runs on rayon's global pool with a fresh arena. Through
//! `NAME::run(&mut session, ...)` it runs on the session's own pool (so
//! [`SessionConfig::intra_op_threads`] bounds every kernel's parallelism) and reuses the
//! session's arena for that graph, so after the first run with given symbolic dims a run
//! allocates nothing but its outputs. Dropping the session joins its threads and frees
//! every buffer, like leaving TF's `with tf.Session() as sess:` block.
//!
//! A `Session` is [`Send`], so it can move to another thread, and every method that runs
//! or changes it takes `&mut self`: two threads cannot use one session at the same time,
//! and that is enforced by the borrow checker, not by a lock.

use super::context::{Arena, ExecCtx, Profiler};
use super::profile::ProfileReport;
use crate::error::Error;
use std::any::Any;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

/// How a [`Session`] runs graphs (TF's `ConfigProto`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionConfig {
    /// Threads of the session's pool, used inside each kernel (TF's
    /// `intra_op_parallelism_threads`); 0 means all cores (rayon's default, which honours
    /// `RAYON_NUM_THREADS`).
    pub intra_op_threads: usize,
    /// How many independent groups of a graph's static schedule may run at once (TF's
    /// `inter_op_parallelism_threads`); 0 and 1 both mean one after the other.
    pub inter_op_threads: usize,
    /// Whether to time every fusion group of every run (see [`Session::profile`]).
    pub profile: bool,
}

impl Default for SessionConfig {
    /// All cores inside kernels, groups one at a time, no profiling.
    fn default() -> SessionConfig {
        SessionConfig {
            intra_op_threads: 0,
            inter_op_threads: 1,
            profile: false,
        }
    }
}

/// A thread pool, the buffer arenas of the graphs it ran and an optional profiler.
///
/// Made with [`Session::new`] or [`Session::default`]; compiled graphs run in it through
/// `NAME::run(&mut session, args...)`.
pub struct Session {
    config: SessionConfig,
    /// `None` only in the fallback of [`Session::default`] when no thread could be started.
    pool: Option<rayon::ThreadPool>,
    /// The pool thread that runs every graph of this session (see [`Driver`]); `None`
    /// exactly when `pool` is.
    driver: Option<Arc<Driver>>,
    /// One arena per graph name. A short list searched linearly: finding a graph's arena
    /// compares pointers first and never allocates.
    arenas: Vec<(&'static str, Arena)>,
    profiler: Option<Profiler>,
}

impl Session {
    /// A session configured by `config`; fails only when the OS refuses to start its threads.
    pub fn new(config: SessionConfig) -> Result<Session, Error> {
        let pool = build_pool(config.intra_op_threads)
            .map_err(|e| Error::Io(format!("cannot start the session's thread pool: {e}")))?;
        Ok(Session::with_pool(config, Some(pool)))
    }

    fn with_pool(config: SessionConfig, pool: Option<rayon::ThreadPool>) -> Session {
        let profiler = config.profile.then(Profiler::default);
        if let Some(pool) = &pool {
            // Every worker runs once now, so the session's first run does not wait for
            // threads the OS is still starting (a fresh process's first train step did).
            pool.broadcast(|_| ());
        }
        let driver = pool.as_ref().map(|pool| {
            let driver = Arc::new(Driver::default());
            let served = Arc::clone(&driver);
            pool.spawn(move || served.serve());
            driver
        });
        Session {
            config,
            pool,
            driver,
            arenas: Vec::new(),
            profiler,
        }
    }

    /// The configuration the session was made with.
    pub fn config(&self) -> &SessionConfig {
        &self.config
    }

    /// The number of threads of the session's pool.
    pub fn threads(&self) -> usize {
        match &self.pool {
            Some(pool) => pool.current_num_threads(),
            None => rayon::current_num_threads(),
        }
    }

    /// Per-group wall times accumulated since the session was made or last reset, sorted by
    /// total time; empty when the session was made without `profile: true`.
    pub fn profile(&self) -> ProfileReport {
        match &self.profiler {
            Some(p) => ProfileReport::from_profiler(p),
            None => ProfileReport::default(),
        }
    }

    /// Forgets the times recorded so far (when profiling).
    pub fn reset_profile(&mut self) {
        if let Some(p) = &mut self.profiler {
            *p = Profiler::default();
        }
    }

    /// Bytes held by the buffer arenas of all graphs the session ran.
    pub fn arena_bytes(&self) -> usize {
        self.arenas.iter().map(|(_, a)| a.bytes()).sum()
    }

    /// Runs `f` on the session's pool with the arena of `graph` (and the profiler, when
    /// profiling). The entry point of the code `#[graph]` emits for `NAME::run`.
    ///
    /// Finding the arena and handing `f` to the pool allocate nothing once the graph has
    /// run in this session; a panic in `f` is propagated to the caller.
    #[doc(hidden)]
    pub fn __run<R: Send>(
        &mut self,
        graph: &'static str,
        f: impl FnOnce(&mut ExecCtx<'_>) -> R + Send,
    ) -> R {
        let arena = arena_for(&mut self.arenas, graph);
        let profiler = self.profiler.as_mut();
        let inter_op = self.config.inter_op_threads;
        let run = move || {
            let mut ctx = ExecCtx::new(graph, arena, profiler).with_inter_op_threads(inter_op);
            f(&mut ctx)
        };
        match &self.driver {
            Some(driver) => driver.run(run),
            None => run(),
        }
    }

    /// As [`Session::__run`], but on the caller's thread: for graphs so small (the macro
    /// decides, from their static shapes) that waking the pool would cost more than the work.
    #[doc(hidden)]
    pub fn __run_here<R: Send>(
        &mut self,
        graph: &'static str,
        f: impl FnOnce(&mut ExecCtx<'_>) -> R + Send,
    ) -> R {
        let arena = arena_for(&mut self.arenas, graph);
        let profiler = self.profiler.as_mut();
        let inter_op = self.config.inter_op_threads;
        let mut ctx = ExecCtx::new(graph, arena, profiler).with_inter_op_threads(inter_op);
        f(&mut ctx)
    }
}

/// The arena of `graph`, created on its first run; found without allocating afterwards.
fn arena_for<'a>(arenas: &'a mut Vec<(&'static str, Arena)>, graph: &'static str) -> &'a mut Arena {
    let index = match arenas
        .iter()
        .position(|(name, _)| std::ptr::eq(*name, graph) || *name == graph)
    {
        Some(i) => i,
        None => {
            arenas.push((graph, Arena::new()));
            arenas.len() - 1
        }
    };
    &mut arenas[index].1
}

impl Default for Session {
    /// A session with the default configuration. Should the OS refuse to start a thread
    /// per core, it falls back to one worker thread, and should even that fail, to running
    /// on the caller's thread with rayon's global pool, rather than panic.
    fn default() -> Session {
        let config = SessionConfig::default();
        let pool = build_pool(config.intra_op_threads)
            .or_else(|_| build_pool(1))
            .ok();
        Session::with_pool(config, pool)
    }
}

impl Drop for Session {
    /// Lets the driver return, so that the pool's threads can end when the pool is dropped.
    fn drop(&mut self) {
        if let Some(driver) = &self.driver {
            let mut slot = driver.lock();
            *slot = Slot::Exit;
            driver.changed.notify_all();
        }
    }
}

/// The pool thread that runs every graph of a session.
///
/// `rayon::ThreadPool::install` from a thread outside the pool pushes a job on the pool's
/// global queue, which allocates a new block every few dozen pushes; steady-state runs
/// must not allocate. So a session starts one long-lived job on its pool, the driver,
/// and each run hands its closure to it through a mutex and a condition variable (which
/// allocate nothing). The closure then runs on a worker of the pool, so every parallel
/// kernel it calls uses the session's threads, the driver's included.
#[derive(Default)]
struct Driver {
    slot: Mutex<Slot>,
    changed: Condvar,
}

/// What the driver is asked to do, or has done.
#[derive(Default)]
enum Slot {
    #[default]
    Idle,
    /// A closure to call, borrowed from the stack of the thread that waits in [`Driver::run`].
    Run(Job),
    /// The closure returned.
    Done,
    /// The session is being dropped.
    Exit,
}

/// A pointer to the closure of one run; valid until the driver reports [`Slot::Done`].
struct Job(*mut (dyn FnMut() + Send + 'static));

// SAFETY: the closure behind the pointer is `Send`, and only the driver calls it, while the
// thread that owns it waits.
unsafe impl Send for Job {}

/// One run's closure as it moves to the driver and its result as it comes back.
enum Step<F, R> {
    Pending(F),
    Running,
    Finished(std::thread::Result<R>),
}

impl Driver {
    fn lock(&self) -> MutexGuard<'_, Slot> {
        self.slot.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn wait<'a>(&self, guard: MutexGuard<'a, Slot>) -> MutexGuard<'a, Slot> {
        self.changed
            .wait(guard)
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// The driver's loop, run on one worker of the session's pool until the session drops.
    fn serve(&self) {
        let mut slot = self.lock();
        loop {
            match std::mem::take(&mut *slot) {
                Slot::Run(job) => {
                    drop(slot);
                    // SAFETY: `Driver::run` keeps the closure alive and untouched until it
                    // sees `Done`, which is set only after this call returns. The closure
                    // catches its own panics; this guard only keeps the driver alive.
                    let _ = catch_unwind(AssertUnwindSafe(|| unsafe { (*job.0)() }));
                    slot = self.lock();
                    *slot = Slot::Done;
                    self.changed.notify_all();
                }
                Slot::Exit => return,
                other => {
                    *slot = other;
                    slot = self.wait(slot);
                }
            }
        }
    }

    /// Runs `f` on the driver and returns its result, re-raising its panic if it panicked.
    fn run<R: Send>(&self, f: impl FnOnce() -> R + Send) -> R {
        let mut step = Step::Pending(f);
        let mut call = || {
            if let Step::Pending(f) = std::mem::replace(&mut step, Step::Running) {
                step = Step::Finished(catch_unwind(AssertUnwindSafe(f)));
            }
        };
        let job: *mut (dyn FnMut() + Send + '_) = &mut call;
        // SAFETY: only the lifetime is erased. This function does not return before the
        // driver reports `Done`, so the closure outlives its use (as with scoped threads).
        let job = Job(unsafe {
            std::mem::transmute::<*mut (dyn FnMut() + Send + '_), *mut (dyn FnMut() + Send + 'static)>(
                job,
            )
        });
        let mut slot = self.lock();
        *slot = Slot::Run(job);
        self.changed.notify_all();
        loop {
            match std::mem::take(&mut *slot) {
                Slot::Done => break,
                other => {
                    *slot = other;
                    slot = self.wait(slot);
                }
            }
        }
        drop(slot);
        match step {
            Step::Finished(Ok(r)) => r,
            Step::Finished(Err(payload)) => resume_unwind(payload),
            // The driver always calls the closure, which always finishes the step; should
            // that ever not hold, running `f` here still gives the right answer.
            Step::Pending(f) => f(),
            Step::Running => resume_unwind(
                Box::new("grafo: a session run was interrupted") as Box<dyn Any + Send>
            ),
        }
    }
}

fn build_pool(threads: usize) -> Result<rayon::ThreadPool, rayon::ThreadPoolBuildError> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("grafo-session-{i}"))
        .build()
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("config", &self.config)
            .field("threads", &self.threads())
            .field(
                "graphs",
                &self
                    .arenas
                    .iter()
                    .map(|(name, _)| *name)
                    .collect::<Vec<_>>(),
            )
            .field("arena_bytes", &self.arena_bytes())
            .finish()
    }
}
