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

static AVX512_TILES: AtomicU8 = AtomicU8::new(0);

/// Whether the GEMM and conv2d micro-kernels should use their AVX-512 register tiles.
///
/// Only where [`level()`] is [`Level::Avx512`] and the cores run 512-bit FMAs at twice the
/// 256-bit rate. AMD's Zen 4 (family 0x19) runs them on 256-bit units (double-pumped): there
/// the AVX2 tiles measured faster (sgemm 256: 97 vs 86 GFLOP/s on one core, conv2d 3 -> 16
/// channels 61 vs 56, the narrow `256x512x10` 47 vs 33; BENCHMARKS.md), so they are kept,
/// while elementwise kernels still run their AVX-512 builds. Setting `GRAFO_CPU_LEVEL=avx512`
/// explicitly forces the AVX-512 tiles on such a CPU too, so their tests run on it. Zen 5
/// (family 0x1A) has full-width 512-bit FMAs and takes the AVX-512 tiles, measured 1.7–2x
/// the AVX2 ones there (sgemm 1024, conv2d 16 -> 16; BENCHMARKS.md).
#[inline]
pub fn avx512_tiles() -> bool {
    match AVX512_TILES.load(Ordering::Relaxed) {
        1 => false,
        2 => true,
        _ => detect_avx512_tiles(),
    }
}

#[cold]
fn detect_avx512_tiles() -> bool {
    let forced = std::env::var("GRAFO_CPU_LEVEL").is_ok_and(|v| v == "avx512");
    let tiles = level() == Level::Avx512 && (forced || !double_pumped_avx512());
    AVX512_TILES.store(if tiles { 2 } else { 1 }, Ordering::Relaxed);
    tiles
}

/// Whether this is an AMD Zen 4 (family 0x19), whose AVX-512 runs on 256-bit units.
fn double_pumped_avx512() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::__cpuid;
        // SAFETY: CPUID leaves 0 and 1 exist on every x86-64 CPU. (`__cpuid` is a safe
        // function in newer Rust, an unsafe one in older: hence the allow.)
        #[allow(unused_unsafe)]
        let (vendor, sig) = unsafe { (__cpuid(0), __cpuid(1)) };
        let amd = (vendor.ebx, vendor.edx, vendor.ecx) == (0x6874_7541, 0x6974_6e65, 0x444d_4163);
        let base = (sig.eax >> 8) & 0xf;
        let family = if base == 0xf {
            base + ((sig.eax >> 20) & 0xff)
        } else {
            base
        };
        amd && family == 0x19
    }
    #[cfg(not(target_arch = "x86_64"))]
    false
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

            /// # Safety
            /// The CPU must support AVX-512 F/VL/BW/DQ, AVX2 and FMA.
            #[cfg(any(target_arch = "x86_64", target_arch = "x86"))]
            #[target_feature(enable = "avx512f,avx512vl,avx512bw,avx512dq,avx2,fma")]
            #[allow(clippy::too_many_arguments)]
            unsafe fn avx512($($arg: $ty),*) $(-> $ret)? {
                generic($($arg),*)
            }

            /// # Safety
            /// The CPU must support AVX2 and FMA.
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
