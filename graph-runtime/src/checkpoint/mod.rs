//! Checkpoints: the parameter structs of a `#[graph] mod` read from and written to safetensors
//! files, the format PyTorch and Hugging Face save models in.
//!
//! The per-struct glue is emitted by `#[graph]` (`Net::load_safetensors`,
//! `net.save_safetensors`): it asks a [`Reader`] for each field by its path (`blocks.3.wq`)
//! and gives each field to a [`Writer`]. The reader maps the file (`memmap2`) and copies each
//! tensor's bytes once, into the field's owned array (a field owns its array, so that copy is
//! the one a load cannot avoid; a permuted tensor takes a second, into the new layout). Every
//! problem (a missing, unexpected, misshapen or mistyped tensor) is collected and returned in
//! one [`Error::Checkpoint`] by [`Reader::finish`]; nothing panics on a bad file.
//!
//! [`Remap`] maps another framework's names and layouts onto the field paths: PyTorch's
//! `layer1.0.conv1.weight` to `blocks.0.conv1.kernel`, its OIHW convolution kernels to HWIO,
//! `Linear`'s `[out, in]` weights to `[in, out]`.

mod remap;

pub use crate::error::CheckpointProblem as Problem;
pub use remap::{Combine, Remap};

use crate::dtype::Element;
use crate::error::{CheckpointProblem, Error};
use ndarray::{Array, ArrayBase, ArrayD, Data, Dimension, IxDyn};
use safetensors::{Dtype, SafeTensors, View};
use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::path::Path;

mod sealed {
    pub trait Sealed {}
}

/// The element types a checkpoint holds: `f32`, `f64`, `i32`, `i64` and `bool`, stored
/// little-endian as safetensors requires.
pub trait CheckpointElem: Element + sealed::Sealed {
    /// The safetensors dtype of this element type.
    const SAFETENSORS: Dtype;
    /// The element stored in `bytes` (exactly its size).
    fn from_le(bytes: &[u8]) -> Self;
    /// Appends the element's bytes.
    fn put_le(self, out: &mut Vec<u8>);
    /// `self + o` for [`Combine::Sum`]: `None` for `bool`s and on integer overflow.
    fn checked_sum(self, o: Self) -> Option<Self>;
}

macro_rules! checkpoint_numbers {
    ($($t:ty => $dt:ident),*) => {$(
        impl sealed::Sealed for $t {}
        impl CheckpointElem for $t {
            const SAFETENSORS: Dtype = Dtype::$dt;
            #[inline]
            fn from_le(bytes: &[u8]) -> Self {
                <$t>::from_le_bytes(bytes.try_into().expect("chunks of the element's size"))
            }
            #[inline]
            fn put_le(self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
            #[inline]
            fn checked_sum(self, o: Self) -> Option<Self> {
                <$t as CheckedSum>::checked_sum(self, o)
            }
        }
    )*};
}

/// The sum [`CheckpointElem::checked_sum`] uses, per number type.
trait CheckedSum: Sized {
    fn checked_sum(self, o: Self) -> Option<Self>;
}

macro_rules! impl_checked_sum {
    ($($t:ty),* => |$a:ident, $b:ident| $e:expr) => {$(
        impl CheckedSum for $t {
            #[inline]
            fn checked_sum(self, o: Self) -> Option<Self> {
                let ($a, $b) = (self, o);
                $e
            }
        }
    )*};
}
checkpoint_numbers!(f32 => F32, f64 => F64, i32 => I32, i64 => I64);

impl_checked_sum!(f32, f64 => |a, b| Some(a + b));
impl_checked_sum!(i32, i64 => |a, b| a.checked_add(b));

impl sealed::Sealed for bool {}
impl CheckpointElem for bool {
    const SAFETENSORS: Dtype = Dtype::BOOL;
    #[inline]
    fn from_le(bytes: &[u8]) -> Self {
        bytes[0] != 0
    }
    #[inline]
    fn put_le(self, out: &mut Vec<u8>) {
        out.push(u8::from(self));
    }
    fn checked_sum(self, _: Self) -> Option<Self> {
        None
    }
}

/// grafo's name of an element type, as messages show it.
fn dtype_name<T: Element>() -> &'static str {
    T::DTYPE.name()
}

/// A dtype of the file as messages show it: grafo's name where grafo has the type (`f32`),
/// else safetensors' (`F16`, `BF16`).
fn file_dtype(d: Dtype) -> String {
    match d {
        Dtype::F32 => "f32".into(),
        Dtype::F64 => "f64".into(),
        Dtype::I32 => "i32".into(),
        Dtype::I64 => "i64".into(),
        Dtype::BOOL => "bool".into(),
        other => other.to_string(),
    }
}

/// A tensor of the file, under the field path it is read as.
struct Entry {
    /// The file's name for it, when the remap renamed it.
    source: Option<String>,
    dtype: Dtype,
    shape: Vec<usize>,
    /// Its bytes in the mapped file.
    start: usize,
    end: usize,
    /// The part of the file's tensor it is, when the remap splits that tensor.
    part: Option<Part>,
}

/// Part `index` of `count` equal parts of a file's tensor along `axis` ([`Remap::split`]).
#[derive(Clone, Copy)]
struct Part {
    axis: usize,
    index: usize,
    count: usize,
}

/// How deep [`Remap::combine`]'s rules may nest (a combination of combinations).
const MAX_COMBINE_DEPTH: usize = 8;

/// A safetensors file being read into a parameter struct, field by field.
pub struct Reader {
    path: String,
    model: &'static str,
    map: memmap2::Mmap,
    entries: HashMap<String, Entry>,
    taken: HashSet<String>,
    problems: Vec<CheckpointProblem>,
    remap: Remap,
}

impl Reader {
    /// Maps the file at `path` and reads its header; `model` is the struct's name for
    /// messages. A file that cannot be opened is an [`Error::Io`]; one that is not a
    /// safetensors file an [`Error::Checkpoint`].
    pub fn open(path: &Path, model: &'static str, remap: &Remap) -> Result<Reader, Error> {
        let shown = path.display().to_string();
        let io = |e: std::io::Error| Error::Io(format!("reading checkpoint `{shown}`: {e}"));
        let file = std::fs::File::open(path).map_err(io)?;
        // SAFETY: the map is read only, through `Reader`, which copies each tensor's bytes
        // out before returning it; like every reader of a mapped file, it relies on no other
        // process truncating or rewriting the file while it is read.
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(io)?;
        let fail = |message: String| Error::Checkpoint {
            path: shown.clone(),
            model: model.to_string(),
            problems: vec![CheckpointProblem::Format(message)],
        };
        let (header, metadata) =
            SafeTensors::read_metadata(&map).map_err(|e| fail(e.to_string()))?;
        let base = 8 + header;
        let mut entries: HashMap<String, Entry> = HashMap::new();
        let mut problems = Vec::new();
        let mut sources: HashMap<String, Vec<String>> = HashMap::new();
        let mut names: Vec<(String, &safetensors::tensor::TensorInfo)> =
            metadata.tensors().into_iter().collect();
        names.sort_by(|a, b| a.0.cmp(&b.0));
        for (file_name, info) in names {
            let Some(name) = remap.field_path(&file_name) else {
                continue;
            };
            let (start, end) = info.data_offsets;
            if base + end > map.len() || start > end {
                return Err(fail(format!(
                    "tensor `{file_name}`'s data ({start}..{end}) lies outside the file"
                )));
            }
            let source = (name != file_name).then_some(file_name.clone());
            let pieces = match remap.parts(&name) {
                Some((axis, parts)) => {
                    let count = parts.len();
                    parts
                        .into_iter()
                        .enumerate()
                        .map(|(index, part)| (part, Some(Part { axis, index, count })))
                        .collect()
                }
                None => vec![(name, None)],
            };
            for (name, part) in pieces {
                sources
                    .entry(name.clone())
                    .or_default()
                    .push(file_name.clone());
                let source = if part.is_some() {
                    Some(file_name.clone())
                } else {
                    source.clone()
                };
                entries.insert(
                    name,
                    Entry {
                        source,
                        dtype: info.dtype,
                        shape: info.shape.clone(),
                        start: base + start,
                        end: base + end,
                        part,
                    },
                );
            }
        }
        let mut duplicates: Vec<(String, Vec<String>)> =
            sources.into_iter().filter(|(_, s)| s.len() > 1).collect();
        duplicates.sort();
        for (name, sources) in duplicates {
            problems.push(CheckpointProblem::Duplicate { name, sources });
        }
        Ok(Reader {
            path: shown,
            model,
            map,
            entries,
            taken: HashSet::new(),
            problems,
            remap: remap.clone(),
        })
    }

    /// The tensor of field `name`, of the field's element type and `shape`. A problem is
    /// recorded (and an empty array returned) when the file has no such tensor or it does
    /// not fit; [`Reader::finish`] reports them all.
    pub fn take<T: CheckpointElem, D: Dimension>(
        &mut self,
        name: &str,
        shape: &[usize],
    ) -> Array<T, D> {
        let empty = || {
            let dim = D::zeros(D::NDIM.unwrap_or(shape.len()));
            Array::from_shape_vec(dim, Vec::new()).expect("an empty array of the field's rank")
        };
        let read = if self.entries.contains_key(name) {
            self.read::<T>(name)
        } else if let Some((how, names)) = self.remap.sources(name) {
            self.combined::<T>(name, how, &names, 0)
        } else {
            self.problems.push(CheckpointProblem::Missing {
                name: name.to_string(),
                dtype: dtype_name::<T>(),
                shape: shape.to_vec(),
            });
            None
        };
        let Some((stored, source)) = read else {
            return empty();
        };
        let laid = match self.remap.axes(name) {
            Some(axes) => {
                let rank = stored.ndim();
                let fits = axes.len() == rank && {
                    let mut seen = vec![false; rank];
                    axes.iter()
                        .all(|&a| a < rank && !std::mem::replace(&mut seen[a], true))
                };
                if !fits {
                    self.problems.push(CheckpointProblem::Layout {
                        name: name.to_string(),
                        axes: axes.to_vec(),
                        rank,
                    });
                    return empty();
                }
                stored.permuted_axes(IxDyn(axes))
            }
            None => stored,
        };
        // Checked before the permuted layout is copied into a standard one.
        if laid.shape() != shape {
            self.problems.push(CheckpointProblem::Shape {
                name: name.to_string(),
                source,
                expected: shape.to_vec(),
                found: laid.shape().to_vec(),
            });
            return empty();
        }
        // A permuted array is copied into the standard layout; an unpermuted one is already.
        let laid = if laid.is_standard_layout() {
            laid
        } else {
            laid.as_standard_layout().into_owned()
        };
        laid.into_dimensionality::<D>().unwrap_or_else(|_| empty())
    }

    /// The tensor (or part of one) the file holds under `name`, in the file's layout, with
    /// the file's name for it; `None` after recording a problem.
    fn read<T: CheckpointElem>(&mut self, name: &str) -> Option<(ArrayD<T>, Option<String>)> {
        let e = self.entries.get(name)?;
        self.taken.insert(name.to_string());
        if e.dtype != T::SAFETENSORS {
            self.problems.push(CheckpointProblem::DType {
                name: name.to_string(),
                source: e.source.clone(),
                expected: dtype_name::<T>(),
                found: file_dtype(e.dtype),
            });
            return None;
        }
        let size = std::mem::size_of::<T>().max(1);
        let bytes = &self.map[e.start..e.end];
        let count: usize = e.shape.iter().product();
        if bytes.len() != count * size {
            self.problems.push(CheckpointProblem::Format(format!(
                "tensor `{name}` holds {} bytes, its shape {:?} needs {}",
                bytes.len(),
                e.shape,
                count * size
            )));
            return None;
        }
        let Some(part) = e.part else {
            // The one copy: the mapped bytes into the field's own buffer.
            let data: Vec<T> = bytes.chunks_exact(size).map(T::from_le).collect();
            let stored =
                ArrayD::from_shape_vec(IxDyn(&e.shape), data).expect("the size was checked");
            return Some((stored, e.source.clone()));
        };
        let fits = part.axis < e.shape.len() && e.shape[part.axis] % part.count == 0;
        if !fits {
            let message = format!(
                "the remap splits `{}` (shape {:?}) in {} parts along axis {}, which {}",
                e.source.as_deref().unwrap_or(name),
                e.shape,
                part.count,
                part.axis,
                if part.axis < e.shape.len() {
                    "does not divide it"
                } else {
                    "it does not have"
                }
            );
            self.problems.push(CheckpointProblem::Remap {
                name: name.to_string(),
                message,
            });
            return None;
        }
        // Only the part's bytes are copied: `outer` runs of `run` contiguous elements.
        let mut part_shape = e.shape.clone();
        part_shape[part.axis] /= part.count;
        let outer: usize = e.shape[..part.axis].iter().product();
        let inner: usize = e.shape[part.axis + 1..].iter().product();
        let run = part_shape[part.axis] * inner;
        let mut data = Vec::with_capacity(outer * run);
        for o in 0..outer {
            let first = (o * e.shape[part.axis] * inner + part.index * run) * size;
            let chunk = &bytes[first..first + run * size];
            data.extend(chunk.chunks_exact(size).map(T::from_le));
        }
        let stored = ArrayD::from_shape_vec(IxDyn(&part_shape), data).expect("the part's size");
        Some((stored, e.source.clone()))
    }

    /// The field `name` built from the tensors `names` as the remap's [`Combine`] says (a
    /// name may itself be a combination, `depth` deep); `None` after recording every problem
    /// found.
    fn combined<T: CheckpointElem>(
        &mut self,
        name: &str,
        how: Combine,
        names: &[String],
        depth: usize,
    ) -> Option<(ArrayD<T>, Option<String>)> {
        let fail = |message: String| CheckpointProblem::Remap {
            name: name.to_string(),
            message,
        };
        if depth >= MAX_COMBINE_DEPTH {
            self.problems.push(fail(format!(
                "the remap's combinations nest more than {MAX_COMBINE_DEPTH} deep (a rule that names itself?)"
            )));
            return None;
        }
        let mut parts = Vec::with_capacity(names.len());
        let mut missing = Vec::new();
        for n in names {
            if self.entries.contains_key(n.as_str()) {
                parts.push(self.read::<T>(n).map(|(a, _)| a));
            } else if let Some((inner, sources)) = self.remap.sources(n) {
                parts.push(
                    self.combined::<T>(n, inner, &sources, depth + 1)
                        .map(|(a, _)| a),
                );
            } else {
                missing.push(format!("`{n}`"));
            }
        }
        let listed = names
            .iter()
            .map(|n| format!("`{n}`"))
            .collect::<Vec<_>>()
            .join(", ");
        if names.is_empty() {
            self.problems
                .push(fail("the remap combines it from no tensor".to_string()));
            return None;
        }
        if !missing.is_empty() {
            self.problems.push(fail(format!(
                "the remap combines it from {listed}; the file has no {}",
                missing.join(", ")
            )));
            return None;
        }
        // A part that could not be read has its problem recorded already.
        let parts: Vec<ArrayD<T>> = parts.into_iter().collect::<Option<_>>()?;
        let shapes = || {
            parts
                .iter()
                .map(|p| format!("{:?}", p.shape()))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let views: Vec<_> = parts.iter().map(|p| p.view()).collect();
        let result = match how {
            Combine::Sum => {
                if parts.iter().any(|p| p.shape() != parts[0].shape()) {
                    None
                } else {
                    let mut sum = parts[0].clone();
                    let mut overflow = false;
                    for p in &parts[1..] {
                        sum.zip_mut_with(p, |s, &x| match s.checked_sum(x) {
                            Some(v) => *s = v,
                            None => overflow = true,
                        });
                    }
                    if overflow {
                        self.problems.push(fail(format!(
                            "the remap sums {listed}, which overflows {} (or is bool)",
                            dtype_name::<T>()
                        )));
                        return None;
                    }
                    Some(sum)
                }
            }
            Combine::Concat(axis) => ndarray::concatenate(ndarray::Axis(axis), &views).ok(),
            Combine::Stack(axis) => ndarray::stack(ndarray::Axis(axis), &views).ok(),
        };
        match result {
            Some(a) => Some((a, Some(names.join(" + ")))),
            None => {
                let what = match how {
                    Combine::Sum => "summed".to_string(),
                    Combine::Concat(axis) => format!("concatenated along axis {axis}"),
                    Combine::Stack(axis) => format!("stacked along axis {axis}"),
                };
                self.problems.push(fail(format!(
                    "the remap combines it from {listed}, of shapes {}, which cannot be {what}",
                    shapes()
                )));
                None
            }
        }
    }

    /// Every problem found, with the file's tensors that no field took, as one error.
    pub fn finish(mut self) -> Result<(), Error> {
        let mut unexpected: Vec<CheckpointProblem> = self
            .entries
            .iter()
            .filter(|(name, _)| !self.taken.contains(*name))
            .map(|(name, e)| CheckpointProblem::Unexpected {
                name: e.source.clone().unwrap_or_else(|| name.clone()),
                dtype: file_dtype(e.dtype),
                shape: e.shape.clone(),
            })
            .collect();
        unexpected.sort_by_key(|p| p.to_string());
        self.problems.extend(unexpected);
        if self.problems.is_empty() {
            Ok(())
        } else {
            Err(Error::Checkpoint {
                path: self.path,
                model: self.model.to_string(),
                problems: self.problems,
            })
        }
    }
}

/// One tensor to write: its dtype, shape and bytes (borrowed from the array when it is
/// contiguous and the machine little-endian).
struct Stored<'a> {
    dtype: Dtype,
    shape: Vec<usize>,
    bytes: Cow<'a, [u8]>,
}

impl View for &Stored<'_> {
    fn dtype(&self) -> Dtype {
        self.dtype
    }
    fn shape(&self) -> &[usize] {
        &self.shape
    }
    fn data(&self) -> Cow<'_, [u8]> {
        Cow::Borrowed(&self.bytes)
    }
    fn data_len(&self) -> usize {
        self.bytes.len()
    }
}

/// The tensors of a parameter struct being written, by field path.
#[derive(Default)]
pub struct Writer<'a> {
    tensors: Vec<(String, Stored<'a>)>,
}

impl<'a> Writer<'a> {
    pub fn new() -> Writer<'a> {
        Writer::default()
    }

    /// Adds the field `name`'s array.
    pub fn add<T, S, D>(&mut self, name: impl Into<String>, a: &'a ArrayBase<S, D>)
    where
        T: CheckpointElem,
        S: Data<Elem = T>,
        D: Dimension,
    {
        let bytes = match a.as_slice() {
            Some(slice) if cfg!(target_endian = "little") => {
                // SAFETY: `T` is one of f32, f64, i32, i64 and bool (the trait is sealed):
                // plain values without padding, every byte initialised, stored little-endian
                // as safetensors wants on this target; the byte slice covers exactly the
                // elements' memory and borrows the array for as long.
                let bytes = unsafe {
                    std::slice::from_raw_parts(
                        slice.as_ptr().cast::<u8>(),
                        std::mem::size_of_val(slice),
                    )
                };
                Cow::Borrowed(bytes)
            }
            _ => {
                let mut out = Vec::with_capacity(a.len() * std::mem::size_of::<T>());
                for &x in a.iter() {
                    x.put_le(&mut out);
                }
                Cow::Owned(out)
            }
        };
        self.tensors.push((
            name.into(),
            Stored {
                dtype: T::SAFETENSORS,
                shape: a.shape().to_vec(),
                bytes,
            },
        ));
    }

    /// Writes the safetensors file.
    pub fn write(self, path: &Path) -> Result<(), Error> {
        let views = self.tensors.iter().map(|(n, s)| (n.as_str(), s));
        safetensors::serialize_to_file(views, None, path)
            .map_err(|e| Error::Io(format!("writing checkpoint `{}`: {e}", path.display())))
    }
}
