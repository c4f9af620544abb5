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
pub use remap::Remap;

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
        }
    )*};
}
checkpoint_numbers!(f32 => F32, f64 => F64, i32 => I32, i64 => I64);

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
    /// The remap's permutation of its axes, if any.
    axes: Option<Vec<usize>>,
}

/// A safetensors file being read into a parameter struct, field by field.
pub struct Reader {
    path: String,
    model: &'static str,
    map: memmap2::Mmap,
    entries: HashMap<String, Entry>,
    taken: HashSet<String>,
    problems: Vec<CheckpointProblem>,
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
            sources
                .entry(name.clone())
                .or_default()
                .push(file_name.clone());
            let source = (name != file_name).then_some(file_name);
            let axes = remap.axes(&name).map(<[usize]>::to_vec);
            entries.insert(
                name,
                Entry {
                    source,
                    dtype: info.dtype,
                    shape: info.shape.clone(),
                    start: base + start,
                    end: base + end,
                    axes,
                },
            );
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
        let Some(e) = self.entries.get(name) else {
            self.problems.push(CheckpointProblem::Missing {
                name: name.to_string(),
                dtype: dtype_name::<T>(),
                shape: shape.to_vec(),
            });
            return empty();
        };
        self.taken.insert(name.to_string());
        if e.dtype != T::SAFETENSORS {
            self.problems.push(CheckpointProblem::DType {
                name: name.to_string(),
                source: e.source.clone(),
                expected: dtype_name::<T>(),
                found: file_dtype(e.dtype),
            });
            return empty();
        }
        let found: Vec<usize> = match &e.axes {
            Some(axes) => {
                let fits = axes.len() == e.shape.len() && {
                    let mut seen = vec![false; axes.len()];
                    axes.iter()
                        .all(|&a| a < seen.len() && !std::mem::replace(&mut seen[a], true))
                };
                if !fits {
                    self.problems.push(CheckpointProblem::Layout {
                        name: name.to_string(),
                        axes: axes.clone(),
                        rank: e.shape.len(),
                    });
                    return empty();
                }
                axes.iter().map(|&a| e.shape[a]).collect()
            }
            None => e.shape.clone(),
        };
        if found != shape {
            self.problems.push(CheckpointProblem::Shape {
                name: name.to_string(),
                source: e.source.clone(),
                expected: shape.to_vec(),
                found,
            });
            return empty();
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
            return empty();
        }
        // The one copy: the mapped bytes into the field's own buffer.
        let data: Vec<T> = bytes.chunks_exact(size).map(T::from_le).collect();
        let stored = ArrayD::from_shape_vec(IxDyn(&e.shape), data).expect("the size was checked");
        let laid = match &e.axes {
            Some(axes) => stored
                .permuted_axes(IxDyn(axes))
                .as_standard_layout()
                .into_owned(),
            None => stored,
        };
        laid.into_dimensionality::<D>().unwrap_or_else(|_| empty())
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
