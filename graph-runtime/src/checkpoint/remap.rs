//! [`Remap`]: how a checkpoint written by another framework maps onto the field paths: names
//! renamed or skipped, layouts permuted (PyTorch's OIHW kernels, `Linear`'s weights), and
//! tensors split or combined (`MultiheadAttention`'s `in_proj_weight`, an LSTM's two biases).

use std::rc::Rc;

/// A renaming of a checkpoint's tensors and a permutation of some of their layouts, applied
/// while loading (`Net::load_safetensors_with(path, &remap)`).
///
/// Names: each rule of [`Remap::rename`], [`Remap::replace`] and [`Remap::skip`] runs in
/// the order given, on the file's name (as renamed by the rules before it); a tensor that a
/// rule skips is neither loaded nor reported as unexpected. Layouts: [`Remap::permute`],
/// [`Remap::transpose`] and [`Remap::oihw_to_hwio`] select tensors by their field path (after
/// renaming); the first that matches applies.
///
/// Splits and combinations: [`Remap::split`] cuts a tensor of the file (under its renamed
/// name) into equal parts along an axis, each read under a name of its own; [`Remap::combine`]
/// builds a field that no tensor is named after from several (renamed or split) tensors,
/// summed, concatenated or stacked. The order is: rename, split, combine, then the field's
/// permutation. Every tensor a split or combination uses counts as read.
///
/// ```
/// use graph_runtime::checkpoint::Remap;
/// // PyTorch's `fc1.weight` ([out, in]) into a field `hidden.w` ([in, out]), `conv1.weight`
/// // (OIHW) into `conv1.kernel` (HWIO), and batch norm's step counter skipped.
/// let remap = Remap::new()
///     .skip(|name| name.ends_with("num_batches_tracked"))
///     .replace("fc1.", "hidden.")
///     .replace(".weight", ".w")
///     .rename(|name| Some(name.replace("conv1.w", "conv1.kernel")))
///     .transpose(|path| path == "hidden.w")
///     .oihw_to_hwio(|path| path.ends_with(".kernel"));
/// assert_eq!(remap.field_path("fc1.weight").as_deref(), Some("hidden.w"));
/// assert_eq!(remap.field_path("bn1.num_batches_tracked"), None);
/// assert_eq!(remap.axes("conv1.kernel"), Some(&[2, 3, 1, 0][..]));
/// ```
///
/// PyTorch's `nn.MultiheadAttention` keeps the three input projections in one
/// `in_proj_weight` `[3D, D]`; grafo's `MultiHeadAttention` has a `Dense` each, and an LSTM
/// cell's one bias is PyTorch's `bias_ih + bias_hh`:
///
/// ```
/// use graph_runtime::checkpoint::{Combine, Remap};
/// let remap = Remap::new()
///     .split(0, |name| {
///         let layer = name.strip_suffix(".in_proj_weight")?;
///         Some(["query", "key", "value"].map(|p| format!("{layer}.{p}.kernel")).to_vec())
///     })
///     .transpose(|path| path.ends_with(".kernel"))
///     .combine(Combine::Sum, |path| {
///         let cell = path.strip_suffix(".bias")?;
///         Some(vec![format!("{cell}.bias_ih"), format!("{cell}.bias_hh")])
///     });
/// assert_eq!(
///     remap.parts("attn.in_proj_weight"),
///     Some((0, vec!["attn.query.kernel".into(), "attn.key.kernel".into(), "attn.value.kernel".into()]))
/// );
/// assert_eq!(
///     remap.sources("lstm.bias"),
///     Some((Combine::Sum, vec!["lstm.bias_ih".into(), "lstm.bias_hh".into()]))
/// );
/// ```
#[derive(Default, Clone)]
pub struct Remap {
    names: Vec<NameRule>,
    layouts: Vec<(PathRule, Vec<usize>)>,
    splits: Vec<(usize, PartsRule)>,
    combines: Vec<(Combine, PartsRule)>,
}

/// How [`Remap::combine`] makes one field of several tensors (NumPy's names).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Combine {
    /// The elementwise sum, in the order the tensors are named (an LSTM's `bias_ih + bias_hh`);
    /// their shapes must be equal.
    Sum,
    /// Joined along an existing axis (`np.concatenate(.., axis)`): gates reordered.
    Concat(usize),
    /// Joined along a new axis (`np.stack(.., axis)`): a GRU cell's `[2, 3H]` bias.
    Stack(usize),
}

/// A renaming rule: the file's name to a field path, `None` to skip the tensor.
type NameRule = Rc<dyn Fn(&str) -> Option<String>>;
/// A selection of field paths.
type PathRule = Rc<dyn Fn(&str) -> bool>;
/// A name to the names of its parts (a split) or sources (a combination), `None` if the rule
/// does not apply.
type PartsRule = Rc<dyn Fn(&str) -> Option<Vec<String>>>;

impl Remap {
    /// No renaming, no permutation: the file's names are the field paths.
    pub fn new() -> Remap {
        Remap::default()
    }

    /// Renames each tensor of the file: `f(name)` is its field path, or `None` to skip it.
    pub fn rename(mut self, f: impl Fn(&str) -> Option<String> + 'static) -> Remap {
        self.names.push(Rc::new(f));
        self
    }

    /// Replaces every occurrence of `from` with `to` in the names (`"fc1." -> "hidden."`).
    pub fn replace(self, from: &str, to: &str) -> Remap {
        let (from, to) = (from.to_string(), to.to_string());
        self.rename(move |name| Some(name.replace(&from, &to)))
    }

    /// Skips the file's tensors whose name satisfies `f` (PyTorch's `num_batches_tracked`).
    pub fn skip(self, f: impl Fn(&str) -> bool + 'static) -> Remap {
        self.rename(move |name| (!f(name)).then(|| name.to_string()))
    }

    /// Permutes the axes of the tensors whose field path satisfies `f`: axis `k` of the field
    /// is axis `axes[k]` of the file's tensor (NumPy's `transpose(axes)`).
    pub fn permute(mut self, f: impl Fn(&str) -> bool + 'static, axes: &[usize]) -> Remap {
        self.layouts.push((Rc::new(f), axes.to_vec()));
        self
    }

    /// Transposes 2-D tensors: PyTorch's `Linear.weight` is `[out, in]` (it computes
    /// `x @ W.T`), grafo's `matmul(x, w)` wants `[in, out]`.
    pub fn transpose(self, f: impl Fn(&str) -> bool + 'static) -> Remap {
        self.permute(f, &[1, 0])
    }

    /// PyTorch's convolution kernels `[out, in, h, w]` (OIHW) to TensorFlow's and grafo's
    /// `[h, w, in, out]` (HWIO).
    pub fn oihw_to_hwio(self, f: impl Fn(&str) -> bool + 'static) -> Remap {
        self.permute(f, &[2, 3, 1, 0])
    }

    /// Splits the tensors for which `f(name)` (the name after renaming) gives names: each is
    /// cut into that many equal parts along `axis` of the file's layout, part `k` read under
    /// the `k`-th name (PyTorch's `in_proj_weight` into the query, key and value kernels). A
    /// tensor whose axis the count does not divide is reported when it is read.
    pub fn split(
        mut self,
        axis: usize,
        f: impl Fn(&str) -> Option<Vec<String>> + 'static,
    ) -> Remap {
        self.splits.push((axis, Rc::new(f)));
        self
    }

    /// Builds each field path `p` for which `f(p)` gives names, when the file has no tensor
    /// named `p`, from the tensors of those names (after renaming and splitting), summed,
    /// concatenated or stacked as `how` says; the field's permutation applies to the result.
    pub fn combine(
        mut self,
        how: Combine,
        f: impl Fn(&str) -> Option<Vec<String>> + 'static,
    ) -> Remap {
        self.combines.push((how, Rc::new(f)));
        self
    }

    /// The axis and the parts' names of the (renamed) tensor `name`, if a split applies.
    pub fn parts(&self, name: &str) -> Option<(usize, Vec<String>)> {
        self.splits
            .iter()
            .find_map(|(axis, f)| f(name).map(|parts| (*axis, parts)))
    }

    /// How the field `path` is combined and from which tensors, if a combination applies.
    pub fn sources(&self, path: &str) -> Option<(Combine, Vec<String>)> {
        self.combines
            .iter()
            .find_map(|(how, f)| f(path).map(|names| (*how, names)))
    }

    /// The field path the file's tensor `name` is read as, `None` if it is skipped.
    pub fn field_path(&self, name: &str) -> Option<String> {
        let mut name = name.to_string();
        for rule in &self.names {
            name = rule(&name)?;
        }
        Some(name)
    }

    /// The permutation of the field `path`'s tensor, if one applies.
    pub fn axes(&self, path: &str) -> Option<&[usize]> {
        self.layouts
            .iter()
            .find(|(f, _)| f(path))
            .map(|(_, axes)| axes.as_slice())
    }
}
