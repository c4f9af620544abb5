//! Every elementwise and reduction gradient rule, op by op, against central finite differences
//! in f64: sizes 1 and 7, broadcast operands, inputs kept away from each op's kinks; compiled
//! == eager bit for bit.

use grafo::ndarray::{Array1, Array2};
use grafo::prelude::*;

/// Values in [lo, hi), spread deterministically (a golden-ratio sequence).
fn spread(n: usize, lo: f64, hi: f64, seed: f64) -> Vec<f64> {
    (0..n)
        .map(|i| lo + (hi - lo) * ((i as f64 + seed) * 0.618_033_988_749_895).fract())
        .collect()
}

/// Central differences of `f` at `x`.
fn fd(f: &dyn Fn(&Array1<f64>) -> f64, x: &Array1<f64>) -> Array1<f64> {
    let h = 1e-6;
    Array1::from_iter((0..x.len()).map(|i| {
        let (mut p, mut m) = (x.clone(), x.clone());
        p[i] += h;
        m[i] -= h;
        (f(&p) - f(&m)) / (2.0 * h)
    }))
}

fn close(what: &str, got: &Array1<f64>, want: &Array1<f64>) {
    for i in 0..got.len() {
        assert!(
            (got[i] - want[i]).abs() <= 1e-6 * (1.0 + want[i].abs()),
            "{what}[{i}]: gradients {} vs finite differences {}",
            got[i],
            want[i]
        );
    }
}

/// One unary op: `y = reduce_sum(w * op(x))` with a weight so each element's gradient differs.
macro_rules! unary_case {
    ($name:ident, [$lo:expr, $hi:expr], $x:ident => $($e:tt)*) => {
        mod $name {
            use super::*;
            #[graph]
            pub fn f($x: Tensor<f64, N>, w: Tensor<f64, N>) -> (Tensor<f64>, Tensor<f64, N>) {
                let y = reduce_sum(w * ($($e)*));
                (y, gradients(y, $x))
            }
        }
        #[test]
        fn $name() {
            for n in [1usize, 7] {
                let x = Array1::from(spread(n, $lo, $hi, 0.3));
                let w = Array1::from(spread(n, 0.5, 1.5, 0.7));
                let (_, g) = $name::f(&x, &w).unwrap();
                let (_, ge) = $name::f::eager(&x, &w).unwrap();
                assert_eq!(g.mapv(f64::to_bits), ge.mapv(f64::to_bits), "compiled == eager");
                let loss = |x: &Array1<f64>| $name::f(x, &w).unwrap().0.into_scalar();
                close(stringify!($name), &g, &fd(&loss, &x));
            }
        }
    };
}

unary_case!(abs_, [-2.0, 2.0], x => abs(x));
unary_case!(exp_, [-2.0, 2.0], x => exp(x));
unary_case!(log_, [0.1, 3.0], x => log(x));
unary_case!(sqrt_, [0.1, 3.0], x => sqrt(x));
unary_case!(rsqrt_, [0.1, 3.0], x => rsqrt(x));
unary_case!(square_, [-2.0, 2.0], x => square(x));
unary_case!(tanh_, [-3.0, 3.0], x => tanh(x));
unary_case!(sigmoid_, [-4.0, 4.0], x => sigmoid(x));
unary_case!(relu_, [-2.0, 2.0], x => relu(x));
unary_case!(sin_, [-3.0, 3.0], x => sin(x));
unary_case!(cos_, [-3.0, 3.0], x => cos(x));
unary_case!(neg_, [-2.0, 2.0], x => -x);
unary_case!(erf_, [-2.0, 2.0], x => erf(x));
unary_case!(gelu_, [-3.0, 3.0], x => gelu(x));
unary_case!(gelu_tanh_, [-3.0, 3.0], x => gelu(x, true));
unary_case!(softplus_, [-5.0, 5.0], x => softplus(x));
unary_case!(elu_, [-2.0, 2.0], x => elu(x));
unary_case!(leaky_relu_, [-2.0, 2.0], x => leaky_relu(x, 0.3));
unary_case!(clip_by_value_, [-2.0, 2.0], x => clip_by_value(x, -0.5, 0.8));
unary_case!(pow_base_, [0.2, 2.0], x => pow(x, 2.5));
unary_case!(pow_exponent_, [-1.0, 1.0], x => pow(1.7, x));
unary_case!(cast_f32_round_trip_, [-2.0, 2.0], x => cast::<f64>(cast::<f32>(x)) * 0.0 + x * x);
unary_case!(reduce_sum_, [-2.0, 2.0], x => reduce_sum(x * x));
unary_case!(reduce_mean_, [-2.0, 2.0], x => reduce_mean(x * x));
unary_case!(reduce_max_, [-2.0, 2.0], x => reduce_max(x * 3.0));
unary_case!(reduce_min_, [-2.0, 2.0], x => reduce_min(x * 3.0));
unary_case!(norm_, [-2.0, 2.0], x => norm(x));
unary_case!(softmax_, [-2.0, 2.0], x => softmax(x, 0));
unary_case!(log_softmax_, [-2.0, 2.0], x => log_softmax(x, 0));
unary_case!(select_, [-2.0, 2.0], x => select(x > 0.1, x * x, exp(x)));
unary_case!(l2_loss_, [-2.0, 2.0], x => l2_loss(x));
unary_case!(relu6_, [-2.0, 8.0], x => relu6(x));
unary_case!(silu_, [-3.0, 3.0], x => silu(x));
unary_case!(swish_, [-3.0, 3.0], x => swish(x));
unary_case!(hard_sigmoid_, [-4.0, 4.0], x => hard_sigmoid(x));
unary_case!(hard_swish_, [-4.0, 4.0], x => hard_swish(x));
unary_case!(softsign_, [-3.0, 3.0], x => softsign(x));
unary_case!(log1p_, [-0.5, 3.0], x => log1p(x));
unary_case!(expm1_, [-2.0, 2.0], x => expm1(x));
unary_case!(reciprocal_, [0.3, 3.0], x => reciprocal(x));
unary_case!(sign_, [-2.0, 2.0], x => sign(x) * x * x);
unary_case!(floor_, [-2.0, 2.0], x => floor(x) * x);
unary_case!(ceil_, [-2.0, 2.0], x => ceil(x) * x);
unary_case!(round_, [-2.0, 2.0], x => round(x) * x);
unary_case!(reduce_prod_all_, [0.5, 1.5], x => reduce_prod(x));
unary_case!(sigmoid_cross_entropy_, [-3.0, 3.0], x => sigmoid_cross_entropy_with_logits(sigmoid(x * 0.5), x));

/// One binary op with broadcasting: `y = reduce_sum(w * op(a, b))`, `a` [3, N], `b` [N] and
/// `b` [1] (a broadcast operand's gradient is summed back to its shape).
macro_rules! binary_case {
    ($name:ident, [$lo:expr, $hi:expr], $a:ident, $b:ident => $($e:tt)*) => {
        mod $name {
            use super::*;
            #[graph]
            pub fn f($a: Tensor<f64, 3, N>, $b: Tensor<f64, N>, c: Tensor<f64, 1>, w: Tensor<f64, 3, N>)
                -> (Tensor<f64>, Tensor<f64, 3, N>, Tensor<f64, N>, Tensor<f64, 1>) {
                let y = reduce_sum(w * ($($e)*)) + reduce_sum(w * {
                    let $b = c;
                    $($e)*
                });
                let (ga, gb, gc) = gradients(y, ($a, $b, c));
                (y, ga, gb, gc)
            }
        }
        #[test]
        fn $name() {
            for n in [1usize, 7] {
                let a = Array2::from_shape_vec((3, n), spread(3 * n, $lo, $hi, 0.1)).unwrap();
                let b = Array1::from(spread(n, $lo, $hi, 0.4));
                let c = Array1::from(spread(1, $lo, $hi, 0.9));
                let w = Array2::from_shape_vec((3, n), spread(3 * n, 0.5, 1.5, 0.2)).unwrap();
                let got = $name::f(&a, &b, &c, &w).unwrap();
                let eager = $name::f::eager(&a, &b, &c, &w).unwrap();
                assert_eq!(got, eager, "compiled == eager");
                let flat_a = Array1::from_iter(a.iter().cloned());
                let la = |v: &Array1<f64>| {
                    let a2 = Array2::from_shape_vec((3, n), v.to_vec()).unwrap();
                    $name::f(&a2, &b, &c, &w).unwrap().0.into_scalar()
                };
                close(concat!(stringify!($name), " a"), &Array1::from_iter(got.1.iter().cloned()), &fd(&la, &flat_a));
                let lb = |v: &Array1<f64>| $name::f(&a, v, &c, &w).unwrap().0.into_scalar();
                close(concat!(stringify!($name), " b"), &got.2, &fd(&lb, &b));
                let lc = |v: &Array1<f64>| $name::f(&a, &b, v, &w).unwrap().0.into_scalar();
                close(concat!(stringify!($name), " c"), &got.3, &fd(&lc, &c));
            }
        }
    };
}

binary_case!(add_, [-2.0, 2.0], a, b => a + b);
binary_case!(sub_, [-2.0, 2.0], a, b => a - b);
binary_case!(mul_, [-2.0, 2.0], a, b => a * b);
binary_case!(div_, [0.5, 2.0], a, b => a / b);
binary_case!(pow_, [0.5, 2.0], a, b => pow(a, b));
binary_case!(maximum_, [-2.0, 2.0], a, b => maximum(a, b * 1.1));
binary_case!(minimum_, [-2.0, 2.0], a, b => minimum(a, b * 1.1));
binary_case!(floormod_, [0.3, 2.0], a, b => floormod(a * 3.0, b));
binary_case!(truncatemod_, [0.3, 2.0], a, b => truncatemod(a * 3.0, b));
binary_case!(select_both_, [-2.0, 2.0], a, b => select(a > b, a * b, a - b));

/// Two operands whose shapes do not broadcast from `[1]`: `y = reduce_sum(square(op(a, b)))`,
/// `a` [3, N] and `b` [N].
macro_rules! pair_case {
    ($name:ident, [$lo:expr, $hi:expr], $a:ident, $b:ident => $($e:tt)*) => {
        mod $name {
            use super::*;
            #[graph]
            pub fn f($a: Tensor<f64, 3, N>, $b: Tensor<f64, N>)
                -> (Tensor<f64>, Tensor<f64, 3, N>, Tensor<f64, N>) {
                let y = reduce_sum(square($($e)*));
                let (ga, gb) = gradients(y, ($a, $b));
                (y, ga, gb)
            }
        }
        #[test]
        fn $name() {
            for n in [1usize, 7] {
                let a = Array2::from_shape_vec((3, n), spread(3 * n, $lo, $hi, 0.1)).unwrap();
                let b = Array1::from(spread(n, $lo, $hi, 0.4));
                let got = $name::f(&a, &b).unwrap();
                let eager = $name::f::eager(&a, &b).unwrap();
                assert_eq!(got, eager, "compiled == eager");
                let flat_a = Array1::from_iter(a.iter().cloned());
                let la = |v: &Array1<f64>| {
                    let a2 = Array2::from_shape_vec((3, n), v.to_vec()).unwrap();
                    $name::f(&a2, &b).unwrap().0.into_scalar()
                };
                close(concat!(stringify!($name), " a"), &Array1::from_iter(got.1.iter().cloned()), &fd(&la, &flat_a));
                let lb = |v: &Array1<f64>| $name::f(&a, v).unwrap().0.into_scalar();
                close(concat!(stringify!($name), " b"), &got.2, &fd(&lb, &b));
            }
        }
    };
}

pair_case!(bias_add_, [-2.0, 2.0], a, b => bias_add(a, b) * a);
pair_case!(softmax_cross_entropy_, [-2.0, 2.0], a, b => softmax_cross_entropy_with_logits(softmax(a + b, -1), a * b));
pair_case!(band_part_, [-2.0, 2.0], a, b => band_part(a * b, 1, 0));
pair_case!(cumsum_, [-2.0, 2.0], a, b => cumsum(a * b, 1));
pair_case!(cumsum_exclusive_reverse_, [-2.0, 2.0], a, b => cumsum(a * b, 1, true, true));
pair_case!(reduce_prod_, [0.5, 1.5], a, b => reduce_prod(a * b, 1));
