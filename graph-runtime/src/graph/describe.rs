//! The static tables `NAME::graph()` is built from: one row per node, cond, group and buffer, as data the compiler writes into the binary.
//!
//! `#[graph]` used to emit `graph()` as one expression building every `NodeDef` in place; a
//! program of 5,000 ops then made a function of 5,000 nested constructors, which took rustc
//! and LLVM gigabytes in a release build. A `static` table of plain rows is only data, of
//! any length, and these functions turn it into the owned [`GraphDef`](super::GraphDef) parts.

use super::def::{BufferDef, CondDef, Dim, GroupDef, NodeDef, Region, Role};
use crate::dtype::DType;

/// A [`Dim`] as static data.
#[derive(Debug, Clone, Copy)]
pub enum DimRow {
    Static(usize),
    Symbol(&'static str),
    Expr(&'static str),
}

/// A [`NodeDef`] as static data; its id is its index in the table.
#[derive(Debug, Clone, Copy)]
pub struct NodeRow {
    pub name: &'static str,
    pub op: &'static str,
    pub inputs: &'static [usize],
    pub dtype: DType,
    pub shape: &'static [DimRow],
    pub line: u32,
    pub attrs: &'static [(&'static str, &'static str)],
    pub region: Region,
    pub group: Option<usize>,
    pub role: Role,
    pub saved: bool,
}

/// A [`CondDef`] as static data; its id is its index in the table.
#[derive(Debug, Clone, Copy)]
pub struct CondRow {
    pub predicate: usize,
    pub outputs: &'static [(&'static str, usize, usize)],
    pub node: usize,
}

/// A [`GroupDef`] as static data.
#[derive(Debug, Clone, Copy)]
pub struct GroupRow {
    pub id: usize,
    pub kind: &'static str,
    pub nodes: &'static [usize],
    pub output: usize,
    pub buffer: Option<usize>,
    pub in_place: bool,
    pub region: Region,
    pub records_for: Option<usize>,
}

/// A [`BufferDef`] as static data; its id is its index in the table.
#[derive(Debug, Clone, Copy)]
pub struct BufferRow {
    pub dtype: DType,
    pub size: &'static str,
    pub values: &'static [usize],
}

/// The shape a row describes.
pub fn shape(dims: &[DimRow]) -> Vec<Dim> {
    dims.iter()
        .map(|d| match *d {
            DimRow::Static(n) => Dim::Static(n),
            DimRow::Symbol(s) => Dim::Symbol(s.to_string()),
            DimRow::Expr(s) => Dim::Expr(s.to_string()),
        })
        .collect()
}

/// The nodes of a table.
pub fn nodes(rows: &[NodeRow]) -> Vec<NodeDef> {
    rows.iter()
        .enumerate()
        .map(|(id, r)| NodeDef {
            id,
            name: r.name.to_string(),
            op: r.op.to_string(),
            inputs: r.inputs.to_vec(),
            dtype: r.dtype,
            shape: shape(r.shape),
            line: r.line,
            attrs: r
                .attrs
                .iter()
                .map(|&(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            region: r.region,
            group: r.group,
            role: r.role,
            saved: r.saved,
        })
        .collect()
}

/// The conds of a table.
pub fn conds(rows: &[CondRow]) -> Vec<CondDef> {
    rows.iter()
        .enumerate()
        .map(|(id, r)| CondDef {
            id,
            predicate: r.predicate,
            outputs: r
                .outputs
                .iter()
                .map(|&(name, t, e)| (name.to_string(), t, e))
                .collect(),
            node: r.node,
        })
        .collect()
}

/// The fusion groups of a table.
pub fn groups(rows: &[GroupRow]) -> Vec<GroupDef> {
    rows.iter()
        .map(|r| GroupDef {
            id: r.id,
            kind: r.kind.to_string(),
            nodes: r.nodes.to_vec(),
            output: r.output,
            buffer: r.buffer,
            in_place: r.in_place,
            region: r.region,
            records_for: r.records_for,
        })
        .collect()
}

/// The buffers of a table.
pub fn buffers(rows: &[BufferRow]) -> Vec<BufferDef> {
    rows.iter()
        .enumerate()
        .map(|(id, r)| BufferDef {
            id,
            dtype: r.dtype,
            size: r.size.to_string(),
            values: r.values.to_vec(),
        })
        .collect()
}
