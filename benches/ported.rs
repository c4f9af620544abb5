//! Issue 31's two ported models against PyTorch: a MobileNetV2 inverted-residual block (stride 1 and 2, batch 1 and 8) and a gather + mean text classifier, compiled, session and eager side by side.
//!
//! Run with `cargo bench -p grafo-benches --bench ported` (release). The graphs and their
//! seeded weights are tests/common/ported.rs's; their PyTorch peers are timed by
//! `scripts/bench_ported_torch.py` on the same shapes (docs/bench/ported.md). Before timing,
//! each group checks compiled == eager == session.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use grafo::{Session, SessionConfig};
use std::hint::black_box;
use std::time::Duration;

#[path = "../tests/common/ported.rs"]
mod ported;

use ported::{BlockWeights, TextWeights, CHANNELS, CHANNELS_OUT_S2, EXPANDED, SIDE};

/// Multiply-adds of one block per image: the two 1x1 convolutions and the 3x3 depthwise one.
fn block_flops(out_side: usize, out_channels: usize) -> usize {
    let expand = SIDE * SIDE * CHANNELS * EXPANDED;
    let depthwise = out_side * out_side * EXPANDED * 9;
    let project = out_side * out_side * EXPANDED * out_channels;
    2 * (expand + depthwise + project)
}

/// With `GRAFO_BENCH_PROFILE=1`, prints where a profiling Session's time goes over 20 runs
/// of `run` (fusion group by group), before the group is timed.
fn print_profile(name: &str, run: impl Fn(&mut Session)) {
    if std::env::var("GRAFO_BENCH_PROFILE").is_err() {
        return;
    }
    let mut session = Session::new(SessionConfig {
        profile: true,
        ..Default::default()
    })
    .expect("the session's pool starts");
    run(&mut session);
    session.reset_profile();
    for _ in 0..20 {
        run(&mut session);
    }
    println!("{name}:\n{}", session.profile());
}

fn mobilenet_block(c: &mut Criterion) {
    for (stride, out) in [(1, CHANNELS), (2, CHANNELS_OUT_S2)] {
        let w = BlockWeights::seeded(out);
        for batch in [1usize, 8] {
            let x = BlockWeights::input(batch);
            let mut session = Session::default();
            let run = |how: &str, session: &mut Session| match (stride, how) {
                (1, "compiled") => w.compiled(&x),
                (1, "eager") => w.eager(&x),
                (1, _) => w.session(session, &x),
                (_, "compiled") => w.compiled_s2(&x),
                (_, "eager") => w.eager_s2(&x),
                _ => w.session_s2(session, &x),
            };
            let want = run("compiled", &mut session).unwrap();
            assert_eq!(want, run("eager", &mut session).unwrap());
            assert_eq!(want, run("session", &mut session).unwrap());
            print_profile(&format!("block s{stride} b{batch}"), |s| {
                run("session", s).unwrap();
            });
            let flops = batch * block_flops(SIDE / stride, out);
            let mut group = c.benchmark_group(format!("mobilenetv2_block_s{stride}_b{batch}"));
            group.throughput(Throughput::Elements(flops as u64));
            group
                .sample_size(20)
                .measurement_time(Duration::from_secs(3));
            for how in ["compiled", "session", "eager"] {
                group.bench_function(how, |b| {
                    b.iter(|| black_box(run(how, &mut session).unwrap()))
                });
            }
            group.finish();
        }
    }
}

fn text_classifier(c: &mut Criterion) {
    let w = TextWeights::seeded();
    let batch = 32;
    let ids = TextWeights::ids(batch);
    let mut session = Session::default();
    let want = w.compiled(&ids).unwrap();
    assert_eq!(want, w.eager(&ids).unwrap());
    assert_eq!(want, w.session(&mut session, &ids).unwrap());
    print_profile("text classifier b32", |s| {
        w.session(s, &ids).unwrap();
    });
    let mut group = c.benchmark_group("text_classifier_b32");
    group.throughput(Throughput::Elements(batch as u64));
    group
        .sample_size(30)
        .measurement_time(Duration::from_secs(3));
    group.bench_function("compiled", |b| {
        b.iter(|| black_box(w.compiled(&ids).unwrap()))
    });
    group.bench_function("session", |b| {
        b.iter(|| black_box(w.session(&mut session, &ids).unwrap()))
    });
    group.bench_function("eager", |b| b.iter(|| black_box(w.eager(&ids).unwrap())));
    group.finish();
}

criterion_group!(benches, mobilenet_block, text_classifier);
criterion_main!(benches);
