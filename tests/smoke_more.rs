//! Quick end-to-end checks of W2–W5 shapes through the macro (compiled vs eager).

use grafo::prelude::*;

#[graph]
fn mlp(
    x: Tensor<f32, B, 784>,
    w1: Tensor<f32, 784, 512>,
    b1: Tensor<f32, 512>,
    w2: Tensor<f32, 512, 10>,
    b2: Tensor<f32, 10>,
) -> Tensor<f32, B, 10> {
    let h = relu(matmul(x, w1) + b1);
    softmax(matmul(h, w2) + b2, -1)
}

#[graph]
fn convnet(
    x: Tensor<f32, B, H, W, 3>,
    k0: Tensor<f32, 3, 3, 3, 16>,
    b0: Tensor<f32, 16>,
    k1: Tensor<f32, 3, 3, 16, 16>,
    b1: Tensor<f32, 16>,
    limit: Tensor<f32>,
) -> Tensor<f32, B, H, W, 16> {
    let mut y = conv2d(x, k0, 1, SAME) + b0;
    if norm(y) < limit {
        y = conv2d(y, k1, 1, SAME) + b1;
    }
    y
}

#[graph]
fn layernorm(
    x: Tensor<f32, N, 1024>,
    gamma: Tensor<f32, 1024>,
    beta: Tensor<f32, 1024>,
) -> Tensor<f32, N, 1024> {
    let mean = reduce_mean(x, -1, true);
    let d = x - mean;
    let var = reduce_mean(d * d, -1, true);
    d / sqrt(var + 1e-5) * gamma + beta
}

#[graph]
fn suma(a: Tensor<i32>, b: Tensor<i32>) -> Tensor<i32> {
    a + b
}

#[graph]
fn two(x: Tensor<f32>, y: Tensor<f32>) -> (Tensor<f32>, Tensor<f32>) {
    (x * y, y / x)
}

fn close(a: &ArrayD<f32>, b: &ArrayD<f32>) {
    assert_eq!(a.shape(), b.shape());
    for (x, y) in a.iter().zip(b.iter()) {
        assert!((x - y).abs() <= 1e-4 * (1.0 + y.abs()), "{x} vs {y}");
    }
}

fn pseudo(n: usize, seed: u32) -> Vec<f32> {
    let mut s = seed.wrapping_mul(2654435761).wrapping_add(1);
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 17;
            s ^= s << 5;
            (s % 2000) as f32 / 1000.0 - 1.0
        })
        .collect()
}

#[test]
fn w2() {
    let x = Array2::from_shape_vec((7, 784), pseudo(7 * 784, 1)).unwrap();
    let w1 = Array2::from_shape_vec((784, 512), pseudo(784 * 512, 2)).unwrap() * 0.05;
    let b1 = Array1::from_vec(pseudo(512, 3));
    let w2 = Array2::from_shape_vec((512, 10), pseudo(5120, 4)).unwrap() * 0.05;
    let b2 = Array1::from_vec(pseudo(10, 5));
    let a = mlp(&x, &w1, &b1, &w2, &b2).unwrap();
    let b = mlp::eager(&x, &w1, &b1, &w2, &b2).unwrap();
    close(&a.into_dyn(), &b.into_dyn());
    let g = mlp::graph();
    assert_eq!(g.groups_of("matmul").len(), 2, "{:#?}", g.groups);
}

#[test]
fn w3() {
    let x = Array4::from_shape_vec((1, 9, 11, 3), pseudo(9 * 11 * 3, 1)).unwrap();
    let k0 = Array4::from_shape_vec((3, 3, 3, 16), pseudo(432, 2)).unwrap();
    let b0 = Array1::from_vec(pseudo(16, 3));
    let k1 = Array4::from_shape_vec((3, 3, 16, 16), pseudo(2304, 4)).unwrap();
    let b1 = Array1::from_vec(pseudo(16, 5));
    for limit in [f32::INFINITY, 0.0] {
        let l = arr0(limit);
        let a = convnet(&x, &k0, &b0, &k1, &b1, &l).unwrap();
        let b = convnet::eager(&x, &k0, &b0, &k1, &b1, &l).unwrap();
        close(&a.into_dyn(), &b.into_dyn());
    }
}

#[test]
fn w4() {
    let x = Array2::from_shape_vec((5, 1024), pseudo(5 * 1024, 1)).unwrap();
    let g = Array1::from_vec(pseudo(1024, 2));
    let be = Array1::from_vec(pseudo(1024, 3));
    let a = layernorm(&x, &g, &be).unwrap();
    let b = layernorm::eager(&x, &g, &be).unwrap();
    close(&a.into_dyn(), &b.into_dyn());
    let gr = layernorm::graph();
    assert_eq!(gr.groups.len(), 3, "{:#?}", gr.groups);
}

#[test]
fn w5() {
    assert_eq!(suma(&arr0(5), &arr0(3)).unwrap()[()], 8);
    let (p, d) = two(&arr0(2.0), &arr0(4.0)).unwrap();
    assert_eq!((p[()], d[()]), (8.0, 2.0));
    let (p, d) = two::eager(&arr0(2.0), &arr0(4.0)).unwrap();
    assert_eq!((p[()], d[()]), (8.0, 2.0));
}
