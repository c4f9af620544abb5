use grafo::prelude::*;

struct Model;

impl Model {
    #[graph]
    fn forward(x: Tensor<f32, N>) -> Tensor<f32, N> {
        x
    }
}

fn main() {}
