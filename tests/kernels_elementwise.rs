//! Checks the elementwise kernels, the eager elementwise ops and the math functions against naive references.
#![allow(clippy::type_complexity)] // The op tables pair kernels with their references.

mod harness;

use graph_runtime::math::*;
use harness::*;

/// Every 1021st f32 bit pattern (both signs, all exponents) plus edge values.
fn sweep() -> impl Iterator<Item = f32> {
    let edges = [
        0.0f32,
        -0.0,
        1.0,
        -1.0,
        f32::MIN_POSITIVE,
        1e-45,
        -1e-45,
        f32::MAX,
        f32::MIN,
        88.72,
        88.8,
        -87.5,
        -103.9,
        -104.0,
        0.625,
        -0.625,
        0.6249,
        1e-4,
        -1e-4,
        9.0,
        9.1,
    ];
    (0..u32::MAX / 1021)
        .map(|i| f32::from_bits(i.wrapping_mul(1021)))
        .chain(edges)
}

/// The largest ulp error of `f` against the correctly rounded `reference`, and where it happens.
fn max_ulp(f: impl Fn(f32) -> f32, reference: impl Fn(f64) -> f64) -> (u64, f32) {
    let mut worst = (0, 0.0);
    for x in sweep() {
        let want = reference(x as f64) as f32;
        let got = f(x);
        let d = ulp_f32(got, want);
        if d > worst.0 {
            worst = (d, x);
        }
    }
    worst
}

fn sigmoid_ref(x: f64) -> f64 {
    if x < 0.0 {
        let e = x.exp();
        e / (1.0 + e)
    } else {
        1.0 / (1.0 + (-x).exp())
    }
}

#[test]
fn f32_math_within_4_ulp() {
    let cases: [(&str, fn(f32) -> f32, fn(f64) -> f64); 9] = [
        ("exp", exp_f32, f64::exp),
        ("log", log_f32, f64::ln),
        ("tanh", tanh_f32, f64::tanh),
        ("sigmoid", sigmoid_f32, sigmoid_ref),
        ("sin", sin_f32, f64::sin),
        ("cos", cos_f32, f64::cos),
        ("rsqrt", rsqrt_f32, |x| 1.0 / x.sqrt()),
        ("log1p", log1p_f32, f64::ln_1p),
        ("expm1", expm1_f32, f64::exp_m1),
    ];
    for (name, f, r) in cases {
        let (ulp, at) = max_ulp(f, r);
        println!("{name}: max {ulp} ulp at {at:e}");
        assert!(ulp <= 4, "{name}: {ulp} ulp at {at:e}");
    }
}

#[test]
fn f32_math_special_values() {
    assert_eq!(exp_f32(f32::NEG_INFINITY), 0.0);
    assert_eq!(exp_f32(f32::INFINITY), f32::INFINITY);
    assert_eq!(exp_f32(88.8), f32::INFINITY);
    assert!(exp_f32(f32::NAN).is_nan());
    assert_eq!(log_f32(0.0), f32::NEG_INFINITY);
    assert_eq!(log_f32(-0.0), f32::NEG_INFINITY);
    assert!(log_f32(-1.0).is_nan());
    assert!(log_f32(f32::NEG_INFINITY).is_nan());
    assert!(log_f32(f32::NAN).is_nan());
    assert_eq!(log_f32(f32::INFINITY), f32::INFINITY);
    assert_eq!(tanh_f32(f32::INFINITY), 1.0);
    assert_eq!(tanh_f32(f32::NEG_INFINITY), -1.0);
    assert_eq!(tanh_f32(1e-30), 1e-30);
    assert!(tanh_f32(-0.0).is_sign_negative() && tanh_f32(-0.0) == 0.0);
    assert!(tanh_f32(f32::NAN).is_nan());
    assert_eq!(sigmoid_f32(f32::NEG_INFINITY), 0.0);
    assert_eq!(sigmoid_f32(f32::INFINITY), 1.0);
    assert!(sigmoid_f32(f32::NAN).is_nan());
    assert_eq!(sigmoid_f64(f64::NEG_INFINITY), 0.0);
    assert_eq!(rsqrt_f32(4.0), 0.5);
    assert_eq!(rsqrt_f64(0.0), f64::INFINITY);
}

/// The worst ulp error of `tanh` through the dispatched kernel (FMA at the AVX2 and AVX-512
/// levels) over the f32 bit patterns in `bits`, and their negations too if `negated`.
fn tanh_kernel_worst_ulp(bits: std::ops::Range<u64>, negated: bool) -> (u64, f32) {
    use graph_runtime::elementwise::math_into;
    use graph_runtime::math::MathFn;
    use rayon::prelude::*;
    let chunk = 1u64 << 22;
    let mut worst = (0u64, 0.0f32);
    let mut start = bits.start;
    while start < bits.end {
        let end = (start + chunk).min(bits.end);
        let mut x = Vec::with_capacity(2 * (end - start) as usize);
        for b in start..end {
            let v = f32::from_bits(b as u32);
            x.push(v);
            if negated {
                x.push(-v);
            }
        }
        let mut out = vec![0.0f32; x.len()];
        math_into(MathFn::Tanh, &x, &mut out);
        let (d, at) = x
            .par_iter()
            .zip(&out)
            .map(|(&v, &got)| (ulp_f32(got, (v as f64).tanh() as f32), v.to_bits()))
            .max()
            .unwrap_or((0, 0));
        if d > worst.0 {
            worst = (d, f32::from_bits(at));
        }
        start = end;
    }
    worst
}

/// `tanh` on every f32 from 0.5 to 9.5 and its negation: the range where the result nears ±1
/// and the doubling formula takes over at 1. `f32_tanh_every_input` covers all 2^32 inputs.
#[test]
fn f32_tanh_every_input_from_half_to_nine_and_a_half() {
    let bits = u64::from(0.5f32.to_bits())..u64::from(9.5f32.to_bits()) + 1;
    let (ulp, at) = tanh_kernel_worst_ulp(bits, true);
    println!("tanh on [0.5, 9.5]: max {ulp} ulp at {at:e}");
    assert!(ulp <= 3, "tanh: {ulp} ulp at {at:e}");
}

/// `tanh` on every one of the 2^32 f32 bit patterns (NaN in, NaN out). About 30 s in release
/// on two cores: `.ci/run` runs it with `--ignored`.
#[test]
#[ignore = "exhaustive over 2^32 inputs: run in release by .ci/run"]
fn f32_tanh_every_input() {
    let (ulp, at) = tanh_kernel_worst_ulp(0..1 << 32, false);
    println!("tanh on all 2^32 inputs: max {ulp} ulp at {at:e}");
    assert!(ulp <= 3, "tanh: {ulp} ulp at {at:e}");
}

use graph_runtime::eager as E;
use graph_runtime::elementwise::{broadcast_into, broadcast_shapes};
use graph_runtime::Error;
use ndarray::{s, ArrayD, IxDyn};
use proptest::prelude::*;

/// Test data with NaN and infinities sprinkled in.
fn data(shape: &[usize], seed: u64) -> ArrayD<f64> {
    let mut x = random_f64(shape, -3.0, 3.0, seed);
    let specials = [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 0.0, -0.0];
    for (i, v) in x.iter_mut().enumerate() {
        if i % 97 == 5 {
            *v = specials[(i / 97) % specials.len()];
        }
    }
    x
}

/// The operand shape pairs every binary op is checked on.
fn shape_pairs() -> Vec<(Vec<usize>, Vec<usize>)> {
    let mut pairs = Vec::new();
    for n in SIZES {
        pairs.push((vec![n], vec![n]));
        pairs.push((vec![n], vec![]));
        pairs.push((vec![], vec![n]));
        let c = 3;
        pairs.push((vec![n, c], vec![c]));
        pairs.push((vec![n, c], vec![n, 1]));
        pairs.push((vec![n, c], vec![]));
        pairs.push((vec![n, c], vec![1, c]));
        pairs.push((vec![c], vec![n, c]));
        pairs.push((vec![n, 1], vec![1, c]));
    }
    pairs
}

fn same_f64(got: &ArrayD<f64>, want: &ArrayD<f64>, what: &str) {
    assert_eq!(got.shape(), want.shape(), "{what}");
    for (g, w) in got.iter().zip(want) {
        assert!(close(*g, *w, 1e-12), "{what}: got {g}, want {w}");
    }
}

type BinF64 = fn(&ArrayD<f64>, &ArrayD<f64>) -> Result<ArrayD<f64>, Error>;

fn binary_ops_f64() -> Vec<(&'static str, BinF64, fn(f64, f64) -> f64)> {
    vec![
        ("add", |a, b| E::add(a, b), |x, y| x + y),
        ("sub", |a, b| E::sub(a, b), |x, y| x - y),
        ("mul", |a, b| E::mul(a, b), |x, y| x * y),
        ("div", |a, b| E::div(a, b), |x, y| x / y),
        ("pow", |a, b| E::pow(a, b), f64::powf),
        (
            "maximum",
            |a, b| E::maximum(a, b),
            |x, y| {
                if x.is_nan() || y.is_nan() {
                    f64::NAN
                } else {
                    x.max(y)
                }
            },
        ),
        (
            "minimum",
            |a, b| E::minimum(a, b),
            |x, y| {
                if x.is_nan() || y.is_nan() {
                    f64::NAN
                } else {
                    x.min(y)
                }
            },
        ),
    ]
}

#[test]
fn binary_ops_match_reference_with_broadcasting() {
    for (name, op, f) in binary_ops_f64() {
        for (i, (sa, sb)) in shape_pairs().into_iter().enumerate() {
            let a = data(&sa, i as u64 + 1);
            let b = data(&sb, i as u64 + 1000);
            let got = op(&a, &b).unwrap();
            same_f64(
                &got,
                &ref_binary(&a, &b, f),
                &format!("{name} {sa:?} {sb:?}"),
            );
        }
    }
}

#[test]
fn integer_ops_wrap_and_division_by_zero_is_an_error() {
    let a = ArrayD::from_shape_vec(IxDyn(&[4]), vec![i32::MAX, 7, -7, i32::MIN]).unwrap();
    let b = ArrayD::from_shape_vec(IxDyn(&[4]), vec![1, 0, 2, -1]).unwrap();
    assert_eq!(
        E::add(&a, &b).unwrap().into_raw_vec_and_offset().0,
        vec![i32::MIN, 7, -5, i32::MAX]
    );
    assert!(matches!(
        E::div(&a, &b),
        Err(Error::Arithmetic { op: "div", .. })
    ));
    let b = ArrayD::from_shape_vec(IxDyn(&[4]), vec![1, 3, 2, -1]).unwrap();
    assert_eq!(
        E::div(&a, &b).unwrap().into_raw_vec_and_offset().0,
        vec![i32::MAX, 2, -3, i32::MIN]
    );
    assert_eq!(
        E::abs(&a).unwrap().into_raw_vec_and_offset().0,
        vec![i32::MAX, 7, 7, i32::MIN]
    );
    let c = ArrayD::from_shape_fn(IxDyn(&[1023, 3]), |i| (i[0] * 3 + i[1]) as i64 - 1500);
    let bias = ArrayD::from_shape_fn(IxDyn(&[3]), |i| i[0] as i64 * 7);
    let got = E::mul(&c, &bias).unwrap();
    assert_eq!(got, ref_binary(&c, &bias, |x, y| x * y));
}

#[test]
fn comparisons_match_reference() {
    type Cmp = fn(&ArrayD<f64>, &ArrayD<f64>) -> Result<ArrayD<bool>, Error>;
    let ops: [(Cmp, fn(f64, f64) -> bool); 6] = [
        (|a, b| E::less(a, b), |x, y| x < y),
        (|a, b| E::less_equal(a, b), |x, y| x <= y),
        (|a, b| E::greater(a, b), |x, y| x > y),
        (|a, b| E::greater_equal(a, b), |x, y| x >= y),
        (|a, b| E::equal(a, b), |x, y| x == y),
        (|a, b| E::not_equal(a, b), |x, y| x != y),
    ];
    for (op, f) in ops {
        for (i, (sa, sb)) in shape_pairs().into_iter().enumerate() {
            let a = data(&sa, i as u64 + 7).mapv(f64::round);
            let b = data(&sb, i as u64 + 8).mapv(f64::round);
            assert_eq!(op(&a, &b).unwrap(), ref_binary(&a, &b, f), "{sa:?} {sb:?}");
        }
    }
}

#[test]
fn unary_ops_match_reference() {
    type Un = fn(&ArrayD<f64>) -> Result<ArrayD<f64>, Error>;
    let ops: [(&str, Un, fn(f64) -> f64); 12] = [
        ("abs", |x| E::abs(x), f64::abs),
        ("neg", |x| E::neg(x), |v| -v),
        ("square", |x| E::square(x), |v| v * v),
        ("relu", |x| E::relu(x), |v| if v < 0.0 { 0.0 } else { v }),
        ("exp", |x| E::exp(x), f64::exp),
        ("log", |x| E::log(x), f64::ln),
        ("sqrt", |x| E::sqrt(x), f64::sqrt),
        ("rsqrt", |x| E::rsqrt(x), |v| 1.0 / v.sqrt()),
        ("tanh", |x| E::tanh(x), f64::tanh),
        ("sigmoid", |x| E::sigmoid(x), |v| 1.0 / (1.0 + (-v).exp())),
        ("sin", |x| E::sin(x), f64::sin),
        ("cos", |x| E::cos(x), f64::cos),
    ];
    for (name, op, f) in ops {
        for n in SIZES {
            let x = data(&[n], n as u64);
            same_f64(&op(&x).unwrap(), &x.mapv(f), name);
            // Strided operands: transposed and sliced with step 2.
            let m = data(&[n, 3], 3);
            same_f64(
                &op(&m.t().to_owned().into_dyn()).unwrap(),
                &m.t().mapv(f).into_dyn(),
                name,
            );
            let t = m.t();
            let v = E::abs(t.clone()).unwrap();
            same_f64(&v, &t.mapv(f64::abs).into_dyn(), "abs of a transposed view");
            let stepped = x.slice(s![..;2]);
            same_f64(
                &op(&stepped.to_owned().into_dyn()).unwrap(),
                &stepped.mapv(f).into_dyn(),
                name,
            );
        }
    }
}

#[test]
fn f32_unary_math_through_dispatch_within_4_ulp() {
    // The eager op runs the multiversion-dispatched kernel (the best level of this CPU).
    let x: Vec<f32> = sweep().collect();
    let x = ArrayD::from_shape_vec(IxDyn(&[x.len()]), x).unwrap();
    type Un = fn(&ArrayD<f32>) -> Result<ArrayD<f32>, Error>;
    let ops: [(&str, Un, fn(f64) -> f64); 4] = [
        ("exp", |x| E::exp(x), f64::exp),
        ("log", |x| E::log(x), f64::ln),
        ("tanh", |x| E::tanh(x), f64::tanh),
        ("sigmoid", |x| E::sigmoid(x), sigmoid_ref),
    ];
    for (name, op, f) in ops {
        let got = op(&x).unwrap();
        let worst = got
            .iter()
            .zip(&x)
            .map(|(&g, &v)| ulp_f32(g, f(v as f64) as f32))
            .max()
            .unwrap();
        println!(
            "{name} (dispatched at {:?}): max {worst} ulp",
            graph_runtime::cpu::level()
        );
        assert!(worst <= 4, "{name}: {worst} ulp");
    }
}

#[test]
fn strided_binary_operands() {
    let a = data(&[7, 6], 1);
    let b = data(&[6, 7], 2);
    let got = E::add(b.t(), a.slice(s![.., ..;1])).unwrap();
    let want = ref_binary(&b.t().to_owned().into_dyn(), &a, |x, y| x + y);
    same_f64(&got, &want, "transposed + plain");
    let step = a.slice(s![..;2, ..;2]);
    let got = E::mul(step, &fortran(&data(&[3], 3))).unwrap();
    same_f64(
        &got,
        &ref_binary(&step.to_owned().into_dyn(), &data(&[3], 3), |x, y| x * y),
        "stepped * bias",
    );
}

#[test]
fn select_cast_and_creation() {
    for (i, (sa, sb)) in shape_pairs().into_iter().enumerate() {
        let a = data(&sa, i as u64);
        let b = data(&sb, i as u64 + 50);
        let c = E::greater(&a, &b).unwrap();
        let got = E::select(&c, &a, &b).unwrap();
        same_f64(
            &got,
            &ref_binary(&a, &b, |x, y| if x > y { x } else { y }),
            "select",
        );
    }
    // Three-way broadcasting: [N,1] condition, [C] and scalar branches.
    let c = ArrayD::from_shape_fn(IxDyn(&[5, 1]), |i| i[0] % 2 == 0);
    let a = ArrayD::from_shape_fn(IxDyn(&[4]), |i| i[0] as i32);
    let b = ArrayD::from_elem(IxDyn(&[]), -1);
    let got = E::select(&c, &a, &b).unwrap();
    let want = ArrayD::from_shape_fn(
        IxDyn(&[5, 4]),
        |i| if i[0] % 2 == 0 { i[1] as i32 } else { -1 },
    );
    assert_eq!(got, want);
    let x = ArrayD::from_shape_vec(IxDyn(&[4]), vec![1.7f64, -2.5, f64::NAN, 1e20]).unwrap();
    assert_eq!(
        E::cast::<i32, _>(&x).unwrap().into_raw_vec_and_offset().0,
        vec![1, -2, 0, i32::MAX]
    );
    assert_eq!(
        E::cast::<bool, _>(&x).unwrap().into_raw_vec_and_offset().0,
        vec![true, true, true, true]
    );
    assert_eq!(E::zeros::<f32>(&[2, 3]).unwrap().shape(), &[2, 3]);
    assert!(E::ones::<i64>(&[4]).unwrap().iter().all(|&v| v == 1));
    assert!(E::fill(&[0, 3], 2.0f32).unwrap().is_empty());
    assert_eq!(E::constant(3.5f64).ndim(), 0);
}

#[test]
fn checks_pass_and_fail() {
    let x = data(&[10], 1).mapv(|v| if v.is_nan() { 1.0 } else { v.abs() });
    assert!(E::assert_non_negative(&x, "ok").is_ok());
    let mut bad = x.clone();
    bad[[3]] = f64::NAN;
    match E::assert_non_negative(&bad, "x must be >= 0") {
        Err(Error::Assertion { op, message, .. }) => {
            assert_eq!(op, "assert_non_negative");
            assert_eq!(message, "x must be >= 0");
        }
        other => panic!("{other:?}"),
    }
    let zero = ArrayD::from_elem(IxDyn(&[]), -1.0);
    assert!(E::assert_greater(&x, &zero, "m").is_ok());
    assert!(matches!(
        E::assert_greater(&bad, &zero, "m"),
        Err(Error::Assertion {
            op: "assert_greater",
            ..
        })
    ));
    assert!(matches!(
        E::assert_less(&zero, &bad, "m"),
        Err(Error::Assertion {
            op: "assert_less",
            ..
        })
    ));
    assert!(E::assert_less(&zero, &x, "m").is_ok());
    assert!(E::assert_all_finite(&x, "m").is_ok());
    let inf = x.mapv(|v| v / 0.0);
    assert!(matches!(
        E::assert_all_finite(&inf, "m"),
        Err(Error::Assertion {
            op: "assert_all_finite",
            ..
        })
    ));
}

#[test]
fn shape_errors_name_the_op_and_both_shapes() {
    let a = ArrayD::<f64>::zeros(IxDyn(&[4, 3]));
    let b = ArrayD::<f64>::zeros(IxDyn(&[4]));
    for (name, op, _) in binary_ops_f64() {
        assert_shape_error(op(&a, &b), name, &[4, 3], &[4]);
    }
    assert_shape_error(E::less(&a, &b), "less", &[4, 3], &[4]);
    assert_shape_error(E::not_equal(&a, &b), "not_equal", &[4, 3], &[4]);
    assert_shape_error(
        E::assert_greater(&a, &b, "m"),
        "assert_greater",
        &[4, 3],
        &[4],
    );
    assert_shape_error(E::assert_less(&a, &b, "m"), "assert_less", &[4, 3], &[4]);
    let c = ArrayD::from_elem(IxDyn(&[2]), true);
    assert_shape_error(E::select(&c, &a, &a), "select", &[2], &[4, 3]);
    assert_shape_error(E::select(&c, &a, &b), "select", &[4, 3], &[4]);
    match broadcast_shapes("add", &[2, 5, 3], &[4, 1]) {
        Err(Error::Shape { axis, .. }) => assert_eq!(axis, Some(1)),
        other => panic!("{other:?}"),
    }
}

fn shape_strategy() -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(0usize..4, 0..4)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn broadcasting_matches_numpy_rules(sa in shape_strategy(), sb in shape_strategy(), mask in 0u8..16) {
        // Turn some dims of b into 1 so that broadcastable pairs are common.
        let sb: Vec<usize> = sb.iter().enumerate().map(|(i, &d)| if mask >> i & 1 == 1 { 1 } else { d }).collect();
        let a = data(&sa, 1);
        let b = data(&sb, 2);
        match ref_broadcast_shape(&sa, &sb) {
            Some(shape) => {
                prop_assert_eq!(broadcast_shapes("add", &sa, &sb).unwrap(), shape.clone());
                let got = E::sub(&a, &b).unwrap();
                same_f64(&got, &ref_binary(&a, &b, |x, y| x - y), "sub");
                let mut out = vec![0.0; shape.iter().product()];
                broadcast_into(a.as_slice().unwrap(), &sa, &shape, &mut out);
                let want = ArrayD::from_shape_fn(IxDyn(&shape), |i| ref_at(&a, i.slice()));
                same_f64(&ArrayD::from_shape_vec(IxDyn(&shape), out).unwrap(), &want, "broadcast_into");
            }
            None => assert_shape_error(E::add(&a, &b), "add", &sa, &sb),
        }
    }
}

#[test]
fn big_parallel_broadcast() {
    // Large enough to take the parallel path, with a bias and a column operand.
    let x = data(&[4097, 33], 5);
    let bias = data(&[33], 6);
    let col = data(&[4097, 1], 7);
    same_f64(
        &E::add(&x, &bias).unwrap(),
        &ref_binary(&x, &bias, |a, b| a + b),
        "bias",
    );
    same_f64(
        &E::mul(&x, &col).unwrap(),
        &ref_binary(&x, &col, |a, b| a * b),
        "column",
    );
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(3)
        .build()
        .unwrap();
    let got = pool.install(|| E::add(&x, &col).unwrap());
    same_f64(&got, &ref_binary(&x, &col, |a, b| a + b), "custom pool");
}

// ----- Division by a shared divisor ---------------------------------------------------------

use graph_runtime::division::{divide_f32, divide_f64, SharedDivisor};

/// Divisors whose significands are the edge cases of reciprocal-based division (1, all ones,
/// all ones but the last bit, one ulp above 1, the halves) and `count - 8` pseudo-random ones,
/// all in [1, 2).
fn divisor_significands(count: usize) -> Vec<f32> {
    let mut sigs = vec![
        0u32, 0x7f_ffff, 0x7f_fffe, 1, 0x40_0000, 0x3f_ffff, 0x55_5555, 0x2a_aaab,
    ];
    let mut s = 0x853c_49e6_748f_ea9bu64;
    while sigs.len() < count {
        s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        sigs.push((s >> 41) as u32 & 0x7f_ffff);
    }
    sigs.iter()
        .map(|&m| f32::from_bits(0x3f80_0000 | m))
        .collect()
}

/// `divide_f32` against `/` on dividends `x` for divisors `b * scale`; returns the mismatches.
fn shared_division_mismatches(x: &[f32], divisors: &[f32], scales: &[f32]) -> Vec<(f32, f32)> {
    let mut out = vec![0.0f32; x.len()];
    let mut bad = Vec::new();
    for &b in divisors {
        for &scale in scales {
            let b = b * scale;
            divide_f32(x, b, &mut out);
            for (&a, &q) in x.iter().zip(&out) {
                let want = a / b;
                if q.to_bits() != want.to_bits() && !(q.is_nan() && want.is_nan()) {
                    bad.push((a, b));
                }
            }
        }
    }
    bad
}

/// Every 128th f32 significand (both quotient binades: a in [1, 2) against b in [1, 2)),
/// scaled over the admitted range and past its ends, plus zeros, infinities, NaN and
/// subnormals, for 64 divisors of each sign: the quotients are `/`'s bit for bit at every
/// CPU level (below `avx512` the fast path is not taken and `/` is used itself).
#[test]
fn shared_divisor_matches_division() {
    let mut x: Vec<f32> = (0..1u32 << 16)
        .map(|i| f32::from_bits(0x3f80_0000 | (i << 7)))
        .collect();
    let n = x.len();
    for k in [-70i32, -61, -60, -20, -1, 1, 30, 59, 60, 70] {
        let f = 2f32.powi(k);
        let scaled: Vec<f32> = x[..n].iter().step_by(64).map(|&a| a * f).collect();
        x.extend(scaled);
    }
    x.extend([
        0.0,
        -0.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        1e-45,
        -1e-40,
    ]);
    let negated: Vec<f32> = x.iter().map(|&a| -a).collect();
    x.extend(negated);
    let mut divisors = divisor_significands(64);
    divisors.extend(divisor_significands(64).iter().map(|&b| -b));
    let scales = [
        1.0,
        2f32.powi(-59),
        2f32.powi(59),
        2f32.powi(-61),
        2f32.powi(61),
        3.1e-3,
    ];
    let bad = shared_division_mismatches(&x, &divisors, &scales);
    assert!(
        bad.is_empty(),
        "{} mismatches, first {:?}",
        bad.len(),
        &bad[..bad.len().min(5)]
    );
    // Divisors where the fast path never applies, and a check that it does apply.
    for b in [0.0f32, -0.0, f32::INFINITY, f32::NAN, 1e-45, f32::MAX] {
        assert!(!SharedDivisor::<f32>::new(b).fast());
        assert!(
            shared_division_mismatches(&x, &[b], &[1.0]).is_empty(),
            "{b:e}"
        );
    }
    let expect_fast = graph_runtime::cpu::level() == graph_runtime::cpu::Level::Avx512;
    assert_eq!(SharedDivisor::<f32>::new(3.0).fast(), expect_fast);
}

/// f64: random dividends and divisors over the admitted range and past it.
#[test]
fn shared_divisor_matches_division_f64() {
    let mut s = 0x2545_f491_4f6c_dd1du64;
    let mut next = || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    };
    let mut x: Vec<f64> = (0..20_000)
        .map(|_| f64::from_bits((next() & 0x800f_ffff_ffff_ffff) | (((next() % 1200) + 423) << 52)))
        .collect();
    x.extend([0.0, -0.0, f64::INFINITY, f64::NAN, 5e-324, f64::MAX]);
    let mut out = vec![0.0f64; x.len()];
    for _ in 0..200 {
        let b = f64::from_bits((next() & 0x800f_ffff_ffff_ffff) | (((next() % 1100) + 473) << 52));
        divide_f64(&x, b, &mut out);
        for (&a, &q) in x.iter().zip(&out) {
            let want = a / b;
            assert!(
                q.to_bits() == want.to_bits() || (q.is_nan() && want.is_nan()),
                "{a:e} / {b:e}: {q:e}, want {want:e}"
            );
        }
    }
}

/// Every f32 significand in [1, 2) against 4096 divisors (the edge significands among them):
/// 3.4e10 quotients, each `/`'s bit for bit. About 35 s in release on two cores: `.ci/run`
/// runs it with `--ignored`.
#[test]
#[ignore = "3.4e10 divisions: run in release by .ci/run"]
fn shared_divisor_every_significand() {
    use rayon::prelude::*;
    let x: Vec<f32> = (0..1u32 << 23)
        .map(|m| f32::from_bits(0x3f80_0000 | m))
        .collect();
    let divisors = divisor_significands(4096);
    let bad: usize = divisors
        .par_chunks(64)
        .map(|bs| shared_division_mismatches(&x, bs, &[1.0]).len())
        .sum();
    assert_eq!(bad, 0, "{bad} quotients differ from `/`");
}
