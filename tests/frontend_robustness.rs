//! The macro front end on odd but valid input: user names that look like generated ones,
//! constants folded in their own dtype, host values out of range, `mut` parameters and
//! literals passed through `macro_rules!` (issue 11).

use grafo::prelude::*;

// ----- hygiene: a user's name never meets a generated one ---------------------------------

/// Host parameters named like the compiled emitter's locals (`v0`, `v1`) and kernels.
#[graph]
fn host_named_like_compiled_locals(x: Tensor<i32, 2>, v0: i32, v1: i32) -> Tensor<i32, 2> {
    x * v0 + v1
}

/// Host parameters named like the eager emitter's locals (`e0`, `e1`).
#[graph]
fn host_named_like_eager_locals(x: Tensor<i32, 2>, e0: i32, e1: i32) -> Tensor<i32, 2> {
    x * e0 + e1
}

/// Host parameters named like the generated bookkeeping names.
#[graph]
#[allow(clippy::too_many_arguments)]
fn host_named_like_bookkeeping(
    x: Tensor<f32, N>,
    __out: f32,
    __ctx: f32,
    __results: f32,
    __first: f32,
    __j: f32,
    __n: f32,
    __session: f32,
) -> Tensor<f32, N> {
    (x * __out + __ctx) * __results + __first * __j - __n + __session
}

/// Tensor parameters and `let` bindings named like generated locals, a symbol named like a
/// generated dim, and a `for` loop (whose unrolled body makes more generated names).
#[graph]
fn tensors_named_like_generated(
    v1: Tensor<f32, N>,
    e0: Tensor<f32, N>,
    __cow_0: Tensor<f32, N>,
    __dim_N: usize,
) -> Tensor<f32, N> {
    let v0 = v1 + e0;
    let e1 = v0 * __cow_0;
    let mut __t0 = e1;
    for __i in 0..3 {
        __t0 = __t0 + v0 * __i;
    }
    let __kernel_g0 = exp(__t0 - e1);
    __kernel_g0 * __dim_N
}

/// A host parameter used as the predicate of a host `if` next to generated locals.
#[graph]
fn host_predicate_named_like_locals(x: Tensor<f32, N>, v0: bool, e0: f32) -> Tensor<f32, N> {
    if v0 {
        x + e0
    } else {
        x - e0
    }
}

#[test]
fn host_parameters_named_like_generated_locals_keep_their_values() {
    let x = arr1(&[3i32, -1]);
    let want = x.mapv(|a| a * 10 + 4);
    assert_eq!(host_named_like_compiled_locals(&x, 10, 4).unwrap(), want);
    assert_eq!(
        host_named_like_compiled_locals::eager(&x, 10, 4).unwrap(),
        want
    );
    assert_eq!(
        host_named_like_compiled_locals::run(&mut Session::default(), &x, 10, 4).unwrap(),
        want
    );
    assert_eq!(host_named_like_eager_locals(&x, 10, 4).unwrap(), want);
    assert_eq!(
        host_named_like_eager_locals::eager(&x, 10, 4).unwrap(),
        want
    );
}

#[test]
fn bookkeeping_names_are_ordinary_parameters() {
    let x = arr1(&[1.0f32, 2.0, -3.0]);
    let (o, c, r, f, j, n, s) = (2.0f32, 3.0, 5.0, 7.0, 11.0, 13.0, 17.0);
    let want = x.mapv(|a| (a * o + c) * r + f * j - n + s);
    assert_eq!(
        host_named_like_bookkeeping(&x, o, c, r, f, j, n, s).unwrap(),
        want
    );
    assert_eq!(
        host_named_like_bookkeeping::eager(&x, o, c, r, f, j, n, s).unwrap(),
        want
    );
    let mut session = Session::default();
    assert_eq!(
        host_named_like_bookkeeping::run(&mut session, &x, o, c, r, f, j, n, s).unwrap(),
        want
    );
}

#[test]
fn tensors_and_lets_named_like_generated_locals() {
    for n in [0usize, 1, 7, 1023] {
        let a = Array1::from_iter((0..n).map(|i| (i % 13) as f32 * 0.25 - 1.5));
        let b = Array1::from_iter((0..n).map(|i| 1.0 - (i % 7) as f32 * 0.125));
        let c = Array1::from_iter((0..n).map(|i| (i % 5) as f32));
        let want = Array1::from_iter((0..n).map(|i| {
            let v0 = a[i] + b[i];
            let e1 = v0 * c[i];
            let mut t = e1;
            for k in 0..3 {
                t += v0 * k as f32;
            }
            (t - e1).exp() * 9.0
        }));
        let compiled = tensors_named_like_generated(&a, &b, &c, 9).unwrap();
        let eager = tensors_named_like_generated::eager(&a, &b, &c, 9).unwrap();
        assert_eq!(compiled, eager, "n = {n}");
        for (got, want) in compiled.iter().zip(&want) {
            assert!(
                (got - want).abs() <= 1e-5 * want.abs().max(1.0),
                "n = {n}: {got} vs {want}"
            );
        }
    }
}

#[test]
fn host_predicate_named_like_a_local() {
    let x = arr1(&[1.0f32, -2.0]);
    for p in [false, true] {
        let want = if p {
            x.mapv(|a| a + 0.5)
        } else {
            x.mapv(|a| a - 0.5)
        };
        assert_eq!(host_predicate_named_like_locals(&x, p, 0.5).unwrap(), want);
        assert_eq!(
            host_predicate_named_like_locals::eager(&x, p, 0.5).unwrap(),
            want
        );
    }
}

/// Host parameters named like the generated items: the kernels this graph defines
/// (`__kernel_g2`, `__kernel_g12`), the module's items, the
/// functions `multiversion!` defines, and the graph's own name.
#[graph]
#[allow(clippy::too_many_arguments)]
fn items_named(
    x: Tensor<f32, N>,
    __kernel_g2: f32,
    __kernel_g12: f32,
    __compiled: f32,
    eager: f32,
    run: f32,
    graph: f32,
    generic: f32,
    items_named: f32,
) -> Tensor<f32, N> {
    let y = x * __kernel_g2 + __kernel_g12;
    let s = reduce_sum(y) * __compiled;
    y * s + eager * run + graph * generic - items_named
}

#[test]
fn host_parameters_named_like_generated_items() {
    let x = arr1(&[1.0f32, 2.0, -3.0, 0.5, 4.0, 8.0, -1.0]);
    let (a, b, c, d, e, f, g, h) = (2.0f32, 3.0, 0.5, 5.0, 7.0, 11.0, 13.0, 17.0);
    let y = x.mapv(|v| v * a + b);
    let s = y.sum() * c;
    let want = y.mapv(|v| v * s + d * e + f * g - h);
    assert_eq!(items_named(&x, a, b, c, d, e, f, g, h).unwrap(), want);
    assert_eq!(
        items_named::eager(&x, a, b, c, d, e, f, g, h).unwrap(),
        want
    );
    assert_eq!(
        items_named::run(&mut Session::default(), &x, a, b, c, d, e, f, g, h).unwrap(),
        want
    );
}

// ----- constant folding computes in the value's own dtype ---------------------------------

/// `65536 * 65536` wraps to 0 in i32, so the maximum is 1 (as the runtime computes it).
#[graph]
fn square_wraps() -> Tensor<i32> {
    maximum(square(constant(65536)), constant(1))
}

#[graph(disable(fold))]
fn square_wraps_unfolded() -> Tensor<i32> {
    maximum(square(constant(65536)), constant(1))
}

/// Branches on wrapped constants: both conditions are false in i32.
#[graph]
fn branch_on_wrapped(x: Tensor<i32, N>) -> Tensor<i32, N> {
    let mut y = x;
    if square(constant(65536)) > 0 {
        y = y + 100;
    }
    if abs(constant(-2147483648)) > 0 {
        y = y + 10;
    }
    if neg(constant(-2147483648)) < 0 {
        y = y + 1;
    }
    y
}

#[graph(disable(fold))]
fn branch_on_wrapped_unfolded(x: Tensor<i32, N>) -> Tensor<i32, N> {
    let mut y = x;
    if square(constant(65536)) > 0 {
        y = y + 100;
    }
    if abs(constant(-2147483648)) > 0 {
        y = y + 10;
    }
    if neg(constant(-2147483648)) < 0 {
        y = y + 1;
    }
    y
}

/// Wrapping i32 arithmetic on typed constants, and the mean of a fill whose sum wraps.
#[graph]
fn int_constants() -> (
    Tensor<i32>,
    Tensor<i32>,
    Tensor<i32>,
    Tensor<i64>,
    Tensor<i32>,
) {
    (
        constant(2147483647i32) + constant(1i32),
        constant(-2147483648i32) - constant(1i32),
        pow(constant(3), constant(2147483647)),
        square(constant(4294967296i64)),
        reduce_mean(fill([4], constant(1073741824))),
    )
}

#[graph(disable(fold))]
fn int_constants_unfolded() -> (
    Tensor<i32>,
    Tensor<i32>,
    Tensor<i32>,
    Tensor<i64>,
    Tensor<i32>,
) {
    (
        constant(2147483647i32) + constant(1i32),
        constant(-2147483648i32) - constant(1i32),
        pow(constant(3), constant(2147483647)),
        square(constant(4294967296i64)),
        reduce_mean(fill([4], constant(1073741824))),
    )
}

/// f32 constants through the functions whose folding must match the runtime bit for bit.
#[graph]
#[allow(clippy::type_complexity)]
fn f32_constants() -> (
    Tensor<f32>,
    Tensor<f32>,
    Tensor<f32>,
    Tensor<f32>,
    Tensor<f32>,
    Tensor<f32>,
    Tensor<f32>,
    Tensor<f32>,
) {
    (
        exp(constant(0.7)),
        tanh(constant(0.3)) + log(constant(3.0)),
        sigmoid(constant(-1.25)) * sin(constant(2.0)),
        rsqrt(constant(3.0)) - cos(constant(1.0)),
        pow(constant(2.0), constant(0.37)),
        relu(constant(-0.0)),
        maximum(constant(-0.0), constant(0.0)),
        constant(3e38) * constant(10.0),
    )
}

#[graph(disable(fold))]
#[allow(clippy::type_complexity)]
fn f32_constants_unfolded() -> (
    Tensor<f32>,
    Tensor<f32>,
    Tensor<f32>,
    Tensor<f32>,
    Tensor<f32>,
    Tensor<f32>,
    Tensor<f32>,
    Tensor<f32>,
) {
    (
        exp(constant(0.7)),
        tanh(constant(0.3)) + log(constant(3.0)),
        sigmoid(constant(-1.25)) * sin(constant(2.0)),
        rsqrt(constant(3.0)) - cos(constant(1.0)),
        pow(constant(2.0), constant(0.37)),
        relu(constant(-0.0)),
        maximum(constant(-0.0), constant(0.0)),
        constant(3e38) * constant(10.0),
    )
}

/// The eight scalar results of `f32_constants`.
type F32x8 = (
    Array0<f32>,
    Array0<f32>,
    Array0<f32>,
    Array0<f32>,
    Array0<f32>,
    Array0<f32>,
    Array0<f32>,
    Array0<f32>,
);

#[test]
fn folded_i32_wraps_like_the_runtime() {
    let want = arr0(1);
    assert_eq!(square_wraps().unwrap(), want);
    assert_eq!(square_wraps::eager().unwrap(), want);
    assert_eq!(square_wraps_unfolded().unwrap(), want);
}

#[test]
fn conds_on_wrapped_constants_take_the_runtime_branch() {
    for n in [0usize, 1, 7] {
        let x = Array1::from_iter((0..n).map(|i| i as i32 - 3));
        // square(65536) is 0 and abs(i32::MIN) is i32::MIN in i32: neither is > 0; but
        // neg(i32::MIN) is i32::MIN < 0.
        let want = x.mapv(|v| v + 1);
        assert_eq!(branch_on_wrapped(&x).unwrap(), want, "n = {n}");
        assert_eq!(branch_on_wrapped::eager(&x).unwrap(), want, "n = {n}");
        assert_eq!(branch_on_wrapped_unfolded(&x).unwrap(), want, "n = {n}");
    }
}

#[test]
fn typed_integer_constants_fold_as_the_runtime_computes() {
    let want = (
        arr0(i32::MIN),
        arr0(i32::MAX),
        arr0(3i32.wrapping_pow(i32::MAX as u32)),
        arr0(0i64),
        arr0(0i32),
    );
    assert_eq!(int_constants().unwrap(), want);
    assert_eq!(int_constants::eager().unwrap(), want);
    assert_eq!(int_constants_unfolded().unwrap(), want);
}

#[test]
fn f32_constants_fold_bit_for_bit() {
    let bits = |t: &F32x8| {
        [
            t.0[()],
            t.1[()],
            t.2[()],
            t.3[()],
            t.4[()],
            t.5[()],
            t.6[()],
            t.7[()],
        ]
        .map(f32::to_bits)
    };
    let folded = bits(&f32_constants().unwrap());
    let eager = bits(&f32_constants::eager().unwrap());
    let unfolded = bits(&f32_constants_unfolded().unwrap());
    assert_eq!(folded, eager);
    assert_eq!(folded, unfolded);
    // The naive reference where it is exact: relu(-0) and maximum(-0, 0) keep -0 (the
    // runtime's `if x < 0`/`if x >= y`), 3e38 * 10 overflows f32 to inf.
    assert_eq!(folded[5], (-0.0f32).to_bits());
    assert_eq!(folded[6], (-0.0f32).to_bits());
    assert_eq!(f32::from_bits(folded[7]), f32::INFINITY);
    assert!((f32::from_bits(folded[0]) - 0.7f32.exp()).abs() <= 2.0 * f32::EPSILON * 2.1);
}

// ----- signature oddities ------------------------------------------------------------------

/// `mut` parameters are reassignable like `let mut` bindings.
#[graph]
fn mut_params(mut x: Tensor<f32, N>, mut s: f32) -> Tensor<f32, N> {
    x = x * 2.0;
    s = s + 1.0;
    if reduce_sum(x) > 0.0 {
        x = x + s;
    }
    x
}

#[test]
fn mut_parameters_are_reassignable() {
    for n in [0usize, 1, 7] {
        let x = Array1::from_iter((0..n).map(|i| i as f32 - 1.0));
        let doubled = x.mapv(|v| v * 2.0);
        let want = if doubled.sum() > 0.0 {
            doubled.mapv(|v| v + 1.5)
        } else {
            doubled
        };
        assert_eq!(mut_params(&x, 0.5).unwrap(), want, "n = {n}");
        assert_eq!(mut_params::eager(&x, 0.5).unwrap(), want, "n = {n}");
    }
}

/// Literals, a type and a negative axis passed through `macro_rules!` fragments, which
/// arrive in invisible groups: strides, axes, `keep_dims`, dims of the signature, a `const`,
/// a `for` bound (an `expr` fragment) and the padding.
macro_rules! strided_graph {
    ($name:ident, $t:ty, $n:literal, $stride:literal, $pad:ident, $axis:literal, $keep:literal, $reps:expr, $scale:literal) => {
        #[graph]
        fn $name(x: $t, k: Tensor<f32, 3, 3, 2, $n>) -> Tensor<f32, 1, 4, 4, $n> {
            const SCALE: f32 = $scale;
            let y = conv2d(x, k, $stride, $pad);
            let mut acc = y;
            for _ in 0..$reps {
                acc = acc + y * SCALE;
            }
            softmax(acc, $axis) - reduce_max(acc, [$axis], $keep)
        }
    };
}

strided_graph!(
    through_macro,
    Tensor<f32, 1, 8, 8, 2>,
    4,
    2,
    SAME,
    -1,
    true,
    2,
    0.5
);

/// The same graph written out.
#[graph]
fn written_out(x: Tensor<f32, 1, 8, 8, 2>, k: Tensor<f32, 3, 3, 2, 4>) -> Tensor<f32, 1, 4, 4, 4> {
    const SCALE: f32 = 0.5;
    let y = conv2d(x, k, 2, SAME);
    let mut acc = y;
    for _ in 0..2 {
        acc = acc + y * SCALE;
    }
    softmax(acc, -1) - reduce_max(acc, [-1], true)
}

#[test]
fn macro_rules_literals_are_literals() {
    let x = Array4::from_shape_fn((1, 8, 8, 2), |(_, i, j, c)| {
        ((i * 8 + j) as f32 * 0.07 - 1.0) * if c == 0 { 1.0 } else { -0.5 }
    });
    let k = Array4::from_shape_fn((3, 3, 2, 4), |(i, j, c, o)| {
        ((i * 3 + j) as f32 - 4.0) * 0.1 + c as f32 * 0.05 - o as f32 * 0.02
    });
    let want = written_out(&x, &k).unwrap();
    assert_eq!(through_macro(&x, &k).unwrap(), want);
    assert_eq!(
        through_macro::eager(&x, &k).unwrap(),
        written_out::eager(&x, &k).unwrap()
    );
}

// ----- host values out of range of the dtype they are used in ------------------------------

#[graph]
fn add_wide_host(x: Tensor<i32, N>, a: i64, b: usize, c: u32) -> Tensor<i32, N> {
    x + a + b + c
}

#[graph]
fn add_usize_to_i64(x: Tensor<i64, N>, n: usize) -> Tensor<i64, N> {
    x + n
}

#[graph]
fn scale_by_f64(x: Tensor<f32, N>, s: f64) -> Tensor<f32, N> {
    x * s
}

/// A wide host value used only next to an f64 tensor is never narrowed, so never checked.
#[graph]
fn usize_next_to_float(x: Tensor<f64, N>, n: usize) -> Tensor<f64, N> {
    x + n
}

fn range_error(param: &str, value: &str, dtype: &str) -> grafo::Error {
    grafo::Error::HostValueRange {
        param: param.into(),
        value: value.into(),
        dtype: Box::leak(dtype.to_string().into_boxed_str()),
    }
}

#[test]
fn host_values_out_of_range_are_errors_at_the_call() {
    let x = arr1(&[1i32, -2, 3]);
    let ok = add_wide_host(&x, -2147483648 + 3, 7, 2147483647).unwrap();
    assert_eq!(
        ok,
        x.mapv(|v| v
            .wrapping_add(-2147483645)
            .wrapping_add(7)
            .wrapping_add(i32::MAX))
    );
    let cases: [(i64, usize, u32, grafo::Error); 4] = [
        (5_000_000_000, 0, 0, range_error("a", "5000000000", "i32")),
        (-2147483649, 0, 0, range_error("a", "-2147483649", "i32")),
        (0, 1 << 31, 0, range_error("b", "2147483648", "i32")),
        (0, 0, u32::MAX, range_error("c", "4294967295", "i32")),
    ];
    for (a, b, c, want) in cases {
        assert_eq!(add_wide_host(&x, a, b, c).unwrap_err(), want);
        assert_eq!(add_wide_host::eager(&x, a, b, c).unwrap_err(), want);
        assert_eq!(
            add_wide_host::run(&mut Session::default(), &x, a, b, c).unwrap_err(),
            want
        );
    }
    let x64 = arr1(&[1i64, 2]);
    assert_eq!(add_usize_to_i64(&x64, 5).unwrap(), arr1(&[6i64, 7]));
    let big = (i64::MAX as usize) + 1;
    let want = range_error("n", "9223372036854775808", "i64");
    assert_eq!(add_usize_to_i64(&x64, big).unwrap_err(), want);
    assert_eq!(add_usize_to_i64::eager(&x64, big).unwrap_err(), want);
}

#[test]
fn f64_host_values_beyond_f32_are_errors() {
    let x = arr1(&[1.0f32, -0.5]);
    assert_eq!(scale_by_f64(&x, 2.0).unwrap(), arr1(&[2.0f32, -1.0]));
    // Infinities and NaN are values of f32 as well; only a finite value that would become
    // infinite is out of range.
    assert_eq!(
        scale_by_f64(&x, f64::INFINITY).unwrap(),
        arr1(&[f32::INFINITY, f32::NEG_INFINITY])
    );
    assert!(scale_by_f64(&x, f64::NAN)
        .unwrap()
        .iter()
        .all(|v| v.is_nan()));
    let want = range_error("s", "1e40", "f32");
    assert_eq!(scale_by_f64(&x, 1e40).unwrap_err(), want);
    assert_eq!(scale_by_f64::eager(&x, 1e40).unwrap_err(), want);
    let x = arr1(&[0.5f64]);
    assert_eq!(
        usize_next_to_float(&x, usize::MAX).unwrap(),
        arr1(&[0.5 + usize::MAX as f64])
    );
}

/// A host parameter whose name comes from the macro's caller (`$s:ident`) is read with the
/// caller's hygiene, in a host operand and in a host `if`.
macro_rules! scaled_by {
    ($name:ident, $s:ident, $flag:ident) => {
        #[graph]
        fn $name(x: Tensor<f32, N>, $s: f32, $flag: bool) -> Tensor<f32, N> {
            if $flag {
                x * $s
            } else {
                x - $s
            }
        }
    };
}

scaled_by!(scaled_by_s, s, flag);

#[test]
fn host_parameters_named_by_the_macro_caller() {
    let x = arr1(&[1.0f32, -2.0, 4.0]);
    assert_eq!(scaled_by_s(&x, 3.0, true).unwrap(), x.mapv(|v| v * 3.0));
    assert_eq!(
        scaled_by_s::eager(&x, 3.0, false).unwrap(),
        x.mapv(|v| v - 3.0)
    );
}
