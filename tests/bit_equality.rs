//! Compiled and eager agree bit for bit (issue 11, item 5): the rewrites of `simplify` and
//! the emitter keep -0, NaN, ±inf and overflow as the op itself gives them, and reductions
//! accumulate in one order on both paths (f32 sums, means and norms in f64). Each function
//! is compiled twice, with every pass and with `disable(fold, simplify, cse, dce, fusion)`;
//! the compiled, session, eager and pass-free results must have the same bits (NaNs compare
//! equal whatever their payload), and equal the naive reference written here.

use grafo::prelude::*;

/// The bits of a float, with every NaN mapped to one pattern (payloads are not specified).
fn bits32(v: f32) -> u32 {
    if v.is_nan() {
        u32::MAX
    } else {
        v.to_bits()
    }
}

/// `$name` with every pass and `$plain` with none, from one body.
macro_rules! twice {
    ($name:ident, $plain:ident, fn $params:tt -> [$($r:tt)*] $body:block) => {
        #[graph]
        fn $name $params -> $($r)* $body
        #[graph(disable(fold, simplify, cse, dce, fusion))]
        fn $plain $params -> $($r)* $body
    };
}

/// The four paths of `$f`/`$plain` on `$x`, each flattened, must have the bits of `$want`.
macro_rules! agree {
    ($f:ident, $plain:ident, ($($arg:expr),*), $want:expr) => {{
        let want: Vec<f32> = $want;
        let want_bits: Vec<u32> = want.iter().map(|&v| bits32(v)).collect();
        for (path, got) in [
            ("compiled", $f($($arg),*).map(|a| a.iter().copied().collect::<Vec<f32>>())),
            ("run", $f::run(&mut Session::default(), $($arg),*).map(|a| a.iter().copied().collect())),
            ("eager", $f::eager($($arg),*).map(|a| a.iter().copied().collect())),
            ("no passes", $plain($($arg),*).map(|a| a.iter().copied().collect())),
        ] {
            let got = got.unwrap_or_else(|e| panic!("{} {path}: {e}", stringify!($f)));
            let got_bits: Vec<u32> = got.iter().map(|&v| bits32(v)).collect();
            assert_eq!(got_bits, want_bits, "{} {path}: {got:?}, want {want:?}", stringify!($f));
        }
    }};
}

/// Values where rewrites and accumulation orders show: signed zeros, infinities, NaN,
/// huge and tiny magnitudes, subnormals.
fn specials() -> Vec<f32> {
    vec![
        0.0,
        -0.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        1.0,
        -1.0,
        3e38,
        -3e38,
        1e-45,
        -1e-45,
        1e-40,
        2.5,
        -7.0,
        1e20,
        0.1,
    ]
}

twice!(pow_half, pow_half_plain, fn (x: Tensor<f32, N>) -> [Tensor<f32, N>] { pow(x, 0.5) });
twice!(pow_two, pow_two_plain, fn (x: Tensor<f32, N>) -> [Tensor<f32, N>] { pow(x, 2.0) });
twice!(pow_three, pow_three_plain, fn (x: Tensor<f32, N>) -> [Tensor<f32, N>] { pow(x, 3.0) });

#[test]
fn pow_with_a_constant_exponent_keeps_pow_semantics() {
    let x = specials();
    let a = arr1(&x);
    // pow(x, 0.5) is the square root, but +0 at -0 and +inf at -inf (C's pow).
    let half: Vec<f32> = x
        .iter()
        .map(|&v| {
            if v == f32::NEG_INFINITY {
                f32::INFINITY
            } else if v == 0.0 {
                0.0
            } else {
                v.sqrt()
            }
        })
        .collect();
    assert_eq!(bits32(half[1]), 0.0f32.to_bits(), "pow(-0, 0.5) is +0");
    agree!(pow_half, pow_half_plain, (&a), half);
    agree!(
        pow_two,
        pow_two_plain,
        (&a),
        x.iter().map(|&v| v * v).collect()
    );
    agree!(
        pow_three,
        pow_three_plain,
        (&a),
        x.iter().map(|&v| v.powf(3.0)).collect()
    );
}

twice!(add_zero, add_zero_plain, fn (x: Tensor<f32, N>) -> [Tensor<f32, N>] { x + 0.0 });
twice!(zero_add, zero_add_plain, fn (x: Tensor<f32, N>) -> [Tensor<f32, N>] { 0.0 + x });
twice!(add_neg_zero, add_neg_zero_plain, fn (x: Tensor<f32, N>) -> [Tensor<f32, N>] { x + (-0.0) });
twice!(sub_zero, sub_zero_plain, fn (x: Tensor<f32, N>) -> [Tensor<f32, N>] { x - 0.0 });
twice!(sub_neg_zero, sub_neg_zero_plain, fn (x: Tensor<f32, N>) -> [Tensor<f32, N>] { x - (-0.0) });
twice!(mul_one, mul_one_plain, fn (x: Tensor<f32, N>) -> [Tensor<f32, N>] { 1.0 * (x * 1.0) / 1.0 });
twice!(neg_neg, neg_neg_plain, fn (x: Tensor<f32, N>) -> [Tensor<f32, N>] { neg(neg(x)) });
twice!(div_pow2, div_pow2_plain, fn (x: Tensor<f32, N>) -> [Tensor<f32, N>] { x / 4.0 });
twice!(div_tiny, div_tiny_plain, fn (x: Tensor<f32, N>) -> [Tensor<f32, N>] { x / 1.4e-45 });
twice!(div_huge, div_huge_plain, fn (x: Tensor<f32, N>) -> [Tensor<f32, N>] { x / 1.7014118e38 });

#[test]
fn additive_identities_keep_the_sign_of_zero() {
    let x = specials();
    let a = arr1(&x);
    agree!(
        add_zero,
        add_zero_plain,
        (&a),
        x.iter().map(|&v| v + 0.0).collect()
    );
    agree!(
        zero_add,
        zero_add_plain,
        (&a),
        x.iter().map(|&v| 0.0 + v).collect()
    );
    agree!(add_neg_zero, add_neg_zero_plain, (&a), x.clone());
    agree!(sub_zero, sub_zero_plain, (&a), x.clone());
    agree!(
        sub_neg_zero,
        sub_neg_zero_plain,
        (&a),
        x.iter().map(|&v| v - (-0.0)).collect()
    );
    assert_eq!(
        add_zero(&arr1(&[-0.0f32])).unwrap()[0].to_bits(),
        0.0f32.to_bits(),
        "-0 + 0 is +0"
    );
}

#[test]
fn multiplicative_identities_and_exact_reciprocals_are_exact() {
    let x = specials();
    let a = arr1(&x);
    agree!(mul_one, mul_one_plain, (&a), x.clone());
    agree!(neg_neg, neg_neg_plain, (&a), x.clone());
    agree!(
        div_pow2,
        div_pow2_plain,
        (&a),
        x.iter().map(|&v| v / 4.0).collect()
    );
    // 1.4e-45 is the smallest subnormal: its reciprocal (2^149) overflows f32.
    agree!(
        div_tiny,
        div_tiny_plain,
        (&a),
        x.iter().map(|&v| v / 1.4e-45).collect()
    );
    // 2^127: its reciprocal 2^-127 is subnormal but exact.
    agree!(
        div_huge,
        div_huge_plain,
        (&a),
        x.iter().map(|&v| v / 1.7014118e38).collect()
    );
}

twice!(mean_all, mean_all_plain, fn (x: Tensor<f32, N>) -> [Tensor<f32>] { reduce_mean(x) });
twice!(sum_all, sum_all_plain, fn (x: Tensor<f32, N>) -> [Tensor<f32>] { reduce_sum(x) });
twice!(mean_rows, mean_rows_plain, fn (x: Tensor<f32, R, C>) -> [Tensor<f32, R>] { reduce_mean(x, 1) });
twice!(mean_cols, mean_cols_plain, fn (x: Tensor<f32, R, C>) -> [Tensor<f32, C>] { reduce_mean(x, 0) });
twice!(sum_fused, sum_fused_plain, fn (x: Tensor<f32, N>) -> [Tensor<f32>] { reduce_sum(x * 2.0 + 1.0) });
twice!(max_all, max_all_plain, fn (x: Tensor<f32, N>) -> [Tensor<f32>] { reduce_max(x) });
twice!(min_rows, min_rows_plain, fn (x: Tensor<f32, R, C>) -> [Tensor<f32, R>] { reduce_min(x, 1) });
twice!(sum_bcast, sum_bcast_plain, fn (x: Tensor<f32, R, C>, b: Tensor<f32, C>) -> [Tensor<f32>] { reduce_sum(x + b) });

/// The f64 sum of `xs` rounded once: what an f32 sum gives whenever the f64 sum is exact.
fn f64_sum(xs: &[f32]) -> f64 {
    xs.iter().fold(0.0, |t, &v| t + v as f64)
}

#[test]
fn f32_means_and_sums_accumulate_in_f64_on_both_paths() {
    let big = vec![3e38f32; 4];
    let a = arr1(&big);
    agree!(mean_all, mean_all_plain, (&a), vec![3e38]);
    agree!(sum_all, sum_all_plain, (&a), vec![f32::INFINITY]);
    // Past the lanes and blocks too: no partial sum overflows f32.
    for n in [64, 1024 * 3 + 5] {
        agree!(
            mean_all,
            mean_all_plain,
            (&arr1(&vec![3e38f32; n])),
            vec![3e38]
        );
    }
    let m = Array2::from_shape_vec((2, 4), [big.clone(), vec![-3e38; 4]].concat()).unwrap();
    agree!(mean_rows, mean_rows_plain, (&m), vec![3e38, -3e38]);
    let mt = m.t().to_owned();
    agree!(mean_cols, mean_cols_plain, (&mt), vec![3e38, -3e38]);
    // Cancellation an f32 accumulator loses: 1e8 + 1 + ... - 1e8.
    let mut c = vec![1e8f32];
    c.extend(std::iter::repeat_n(1.0f32, 1000));
    c.push(-1e8);
    let want = f64_sum(&c) as f32;
    assert_eq!(want, 1000.0);
    agree!(sum_all, sum_all_plain, (&arr1(&c)), vec![want]);
    agree!(
        sum_fused,
        sum_fused_plain,
        (&arr1(&c)),
        vec![c.iter().fold(0.0, |t, &v| t + (v * 2.0 + 1.0) as f64) as f32]
    );
    // A sum starts from +0: the sum of -0s is +0, their max is -0.
    let z = arr1(&[-0.0f32; 3]);
    agree!(sum_all, sum_all_plain, (&z), vec![0.0]);
    agree!(max_all, max_all_plain, (&z), vec![-0.0]);
    let e = arr1::<f32>(&[]);
    agree!(mean_all, mean_all_plain, (&e), vec![f32::NAN]);
    agree!(sum_all, sum_all_plain, (&e), vec![0.0]);
    // NaN and infinities.
    agree!(
        sum_all,
        sum_all_plain,
        (&arr1(&[1.0, f32::INFINITY, f32::NEG_INFINITY])),
        vec![f32::NAN]
    );
    agree!(
        max_all,
        max_all_plain,
        (&arr1(&[1.0, f32::NAN, 2.0])),
        vec![f32::NAN]
    );
    let r = Array2::from_shape_vec((3, 1), vec![-0.0f32, f32::NAN, 2.0]).unwrap();
    agree!(min_rows, min_rows_plain, (&r), vec![-0.0, f32::NAN, 2.0]);
}

#[test]
fn long_reductions_agree_across_segments_and_threads() {
    // Longer than several segments, with a sign pattern that makes the order matter.
    for n in [1usize, 7, 1023, 1025, 32 * 1024 + 17, 100_003] {
        let x: Vec<f32> = (0..n)
            .map(|i| ((i * 7919 % 1000) as f32 - 500.0) * if i % 3 == 0 { 1e7 } else { 1.0 })
            .collect();
        let a = arr1(&x);
        let want = grafo::eager::reduce_sum(a.view().into_dyn(), None, false).unwrap()[[]];
        agree!(sum_all, sum_all_plain, (&a), vec![want]);
        agree!(
            sum_fused,
            sum_fused_plain,
            (&a),
            vec![sum_fused::eager(&a).unwrap()[[]]]
        );
        let mean = grafo::eager::reduce_mean(a.view().into_dyn(), None, false).unwrap()[[]];
        agree!(mean_all, mean_all_plain, (&a), vec![mean]);
        // Close to the exact sum (the f64 accumulation), far closer than f32 accumulation.
        let exact = f64_sum(&x);
        assert!(
            (want as f64 - exact).abs() <= exact.abs() * 1e-6 + 1.0,
            "n = {n}: {want} vs {exact}"
        );
        // One thread or several: the same bits.
        let one = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap();
        let single = one.install(|| sum_all(&a).unwrap()[[]]);
        assert_eq!(bits32(single), bits32(want), "n = {n}: one thread");
    }
    let x: Vec<f32> = (0..5 * 33).map(|i| (i as f32 * 0.37).sin() * 1e5).collect();
    let m = Array2::from_shape_vec((5, 33), x).unwrap();
    let b = arr1(&(0..33).map(|i| i as f32 * 1e3).collect::<Vec<f32>>());
    let want = grafo::eager::reduce_sum(
        grafo::eager::add(m.view().into_dyn(), b.view().into_dyn())
            .unwrap()
            .view(),
        None,
        false,
    )
    .unwrap()[[]];
    agree!(sum_bcast, sum_bcast_plain, (&m, &b), vec![want]);
}

twice!(norm_f32, norm_f32_plain, fn (x: Tensor<f32, N>) -> [Tensor<f32>] { norm(x) });
twice!(norm_fused, norm_fused_plain, fn (x: Tensor<f32, N>) -> [Tensor<f32>] { norm(x * 2.0) });
twice!(norm_limit, norm_limit_plain, fn (y: Tensor<f32, N>, limit: Tensor<f32>) -> [Tensor<f32, N>] {
    if norm(y) < limit { y * 2.0 } else { y - 1.0 }
});

#[graph]
fn norm_f64(x: Tensor<f64, N>) -> Tensor<f64> {
    norm(x * 1.0)
}

#[test]
fn norm_neither_overflows_nor_underflows() {
    let ref_norm = |x: &[f32]| {
        x.iter()
            .fold(0.0f64, |t, &v| t + v as f64 * v as f64)
            .sqrt() as f32
    };
    for x in [
        vec![3e19f32, 4e19],
        vec![3e-30f32, 4e-30],
        vec![1e-45f32; 9],
        vec![3e38f32, 3e38],
        vec![1.0, f32::INFINITY, 2.0],
        vec![1.0, f32::NAN, f32::INFINITY],
        vec![-0.0],
        vec![],
    ] {
        let a = arr1(&x);
        agree!(norm_f32, norm_f32_plain, (&a), vec![ref_norm(&x)]);
        agree!(
            norm_fused,
            norm_fused_plain,
            (&a),
            vec![ref_norm(&x.iter().map(|v| v * 2.0).collect::<Vec<_>>())]
        );
    }
    assert_eq!(norm_f32(&arr1(&[3e19f32, 4e19])).unwrap()[[]], 5e19);
    // `if norm(y) < limit` takes the same arm on every path (it took the other one compiled).
    let y = arr1(&[3e19f32, 4e19]);
    agree!(
        norm_limit,
        norm_limit_plain,
        (&y, &arr0(1e20)),
        vec![6e19, 8e19]
    );
    agree!(
        norm_limit,
        norm_limit_plain,
        (&y, &arr0(1e19)),
        vec![3e19 - 1.0, 4e19 - 1.0]
    );
    // f64: scaled by the largest magnitude.
    let d = arr1(&[3e200f64, 4e200]);
    let got = norm_f64(&d).unwrap()[[]];
    assert!((got / 5e200 - 1.0).abs() < 1e-15, "{got}");
    assert!(norm_f64(&arr1(&[f64::INFINITY, f64::NAN])).unwrap()[[]].is_nan());
    assert_eq!(
        norm_f64::eager(&d).unwrap()[[]].to_bits(),
        norm_f64(&d).unwrap()[[]].to_bits()
    );
}

twice!(keepdims_max_broadcast, keepdims_max_broadcast_plain, fn (x: Tensor<f32, 4, 1, 3>, b: Tensor<f32, 3>) -> [Tensor<f32, 4, 1, 3>] {
    let m = reduce_max(b, -1, true);
    (x + x) + m
});

/// A one-element reduction result (`[1]`, kept dims) read as a broadcast operand of a fused
/// loop: found by graph-fuzz (seed 20251201), where the emitted read was a reference.
#[test]
fn a_one_element_reduction_broadcasts_into_a_fused_loop() {
    let xs: Vec<f32> = (0..12).map(|i| i as f32 - 5.5).collect();
    let x = Array3::from_shape_vec((4, 1, 3), xs.clone()).unwrap();
    let b = arr1(&[0.25f32, -3.0, 2.0]);
    agree!(
        keepdims_max_broadcast,
        keepdims_max_broadcast_plain,
        (&x, &b),
        xs.iter().map(|&v| (v + v) + 2.0).collect()
    );
}

/// The documented order of an f32 sum (docs/LANGUAGE-NOTES.md): 16 f64 lanes over chunks of
/// 16 elements, folded in lane order every 64 chunks, then the elements after the last chunk.
fn ordered_sum(xs: &[f32]) -> f64 {
    let chunks = xs.len() / 16;
    let mut total = 0.0f64;
    let mut c0 = 0;
    while c0 < chunks {
        let c1 = (c0 + 64).min(chunks);
        let mut acc = [0.0f64; 16];
        for c in c0..c1 {
            for (j, a) in acc.iter_mut().enumerate() {
                *a += xs[c * 16 + j] as f64;
            }
        }
        for a in acc {
            total += a;
        }
        c0 = c1;
    }
    xs[chunks * 16..].iter().fold(total, |t, &v| t + v as f64)
}

twice!(layernorm_rows, layernorm_rows_plain, fn (x: Tensor<f32, R, C>, g: Tensor<f32, C>, b: Tensor<f32, C>) -> [Tensor<f32, R, C>] {
    let mean = reduce_mean(x, -1, true);
    let d = x - mean;
    let var = reduce_mean(d * d, -1, true);
    d / sqrt(var + 1e-5) * g + b
});
twice!(two_row_divisors, two_row_divisors_plain, fn (x: Tensor<f32, R, C>) -> [Tensor<f32, R, C>] {
    let hi = reduce_max(x, -1, true);
    let lo = reduce_min(x, -1, true);
    x / hi + (x * (2.0 / hi) - x / (lo * 3.0))
});

/// Rows that take the fast shared division and rows that must fall back to `/`: zeros of
/// both signs, constant rows, NaN, infinities, values whose variance overflows, subnormals,
/// and magnitudes past 2^60 and below 2^-60 (graph-runtime's division.rs).
fn division_rows(c: usize) -> Vec<Vec<f32>> {
    let ramp = |scale: f32, shift: f32| -> Vec<f32> {
        (0..c)
            .map(|j| ((j * 37 % 101) as f32 - 50.0) * scale + shift)
            .collect()
    };
    let with = |mut row: Vec<f32>, v: f32| {
        row[c / 2] = v;
        row
    };
    vec![
        ramp(0.013, 0.25),
        ramp(1.7, -3.0),
        vec![2.5; c],
        with(vec![0.0; c], -0.0),
        with(ramp(1.0, 0.0), -0.0),
        with(ramp(0.1, 0.0), f32::NAN),
        with(ramp(0.1, 0.0), f32::INFINITY),
        with(ramp(0.1, 0.0), f32::NEG_INFINITY),
        ramp(6e36, 0.0),
        ramp(1e-41, 0.0),
        ramp(3e17, 0.0),
        ramp(1e-20, 0.5),
        with(ramp(1e-3, 1.0), 1e-30),
    ]
}

#[test]
fn division_by_a_row_statistic_is_division() {
    for c in [1usize, 7, 16, 33, 1023] {
        let rows = division_rows(c);
        let r = rows.len();
        let flat: Vec<f32> = rows.concat();
        let x = Array2::from_shape_vec((r, c), flat).unwrap();
        let g: Vec<f32> = (0..c).map(|j| 0.5 + (j % 5) as f32 * 0.25).collect();
        let b: Vec<f32> = (0..c).map(|j| (j % 3) as f32 - 1.0).collect();
        let mut want = Vec::new();
        for row in &rows {
            let mean = (ordered_sum(row) / c as f64) as f32;
            let d: Vec<f32> = row.iter().map(|&v| v - mean).collect();
            let sq: Vec<f32> = d.iter().map(|&v| v * v).collect();
            let var = (ordered_sum(&sq) / c as f64) as f32;
            let s = (var + 1e-5f32).sqrt();
            want.extend(d.iter().enumerate().map(|(j, &dj)| dj / s * g[j] + b[j]));
        }
        agree!(
            layernorm_rows,
            layernorm_rows_plain,
            (&x, &arr1(&g), &arr1(&b)),
            want
        );

        let mut want = Vec::new();
        for row in &rows {
            let nan = row.iter().any(|v| v.is_nan());
            let hi = if nan {
                f32::NAN
            } else {
                row.iter().copied().fold(f32::NEG_INFINITY, f32::max)
            };
            let lo = if nan {
                f32::NAN
            } else {
                row.iter().copied().fold(f32::INFINITY, f32::min)
            };
            want.extend(
                row.iter()
                    .map(|&v| v / hi + (v * (2.0 / hi) - v / (lo * 3.0))),
            );
        }
        agree!(two_row_divisors, two_row_divisors_plain, (&x), want);
    }
}

#[graph]
fn layernorm_rows_f64(x: Tensor<f64, R, C>, g: Tensor<f64, C>) -> Tensor<f64, R, C> {
    let mean = reduce_mean(x, -1, true);
    let d = x - mean;
    let var = reduce_mean(d * d, -1, true);
    d / sqrt(var + 1e-5) * g
}

/// The f64 shared division (range checks in u64) on the same kinds of rows plus magnitudes
/// past 2^500 and below 2^-500: compiled and run agree bit for bit with eager, which divides
/// with `/` (replacing the fused sequence's result by its first step makes this fail).
#[test]
fn f64_division_by_a_row_statistic_is_division() {
    for c in [1usize, 7, 33, 1023] {
        let mut rows: Vec<Vec<f64>> = division_rows(c)
            .into_iter()
            .map(|r| r.into_iter().map(f64::from).collect())
            .collect();
        rows.push((0..c).map(|j| (j as f64 - 3.0) * 1e160).collect());
        rows.push((0..c).map(|j| (j as f64 + 0.5) * 1e-160).collect());
        let r = rows.len();
        let x = Array2::from_shape_vec((r, c), rows.concat()).unwrap();
        let g = Array1::from_shape_fn(c, |j| 0.75 + (j % 3) as f64 * 0.5);
        let bits = |a: &Array2<f64>| -> Vec<u64> {
            a.iter()
                .map(|v| if v.is_nan() { u64::MAX } else { v.to_bits() })
                .collect()
        };
        let compiled = layernorm_rows_f64(&x, &g).unwrap();
        let eager = layernorm_rows_f64::eager(&x, &g).unwrap();
        let run = layernorm_rows_f64::run(&mut Session::default(), &x, &g).unwrap();
        assert_eq!(bits(&compiled), bits(&eager), "c = {c}");
        assert_eq!(bits(&run), bits(&eager), "c = {c}");
    }
}

twice!(div_by_constant, div_by_constant_plain, fn (x: Tensor<f32, N>) -> [Tensor<f32, N>] { x / 3.0 + 1.0 });
twice!(div_by_scalar, div_by_scalar_plain, fn (x: Tensor<f32, N>, s: Tensor<f32>) -> [Tensor<f32, N>] { (x - 0.5) / s });
twice!(div_by_total, div_by_total_plain, fn (x: Tensor<f32, N>) -> [Tensor<f32, N>] { x / reduce_sum(x * x) });

/// Flat elementwise loops dividing by a constant, a rank-0 input or an all-axes reduction,
/// over values with zeros, NaN, infinities and magnitudes outside [2^-60, 2^60): every path
/// gives the bits of the plain loops here (the emitter keeps `/` in these loops; a shared
/// division there measured no faster, being memory-bound, see BENCHMARKS.md).
#[test]
fn division_by_a_loop_invariant_value_is_division() {
    for n in [0usize, 1, 7, 1023, 100_003] {
        let mut xs: Vec<f32> = (0..n)
            .map(|i| ((i * 7919 % 2003) as f32 - 1001.0) * 0.37)
            .collect();
        let clean = arr1(&xs);
        if n > 0 {
            let s = specials();
            for (i, &v) in s.iter().enumerate() {
                xs[(i * 131) % n] = v;
            }
        }
        let x = arr1(&xs);
        for input in [&clean, &x] {
            agree!(
                div_by_constant,
                div_by_constant_plain,
                (input),
                input.iter().map(|&v| v / 3.0 + 1.0).collect()
            );
            for s in [
                7.0f32,
                -0.1,
                1e-30,
                3e30,
                0.0,
                -0.0,
                f32::INFINITY,
                f32::NAN,
            ] {
                agree!(
                    div_by_scalar,
                    div_by_scalar_plain,
                    (input, &arr0(s)),
                    input.iter().map(|&v| (v - 0.5) / s).collect()
                );
            }
        }
        let xc: Vec<f32> = clean.to_vec();
        let total = (ordered_sum(&xc.iter().map(|&v| v * v).collect::<Vec<f32>>())) as f32;
        if n <= 32 * 1024 {
            agree!(
                div_by_total,
                div_by_total_plain,
                (&clean),
                xc.iter().map(|&v| v / total).collect()
            );
        }
    }
}
