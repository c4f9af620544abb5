//! Run-time CPU feature detection and the `multiversion!` macro that compiles a kernel once per instruction set.
//!
//! A plain `cargo build --release` targets baseline x86-64 (SSE2). Hot loops are compiled
//! again inside `#[target_feature]` functions for AVX2+FMA and AVX-512 and the best one is
//! picked once per call from a cached detection (the matrixmultiply `detect()` ladder).

use std::sync::atomic::{AtomicU8, Ordering};

/// The instruction-set level a kernel runs at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// Whatever the crate was compiled for (SSE2 on x86-64, NEON on aarch64).
    Baseline = 1,
    /// x86-64 with AVX2 and FMA.
    Avx2Fma = 2,
    /// x86-64 with AVX-512 F/VL/BW/DQ (plus AVX2 and FMA).
    Avx512 = 3,
}

static LEVEL: AtomicU8 = AtomicU8::new(0);

/// The best level this CPU supports; detected once, then read from a cache.
///
/// Setting the environment variable `GRAFO_CPU_LEVEL` to `baseline`, `avx2` or `avx512`
/// before the first call caps the level (for testing every kernel variant on one machine).
#[inline]
pub fn level() -> Level {
    match LEVEL.load(Ordering::Relaxed) {
        1 => Level::Baseline,
        2 => Level::Avx2Fma,
        3 => Level::Avx512,
        _ => detect_and_cache(),
    }
}

#[cold]
fn detect_and_cache() -> Level {
    let mut level = detect();
    if let Ok(cap) = std::env::var("GRAFO_CPU_LEVEL") {
        let cap = match cap.as_str() {
            "baseline" => Level::Baseline,
            "avx2" => Level::Avx2Fma,
            _ => Level::Avx512,
        };
        level = level.min(cap);
    }
    LEVEL.store(level as u8, Ordering::Relaxed);
    level
}

fn detect() -> Level {
    #[cfg(any(target_arch = "x86_64", target_arch = "x86"))]
    {
        if is_x86_feature_detected!("avx512f")
            && is_x86_feature_detected!("avx512vl")
            && is_x86_feature_detected!("avx512bw")
            && is_x86_feature_detected!("avx512dq")
            && is_x86_feature_detected!("avx2")
            && is_x86_feature_detected!("fma")
        {
            return Level::Avx512;
        }
        if is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") {
            return Level::Avx2Fma;
        }
    }
    Level::Baseline
}

/// Defines `fn NAME(args) { body }` compiled three times (baseline, AVX2+FMA, AVX-512) and
/// dispatched on [`level()`] at each call.
///
/// The body is an `#[inline(always)]` function inlined into each `#[target_feature]`
/// wrapper, so everything it calls that is `#[inline(always)]` (the math of
/// [`crate::math`]) is vectorised for that instruction set. Arguments must have concrete
/// types; the function returns `()` or the declared type.
#[macro_export]
#[doc(hidden)]
macro_rules! multiversion {
    ($(#[$meta:meta])* $vis:vis fn $name:ident ( $($arg:ident : $ty:ty),* $(,)? ) $(-> $ret:ty)? $body:block) => {
        $(#[$meta])*
        #[inline]
        #[allow(clippy::too_many_arguments)]
        $vis fn $name($($arg: $ty),*) $(-> $ret)? {
            #[inline(always)]
            #[allow(clippy::too_many_arguments)]
            fn generic($($arg: $ty),*) $(-> $ret)? $body

            #[cfg(any(target_arch = "x86_64", target_arch = "x86"))]
            #[target_feature(enable = "avx512f,avx512vl,avx512bw,avx512dq,avx2,fma")]
            #[allow(clippy::too_many_arguments)]
            unsafe fn avx512($($arg: $ty),*) $(-> $ret)? {
                generic($($arg),*)
            }

            #[cfg(any(target_arch = "x86_64", target_arch = "x86"))]
            #[target_feature(enable = "avx2,fma")]
            #[allow(clippy::too_many_arguments)]
            unsafe fn avx2($($arg: $ty),*) $(-> $ret)? {
                generic($($arg),*)
            }

            match $crate::cpu::level() {
                // SAFETY: `level()` reported these features on this CPU.
                #[cfg(any(target_arch = "x86_64", target_arch = "x86"))]
                $crate::cpu::Level::Avx512 => unsafe { avx512($($arg),*) },
                // SAFETY: as above.
                #[cfg(any(target_arch = "x86_64", target_arch = "x86"))]
                $crate::cpu::Level::Avx2Fma => unsafe { avx2($($arg),*) },
                _ => generic($($arg),*),
            }
        }
    };
}
