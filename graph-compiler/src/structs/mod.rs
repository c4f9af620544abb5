//! Parameter structs of a `#[graph] mod`: structs of tensors (and of other such structs, and of
//! fixed-size arrays of them), read once per module, which a graph function takes as one
//! parameter (`p: Net`) and reads by field (`p.blocks[i].wq`).
//!
//! A struct is a parameter struct when one of its fields is a tensor, an array, or another
//! parameter struct of the module; every field must then be one of those. Field dims are
//! static: integer literals or the module's integer `const`s (a struct is built, initialised
//! and loaded outside any call, where no symbol has a size). A struct parameter is flattened
//! into its leaf tensors in the signature ([`StructDefs::leaves`]); `emit.rs` writes the plain
//! Rust struct of owned arrays the caller builds, with `init`, `load_safetensors` and
//! `save_safetensors`.

pub mod emit;
pub mod layers;

use crate::diag::Diagnostics;
use crate::ir::{DType, Dim, Scalar};
use crate::signature::parse_tensor_type;
use std::borrow::Cow;
use std::collections::HashMap;
use syn::spanned::Spanned;

/// The type of a field (or of a struct parameter): a tensor of static shape, a parameter
/// struct, or an array of either.
#[derive(Debug, Clone, PartialEq)]
pub enum FieldTy {
    Tensor { dtype: DType, shape: Vec<u64> },
    Struct(syn::Ident),
    Array(Box<FieldTy>, usize),
}

/// An initialiser of `#[init(...)]`, as Keras defines it (`graph_runtime::init`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Init {
    Zeros,
    Ones,
    Constant(f64),
    GlorotUniform,
    GlorotNormal,
    HeNormal,
    HeUniform,
    LecunNormal,
    LecunUniform,
    RandomNormal { mean: f64, stddev: f64 },
    TruncatedNormal { mean: f64, stddev: f64 },
    Uniform { lo: f64, hi: f64 },
    Orthogonal { gain: f64 },
}

impl Init {
    /// Keras' defaults: `glorot_uniform` for kernels (rank 2 and more), `zeros` for biases
    /// and every other float tensor of rank 0 or 1, `zeros` for integer and bool tensors.
    pub fn default_for(dtype: DType, rank: usize) -> Init {
        if dtype.is_float() && rank >= 2 {
            Init::GlorotUniform
        } else {
            Init::Zeros
        }
    }

    /// Whether it only writes a constant (the initialisers an integer or bool tensor takes).
    fn is_constant(self) -> bool {
        matches!(self, Init::Zeros | Init::Ones | Init::Constant(_))
    }
}

/// One field of a parameter struct.
#[derive(Debug, Clone)]
pub struct FieldDef {
    pub ident: syn::Ident,
    pub ty: FieldTy,
    /// The field's `#[init(...)]`, if written (on a tensor field or an array of tensors).
    pub init: Option<Init>,
    /// The field's attributes without `#[init]`, and its visibility, kept on the emitted field.
    pub attrs: Vec<syn::Attribute>,
    pub vis: syn::Visibility,
}

/// A parameter struct of the module.
#[derive(Debug, Clone)]
pub struct StructDef {
    pub item: syn::ItemStruct,
    pub fields: Vec<FieldDef>,
    /// Whether every field parsed; a struct with errors is not emitted and its uses fail quietly.
    pub ok: bool,
}

/// One step of a field path: a named field or an array index.
#[derive(Debug, Clone, PartialEq)]
pub enum Seg {
    Field(syn::Ident),
    Index(usize),
}

/// A leaf tensor of a struct-typed value: its path from the value, dtype, static shape and initialiser.
#[derive(Debug, Clone)]
pub struct Leaf {
    pub segs: Vec<Seg>,
    pub dtype: DType,
    pub shape: Vec<u64>,
}

impl Leaf {
    /// The path in Rust's syntax after a root name: `.blocks[3].wq`.
    pub fn rust_path(&self) -> String {
        self.segs
            .iter()
            .map(|s| match s {
                Seg::Field(f) => format!(".{f}"),
                Seg::Index(i) => format!("[{i}]"),
            })
            .collect()
    }
}

/// The parameter structs of one `#[graph] mod`, by name.
#[derive(Debug, Clone, Default)]
pub struct StructDefs {
    defs: Vec<StructDef>,
    /// The module's non-negative integer `const`s: a dim written with one of their names is
    /// its value, in a field and in a function's signature alike.
    dims: HashMap<String, u64>,
}

/// Whether `ty` mentions `Tensor` anywhere (a tensor field, an array of tensors).
fn mentions_tensor(ty: &syn::Type) -> bool {
    quote::ToTokens::to_token_stream(ty)
        .into_iter()
        .any(|t| matches!(t, proc_macro2::TokenTree::Ident(i) if i == "Tensor"))
}

/// The names of the plain idents a type mentions (`Block` in `[Block; 12]`).
fn mentioned_idents(ty: &syn::Type) -> Vec<String> {
    fn walk(ts: proc_macro2::TokenStream, out: &mut Vec<String>) {
        for t in ts {
            match t {
                proc_macro2::TokenTree::Ident(i) => out.push(i.to_string()),
                proc_macro2::TokenTree::Group(g) => walk(g.stream(), out),
                _ => {}
            }
        }
    }
    let mut out = Vec::new();
    walk(quote::ToTokens::to_token_stream(ty), &mut out);
    out
}

impl StructDefs {
    /// Reads the parameter structs among a module's items; problems go to `diag` (at the field).
    pub fn parse(
        items: &[syn::Item],
        consts: &HashMap<String, Scalar>,
        diag: &mut Diagnostics,
    ) -> StructDefs {
        let structs: Vec<&syn::ItemStruct> = items
            .iter()
            .filter_map(|i| match i {
                syn::Item::Struct(s) => Some(s),
                _ => None,
            })
            .collect();
        // The parameter structs: those with a tensor field, or a field naming another one.
        let mut names: Vec<String> = Vec::new();
        loop {
            let before = names.len();
            for s in &structs {
                let name = s.ident.to_string();
                if names.contains(&name) {
                    continue;
                }
                let is_param = s.fields.iter().any(|f| {
                    mentions_tensor(&f.ty)
                        || layers::mentions_instance(&f.ty)
                        || mentioned_idents(&f.ty).iter().any(|i| names.contains(i))
                });
                if is_param {
                    names.push(name);
                }
            }
            if names.len() == before {
                break;
            }
        }
        let mut defs = StructDefs {
            defs: Vec::new(),
            dims: consts
                .iter()
                .filter_map(|(n, v)| match v {
                    Scalar::Int(i) => u64::try_from(*i).ok().map(|i| (n.clone(), i)),
                    _ => None,
                })
                .collect(),
        };
        for s in structs {
            if !names.contains(&s.ident.to_string()) {
                continue;
            }
            let def = parse_struct(s, &names, consts, diag);
            defs.defs.push(def);
        }
        defs
    }

    /// A dim with the module's integer `const`s replaced by their values (`HIDDEN` is 16).
    pub fn resolve_dim(&self, d: &Dim) -> Dim {
        let of = |s: &String| {
            self.dims
                .get(s)
                .map_or_else(|| Dim::Sym(s.clone()), |&n| Dim::Const(n))
        };
        match d {
            Dim::Const(_) => d.clone(),
            Dim::Sym(s) => of(s),
            Dim::Prod(m) => m
                .syms
                .iter()
                .try_fold(Dim::Const(m.coef), |acc, s| acc.times(&of(s)))
                .unwrap_or_else(|| d.clone()),
        }
    }

    /// The parameter struct called `name`: one of the module's, or an instance of a library
    /// struct (`structs/layers.rs`), whose definition is made from its identifier.
    pub fn get(&self, name: &str) -> Option<Cow<'_, StructDef>> {
        if let Some(d) = self.defs.iter().find(|d| d.item.ident == name) {
            return Some(Cow::Borrowed(d));
        }
        if name.starts_with("__grafo_layer_") {
            return layers::def_of(&syn::Ident::new(name, proc_macro2::Span::call_site()))
                .map(Cow::Owned);
        }
        None
    }

    /// The module's integer `const`s a dim may name.
    pub fn dims(&self) -> &HashMap<String, u64> {
        &self.dims
    }

    /// The error of a parameter type that names a library struct with wrong arguments
    /// (`Dense<4>`, `MultiHeadAttention<10, 3>`), also inside an array type.
    pub fn layer_type_error(&self, ty: &syn::Type) -> Option<syn::Error> {
        match ty {
            syn::Type::Array(a) => self.layer_type_error(&a.elem),
            syn::Type::Group(g) => self.layer_type_error(&g.elem),
            syn::Type::Paren(p) => self.layer_type_error(&p.elem),
            syn::Type::Reference(r) => self.layer_type_error(&r.elem),
            _ => layers::instance_of_type(ty, &self.dims)?.err(),
        }
    }

    /// Reads a parameter's type as a struct type of the module: `Net`, `[Block; 2]`.
    /// `None` when it names none (then it is a tensor or a host value, or an error).
    pub fn param_type(&self, ty: &syn::Type) -> Option<FieldTy> {
        match ty {
            syn::Type::Group(g) => self.param_type(&g.elem),
            syn::Type::Paren(p) => self.param_type(&p.elem),
            syn::Type::Path(tp) => {
                if let Some(Ok(id)) = layers::instance_of_type(ty, &self.dims) {
                    return Some(FieldTy::Struct(id));
                }
                let id = tp.path.get_ident()?;
                self.get(&id.to_string())?;
                Some(FieldTy::Struct(id.clone()))
            }
            syn::Type::Array(a) => {
                let inner = self.param_type(&a.elem)?;
                let n = array_len(&a.len)?;
                Some(FieldTy::Array(Box::new(inner), n))
            }
            _ => None,
        }
    }

    /// Whether every struct a type reaches parsed without errors.
    pub fn type_ok(&self, ty: &FieldTy) -> bool {
        match ty {
            FieldTy::Tensor { .. } => true,
            FieldTy::Struct(s) => self
                .get(&s.to_string())
                .is_some_and(|d| d.ok && d.fields.iter().all(|f| self.type_ok(&f.ty))),
            FieldTy::Array(inner, _) => self.type_ok(inner),
        }
    }

    /// The leaf tensors of a value of type `ty`, in declaration order (arrays element by element).
    pub fn leaves(&self, ty: &FieldTy) -> Vec<Leaf> {
        let mut out = Vec::new();
        self.walk(ty, &mut Vec::new(), &mut out);
        out
    }

    fn walk(&self, ty: &FieldTy, segs: &mut Vec<Seg>, out: &mut Vec<Leaf>) {
        match ty {
            FieldTy::Tensor { dtype, shape } => out.push(Leaf {
                segs: segs.clone(),
                dtype: *dtype,
                shape: shape.clone(),
            }),
            FieldTy::Struct(s) => {
                let Some(def) = self.get(&s.to_string()) else {
                    return;
                };
                for f in &def.fields {
                    segs.push(Seg::Field(f.ident.clone()));
                    self.walk(&f.ty, segs, out);
                    segs.pop();
                }
            }
            FieldTy::Array(inner, n) => {
                for i in 0..*n {
                    segs.push(Seg::Index(i));
                    self.walk(inner, segs, out);
                    segs.pop();
                }
            }
        }
    }
}

/// The length of `[T; N]`: an integer literal.
fn array_len(e: &syn::Expr) -> Option<usize> {
    match e {
        syn::Expr::Lit(l) => match &l.lit {
            syn::Lit::Int(i) => i.base10_parse::<usize>().ok(),
            _ => None,
        },
        syn::Expr::Group(g) => array_len(&g.expr),
        syn::Expr::Paren(p) => array_len(&p.expr),
        _ => None,
    }
}

/// The length of `[T; N]` with the module's `const`s (`[Block; LAYERS]`).
fn array_len_in(e: &syn::Expr, consts: &HashMap<String, Scalar>) -> Option<usize> {
    if let Some(n) = array_len(e) {
        return Some(n);
    }
    match e {
        syn::Expr::Path(p) => match consts.get(&p.path.get_ident()?.to_string())? {
            Scalar::Int(n) => usize::try_from(*n).ok(),
            _ => None,
        },
        syn::Expr::Group(g) => array_len_in(&g.expr, consts),
        _ => None,
    }
}

const FIELD_KINDS: &str = "a tensor (`Tensor<f32, 784, 512>`), a parameter struct of this module, a layer of grafo's library (`Dense<784, 512>`, `Conv2d<3, 3, 1, 16>`), or a fixed-size array of them (`[Block; 12]`)";

fn parse_struct(
    s: &syn::ItemStruct,
    names: &[String],
    consts: &HashMap<String, Scalar>,
    diag: &mut Diagnostics,
) -> StructDef {
    let sname = s.ident.to_string();
    let mut ok = true;
    if let Some(g) = s.generics.params.first() {
        diag.error(
            g.span(),
            format!("parameter struct `{sname}` cannot be generic: its fields' dtypes and dims are written in their `Tensor<DT, dims...>` types"),
        );
        ok = false;
    }
    let mut fields = Vec::new();
    match &s.fields {
        syn::Fields::Named(named) => {
            for f in &named.named {
                let ident = f.ident.clone().expect("a named field");
                let path = format!("{sname}.{ident}");
                let mut attrs = Vec::new();
                let mut init = None;
                for a in &f.attrs {
                    if a.path().is_ident("init") {
                        match parse_init(a) {
                            Ok(i) => init = Some((i, a.span())),
                            Err(e) => {
                                diag.push(e);
                                ok = false;
                            }
                        }
                    } else {
                        attrs.push(a.clone());
                    }
                }
                let Some(ty) = parse_field_ty(&f.ty, &path, names, consts, diag) else {
                    ok = false;
                    continue;
                };
                if let Some((i, span)) = init {
                    match leaf_dtype(&ty) {
                        None => {
                            diag.error(span, format!("`#[init]` goes on a tensor field or an array of tensors; `{path}` is a struct: declare the initialisers on that struct's fields"));
                            ok = false;
                        }
                        Some(dt) if !dt.is_float() && !i.is_constant() => {
                            diag.error(span, format!("`{path}` is a tensor of {dt}: only `zeros`, `ones` and `constant(v)` initialise an integer or bool tensor"));
                            ok = false;
                        }
                        Some(_) => {}
                    }
                }
                fields.push(FieldDef {
                    ident,
                    ty,
                    init: init.map(|(i, _)| i),
                    attrs,
                    vis: f.vis.clone(),
                });
            }
        }
        other => {
            diag.error(
                other.span(),
                format!("parameter struct `{sname}` must have named fields (`pub struct {sname} {{ pub w: Tensor<f32, 784, 512>, ... }}`): its tensors are found by their field paths"),
            );
            ok = false;
        }
    }
    StructDef {
        item: s.clone(),
        fields,
        ok,
    }
}

/// The dtype of the tensors of a tensor field or of an array of tensors; `None` for a struct.
fn leaf_dtype(ty: &FieldTy) -> Option<DType> {
    match ty {
        FieldTy::Tensor { dtype, .. } => Some(*dtype),
        FieldTy::Array(inner, _) => leaf_dtype(inner),
        FieldTy::Struct(_) => None,
    }
}

fn parse_field_ty(
    ty: &syn::Type,
    path: &str,
    names: &[String],
    consts: &HashMap<String, Scalar>,
    diag: &mut Diagnostics,
) -> Option<FieldTy> {
    match ty {
        syn::Type::Group(g) => parse_field_ty(&g.elem, path, names, consts, diag),
        syn::Type::Paren(p) => parse_field_ty(&p.elem, path, names, consts, diag),
        syn::Type::Array(a) => {
            let inner = parse_field_ty(&a.elem, path, names, consts, diag)?;
            match array_len_in(&a.len, consts) {
                Some(0) => {
                    diag.error(a.len.span(), format!("the array field `{path}` is empty: an array field holds at least one element"));
                    None
                }
                Some(n) => Some(FieldTy::Array(Box::new(inner), n)),
                None => {
                    diag.error(a.len.span(), format!("the length of the array field `{path}` is an integer literal or an integer `const` of the module"));
                    None
                }
            }
        }
        syn::Type::Path(tp) if tp.path.segments.last().is_some_and(|s| s.ident == "Tensor") => {
            let (dtype, shape) = parse_tensor_type(ty, diag, "a field")?;
            let mut dims = Vec::new();
            let mut ok = true;
            for d in &shape {
                match d {
                    Dim::Const(n) => dims.push(*n),
                    Dim::Sym(s) => match consts.get(s) {
                        Some(Scalar::Int(n)) if *n >= 0 => dims.push(*n as u64),
                        _ => {
                            diag.error(ty.span(), format!("field `{path}` has the symbolic dim `{s}`: a parameter struct's dims are static (integer literals or integer `const`s of the module), since the struct is built, initialised and loaded outside any call; pass a tensor with symbolic dims as a parameter of its own"));
                            ok = false;
                        }
                    },
                    Dim::Prod(m) => {
                        diag.error(ty.span(), format!("field `{path}` has the product dim `{m}`: a parameter struct's dims are static (integer literals or integer `const`s of the module)"));
                        ok = false;
                    }
                }
            }
            ok.then_some(FieldTy::Tensor { dtype, shape: dims })
        }
        syn::Type::Path(tp) => match tp.path.get_ident() {
            Some(id) if names.contains(&id.to_string()) => Some(FieldTy::Struct(id.clone())),
            _ if layers::mentions_instance(ty) => {
                let dims: HashMap<String, u64> = consts
                    .iter()
                    .filter_map(|(n, v)| match v {
                        Scalar::Int(i) => u64::try_from(*i).ok().map(|i| (n.clone(), i)),
                        _ => None,
                    })
                    .collect();
                match layers::instance_of_type(ty, &dims)? {
                    Ok(id) => Some(FieldTy::Struct(id)),
                    Err(e) => {
                        diag.push(e);
                        None
                    }
                }
            }
            _ => {
                let found = quote::ToTokens::to_token_stream(ty).to_string();
                diag.error(ty.span(), format!("field `{path}` is `{found}`; a field of a parameter struct is {FIELD_KINDS}"));
                None
            }
        },
        other => {
            let found = quote::ToTokens::to_token_stream(other).to_string();
            diag.error(
                other.span(),
                format!(
                    "field `{path}` is `{found}`; a field of a parameter struct is {FIELD_KINDS}"
                ),
            );
            None
        }
    }
}

const INITS: &str = "`zeros`, `ones`, `constant(v)`, `glorot_uniform`, `glorot_normal`, `he_normal`, `he_uniform`, `lecun_normal`, `lecun_uniform`, `random_normal(mean, stddev)`, `truncated_normal(mean, stddev)`, `uniform(lo, hi)` or `orthogonal(gain)`";

/// Reads `#[init(he_normal)]`, `#[init(uniform(-0.1, 0.1))]`, `#[init(truncated_normal(0.0, 0.02))]`.
fn parse_init(a: &syn::Attribute) -> syn::Result<Init> {
    let e: syn::Expr = a.parse_args()?;
    let (name, args, span) = match &e {
        syn::Expr::Path(p) if p.path.get_ident().is_some() => (
            p.path
                .get_ident()
                .map(|i| i.to_string())
                .unwrap_or_default(),
            Vec::new(),
            p.span(),
        ),
        syn::Expr::Call(c) => {
            let syn::Expr::Path(p) = &*c.func else {
                return Err(syn::Error::new(
                    c.func.span(),
                    format!("an initialiser is one of {INITS}"),
                ));
            };
            let name = p
                .path
                .get_ident()
                .map(|i| i.to_string())
                .unwrap_or_default();
            let mut args = Vec::new();
            for arg in &c.args {
                args.push(number(arg).ok_or_else(|| {
                    syn::Error::new(arg.span(), "an initialiser's arguments are number literals")
                })?);
            }
            (name, args, c.span())
        }
        other => {
            return Err(syn::Error::new(
                other.span(),
                format!("an initialiser is one of {INITS}"),
            ))
        }
    };
    let arity = |n: &[usize]| -> syn::Result<()> {
        if n.contains(&args.len()) {
            Ok(())
        } else {
            let counts: Vec<String> = n.iter().map(usize::to_string).collect();
            Err(syn::Error::new(
                span,
                format!(
                    "`{name}` takes {} argument(s), found {}",
                    counts.join(" or "),
                    args.len()
                ),
            ))
        }
    };
    let init = match name.as_str() {
        "zeros" => arity(&[0]).map(|()| Init::Zeros)?,
        "ones" => arity(&[0]).map(|()| Init::Ones)?,
        "constant" => arity(&[1]).map(|()| Init::Constant(args[0]))?,
        "glorot_uniform" => arity(&[0]).map(|()| Init::GlorotUniform)?,
        "glorot_normal" => arity(&[0]).map(|()| Init::GlorotNormal)?,
        "he_normal" => arity(&[0]).map(|()| Init::HeNormal)?,
        "he_uniform" => arity(&[0]).map(|()| Init::HeUniform)?,
        "lecun_normal" => arity(&[0]).map(|()| Init::LecunNormal)?,
        "lecun_uniform" => arity(&[0]).map(|()| Init::LecunUniform)?,
        // Keras' defaults: RandomNormal(0, 0.05), TruncatedNormal(0, 0.05), RandomUniform(-0.05, 0.05).
        "random_normal" | "truncated_normal" => {
            arity(&[0, 1, 2])?;
            let (mean, stddev) = match args.as_slice() {
                [] => (0.0, 0.05),
                [s] => (0.0, *s),
                [m, s, ..] => (*m, *s),
            };
            if stddev <= 0.0 {
                return Err(syn::Error::new(
                    span,
                    format!("`{name}`'s stddev must be positive, found {stddev}"),
                ));
            }
            if name == "random_normal" {
                Init::RandomNormal { mean, stddev }
            } else {
                Init::TruncatedNormal { mean, stddev }
            }
        }
        "uniform" | "random_uniform" => {
            arity(&[0, 2])?;
            let (lo, hi) = match args.as_slice() {
                [lo, hi] => (*lo, *hi),
                _ => (-0.05, 0.05),
            };
            if lo >= hi {
                return Err(syn::Error::new(
                    span,
                    format!("`{name}(lo, hi)` needs lo < hi, found {lo} and {hi}"),
                ));
            }
            Init::Uniform { lo, hi }
        }
        "orthogonal" => {
            arity(&[0, 1])?;
            Init::Orthogonal {
                gain: args.first().copied().unwrap_or(1.0),
            }
        }
        _ => {
            return Err(syn::Error::new(
                span,
                format!("unknown initialiser `{name}`: an initialiser is one of {INITS}"),
            ))
        }
    };
    Ok(init)
}

/// A number literal, possibly negated.
fn number(e: &syn::Expr) -> Option<f64> {
    match e {
        syn::Expr::Lit(l) => match &l.lit {
            syn::Lit::Int(i) => i.base10_parse::<f64>().ok(),
            syn::Lit::Float(f) => f.base10_parse::<f64>().ok(),
            _ => None,
        },
        syn::Expr::Unary(u) if matches!(u.op, syn::UnOp::Neg(_)) => number(&u.expr).map(|v| -v),
        syn::Expr::Paren(p) => number(&p.expr),
        syn::Expr::Group(g) => number(&g.expr),
        _ => None,
    }
}
