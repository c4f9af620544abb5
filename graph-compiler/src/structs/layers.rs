//! The layers library's parameter structs (`grafo::layers::Dense<IN, OUT>`, `Conv2d<..>`, ...)
//! as the compiler knows them: their fields, their dims, and how a use of one is named.
//!
//! A field or parameter typed `Dense<784, 512>` (or `layers::Dense<..>`, `grafo::layers::Dense<..>`,
//! with an optional last dtype argument, `Dense<784, 512, f64>`) is an instance of a library
//! struct. The compiler gives each instance a plain identifier of its own (`__grafo_layer_Dense_784_512_f32`),
//! so it is a parameter struct like a user's everywhere a struct is handled: flattened into its
//! leaf tensors, read by field (`p.fc.kernel`), passed to an inlined call, differentiated. Only
//! the name it is shown by (`Dense<784, 512>`) and the Rust path it is emitted as
//! (`::grafo::layers::Dense<784, 512>`, the struct of `graph-runtime/src/layers.rs`) differ.

use super::{FieldDef, FieldTy, Init, StructDef};
use crate::ir::DType;
use proc_macro2::{Literal, Span, TokenStream};
use quote::quote;
use std::collections::HashMap;
use syn::spanned::Spanned;

/// The prefix of an instance's identifier.
const PREFIX: &str = "__grafo_layer_";

/// A struct of the layers library.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LayerKind {
    Dense,
    Conv2d,
    DepthwiseConv2d,
    BatchNorm,
    LayerNorm,
    Embedding,
    MultiHeadAttention,
    LstmCell,
    GruCell,
}

impl LayerKind {
    pub const ALL: [LayerKind; 9] = [
        LayerKind::Dense,
        LayerKind::Conv2d,
        LayerKind::DepthwiseConv2d,
        LayerKind::BatchNorm,
        LayerKind::LayerNorm,
        LayerKind::Embedding,
        LayerKind::MultiHeadAttention,
        LayerKind::LstmCell,
        LayerKind::GruCell,
    ];

    /// The struct's Rust name.
    pub fn name(self) -> &'static str {
        match self {
            LayerKind::Dense => "Dense",
            LayerKind::Conv2d => "Conv2d",
            LayerKind::DepthwiseConv2d => "DepthwiseConv2d",
            LayerKind::BatchNorm => "BatchNorm",
            LayerKind::LayerNorm => "LayerNorm",
            LayerKind::Embedding => "Embedding",
            LayerKind::MultiHeadAttention => "MultiHeadAttention",
            LayerKind::LstmCell => "LstmCell",
            LayerKind::GruCell => "GruCell",
        }
    }

    /// The names of its const generic dims, in order.
    pub fn dims(self) -> &'static [&'static str] {
        match self {
            LayerKind::Dense => &["IN", "OUT"],
            LayerKind::Conv2d => &["KH", "KW", "CIN", "COUT"],
            LayerKind::DepthwiseConv2d => &["KH", "KW", "C", "M"],
            LayerKind::BatchNorm => &["C"],
            LayerKind::LayerNorm => &["D"],
            LayerKind::Embedding => &["V", "D"],
            LayerKind::MultiHeadAttention => &["D", "H"],
            LayerKind::LstmCell | LayerKind::GruCell => &["IN", "H"],
        }
    }

    /// The function of the library that applies it.
    pub fn function(self) -> &'static str {
        match self {
            LayerKind::Dense => "dense",
            LayerKind::Conv2d => "conv2d",
            LayerKind::DepthwiseConv2d => "depthwise_conv2d",
            LayerKind::BatchNorm => "batch_norm",
            LayerKind::LayerNorm => "layer_norm",
            LayerKind::Embedding => "embedding",
            LayerKind::MultiHeadAttention => "multi_head_attention",
            LayerKind::LstmCell => "lstm_cell",
            LayerKind::GruCell => "gru_cell",
        }
    }

    pub fn by_name(name: &str) -> Option<LayerKind> {
        LayerKind::ALL.into_iter().find(|k| k.name() == name)
    }

    pub fn by_function(name: &str) -> Option<LayerKind> {
        LayerKind::ALL.into_iter().find(|k| k.function() == name)
    }

    /// The form of its type, for messages: `Dense<IN, OUT>`.
    pub fn form(self) -> String {
        format!("{}<{}>", self.name(), self.dims().join(", "))
    }

    /// How many arguments its function takes: at least, at most.
    pub fn arity(self) -> (usize, usize) {
        match self {
            LayerKind::Dense => (2, 3),
            LayerKind::Conv2d | LayerKind::DepthwiseConv2d => (2, 6),
            LayerKind::BatchNorm | LayerKind::LayerNorm => (2, 3),
            LayerKind::Embedding => (2, 2),
            LayerKind::MultiHeadAttention => (3, 5),
            LayerKind::LstmCell | LayerKind::GruCell => (3, 3),
        }
    }

    /// Its function's signature, as the docs and the messages show it.
    pub fn signature(self) -> &'static str {
        match self {
            LayerKind::Dense => "dense(layer, x [, activation])",
            LayerKind::Conv2d => {
                "conv2d(layer, x [, strides [, padding [, activation [, dilation_rate]]]])"
            }
            LayerKind::DepthwiseConv2d => {
                "depthwise_conv2d(layer, x [, strides [, padding [, activation [, dilation_rate]]]])"
            }
            LayerKind::BatchNorm => "batch_norm(layer, x [, epsilon])",
            LayerKind::LayerNorm => "layer_norm(layer, x [, epsilon])",
            LayerKind::Embedding => "embedding(layer, ids)",
            LayerKind::MultiHeadAttention => {
                "multi_head_attention(layer, query, value [, key] [, use_causal_mask])"
            }
            LayerKind::LstmCell => "lstm_cell(layer, x, (h, c))",
            LayerKind::GruCell => "gru_cell(layer, x, h)",
        }
    }

    /// What it computes, one line for `docs/OPS.md`.
    pub fn doc(self) -> &'static str {
        match self {
            LayerKind::Dense => "`activation(matmul(x, kernel) + bias)` over the last axis of `x [.., IN]`",
            LayerKind::Conv2d => "`activation(conv2d(x, kernel, strides, padding, dilation_rate) + bias)` of NHWC `x`; defaults 1, `VALID`, none, 1",
            LayerKind::DepthwiseConv2d => "the same with `depthwise_conv2d` (`C * M` channels)",
            LayerKind::BatchNorm => "inference: `batch_normalization(x, moving_mean, moving_variance, beta, gamma, epsilon)` over the last axis, epsilon 1e-3",
            LayerKind::LayerNorm => "`layer_norm(x, gamma, beta, -1, epsilon)`, epsilon 1e-3",
            LayerKind::Embedding => "`gather(embeddings, ids, 0)`: integer ids of any shape, `[..] -> [.., D]`",
            LayerKind::MultiHeadAttention => "query [B, T, D], value and key [B, S, D]: projected, split into H heads, softmax of the scaled scores (causal: position i sees j <= i), merged, projected by `output`",
            LayerKind::LstmCell => "one step, gates i, f, g, o: `c' = σ(f)·c + σ(i)·tanh(g)`, `h' = σ(o)·tanh(c')`; returns `(h, c)`",
            LayerKind::GruCell => "one step (`reset_after`), gates z, r, hh: `h' = z·h + (1 - z)·tanh(x_h + r·h_h)`",
        }
    }

    /// The Keras layer it follows.
    pub fn keras(self) -> &'static str {
        match self {
            LayerKind::Dense => "tf.keras.layers.Dense",
            LayerKind::Conv2d => "tf.keras.layers.Conv2D",
            LayerKind::DepthwiseConv2d => "tf.keras.layers.DepthwiseConv2D",
            LayerKind::BatchNorm => "tf.keras.layers.BatchNormalization",
            LayerKind::LayerNorm => "tf.keras.layers.LayerNormalization",
            LayerKind::Embedding => "tf.keras.layers.Embedding",
            LayerKind::MultiHeadAttention => "tf.keras.layers.MultiHeadAttention",
            LayerKind::LstmCell => "tf.keras.layers.LSTMCell",
            LayerKind::GruCell => "tf.keras.layers.GRUCell",
        }
    }

    /// Its arguments in words, for the arity message.
    pub fn arguments(self) -> &'static str {
        match self {
            LayerKind::Dense => "the layer, the input and an optional activation",
            LayerKind::Conv2d | LayerKind::DepthwiseConv2d => {
                "the layer, the input, then optionally the strides, the padding, the activation and the dilation rate, in that order"
            }
            LayerKind::BatchNorm | LayerKind::LayerNorm => {
                "the layer, the input and an optional epsilon"
            }
            LayerKind::Embedding => "the layer and the ids",
            LayerKind::MultiHeadAttention => {
                "the layer, the query, the value, then optionally the key and `use_causal_mask` (`true` or `false`)"
            }
            LayerKind::LstmCell => "the layer, the input and the state `(h, c)`",
            LayerKind::GruCell => "the layer, the input and the state `h`",
        }
    }

    /// The fields of `Kind<dims..., dtype>`: name, type and initialiser (as the runtime's
    /// struct draws them; the nested `Dense` of `MultiHeadAttention` draws its own).
    fn fields(self, d: &[u64], dt: DType) -> Vec<(&'static str, FieldTy, Option<Init>)> {
        let t = |shape: Vec<u64>| FieldTy::Tensor { dtype: dt, shape };
        let glorot = Some(Init::GlorotUniform);
        let (zeros, ones) = (Some(Init::Zeros), Some(Init::Ones));
        match self {
            LayerKind::Dense => vec![
                ("kernel", t(vec![d[0], d[1]]), glorot),
                ("bias", t(vec![d[1]]), zeros),
            ],
            LayerKind::Conv2d => vec![
                ("kernel", t(d.to_vec()), glorot),
                ("bias", t(vec![d[3]]), zeros),
            ],
            LayerKind::DepthwiseConv2d => vec![
                ("depthwise_kernel", t(d.to_vec()), glorot),
                ("bias", t(vec![d[2] * d[3]]), zeros),
            ],
            LayerKind::BatchNorm => vec![
                ("gamma", t(vec![d[0]]), ones),
                ("beta", t(vec![d[0]]), zeros),
                ("moving_mean", t(vec![d[0]]), zeros),
                ("moving_variance", t(vec![d[0]]), ones),
            ],
            LayerKind::LayerNorm => vec![
                ("gamma", t(vec![d[0]]), ones),
                ("beta", t(vec![d[0]]), zeros),
            ],
            LayerKind::Embedding => vec![(
                "embeddings",
                t(vec![d[0], d[1]]),
                Some(Init::Uniform {
                    lo: -0.05,
                    hi: 0.05,
                }),
            )],
            LayerKind::MultiHeadAttention => {
                let dense = FieldTy::Struct(instance_ident(LayerKind::Dense, &[d[0], d[0]], dt));
                ["query", "key", "value", "output"]
                    .into_iter()
                    .map(|n| (n, dense.clone(), None))
                    .collect()
            }
            LayerKind::LstmCell => vec![
                ("kernel", t(vec![d[0], 4 * d[1]]), glorot),
                (
                    "recurrent_kernel",
                    t(vec![d[1], 4 * d[1]]),
                    Some(Init::Orthogonal { gain: 1.0 }),
                ),
                ("bias", t(vec![4 * d[1]]), None),
            ],
            LayerKind::GruCell => vec![
                ("kernel", t(vec![d[0], 3 * d[1]]), glorot),
                (
                    "recurrent_kernel",
                    t(vec![d[1], 3 * d[1]]),
                    Some(Init::Orthogonal { gain: 1.0 }),
                ),
                ("bias", t(vec![2, 3 * d[1]]), zeros),
            ],
        }
    }

    /// The rule its dims must keep, checked where the type is written.
    fn check(self, d: &[u64]) -> Result<(), String> {
        match self {
            LayerKind::MultiHeadAttention if d[1] == 0 || !d[0].is_multiple_of(d[1]) => Err(format!(
                "`MultiHeadAttention<{}, {}>`: the model width D must be a multiple of the number of heads H (each head has D / H dims), and H at least 1",
                d[0], d[1]
            )),
            _ => Ok(()),
        }
    }
}

/// An instance of a library struct: its kind, dims and element type.
#[derive(Debug, Clone, PartialEq)]
pub struct Instance {
    pub kind: LayerKind,
    pub dims: Vec<u64>,
    pub dtype: DType,
}

/// The identifier of an instance (`__grafo_layer_Dense_4_3_f32`).
pub fn instance_ident(kind: LayerKind, dims: &[u64], dtype: DType) -> syn::Ident {
    let mut name = format!("{PREFIX}{}", kind.name());
    for d in dims {
        name.push_str(&format!("_{d}"));
    }
    name.push_str(&format!("_{dtype}"));
    syn::Ident::new(&name, Span::call_site())
}

/// The instance an identifier names, if it is one.
pub fn instance(ident: &syn::Ident) -> Option<Instance> {
    let s = ident.to_string();
    let rest = s.strip_prefix(PREFIX)?;
    let mut parts = rest.split('_');
    let kind = LayerKind::by_name(parts.next()?)?;
    let parts: Vec<&str> = parts.collect();
    let (dtype, dims) = parts.split_last()?;
    let dtype = DType::from_name(dtype)?;
    let dims: Vec<u64> = dims.iter().map(|d| d.parse().ok()).collect::<Option<_>>()?;
    (dims.len() == kind.dims().len()).then_some(Instance { kind, dims, dtype })
}

/// How a struct type is shown in messages: a user's by its name, an instance as written
/// (`Dense<4, 3>`, `Dense<4, 3, f64>`).
pub fn display(ident: &syn::Ident) -> String {
    match instance(ident) {
        Some(i) => {
            let mut args: Vec<String> = i.dims.iter().map(u64::to_string).collect();
            if i.dtype != DType::F32 {
                args.push(i.dtype.to_string());
            }
            format!("{}<{}>", i.kind.name(), args.join(", "))
        }
        None => ident.to_string(),
    }
}

/// The generic arguments of an instance's Rust type (`4, 3` or `4, 3, f64`).
fn generic_args(i: &Instance) -> TokenStream {
    let dims = i
        .dims
        .iter()
        .map(|&d| Literal::usize_unsuffixed(d as usize));
    let dtype = (i.dtype != DType::F32).then(|| crate::emit::elem_ty(i.dtype));
    match dtype {
        Some(dt) => quote!(#(#dims,)* #dt),
        None => quote!(#(#dims),*),
    }
}

/// A struct's Rust type: the user's struct by name, an instance as `::grafo::layers::Dense<4, 3>`.
pub fn type_tokens(ident: &syn::Ident) -> TokenStream {
    match instance(ident) {
        Some(i) => {
            let name = syn::Ident::new(i.kind.name(), Span::call_site());
            let args = generic_args(&i);
            quote!(::grafo::layers::#name<#args>)
        }
        None => quote!(#ident),
    }
}

/// A struct's path in expression position (a struct literal): `::grafo::layers::Dense::<4, 3>`.
pub fn expr_path_tokens(ident: &syn::Ident) -> TokenStream {
    match instance(ident) {
        Some(i) => {
            let name = syn::Ident::new(i.kind.name(), Span::call_site());
            let args = generic_args(&i);
            quote!(::grafo::layers::#name::<#args>)
        }
        None => quote!(#ident),
    }
}

/// The parameter struct of an instance: its fields as the runtime's struct declares them.
pub fn def_of(ident: &syn::Ident) -> Option<StructDef> {
    let i = instance(ident)?;
    let fields = i
        .kind
        .fields(&i.dims, i.dtype)
        .into_iter()
        .map(|(name, ty, init)| FieldDef {
            ident: syn::Ident::new(name, Span::call_site()),
            ty,
            init,
            attrs: Vec::new(),
            vis: syn::parse_quote!(pub),
        })
        .collect();
    Some(StructDef {
        item: syn::parse_quote!(pub struct #ident {}),
        fields,
        ok: true,
    })
}

/// The kind a path names when it is the library's (`Dense`, `layers::Dense`,
/// `grafo::layers::Dense`, `::grafo::layers::Dense`), whatever its last segment's arguments.
pub fn kind_of_path(path: &syn::Path) -> Option<LayerKind> {
    let segs: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
    let (last, prefix) = segs.split_last()?;
    let prefix_ok = match prefix {
        [] => path.leading_colon.is_none(),
        [l] => l == "layers" && path.leading_colon.is_none(),
        [g, l] => g == "grafo" && l == "layers",
        _ => false,
    };
    if !prefix_ok
        || path
            .segments
            .iter()
            .rev()
            .skip(1)
            .any(|s| !s.arguments.is_none())
    {
        return None;
    }
    LayerKind::by_name(last)
}

/// Reads a written type as an instance of a library struct: `Some(Ok(ident))` for
/// `Dense<784, 512>`, `Some(Err(..))` for a library struct with wrong arguments, `None` for
/// any other type (a plain `Dense` without arguments is a user's struct). `dims` are the
/// module's integer `const`s, which a dim may name.
pub fn instance_of_type(
    ty: &syn::Type,
    dims: &HashMap<String, u64>,
) -> Option<Result<syn::Ident, syn::Error>> {
    let syn::Type::Path(tp) = ty else {
        return match ty {
            syn::Type::Group(g) => instance_of_type(&g.elem, dims),
            syn::Type::Paren(p) => instance_of_type(&p.elem, dims),
            _ => None,
        };
    };
    if tp.qself.is_some() {
        return None;
    }
    let kind = kind_of_path(&tp.path)?;
    let seg = tp.path.segments.last()?;
    let syn::PathArguments::AngleBracketed(args) = &seg.arguments else {
        return None;
    };
    let args: Vec<&syn::GenericArgument> = args.args.iter().collect();
    Some(read_args(kind, &args, dims, ty.span()))
}

/// An instance from a struct's generic arguments (`<784, 512>` or `<784, 512, f64>`).
pub fn read_args(
    kind: LayerKind,
    args: &[&syn::GenericArgument],
    dims: &HashMap<String, u64>,
    span: Span,
) -> Result<syn::Ident, syn::Error> {
    let n = kind.dims().len();
    let form = kind.form();
    let wrong_count = || {
        syn::Error::new(
            span,
            format!(
                "`{}` takes {n} dim{} (`{form}`) and an optional dtype, `f32` (the default) or `f64`; found {} argument{}",
                kind.name(),
                if n == 1 { "" } else { "s" },
                args.len(),
                if args.len() == 1 { "" } else { "s" }
            ),
        )
    };
    if args.len() != n && args.len() != n + 1 {
        return Err(wrong_count());
    }
    let mut values = Vec::new();
    for (k, a) in args.iter().take(n).enumerate() {
        match dim_arg(a, dims) {
            Some(v) => values.push(v),
            None => {
                let found = quote::ToTokens::to_token_stream(a).to_string();
                return Err(syn::Error::new(
                    a.span(),
                    format!(
                        "`{form}`'s `{}` is a non-negative integer literal or an integer `const` of the module; found `{found}`",
                        kind.dims()[k]
                    ),
                ));
            }
        }
    }
    let dtype = match args.get(n) {
        None => DType::F32,
        Some(a) => {
            let name = quote::ToTokens::to_token_stream(a).to_string();
            match DType::from_name(&name) {
                Some(dt) if dt.is_float() => dt,
                _ => {
                    return Err(syn::Error::new(
                        a.span(),
                        format!("`{}`'s last argument is its dtype, `f32` (the default) or `f64`; found `{name}`", kind.name()),
                    ))
                }
            }
        }
    };
    kind.check(&values)
        .map_err(|msg| syn::Error::new(span, msg))?;
    Ok(instance_ident(kind, &values, dtype))
}

/// A dim argument: an integer literal, an integer `const` of the module, or a product of them
/// in braces (`{ 7 * 7 * 16 }`).
fn dim_arg(a: &syn::GenericArgument, dims: &HashMap<String, u64>) -> Option<u64> {
    fn of_expr(e: &syn::Expr, dims: &HashMap<String, u64>) -> Option<u64> {
        match e {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Int(i),
                ..
            }) => i.base10_parse::<u64>().ok(),
            syn::Expr::Path(p) => dims.get(&p.path.get_ident()?.to_string()).copied(),
            syn::Expr::Block(b) if b.block.stmts.len() == 1 => match &b.block.stmts[0] {
                syn::Stmt::Expr(e, None) => of_expr(e, dims),
                _ => None,
            },
            syn::Expr::Group(g) => of_expr(&g.expr, dims),
            syn::Expr::Paren(p) => of_expr(&p.expr, dims),
            syn::Expr::Binary(b) if matches!(b.op, syn::BinOp::Mul(_)) => {
                of_expr(&b.left, dims)?.checked_mul(of_expr(&b.right, dims)?)
            }
            _ => None,
        }
    }
    match a {
        syn::GenericArgument::Const(e) => of_expr(e, dims),
        syn::GenericArgument::Type(syn::Type::Path(p)) => {
            dims.get(&p.path.get_ident()?.to_string()).copied()
        }
        _ => None,
    }
}

/// Whether a type mentions an instance of a library struct (`Dense<4, 3>`, `[Conv2d<..>; 2]`).
pub fn mentions_instance(ty: &syn::Type) -> bool {
    match ty {
        syn::Type::Array(a) => mentions_instance(&a.elem),
        syn::Type::Group(g) => mentions_instance(&g.elem),
        syn::Type::Paren(p) => mentions_instance(&p.elem),
        syn::Type::Path(tp) => {
            kind_of_path(&tp.path).is_some()
                && tp
                    .path
                    .segments
                    .last()
                    .is_some_and(|s| matches!(s.arguments, syn::PathArguments::AngleBracketed(_)))
        }
        _ => false,
    }
}

/// Where a literal of a layer without written dims reads each dim: the field and its axis
/// (`Dense { kernel, bias }`'s `IN` and `OUT` are `kernel`'s axes 0 and 1). `None` for a
/// layer whose fields do not hold every dim (`MultiHeadAttention`'s head count).
pub fn dim_sources(kind: LayerKind) -> Option<&'static [(&'static str, usize)]> {
    Some(match kind {
        LayerKind::Dense => &[("kernel", 0), ("kernel", 1)],
        LayerKind::Conv2d => &[("kernel", 0), ("kernel", 1), ("kernel", 2), ("kernel", 3)],
        LayerKind::DepthwiseConv2d => &[
            ("depthwise_kernel", 0),
            ("depthwise_kernel", 1),
            ("depthwise_kernel", 2),
            ("depthwise_kernel", 3),
        ],
        LayerKind::BatchNorm | LayerKind::LayerNorm => &[("gamma", 0)],
        LayerKind::Embedding => &[("embeddings", 0), ("embeddings", 1)],
        LayerKind::LstmCell | LayerKind::GruCell => &[("kernel", 0), ("recurrent_kernel", 0)],
        LayerKind::MultiHeadAttention => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An instance's identifier gives back its kind, dims and dtype; it is shown and emitted
    /// as written.
    #[test]
    fn instances_round_trip_through_their_identifiers() {
        for kind in LayerKind::ALL {
            let dims: Vec<u64> = (0..kind.dims().len() as u64).map(|d| 2 * d + 4).collect();
            for dtype in [DType::F32, DType::F64] {
                let id = instance_ident(kind, &dims, dtype);
                let i = instance(&id).expect("an instance");
                assert_eq!((i.kind, &i.dims, i.dtype), (kind, &dims, dtype));
                let def = def_of(&id).expect("a definition");
                assert!(!def.fields.is_empty());
            }
        }
        let id = instance_ident(LayerKind::Dense, &[784, 10], DType::F32);
        assert_eq!(display(&id), "Dense<784, 10>");
        assert_eq!(
            type_tokens(&id).to_string(),
            ":: grafo :: layers :: Dense < 784 , 10 >"
        );
        let id = instance_ident(LayerKind::Dense, &[4, 3], DType::F64);
        assert_eq!(display(&id), "Dense<4, 3, f64>");
        assert_eq!(instance(&syn::parse_quote!(Dense)), None);
    }

    /// A written type is read with the module's `const`s; wrong arguments are errors.
    #[test]
    fn written_types_are_read() {
        let dims: HashMap<String, u64> = [("HIDDEN".to_string(), 16)].into_iter().collect();
        let read = |t: syn::Type| instance_of_type(&t, &dims);
        let ok = read(syn::parse_quote!(layers::Dense<HIDDEN, { 2 * 5 }>))
            .unwrap()
            .unwrap();
        assert_eq!(display(&ok), "Dense<16, 10>");
        assert!(read(syn::parse_quote!(grafo::layers::LayerNorm<4, f64>))
            .unwrap()
            .is_ok());
        assert!(read(syn::parse_quote!(Dense<4>)).unwrap().is_err());
        assert!(read(syn::parse_quote!(MultiHeadAttention<10, 3>))
            .unwrap()
            .is_err());
        assert!(read(syn::parse_quote!(Dense)).is_none());
        assert!(read(syn::parse_quote!(other::Dense<4, 3>)).is_none());
    }
}
