//! [`Remap`]: how a checkpoint written by another framework maps onto the field paths: names
//! renamed or skipped, and layouts permuted (PyTorch's OIHW kernels, `Linear`'s weights).

/// A renaming of a checkpoint's tensors and a permutation of some of their layouts, applied
/// while loading (`Net::load_safetensors_with(path, &remap)`).
///
/// Names: each rule of [`Remap::rename`], [`Remap::replace`] and [`Remap::skip`] runs in
/// the order given, on the file's name (as renamed by the rules before it); a tensor that a
/// rule skips is neither loaded nor reported as unexpected. Layouts: [`Remap::permute`],
/// [`Remap::transpose`] and [`Remap::oihw_to_hwio`] select tensors by their field path (after
/// renaming); the first that matches applies.
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
#[derive(Default)]
pub struct Remap {
    names: Vec<NameRule>,
    layouts: Vec<(PathRule, Vec<usize>)>,
}

/// A renaming rule: the file's name to a field path, `None` to skip the tensor.
type NameRule = Box<dyn Fn(&str) -> Option<String>>;
/// A selection of field paths.
type PathRule = Box<dyn Fn(&str) -> bool>;

impl Remap {
    /// No renaming, no permutation: the file's names are the field paths.
    pub fn new() -> Remap {
        Remap::default()
    }

    /// Renames each tensor of the file: `f(name)` is its field path, or `None` to skip it.
    pub fn rename(mut self, f: impl Fn(&str) -> Option<String> + 'static) -> Remap {
        self.names.push(Box::new(f));
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
        self.layouts.push((Box::new(f), axes.to_vec()));
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
