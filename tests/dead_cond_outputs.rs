//! Conds whose outputs are partly or wholly dead (issue 11, item 7): the RNN early-stop
//! pattern `if go { a = reduce_max(h); h = tanh(h); } h`, nested conds, several dead outputs,
//! outputs dead in one arm only, and conds that only check (`assert_*` in an arm, no result).
//! Each compiles with and without `dce`, and compiled, eager and run agree with a plain
//! reference written here.

use grafo::prelude::*;

/// Runs `$f` compiled, eager and in a session; each must equal `$want` bit for bit.
macro_rules! check {
    ($f:ident ( $($arg:expr),* ) == $want:expr) => {{
        let want: Vec<f32> = $want;
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        for (path, got) in [
            ("compiled", $f($($arg),*)),
            ("eager", $f::eager($($arg),*)),
            ("run", $f::run(&mut Session::default(), $($arg),*)),
        ] {
            let got = got.unwrap_or_else(|e| panic!("{} {path}: {e}", stringify!($f)));
            let got: Vec<f32> = got.iter().copied().collect();
            assert_eq!(bits(&got), bits(&want), "{} {path}: {got:?} != {want:?}", stringify!($f));
        }
    }};
}

/// Both paths (compiled, eager, run) fail with an assertion at `line`.
macro_rules! check_fails {
    ($f:ident ( $($arg:expr),* ) at $line:expr) => {{
        for (path, got) in [
            ("compiled", $f($($arg),*).map(|_| ())),
            ("eager", $f::eager($($arg),*).map(|_| ())),
            ("run", $f::run(&mut Session::default(), $($arg),*).map(|_| ())),
        ] {
            match got {
                Err(grafo::Error::Assertion { op, line, .. }) => {
                    assert_eq!((op, line), ("assert_non_negative", $line), "{} {path}", stringify!($f));
                }
                other => panic!("{} {path}: expected the assertion to fail, got {other:?}", stringify!($f)),
            }
        }
    }};
}

/// The source line of the `k`-th `assert_non_negative(h);` of this file.
fn check_line(k: usize) -> u32 {
    let src = include_str!("dead_cond_outputs.rs");
    let needle = ["assert_non_negative", "(h);"].concat();
    let (i, _) = src
        .lines()
        .enumerate()
        .filter(|(_, l)| l.trim() == needle)
        .nth(k)
        .expect("the check is in this file");
    i as u32 + 1
}

fn tanh_ref(h: &[f32]) -> Vec<f32> {
    h.iter()
        .map(|&x| grafo::eager::tanh(arr0(x).view().into_dyn()).unwrap()[[]])
        .collect()
}

/// The same body under `#[graph]` and `#[graph(disable(dce))]`.
macro_rules! both {
    ($name:ident, $nodce:ident, fn $params:tt -> [$($r:tt)*] $body:block) => {
        #[graph]
        fn $name $params -> $($r)* $body
        #[graph(disable(dce))]
        fn $nodce $params -> $($r)* $body
    };
}

both!(early_stop, early_stop_nodce, fn (go: Tensor<f32>, h: Tensor<f32, N>) -> [Tensor<f32, N>] {
    let mut a = go;
    let mut h = h;
    if go > 0.5 {
        a = reduce_max(h);
        h = tanh(h);
    }
    h
});

#[test]
fn the_early_stop_pattern_drops_the_dead_output() {
    let h = arr1(&[0.5f32, -2.0, 3.0, 0.0, -0.0, 7.0, 1.0]);
    let hv: Vec<f32> = h.to_vec();
    check!(early_stop(&arr0(1.0), &h) == tanh_ref(&hv));
    check!(early_stop(&arr0(0.0), &h) == hv.clone());
    check!(early_stop_nodce(&arr0(1.0), &h) == tanh_ref(&hv));
    check!(early_stop_nodce(&arr0(0.0), &h) == hv.clone());
    let empty = arr1::<f32>(&[]);
    check!(early_stop(&arr0(1.0), &empty) == vec![]);
    // The dead output is gone from the compiled graph; the cond keeps only `h`.
    let g = early_stop::graph();
    assert_eq!(g.conds.len(), 1, "{:#?}", g.conds);
    assert_eq!(g.conds[0].outputs.len(), 1, "{:#?}", g.conds);
    assert!(
        !g.nodes.iter().any(|n| n.op == "reduce_max"),
        "{:#?}",
        g.nodes
    );
}

both!(nested_dead, nested_dead_nodce, fn (go: Tensor<f32>, h: Tensor<f32, N>) -> [Tensor<f32, N>] {
    let mut a = go;
    let mut h = h;
    if go > 0.5 {
        if go > 0.7 {
            a = reduce_max(h);
        } else {
            a = reduce_sum(h);
        }
        h = tanh(h);
    }
    h
});

#[test]
fn a_nested_cond_whose_outputs_are_dead_is_dropped() {
    let h = arr1(&[0.5f32, -2.0, 3.0]);
    let hv = h.to_vec();
    for go in [0.9f32, 0.6, 0.1] {
        let want = if go > 0.5 { tanh_ref(&hv) } else { hv.clone() };
        check!(nested_dead(&arr0(go), &h) == want.clone());
        check!(nested_dead_nodce(&arr0(go), &h) == want);
    }
    let g = nested_dead::graph();
    assert_eq!(
        g.conds.len(),
        1,
        "the inner cond only fed a dead output: {:#?}",
        g.conds
    );
}

both!(several_dead, several_dead_nodce, fn (go: Tensor<f32>, h: Tensor<f32, N>, w: Tensor<f32, N, N>) -> [(Tensor<f32, N>, Tensor<f32>)] {
    let mut a = go;
    let mut b = h;
    let mut c = h;
    let mut s = reduce_sum(h);
    let mut h = h;
    if go > 0.5 {
        a = reduce_max(h);
        b = softmax(h);
        c = reshape(matmul(reshape(h, [1, N]), w), [N]);
        s = reduce_min(h);
        if go > 0.7 {
            b = exp(h);
            s = reduce_max(h) + s;
        }
        h = tanh(h);
    } else {
        a = reduce_min(h);
        c = h * 2.0;
    }
    (h, s)
});

#[test]
fn several_dead_outputs_of_every_kind_are_dropped() {
    let hv = vec![0.5f32, -2.0, 3.0];
    let h = arr1(&hv);
    let w = Array2::<f32>::eye(3);
    let max = 3.0f32;
    let min = -2.0f32;
    let sum = hv.iter().sum::<f32>();
    for go in [0.9f32, 0.6, 0.1] {
        let (want_h, want_s) = match go {
            g if g > 0.7 => (tanh_ref(&hv), max + min),
            g if g > 0.5 => (tanh_ref(&hv), min),
            _ => (hv.clone(), sum),
        };
        for (path, got) in [
            ("compiled", several_dead(&arr0(go), &h, &w)),
            ("eager", several_dead::eager(&arr0(go), &h, &w)),
            (
                "run",
                several_dead::run(&mut Session::default(), &arr0(go), &h, &w),
            ),
            (
                "compiled without dce",
                several_dead_nodce(&arr0(go), &h, &w),
            ),
            (
                "eager without dce",
                several_dead_nodce::eager(&arr0(go), &h, &w),
            ),
        ] {
            let (gh, gs) = got.unwrap();
            assert_eq!(gh.to_vec(), want_h, "{path} h, go = {go}");
            assert_eq!(gs[[]].to_bits(), want_s.to_bits(), "{path} s, go = {go}");
        }
    }
    let g = several_dead::graph();
    let names: Vec<&str> = g
        .conds
        .iter()
        .flat_map(|c| c.outputs.iter().map(|o| o.0.as_str()))
        .collect();
    assert!(
        !names.contains(&"a") && !names.contains(&"b") && !names.contains(&"c"),
        "{names:?}"
    );
    assert!(names.contains(&"h") && names.contains(&"s"), "{names:?}");
}

both!(dead_in_one_arm, dead_in_one_arm_nodce, fn (go: Tensor<f32>, h: Tensor<f32, N>) -> [(Tensor<f32, N>, Tensor<f32>)] {
    // `m` is read after the `if` only through the outer value the else arm passes on:
    // the cond's `m` is dead, the outer `m` is live.
    let m = reduce_max(h);
    let mut m2 = m;
    let mut h = h;
    if go > 0.5 {
        m2 = reduce_sum(h);
        h = h * 3.0;
    }
    (h, m)
});

#[test]
fn an_output_whose_outer_value_stays_live_is_dropped_alone() {
    let hv = vec![0.5f32, -2.0, 3.0];
    let h = arr1(&hv);
    for go in [0.9f32, 0.1] {
        let want_h: Vec<f32> = if go > 0.5 {
            hv.iter().map(|x| x * 3.0).collect()
        } else {
            hv.clone()
        };
        for (path, got) in [
            ("compiled", dead_in_one_arm(&arr0(go), &h)),
            ("eager", dead_in_one_arm::eager(&arr0(go), &h)),
            (
                "run",
                dead_in_one_arm::run(&mut Session::default(), &arr0(go), &h),
            ),
            ("compiled without dce", dead_in_one_arm_nodce(&arr0(go), &h)),
        ] {
            let (gh, gm) = got.unwrap();
            assert_eq!(gh.to_vec(), want_h, "{path}, go = {go}");
            assert_eq!(gm[[]], 3.0, "{path}, go = {go}");
        }
    }
}

both!(checks_only, checks_only_nodce, fn (go: Tensor<f32>, h: Tensor<f32, N>) -> [Tensor<f32, N>] {
    if go > 0.5 {
        assert_non_negative(h);
    }
    h + 1.0
});

both!(checks_nested, checks_nested_nodce, fn (go: Tensor<f32>, h: Tensor<f32, N>) -> [Tensor<f32, N>] {
    let mut a = h;
    if go > 0.5 {
        if go > 0.7 {
            assert_non_negative(h);
        }
        a = h * 2.0;
    }
    h + 1.0
});

#[test]
fn a_cond_that_only_checks_still_runs_its_check() {
    let bad = arr1(&[-1.0f32, 2.0]);
    let good = arr1(&[1.0f32, 2.0]);
    check_fails!(checks_only(&arr0(1.0), &bad) at check_line(0));
    check_fails!(checks_only_nodce(&arr0(1.0), &bad) at check_line(0));
    check!(checks_only(&arr0(0.0), &bad) == vec![0.0, 3.0]);
    check!(checks_only(&arr0(1.0), &good) == vec![2.0, 3.0]);
    check_fails!(checks_nested(&arr0(0.9), &bad) at check_line(1));
    check_fails!(checks_nested_nodce(&arr0(0.9), &bad) at check_line(1));
    check!(checks_nested(&arr0(0.6), &bad) == vec![0.0, 3.0]);
    check!(checks_nested_nodce(&arr0(0.6), &bad) == vec![0.0, 3.0]);
    check!(checks_nested(&arr0(0.9), &good) == vec![2.0, 3.0]);
    let g = checks_nested::graph();
    assert_eq!(g.conds.len(), 2, "both conds run: {:#?}", g.conds);
}

both!(viewed_arm_output, viewed_arm_output_nodce, fn (go: Tensor<f32>, h: Tensor<f32, N>, w: Tensor<f32, N, N>) -> [(Tensor<f32, N>, Tensor<f32, N>)] {
    // The arm's output is a reshape view of a matmul: its buffer must outlive the matmul's group.
    let mut c = h;
    let mut h = h;
    if go > 0.5 {
        c = reshape(matmul(reshape(h, [1, N]), w), [N]);
        h = tanh(h);
    } else {
        c = h * 2.0;
    }
    (h, c + 1.0)
});

#[test]
fn an_arm_output_read_through_a_reshape_keeps_its_buffer() {
    let hv = vec![0.5f32, -2.0, 3.0];
    let h = arr1(&hv);
    let w = arr2(&[[1.0f32, 0.0, 2.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]);
    for go in [0.9f32, 0.1] {
        let (want_h, want_c): (Vec<f32>, Vec<f32>) = if go > 0.5 {
            (
                tanh_ref(&hv),
                vec![0.5 + 1.0, -2.0 + 1.0, 0.5 * 2.0 + 3.0 + 1.0],
            )
        } else {
            (hv.clone(), hv.iter().map(|x| x * 2.0 + 1.0).collect())
        };
        for (path, got) in [
            ("compiled", viewed_arm_output(&arr0(go), &h, &w)),
            ("eager", viewed_arm_output::eager(&arr0(go), &h, &w)),
            (
                "run",
                viewed_arm_output::run(&mut Session::default(), &arr0(go), &h, &w),
            ),
            (
                "compiled without dce",
                viewed_arm_output_nodce(&arr0(go), &h, &w),
            ),
        ] {
            let (gh, gc) = got.unwrap();
            assert_eq!(
                (gh.to_vec(), gc.to_vec()),
                (want_h.clone(), want_c.clone()),
                "{path}, go = {go}"
            );
        }
    }
}
