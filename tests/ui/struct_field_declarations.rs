use grafo::prelude::*;

#[graph]
mod model {
    pub struct Layer {
        pub w: Tensor<f32, B, 4>,
        pub units: usize,
        pub blocks: [Tensor<f32, 4>; 0],
    }

    pub struct Inits {
        #[init(he_normall)]
        pub a: Tensor<f32, 4, 4>,
        #[init(glorot_uniform)]
        pub ids: Tensor<i32, 4, 4>,
        #[init(uniform(1.0, 0.0))]
        pub u: Tensor<f32, 4>,
        #[init(zeros)]
        pub nested: Other,
    }

    pub struct Other {
        pub w: Tensor<f32, 2>,
    }

    pub fn uses_layer(x: Tensor<f32, 4>, l: Layer) -> Tensor<f32, 4> {
        x
    }
}

fn main() {}
