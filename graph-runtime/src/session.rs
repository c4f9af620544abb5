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

use crate::error::Error;
use crate::exec::{Arena, ExecCtx, Profiler};
use crate::profile::ProfileReport;

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
        Session {
            config,
            pool,
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
    #[doc(hidden)]
    pub fn __run<R: Send>(
        &mut self,
        graph: &'static str,
        f: impl FnOnce(&mut ExecCtx<'_>) -> R + Send,
    ) -> R {
        let index = match self
            .arenas
            .iter()
            .position(|(name, _)| std::ptr::eq(*name, graph) || *name == graph)
        {
            Some(i) => i,
            None => {
                self.arenas.push((graph, Arena::new()));
                self.arenas.len() - 1
            }
        };
        let arena = &mut self.arenas[index].1;
        let profiler = self.profiler.as_mut();
        let run = move || {
            let mut ctx = ExecCtx::new(graph, arena, profiler);
            f(&mut ctx)
        };
        match &self.pool {
            Some(pool) => pool.install(run),
            None => run(),
        }
    }
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
