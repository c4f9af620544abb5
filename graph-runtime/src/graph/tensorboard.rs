//! TensorBoard event files: a compiled graph (`NAME::graph().write_tensorboard(logdir)`) for the Graphs tab, and scalar curves ([`EventWriter`]) for the Scalars tab.
//!
//! The files are what TensorFlow's summary writer produces: TFRecord framing (a little-endian
//! `u64` length, the masked CRC32C of those eight bytes, the data, the masked CRC32C of the
//! data), a first `Event` with `file_version = "brain.Event:2"`, then either an `Event` whose
//! `graph_def` holds a serialized `tensorflow.GraphDef`, or one `Event` per scalar whose
//! `summary` holds a tagged `simple_value` (as PyTorch's `SummaryWriter.add_scalar` writes
//! it). The protobuf messages are the subset of TensorFlow's `.proto` files grafo writes,
//! declared by hand in [`proto`] with prost's derives, so nothing is generated or downloaded
//! at build time.
//!
//! Each node keeps its grafo name, scoped by the cond arms it sits in (`cond0/then/y`), so
//! TensorBoard draws each arm as a collapsible box. Its attributes are `T` (the dtype),
//! `_output_shapes` (symbolic dims as size -1 named by their symbol), `line`, its fusion
//! group, and the op's own attributes as strings.
//!
//! In a graph with a backward pass, the backward nodes sit in TF's name scope `gradients/`
//! and the update's in `update/` (each outside the cond-arm scopes), so TensorBoard draws
//! forward, backward and update as separate boxes; every node has a `_role` attribute, and
//! a saved tensor (a forward value the backward pass reads) `_saved = true`.

use super::def::{Dim, GraphDef, Region, Role};
use crate::dtype::DType;
use crate::error::Error;
use prost::Message;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// The `file_version` of the first event of every file, as TensorFlow 2 writes it.
pub const FILE_VERSION: &str = "brain.Event:2";

/// TensorFlow's protobuf messages, the fields grafo writes (field numbers as in
/// `tensorflow/core/framework/*.proto` and `tensorflow/core/util/event.proto`).
pub mod proto {
    use std::collections::BTreeMap;

    /// `tensorflow.Event`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Event {
        #[prost(double, tag = "1")]
        pub wall_time: f64,
        #[prost(int64, tag = "2")]
        pub step: i64,
        #[prost(oneof = "What", tags = "3, 4, 5")]
        pub what: Option<What>,
    }

    /// The `what` of an [`Event`].
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum What {
        #[prost(string, tag = "3")]
        FileVersion(String),
        /// A serialized [`GraphDef`].
        #[prost(bytes = "vec", tag = "4")]
        GraphDef(Vec<u8>),
        /// Summary values (the scalars of [`super::EventWriter`]).
        #[prost(message, tag = "5")]
        Summary(Summary),
    }

    /// `tensorflow.Summary`: the values one event records.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Summary {
        #[prost(message, repeated, tag = "1")]
        pub value: Vec<summary::Value>,
    }

    /// The nested messages of [`Summary`].
    pub mod summary {
        /// `tensorflow.Summary.Value`: a tag and its value (grafo writes `simple_value` only).
        #[derive(Clone, PartialEq, prost::Message)]
        pub struct Value {
            #[prost(string, tag = "1")]
            pub tag: String,
            #[prost(oneof = "Kind", tags = "2")]
            pub value: Option<Kind>,
        }

        /// The `value` of a [`Value`].
        #[derive(Clone, PartialEq, prost::Oneof)]
        pub enum Kind {
            /// A scalar, as TensorBoard's Scalars tab plots it.
            #[prost(float, tag = "2")]
            SimpleValue(f32),
        }
    }

    /// `tensorflow.GraphDef`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct GraphDef {
        #[prost(message, repeated, tag = "1")]
        pub node: Vec<NodeDef>,
        #[prost(message, optional, tag = "4")]
        pub versions: Option<VersionDef>,
    }

    /// `tensorflow.VersionDef`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct VersionDef {
        #[prost(int32, tag = "1")]
        pub producer: i32,
        #[prost(int32, tag = "2")]
        pub min_consumer: i32,
    }

    /// `tensorflow.NodeDef`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct NodeDef {
        #[prost(string, tag = "1")]
        pub name: String,
        #[prost(string, tag = "2")]
        pub op: String,
        #[prost(string, repeated, tag = "3")]
        pub input: Vec<String>,
        #[prost(string, tag = "4")]
        pub device: String,
        /// A sorted map, so that the bytes written do not depend on hashing.
        #[prost(btree_map = "string, message", tag = "5")]
        pub attr: BTreeMap<String, AttrValue>,
    }

    /// `tensorflow.AttrValue`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct AttrValue {
        #[prost(oneof = "Value", tags = "1, 2, 3, 4, 5, 6, 7")]
        pub value: Option<Value>,
    }

    /// The `value` of an [`AttrValue`].
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Value {
        #[prost(message, tag = "1")]
        List(ListValue),
        #[prost(bytes = "vec", tag = "2")]
        S(Vec<u8>),
        #[prost(int64, tag = "3")]
        I(i64),
        #[prost(float, tag = "4")]
        F(f32),
        #[prost(bool, tag = "5")]
        B(bool),
        /// A `tensorflow.DataType` (an enum, encoded as its number).
        #[prost(int32, tag = "6")]
        Type(i32),
        #[prost(message, tag = "7")]
        Shape(TensorShapeProto),
    }

    /// `tensorflow.AttrValue.ListValue`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ListValue {
        #[prost(bytes = "vec", repeated, tag = "2")]
        pub s: Vec<Vec<u8>>,
        #[prost(int64, repeated, tag = "3")]
        pub i: Vec<i64>,
        #[prost(int32, repeated, tag = "6")]
        pub r#type: Vec<i32>,
        #[prost(message, repeated, tag = "7")]
        pub shape: Vec<TensorShapeProto>,
    }

    /// `tensorflow.TensorShapeProto`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct TensorShapeProto {
        #[prost(message, repeated, tag = "2")]
        pub dim: Vec<tensor_shape_proto::Dim>,
        #[prost(bool, tag = "3")]
        pub unknown_rank: bool,
    }

    /// The nested messages of [`TensorShapeProto`].
    pub mod tensor_shape_proto {
        /// `tensorflow.TensorShapeProto.Dim`: a size, -1 when unknown, and an optional name.
        #[derive(Clone, PartialEq, prost::Message)]
        pub struct Dim {
            #[prost(int64, tag = "1")]
            pub size: i64,
            #[prost(string, tag = "2")]
            pub name: String,
        }
    }

    impl GraphDef {
        /// Decodes a serialized `GraphDef` (the bytes of [`What::GraphDef`]).
        pub fn from_bytes(bytes: &[u8]) -> Result<GraphDef, crate::Error> {
            prost::Message::decode(bytes)
                .map_err(|e| crate::Error::Io(format!("malformed GraphDef: {e}")))
        }
    }

    /// Builds an attribute holding `value`.
    pub fn attr(value: Value) -> AttrValue {
        AttrValue { value: Some(value) }
    }
}

/// The `tensorflow.DataType` number of a dtype.
pub fn tf_dtype(dtype: DType) -> i32 {
    match dtype {
        DType::F32 => 1,
        DType::F64 => 2,
        DType::I32 => 3,
        DType::I64 => 9,
        DType::Bool => 10,
    }
}

impl GraphDef {
    /// Writes the graph as a TensorBoard event file in `logdir` (created if missing) and
    /// returns the file's path; open it with `tensorboard --logdir <logdir>`, Graphs tab.
    ///
    /// The file is named `events.out.tfevents.<unix secs>.<host>.<pid>.<graph name>`, as
    /// TensorFlow names its own, so TensorBoard picks it up with any others in the directory.
    pub fn write_tensorboard(&self, logdir: impl AsRef<Path>) -> Result<PathBuf, Error> {
        let logdir = logdir.as_ref();
        std::fs::create_dir_all(logdir).map_err(|e| io_error(logdir, e))?;
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        let wall_time = now.as_secs_f64();
        let file_name = format!(
            "events.out.tfevents.{}.{}.{}.{}",
            now.as_secs(),
            file_part(&hostname()),
            std::process::id(),
            file_part(&self.name)
        );
        let path = logdir.join(file_name);
        let mut bytes = Vec::new();
        write_record(&mut bytes, &file_version_event(wall_time).encode_to_vec());
        let graph = proto::Event {
            wall_time,
            step: 0,
            what: Some(proto::What::GraphDef(self.to_tensorflow().encode_to_vec())),
        };
        write_record(&mut bytes, &graph.encode_to_vec());
        std::fs::write(&path, bytes).map_err(|e| io_error(&path, e))?;
        Ok(path)
    }

    /// The graph as a `tensorflow.GraphDef` message, as [`GraphDef::write_tensorboard`] writes it.
    pub fn to_tensorflow(&self) -> proto::GraphDef {
        let names = tensorflow_names(self);
        let mut nodes: Vec<proto::NodeDef> = Vec::with_capacity(self.nodes.len());
        for (i, node) in self.nodes.iter().enumerate() {
            let mut inputs: Vec<usize> = node
                .inputs
                .iter()
                .copied()
                .filter(|&j| j < names.len())
                .collect();
            // A cond node also reads its predicate and the value each arm gives each output,
            // so that TensorBoard draws those edges.
            for cond in self.conds.iter().filter(|c| c.node == i) {
                let arm_values = cond.outputs.iter().flat_map(|(_, t, e)| [*t, *e]);
                for j in std::iter::once(cond.predicate).chain(arm_values) {
                    if j < names.len() && !inputs.contains(&j) {
                        inputs.push(j);
                    }
                }
            }
            let mut attr = BTreeMap::new();
            attr.insert(
                "T".to_string(),
                proto::attr(proto::Value::Type(tf_dtype(node.dtype))),
            );
            let shapes = proto::ListValue {
                shape: vec![shape_proto(&node.shape)],
                ..Default::default()
            };
            attr.insert(
                "_output_shapes".to_string(),
                proto::attr(proto::Value::List(shapes)),
            );
            attr.insert(
                "line".to_string(),
                proto::attr(proto::Value::I(i64::from(node.line))),
            );
            if let Some(g) = node.group.and_then(|g| self.groups.get(g)) {
                let text = format!("{} group {}", g.kind, g.id);
                attr.insert(
                    "fusion_group".to_string(),
                    proto::attr(proto::Value::S(text.into_bytes())),
                );
            }
            if super::dot::has_backward(self) {
                attr.insert(
                    "_role".to_string(),
                    proto::attr(proto::Value::S(node.role.name().as_bytes().to_vec())),
                );
                if node.saved {
                    attr.insert("_saved".to_string(), proto::attr(proto::Value::B(true)));
                }
            }
            for (key, value) in &node.attrs {
                let value = proto::attr(proto::Value::S(value.clone().into_bytes()));
                // The op's own attributes never replace the ones above.
                if attr.contains_key(key) {
                    attr.insert(format!("attr_{key}"), value);
                } else {
                    attr.insert(key.clone(), value);
                }
            }
            nodes.push(proto::NodeDef {
                name: names[i].clone(),
                op: node.op.clone(),
                input: inputs.iter().map(|&j| names[j].clone()).collect(),
                device: "/device:CPU:0".to_string(),
                attr,
            });
        }
        proto::GraphDef {
            node: nodes,
            versions: Some(proto::VersionDef {
                producer: 1,
                min_consumer: 0,
            }),
        }
    }
}

/// The first event of every file: its `file_version`.
fn file_version_event(wall_time: f64) -> proto::Event {
    proto::Event {
        wall_time,
        step: 0,
        what: Some(proto::What::FileVersion(FILE_VERSION.to_string())),
    }
}

/// Writes scalar summaries (a training loss, an accuracy...) to a TensorBoard event file, for
/// its Scalars tab: `tensorboard --logdir <logdir>`.
///
/// ```no_run
/// # fn main() -> Result<(), graph_runtime::Error> {
/// use graph_runtime::tensorboard::EventWriter;
/// let mut writer = EventWriter::new("target/logs/run1")?;
/// for step in 0..100 {
///     let loss = 1.0 / (1.0 + step as f32);
///     writer.add_scalar("train/loss", step, loss)?;
/// }
/// writer.flush()?; // also done when the writer is dropped
/// # Ok(()) }
/// ```
///
/// The file is named `events.out.tfevents.<unix secs>.<host>.<pid>.<n>`, as TensorFlow names
/// its own, `n` counting the writers this process made, so two writers never share a file.
/// Each [`EventWriter::add_scalar`] appends one `Event` (the step, the wall time and a
/// `Summary` holding the tag's `simple_value`) to a buffer that [`EventWriter::flush`], and
/// dropping the writer, write out; a directory holds one run, so start a new run in a new (or
/// emptied) directory, or TensorBoard draws the old points with the new ones.
#[derive(Debug)]
pub struct EventWriter {
    path: PathBuf,
    file: std::io::BufWriter<std::fs::File>,
}

/// The writers made by this process, for their file names.
static WRITERS: AtomicUsize = AtomicUsize::new(0);

impl EventWriter {
    /// Creates `logdir` if missing and a new event file in it, which starts with the
    /// `file_version` event.
    pub fn new(logdir: impl AsRef<Path>) -> Result<EventWriter, Error> {
        let logdir = logdir.as_ref();
        std::fs::create_dir_all(logdir).map_err(|e| io_error(logdir, e))?;
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        let file_name = format!(
            "events.out.tfevents.{}.{}.{}.{}",
            now.as_secs(),
            file_part(&hostname()),
            std::process::id(),
            WRITERS.fetch_add(1, Ordering::Relaxed)
        );
        let path = logdir.join(file_name);
        let file = std::fs::File::create(&path).map_err(|e| io_error(&path, e))?;
        let mut writer = EventWriter {
            path,
            file: std::io::BufWriter::new(file),
        };
        writer.write_event(&file_version_event(now.as_secs_f64()))?;
        Ok(writer)
    }

    /// The event file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Records `value` for `tag` at `step` (TensorBoard's x axis), stamped with the wall time.
    pub fn add_scalar(&mut self, tag: &str, step: i64, value: f32) -> Result<(), Error> {
        let wall_time = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_secs_f64();
        let summary = proto::Summary {
            value: vec![proto::summary::Value {
                tag: tag.to_string(),
                value: Some(proto::summary::Kind::SimpleValue(value)),
            }],
        };
        self.write_event(&proto::Event {
            wall_time,
            step,
            what: Some(proto::What::Summary(summary)),
        })
    }

    /// Writes what is buffered to the file, so that TensorBoard sees it.
    pub fn flush(&mut self) -> Result<(), Error> {
        self.file.flush().map_err(|e| io_error(&self.path, e))
    }

    fn write_event(&mut self, event: &proto::Event) -> Result<(), Error> {
        let mut bytes = Vec::new();
        write_record(&mut bytes, &event.encode_to_vec());
        self.file
            .write_all(&bytes)
            .map_err(|e| io_error(&self.path, e))
    }
}

impl Drop for EventWriter {
    fn drop(&mut self) {
        // An error here has nowhere to go; `flush` reports it to a caller who wants it.
        let _ = self.file.flush();
    }
}

/// Each node's name for TensorFlow: its grafo name made a valid op name, prefixed by the
/// cond arms it sits in (`cond0/then/y`), and made unique with `_1`, `_2`... where needed.
fn tensorflow_names(graph: &GraphDef) -> Vec<String> {
    let mut used = std::collections::BTreeSet::new();
    let by_role = super::dot::has_backward(graph);
    graph
        .nodes
        .iter()
        .enumerate()
        .map(|(i, node)| {
            let base = if node.name.is_empty() {
                format!("{}_{i}", node.op)
            } else {
                node.name.clone()
            };
            // The role's scope goes outside the arms' (`gradients/cond1/then/x`).
            let (role_scope, base) = match node.role {
                Role::Backward if by_role => (
                    "gradients/",
                    base.strip_prefix("gradients/").unwrap_or(&base).to_string(),
                ),
                Role::Update if by_role => ("update/", base),
                _ => ("", base),
            };
            let full = format!(
                "{role_scope}{}{}",
                scope(graph, node.region),
                op_name(&base)
            );
            let mut name = full.clone();
            let mut n = 1;
            while !used.insert(name.clone()) {
                name = format!("{full}_{n}");
                n += 1;
            }
            name
        })
        .collect()
}

/// The name scope of a region: `""` for the main graph, `cond0/then/` for an arm, with the
/// scopes of enclosing conds in front (`cond0/then/cond1/else/`).
fn scope(graph: &GraphDef, region: Region) -> String {
    let mut parts = Vec::new();
    let mut region = region;
    // Conds nest without cycles in a graph the macro made; the bound guards a malformed one.
    for _ in 0..=graph.conds.len() {
        let Region::CondArm { cond, then_arm } = region else {
            break;
        };
        parts.push(format!(
            "cond{cond}/{}/",
            if then_arm { "then" } else { "else" }
        ));
        region = graph
            .conds
            .get(cond)
            .and_then(|c| graph.nodes.get(c.node))
            .map_or(Region::Main, |n| n.region);
    }
    parts.reverse();
    parts.concat()
}

/// A valid TensorFlow op name: `[A-Za-z0-9.][A-Za-z0-9_.\-]*`, other characters become `_`.
fn op_name(text: &str) -> String {
    // A `/` in a grafo name is a name scope (`gradients/d_w`), kept as TensorFlow's.
    text.split('/')
        .map(scope_part)
        .collect::<Vec<_>>()
        .join("/")
}

/// One part of a scoped name, with TensorFlow's character rules.
fn scope_part(text: &str) -> String {
    let mut out: String = text
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if !out.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '.') {
        out.insert(0, 'n');
    }
    out
}

fn shape_proto(shape: &[Dim]) -> proto::TensorShapeProto {
    let dim = shape
        .iter()
        .map(|d| match d {
            Dim::Static(n) => proto::tensor_shape_proto::Dim {
                size: i64::try_from(*n).unwrap_or(-1),
                name: String::new(),
            },
            Dim::Symbol(s) | Dim::Expr(s) => proto::tensor_shape_proto::Dim {
                size: -1,
                name: s.clone(),
            },
        })
        .collect();
    proto::TensorShapeProto {
        dim,
        unknown_rank: false,
    }
}

/// The CRC32C of `data`, masked as TFRecord stores it (so that a CRC of CRCs stays strong).
pub fn masked_crc32c(data: &[u8]) -> u32 {
    let crc = crc32c::crc32c(data);
    crc.rotate_right(15).wrapping_add(0xa282_ead8)
}

/// Appends one TFRecord: length, masked CRC of the length, data, masked CRC of the data.
fn write_record(out: &mut Vec<u8>, data: &[u8]) {
    let len = (data.len() as u64).to_le_bytes();
    out.extend_from_slice(&len);
    out.extend_from_slice(&masked_crc32c(&len).to_le_bytes());
    out.extend_from_slice(data);
    out.extend_from_slice(&masked_crc32c(data).to_le_bytes());
}

/// Splits a TFRecord file into its records, checking both CRCs of each.
pub fn read_records(bytes: &[u8]) -> Result<Vec<&[u8]>, Error> {
    let mut records = Vec::new();
    let mut rest = bytes;
    while !rest.is_empty() {
        let offset = bytes.len() - rest.len();
        let bad = |what: &str| Error::Io(format!("TFRecord at byte {offset}: {what}"));
        let (len_bytes, after) = split(rest, 8).ok_or_else(|| bad("truncated length"))?;
        let (len_crc, after) = split(after, 4).ok_or_else(|| bad("truncated length CRC"))?;
        if le_u32(len_crc) != masked_crc32c(len_bytes) {
            return Err(bad("length CRC mismatch"));
        }
        let len = usize::try_from(le_u64(len_bytes)).map_err(|_| bad("length too large"))?;
        let (data, after) = split(after, len).ok_or_else(|| bad("truncated data"))?;
        let (data_crc, after) = split(after, 4).ok_or_else(|| bad("truncated data CRC"))?;
        if le_u32(data_crc) != masked_crc32c(data) {
            return Err(bad("data CRC mismatch"));
        }
        records.push(data);
        rest = after;
    }
    Ok(records)
}

/// Reads an event file back: every record, CRC-checked and decoded as an `Event`.
pub fn read_event_file(path: impl AsRef<Path>) -> Result<Vec<proto::Event>, Error> {
    let path = path.as_ref();
    let bytes = std::fs::read(path).map_err(|e| io_error(path, e))?;
    read_records(&bytes)?
        .into_iter()
        .map(|r| {
            proto::Event::decode(r)
                .map_err(|e| Error::Io(format!("{}: malformed Event: {e}", path.display())))
        })
        .collect()
}

fn split(bytes: &[u8], n: usize) -> Option<(&[u8], &[u8])> {
    (bytes.len() >= n).then(|| bytes.split_at(n))
}

/// A little-endian `u32` from the four bytes `split` cut (0 for any other length).
fn le_u32(b: &[u8]) -> u32 {
    <[u8; 4]>::try_from(b).map_or(0, u32::from_le_bytes)
}

/// A little-endian `u64` from the eight bytes `split` cut (0 for any other length).
fn le_u64(b: &[u8]) -> u64 {
    <[u8; 8]>::try_from(b).map_or(0, u64::from_le_bytes)
}

fn io_error(path: &Path, e: std::io::Error) -> Error {
    Error::Io(format!("{}: {e}", path.display()))
}

/// The machine's name for the file name, or `grafo` when it cannot be read.
fn hostname() -> String {
    let from_file = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::fs::read_to_string("/etc/hostname"))
        .map(|s| s.trim().to_string())
        .unwrap_or_default();
    let name = if from_file.is_empty() {
        std::env::var("HOSTNAME").unwrap_or_default()
    } else {
        from_file
    };
    if name.is_empty() {
        "grafo".to_string()
    } else {
        name
    }
}

/// A piece of a file name: no path separators or spaces.
fn file_part(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32c_is_castagnoli() {
        // The check value of CRC-32C (iSCSI) for the ASCII digits 1 to 9.
        assert_eq!(crc32c::crc32c(b"123456789"), 0xe306_9283);
    }

    #[test]
    fn records_round_trip_and_corruption_is_caught() {
        let mut bytes = Vec::new();
        write_record(&mut bytes, b"hello");
        write_record(&mut bytes, b"");
        let records = read_records(&bytes).map_err(|e| e.to_string());
        assert_eq!(records, Ok(vec![&b"hello"[..], &b""[..]]));
        let mut corrupt = bytes.clone();
        corrupt[13] ^= 1;
        assert!(read_records(&corrupt).is_err());
        assert!(read_records(&bytes[..bytes.len() - 1]).is_err());
    }

    #[test]
    fn event_writer_scalars_read_back() {
        let dir = std::env::temp_dir().join(format!("grafo-event-writer-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let mut first = EventWriter::new(&dir).expect("writer created");
        let second = EventWriter::new(&dir).expect("a second writer in the same directory");
        assert_ne!(first.path(), second.path());
        drop(second);
        let values = [(0, 2.5f32), (1, 1.25), (7, -0.0), (1 << 40, f32::NAN)];
        for (step, value) in values {
            first
                .add_scalar("train/loss", step, value)
                .expect("scalar written");
        }
        first
            .add_scalar("accuracy", 3, 0.96)
            .expect("scalar written");
        first.flush().expect("flushed");
        let name = first.path().file_name().and_then(|n| n.to_str());
        assert!(
            name.is_some_and(|n| n.starts_with("events.out.tfevents.")),
            "{name:?}"
        );

        let events = read_event_file(first.path()).expect("events decode");
        assert_eq!(events.len(), 6);
        assert_eq!(
            events[0].what,
            Some(proto::What::FileVersion(FILE_VERSION.to_string()))
        );
        let scalars: Vec<(i64, String, f32)> = events[1..]
            .iter()
            .map(|e| {
                assert!(e.wall_time > 1.0e9, "{e:?}");
                let Some(proto::What::Summary(summary)) = &e.what else {
                    panic!("not a summary: {e:?}");
                };
                assert_eq!(summary.value.len(), 1);
                let v = &summary.value[0];
                let Some(proto::summary::Kind::SimpleValue(x)) = v.value else {
                    panic!("no simple_value: {v:?}");
                };
                (e.step, v.tag.clone(), x)
            })
            .collect();
        for (i, (step, value)) in values.iter().enumerate() {
            assert_eq!(scalars[i].0, *step);
            assert_eq!(scalars[i].1, "train/loss");
            assert_eq!(scalars[i].2.to_bits(), value.to_bits());
        }
        assert_eq!(scalars[4], (3, "accuracy".to_string(), 0.96));

        // Dropping the writer flushes what `add_scalar` buffered.
        let path = first.path().to_path_buf();
        first.add_scalar("late", 9, 1.0).expect("scalar written");
        drop(first);
        assert_eq!(read_event_file(&path).expect("events decode").len(), 7);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn op_names_are_valid() {
        assert_eq!(op_name("y"), "y");
        assert_eq!(op_name("_t"), "n_t");
        assert_eq!(op_name("a b/c"), "a_b/c");
        assert_eq!(op_name("gradients/d_w"), "gradients/d_w");
    }
}
