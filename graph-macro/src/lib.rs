//! The `#[graph]` attribute macro: a thin entry over the pipeline of `graph-compiler`.

use proc_macro::TokenStream;

/// Compiles a function over tensors into a fused, statically scheduled graph.
///
/// It also goes on an inline `mod` of such functions, which may then call each other.
/// See grafo's `docs/LANGUAGE.md` for the language (`Tensor<DT, dims...>` parameters, cond
/// nodes, composition, and the items emitted for `fn NAME`: `NAME`, `NAME::eager`,
/// `NAME::run`, `NAME::graph`) and `docs/OPS.md` for every op.
#[proc_macro_attribute]
pub fn graph(attr: TokenStream, item: TokenStream) -> TokenStream {
    graph_compiler::expand(attr.into(), item.into()).into()
}
