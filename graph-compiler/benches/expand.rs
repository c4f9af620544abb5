//! How long `#[graph]` takes to expand: the W1 and W3 functions through the whole pipeline.

use criterion::{criterion_group, criterion_main, Criterion};
use quote::quote;

fn expand(c: &mut Criterion) {
    let mut group = c.benchmark_group("expand");
    let w1 = quote! {
        pub fn gelu(x: Tensor<f32, N>) -> Tensor<f32, N> {
            0.5 * x * (1.0 + tanh(0.7978845608 * (x + 0.044715 * x * x * x)))
        }
    };
    let w3 = quote! {
        pub fn convnet(
            x: Tensor<f32, B, 512, 512, 3>,
            k0: Tensor<f32, 3, 3, 3, 16>, b0: Tensor<f32, 16>,
            k1: Tensor<f32, 3, 3, 16, 16>, b1: Tensor<f32, 16>,
            limit: Tensor<f32>,
        ) -> Tensor<f32, B, 512, 512, 16> {
            let mut y = relu(conv2d(x, k0, 1, SAME) + b0);
            if norm(y) < limit {
                y = relu(conv2d(y, k1, 1, SAME) + b1);
            }
            y
        }
    };
    group.bench_function("w1_gelu", |b| {
        b.iter(|| graph_compiler::expand(quote!(), w1.clone()))
    });
    group.bench_function("w3_convnet", |b| {
        b.iter(|| graph_compiler::expand(quote!(), w3.clone()))
    });
    group.finish();
}

criterion_group!(benches, expand);
criterion_main!(benches);
