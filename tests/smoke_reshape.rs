//! A reshape of a computed value returned as a result.

use grafo::prelude::*;

#[graph]
fn r_computed(x: Tensor<f32, N, 6>) -> Tensor<f32, N, 3, 2> {
    reshape(x + 1.0, [N, 3, -1])
}

#[graph]
fn r_tr(y: Tensor<f32, 4, 6>) -> Tensor<f32, 3, 8> {
    reshape(transpose(y), [3, 8])
}

#[graph]
fn r_twice(x: Tensor<f32, 6>) -> (Tensor<f32, 2, 3>, Tensor<f32, 3, 2>) {
    let e = exp(x);
    (reshape(e, [2, 3]), reshape(e, [3, 2]))
}

#[test]
fn reshapes_of_computed_values_are_returned() {
    let x = Array2::<f32>::ones((2, 6));
    let r = r_computed(&x).unwrap();
    assert_eq!(r.shape(), &[2, 3, 2]);
    assert!(r.iter().all(|&v| v == 2.0));
    assert_eq!(r, r_computed::eager(&x).unwrap());
    let y = Array2::from_shape_fn((4, 6), |(i, j)| (i * 6 + j) as f32);
    let t = r_tr(&y).unwrap();
    let want: Vec<f32> = y.t().iter().copied().collect();
    assert_eq!(t.as_slice().unwrap(), &want[..]);
    let (a, b) = r_twice(&arr1(&[0.0f32, 1.0, 2.0, 3.0, 4.0, 5.0])).unwrap();
    assert_eq!(a.as_slice().unwrap(), b.as_slice().unwrap());
}
