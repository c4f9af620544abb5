use grafo::prelude::*;

#[graph]
fn sgd(w: &mut Tensor<f32, 3>, g: Tensor<f32, 3>) -> Tensor<f32> {
    w = w - 0.1 * g;
    reduce_sum(g)
}

fn main() {
    let w = Array1::<f32>::zeros(3);
    let g = Array1::<f32>::ones(3);
    // An in-place parameter takes `&mut array`, not `&array`.
    let _ = sgd(&w, &g);
}
