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
    // Miri cannot run the vector kernels (nor `cpuid`): it gets the portable ones.
    #[cfg(all(any(target_arch = "x86_64", target_arch = "x86"), not(miri)))]
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

/// Whether the tall AVX-512 register tiles run: the 24-row tiles of the f64 GEMM and of the
/// f32 convolution kernels (the gather and 3-wide tiles).
///
/// Only where [`level()`] is [`Level::Avx512`] and the cores run 512-bit FMAs at twice the
/// 256-bit rate. AMD's Zen 4 (family 0x19) runs them on 256-bit units (double-pumped): there
/// the AVX2 tiles measured faster (conv2d 3 -> 16 channels 2.8–3.1 vs 3.0–3.5 ms on one
/// core, 16 -> 16 12.0–13.5 vs 13.5–14.4; BENCHMARKS.md), so they are kept, while
/// elementwise kernels run their AVX-512 builds and the f32 GEMM its wide AVX-512 tiles
/// ([`wide_tiles`]). Setting `GRAFO_CPU_LEVEL=avx512` explicitly forces the tall AVX-512
/// tiles on such a CPU too, so their tests run on it; `GRAFO_TALL_TILES=0` turns them off on
/// any AVX-512 CPU (Zen 4's combination: wide GEMM tiles, AVX2 convolution tiles), and `=1`
/// on wherever AVX-512 is. Zen 5 (family 0x1A) has full-width
/// 512-bit FMAs and takes them, measured 1.7–2x the AVX2 ones there (sgemm 1024, conv2d
/// 16 -> 16; BENCHMARKS.md).
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
    // The level first: below AVX-512 the answer is no whatever the environment says, and
    // `double_pumped_avx512`'s `cpuid` (which Miri cannot run) is not reached.
    let tiles = level() == Level::Avx512 && {
        let forced = std::env::var("GRAFO_CPU_LEVEL").is_ok_and(|v| v == "avx512");
        match std::env::var("GRAFO_TALL_TILES").as_deref() {
            Ok("0") => false,
            Ok("1") => true,
            _ => forced || !double_pumped_avx512(),
        }
    };
    AVX512_TILES.store(if tiles { 2 } else { 1 }, Ordering::Relaxed);
    tiles
}

/// Whether the f32 GEMM runs its wide AVX-512 tiles (6 rows x up to 64 columns, the `gemm`
/// crate's shape): wherever [`level()`] is [`Level::Avx512`], Zen 4 included.
///
/// The wide tile loads 10 values a step for 24 FMAs and keeps only six rows of `a` in L1,
/// so it wins even on Zen 4's double-pumped units, where the 24-row tile does not (Zen 4,
/// 2 threads: sgemm 1024 11.4 vs 12.7 ms for the AVX2 tile, W2's product 1.06 vs 1.35 ms;
/// BENCHMARKS.md).
#[inline]
pub fn wide_tiles() -> bool {
    level() == Level::Avx512
}

/// Whether this is an AMD Zen 4 (family 0x19), whose AVX-512 runs on 256-bit units.
fn double_pumped_avx512() -> bool {
    #[cfg(all(target_arch = "x86_64", not(miri)))]
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
    #[cfg(any(not(target_arch = "x86_64"), miri))]
    false
}

/// Defines `fn NAME(args) { body }` compiled three times (baseline, AVX2+FMA, AVX-512) and
/// dispatched on [`level()`] at each call.
///
/// The body is an `#[inline(always)]` function inlined into each `#[target_feature]`
/// wrapper, so everything it calls that is `#[inline(always)]` (the math of
/// [`crate::kernels::math`]) is vectorised for that instruction set. Arguments must have concrete
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

            match $crate::exec::cpu::level() {
                // SAFETY: `level()` reported these features on this CPU.
                #[cfg(any(target_arch = "x86_64", target_arch = "x86"))]
                $crate::exec::cpu::Level::Avx512 => unsafe { avx512($($arg),*) },
                // SAFETY: as above.
                #[cfg(any(target_arch = "x86_64", target_arch = "x86"))]
                $crate::exec::cpu::Level::Avx2Fma => unsafe { avx2($($arg),*) },
                _ => generic($($arg),*),
            }
        }
    };
}
