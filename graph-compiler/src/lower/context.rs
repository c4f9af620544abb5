//! The lowering context: the `Lowerer` state, the values names hold and their bindings, and pushing typed (or poisoned) nodes.

use super::{Callees, Span};
use crate::diag::Diagnostics;
use crate::infer;
use crate::ir::*;
use proc_macro2::TokenStream;
use std::collections::HashMap;

/// A value a name can hold while lowering.
#[derive(Debug, Clone)]
pub(super) enum Value {
    Tensor(NodeId),
    Tuple(Vec<Value>),
    /// A host-only value (parameter or const): usable in host `if` conditions and as a scalar operand.
    Host {
        tokens: TokenStream,
        dtype: DType,
        node: Option<NodeId>,
    },
    /// A statement-like expression with no value (`assert_*`, `if` without a value).
    Unit,
    /// A value of a parameter struct (`p`, `p.hidden`, a struct of gradients): its fields in
    /// declaration order, each a value (`lower/structs.rs`).
    Struct {
        ty: syn::Ident,
        fields: Vec<(syn::Ident, Value)>,
    },
    /// A fixed-size array of values (`p.blocks`), indexed at compile time.
    Array(Vec<Value>),
}

pub(super) struct Binding {
    pub(super) value: Value,
    pub(super) mutable: bool,
    /// An in-place parameter (`w: &mut Tensor<..>`), which `*w` may also name.
    pub(super) in_place: bool,
}

/// An arm being lowered: records the outer variables it reassigns (AutoGraph's rule).
pub(super) struct ArmFrame {
    pub(super) base_depth: usize,
    pub(super) assigned: Vec<String>,
}

pub(super) struct Lowerer<'a> {
    pub(super) graph: Graph,
    pub(super) diag: &'a mut Diagnostics,
    pub(super) scopes: Vec<HashMap<String, Binding>>,
    pub(super) arms: Vec<ArmFrame>,
    pub(super) region: Region,
    /// Effects (asserts) of the region being lowered.
    pub(super) effects: Vec<NodeId>,
    pub(super) symbols: Vec<String>,
    pub(super) consts: HashMap<String, Scalar>,
    /// The operator being lowered (`+`), for messages.
    pub(super) operator: Option<String>,
    /// The other graph functions of the `#[graph] mod`, which calls inline.
    pub(super) callees: &'a Callees,
    /// While a callee is inlined: the root function's dim each of its symbols stands for.
    pub(super) dim_subst: HashMap<String, Dim>,
    /// The results of `stop_gradient`, through which `gradients` passes nothing.
    pub(super) stopped: std::collections::HashSet<NodeId>,
}

fn line_of(span: Span) -> u32 {
    span.line()
}

/// The size in bytes of the static dims of `shape` (those that are not 0, as ndarray counts),
/// `None` if it overflows an `isize`: no array can be that large. Symbols count as 1 here;
/// their sizes are checked at run time.
fn static_bytes(shape: &[Dim], dtype: DType) -> Option<u64> {
    let mut bytes = dtype.size_bytes();
    for d in shape {
        if let Dim::Const(n) = d {
            if *n != 0 {
                bytes = bytes.checked_mul(*n)?;
            }
        }
    }
    (bytes <= isize::MAX as u64).then_some(bytes)
}

impl Lowerer<'_> {
    pub(super) fn push(
        &mut self,
        op: Op,
        inputs: Vec<NodeId>,
        dtype: DType,
        shape: Shape,
        span: Span,
    ) -> NodeId {
        let too_big = static_bytes(&shape, dtype).is_none();
        if too_big {
            self.diag.error(
                span,
                format!(
                    "the value {} is larger than any array can be: its size in bytes does not fit in an `isize`",
                    type_str(dtype, &shape)
                ),
            );
        }
        self.graph.push(Node {
            op,
            inputs,
            dtype,
            shape,
            span,
            line: line_of(span),
            name: None,
            region: self.region,
            poisoned: too_big,
            role: Role::Forward,
        })
    }

    pub(super) fn poisoned(&mut self, span: Span) -> NodeId {
        let id = self.push(
            Op::Const {
                value: Scalar::Float(0.0),
                weak: false,
            },
            vec![],
            DType::F32,
            vec![],
            span,
        );
        self.graph.node_mut(id).poisoned = true;
        id
    }

    pub(super) fn is_poisoned(&self, ids: &[NodeId]) -> bool {
        ids.iter().any(|&i| self.graph.node(i).poisoned)
    }

    /// Creates a node from an inference result, reporting its error at `span`.
    pub(super) fn typed(
        &mut self,
        op: Op,
        inputs: Vec<NodeId>,
        r: infer::Inferred,
        span: Span,
    ) -> NodeId {
        if self.is_poisoned(&inputs) {
            return self.poisoned(span);
        }
        self.typed_with(inputs, r.map(|t| ((), t)), |()| op, span, span)
    }

    /// As [`Lowerer::typed`] for an op built from what inference found (`make(found)`), with
    /// the error reported at `error_span` (the argument at fault); inputs are not re-checked
    /// for poison.
    pub(super) fn typed_with<A>(
        &mut self,
        inputs: Vec<NodeId>,
        r: Result<(A, (DType, Shape)), String>,
        make: impl FnOnce(A) -> Op,
        error_span: Span,
        span: Span,
    ) -> NodeId {
        match r {
            Ok((found, (dt, shape))) => self.push(make(found), inputs, dt, shape, span),
            Err(msg) => {
                let msg = format!("{msg}{}", self.fields_note(&inputs));
                self.diag.error(error_span, msg);
                self.poisoned(span)
            }
        }
    }

    /// For an error about an op reading fields of a struct parameter: which fields, with
    /// their declared types ("; field `p.out.w` is f32[784, 512]"); empty otherwise.
    fn fields_note(&self, inputs: &[NodeId]) -> String {
        let mut fields: Vec<String> = Vec::new();
        for &i in inputs {
            let n = self.graph.node(i);
            let Some(name) = n.name.as_deref() else {
                continue;
            };
            let is_field = matches!(n.op, Op::Input { .. }) && name.contains(['.', '[']);
            let text = format!("field `{name}` is {}", type_str(n.dtype, &n.shape));
            if is_field && !fields.contains(&text) {
                fields.push(text);
            }
        }
        if fields.is_empty() {
            String::new()
        } else {
            format!("; {}", fields.join(", "))
        }
    }

    pub(super) fn bind(&mut self, name: &str, value: Value, mutable: bool) {
        if let Value::Tensor(id) = value {
            let n = self.graph.node_mut(id);
            if n.name.is_none() && !matches!(n.op, Op::Input { .. }) {
                n.name = Some(name.to_string());
            }
        }
        self.scopes.last_mut().expect("a scope").insert(
            name.to_string(),
            Binding {
                value,
                mutable,
                in_place: false,
            },
        );
    }

    pub(super) fn lookup(&self, name: &str) -> Option<(usize, &Binding)> {
        self.scopes
            .iter()
            .enumerate()
            .rev()
            .find_map(|(d, s)| s.get(name).map(|b| (d, b)))
    }

    /// The name `*e` dereferences, when `e` names an in-place parameter (`w: &mut Tensor<..>`,
    /// not shadowed); otherwise reports at `span` that only those can be dereferenced.
    pub(super) fn in_place_name(&mut self, e: &syn::Expr, span: Span) -> Option<String> {
        let name = match super::expr::unwrapped(e) {
            syn::Expr::Path(p) => p.path.get_ident().map(|i| i.to_string()),
            _ => None,
        };
        if let Some(name) = name {
            if self.lookup(&name).is_some_and(|(_, b)| b.in_place) {
                return Some(name);
            }
            self.diag.error(span, format!("`*{name}`: only an in-place parameter (`{name}: &mut Tensor<..>`) can be dereferenced; `{name}` is a value, use it as `{name}`"));
            return None;
        }
        self.diag.error(span, "`*` dereferences an in-place parameter (`*w` for `w: &mut Tensor<..>`); other dereferences are not supported in a `#[graph]` body");
        None
    }

    pub(super) fn assign(&mut self, name: &str, value: Value, span: Span) {
        let depth = match self.lookup(name) {
            None => {
                self.diag.error(span, format!("cannot assign to `{name}`: no such variable (declare it first with `let mut {name} = ...`)"));
                return;
            }
            Some((_, b)) if !b.mutable => {
                self.diag.error(span, format!("cannot assign twice to immutable variable `{name}`: declare it with `let mut {name}`"));
                return;
            }
            Some((d, _)) => d,
        };
        if let Some(frame) = self.arms.last_mut() {
            if depth < frame.base_depth && !frame.assigned.iter().any(|n| n == name) {
                frame.assigned.push(name.to_string());
            }
        }
        if let Value::Tensor(id) = value {
            let n = self.graph.node_mut(id);
            if n.name.is_none() {
                n.name = Some(name.to_string());
            }
        }
        self.scopes[depth].get_mut(name).expect("found above").value = value;
    }

    // ----- weak literals -------------------------------------------------------------------
}
