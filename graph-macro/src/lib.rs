//! The `#[graph]` attribute macro: a thin entry over the pipeline of `graph-compiler`.

use proc_macro::TokenStream;

/// Compiles a function over tensors into a fused, statically scheduled graph.
///
/// See LANGUAGE.md for the language: `Tensor<DT, dims...>` parameters, the op table,
/// cond nodes, and the items emitted for `fn NAME` (`NAME`, `NAME::eager`, `NAME::run`,
/// `NAME::graph`).
#[proc_macro_attribute]
pub fn graph(attr: TokenStream, item: TokenStream) -> TokenStream {
    graph_compiler::expand(attr.into(), item.into()).into()
}
