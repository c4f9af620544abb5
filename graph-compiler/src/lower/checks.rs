//! Lowering of the checks, `assert_*`: effect nodes of their region, with no value.

use super::{unwrapped, Call, Lowerer};
use crate::infer;
use crate::ir::*;
use syn::{Expr, Lit};

impl Lowerer<'_> {
    /// `assert_*(x [, y], "msg")`: a node of the region's effects, no value.
    pub(super) fn lower_assert(&mut self, kind: AssertKind, call: &Call) {
        let (args, span) = (call.args, call.span);
        let binary = matches!(kind, AssertKind::Greater | AssertKind::Less);
        let message = match args.get(if binary { 2 } else { 1 }) {
            Some(e) => match unwrapped(e) {
                Expr::Lit(syn::ExprLit {
                    lit: Lit::Str(s), ..
                }) => s.value(),
                _ => unreachable!("the row's kind check accepted only a string literal"),
            },
            None => String::new(),
        };
        let mut inputs = vec![self.operand(args[0])];
        if binary {
            let b = self.operand(args[1]);
            let (a, b) = self.coerce(inputs[0], b, span);
            inputs = vec![self.concrete(a), self.concrete(b)];
        } else {
            inputs[0] = self.concrete(inputs[0]);
        }
        let ns: Vec<Node> = inputs.iter().map(|&i| self.graph.node(i).clone()).collect();
        let r = if binary {
            infer::compare(
                kind.name(),
                (ns[0].dtype, &ns[0].shape),
                (ns[1].dtype, &ns[1].shape),
            )
        } else {
            infer::unary(
                kind.name(),
                kind == AssertKind::AllFinite,
                (ns[0].dtype, &ns[0].shape),
            )
        };
        let id = self.typed(
            Op::Assert { kind, message },
            inputs,
            r.map(|_| (DType::Bool, vec![])),
            span,
        );
        if !self.graph.node(id).poisoned {
            self.effects.push(id);
        }
    }
}
