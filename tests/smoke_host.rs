//! Host parameters as scalar operands, values fetched twice, integer pow.

use grafo::prelude::*;

#[graph]
fn host_scalar(x: Tensor<f32, N>, k: f32, n: usize) -> Tensor<f32, N> {
    x * k + n
}

#[graph]
fn same_twice(x: Tensor<f32, N>) -> (Tensor<f32, N>, Tensor<f32, N>) {
    let e = exp(x);
    (e, e)
}

#[graph]
fn tuple_with_cond(x: Tensor<f32, N>, c: Tensor<bool>) -> (Tensor<f32, N>, Tensor<f32, N>) {
    let e = exp(x);
    let mut y = e;
    if c {
        y = e + e;
    }
    (e, y)
}

#[graph]
fn potencia(c: Tensor<i32>, d: Tensor<i32>) -> Tensor<i32> {
    pow(c, d)
}

#[test]
fn host_values_are_scalar_operands() {
    let x = arr1(&[0.0f32, 1.0, 2.5]);
    let want = arr1(&[3.0f32, 5.0, 8.0]);
    assert_eq!(host_scalar(&x, 2.0, 3).unwrap(), want);
    assert_eq!(host_scalar::eager(&x, 2.0, 3).unwrap(), want);
    assert_eq!(
        host_scalar::run(&mut Session::default(), &x, 2.0, 3).unwrap(),
        want
    );
}

#[test]
fn a_value_fetched_twice_is_returned_twice() {
    let x = arr1(&[0.0f32, 1.0]);
    let (a, b) = same_twice(&x).unwrap();
    assert_eq!(a, b);
    assert!((a[1] - std::f32::consts::E).abs() < 1e-6);
    for c in [false, true] {
        let (e, y) = tuple_with_cond(&x, &arr0(c)).unwrap();
        let (ee, ye) = tuple_with_cond::eager(&x, &arr0(c)).unwrap();
        assert_eq!(e, ee);
        assert_eq!(y, ye);
        let factor = if c { 2.0 } else { 1.0 };
        assert!((y[1] - factor * std::f32::consts::E).abs() < 1e-5);
    }
}

#[test]
fn integer_pow() {
    assert_eq!(potencia(&arr0(7), &arr0(2)).unwrap()[()], 49);
    assert_eq!(potencia::eager(&arr0(3), &arr0(4)).unwrap()[()], 81);
}
