//! Phase 3, infer: the dtype and shape rules of every op, with the error messages the language promises (docs/OPS.md, docs/LANGUAGE-NOTES.md).
//!
//! Lowering calls these as it creates each node, so that weak literals, axes and cond
//! arms are resolved with the operands' types at hand. Each rule returns the node's dtype
//! and shape, or a message naming the op, both shapes (symbols kept) and the axis.

use crate::ir::{
    shape_str, type_str, DType, Dim, Monomial, OperandKind, Padding, PoolKind, ResizeMethod, Shape,
};

pub type Inferred = Result<(DType, Shape), String>;

/// Broadcasts two shapes with NumPy's rules; symbols must match exactly or meet a 1.
pub fn broadcast(op: &str, a: &[Dim], b: &[Dim]) -> Result<Shape, String> {
    let rank = a.len().max(b.len());
    let mut out = Vec::with_capacity(rank);
    for i in 0..rank {
        let da = if i + a.len() >= rank {
            Some(&a[i + a.len() - rank])
        } else {
            None
        };
        let db = if i + b.len() >= rank {
            Some(&b[i + b.len() - rank])
        } else {
            None
        };
        let d = match (da, db) {
            (Some(x), None) | (None, Some(x)) => x.clone(),
            (Some(x), Some(y)) if x == y => x.clone(),
            (Some(Dim::Const(1)), Some(y)) => y.clone(),
            (Some(x), Some(Dim::Const(1))) => x.clone(),
            (Some(x), Some(y)) => {
                return Err(format!(
                    "`{op}` operands do not broadcast: left is {}, right is {} ({x} != {y} at axis {i} of the result)",
                    shape_str(a),
                    shape_str(b)
                ))
            }
            (None, None) => unreachable!("axis {i} is below the larger rank"),
        };
        out.push(d);
    }
    Ok(out)
}

/// The common dtype of two operands; mixing dtypes needs an explicit `cast`.
pub fn same_dtype(op: &str, a: DType, b: DType, sa: &[Dim], sb: &[Dim]) -> Result<DType, String> {
    if a == b {
        Ok(a)
    } else {
        Err(format!(
            "`{op}` mixes dtypes: left is {}, right is {}; convert one side with `cast::<{}>(...)`",
            type_str(a, sa),
            type_str(b, sb),
            a
        ))
    }
}

/// `+ - * / pow maximum minimum`: same numeric dtype, broadcast shapes.
pub fn arithmetic(op: &str, a: (DType, &[Dim]), b: (DType, &[Dim])) -> Inferred {
    let dt = same_dtype(op, a.0, b.0, a.1, b.1)?;
    if dt == DType::Bool {
        return Err(format!(
            "`{op}` needs numbers but its operands are bool ({} and {}); use `select` or `cast::<f32>(...)`",
            type_str(a.0, a.1),
            type_str(b.0, b.1)
        ));
    }
    Ok((dt, broadcast(op, a.1, b.1)?))
}

/// `& | ^`, `logical_and/or/xor`: bool operands, broadcast shapes.
pub fn logical(op: &str, a: (DType, &[Dim]), b: (DType, &[Dim])) -> Inferred {
    if a.0 != DType::Bool || b.0 != DType::Bool {
        return Err(format!(
            "`{op}` needs bool operands but found {} and {}; compare numbers first (`x > 0.0`)",
            type_str(a.0, a.1),
            type_str(b.0, b.1)
        ));
    }
    Ok((DType::Bool, broadcast(op, a.1, b.1)?))
}

/// A unary op by what it accepts (floats, numbers or bools).
pub fn unary_of(op: &str, kind: OperandKind, x: (DType, &[Dim])) -> Inferred {
    match kind {
        OperandKind::Float => unary(op, true, x),
        OperandKind::Number => unary(op, false, x),
        OperandKind::Bool if x.0 == DType::Bool => Ok((x.0, x.1.to_vec())),
        OperandKind::Bool => Err(format!(
            "`{op}` needs a bool tensor, found {}; compare first (`x > 0.0`)",
            type_str(x.0, x.1)
        )),
    }
}

/// Comparisons: same dtype, broadcast shapes, bool result.
pub fn compare(op: &str, a: (DType, &[Dim]), b: (DType, &[Dim])) -> Inferred {
    same_dtype(op, a.0, b.0, a.1, b.1)?;
    Ok((DType::Bool, broadcast(op, a.1, b.1)?))
}

/// Unary ops: float-only transcendentals, numbers for the rest.
pub fn unary(op: &str, needs_float: bool, x: (DType, &[Dim])) -> Inferred {
    if needs_float && !x.0.is_float() {
        return Err(format!(
            "`{op}` needs a float tensor (f32 or f64), found {}; convert with `cast::<f32>(...)`",
            type_str(x.0, x.1)
        ));
    }
    if x.0 == DType::Bool {
        return Err(format!(
            "`{op}` needs a number, found {}",
            type_str(x.0, x.1)
        ));
    }
    Ok((x.0, x.1.to_vec()))
}

/// `select(cond, a, b)`: bool condition, same-dtype branches, three-way broadcast.
pub fn select(c: (DType, &[Dim]), a: (DType, &[Dim]), b: (DType, &[Dim])) -> Inferred {
    if c.0 != DType::Bool {
        return Err(format!(
            "`select` needs a bool condition, found {}; compare first (`x > 0.0`)",
            type_str(c.0, c.1)
        ));
    }
    let dt = same_dtype("select", a.0, b.0, a.1, b.1)?;
    let ab = broadcast("select", a.1, b.1)?;
    let shape = broadcast("select", c.1, &ab).map_err(|_| {
        format!(
            "`select` condition does not broadcast with its branches: condition is {}, branches are {} and {}",
            shape_str(c.1),
            shape_str(a.1),
            shape_str(b.1)
        )
    })?;
    Ok((dt, shape))
}

/// Normalises axes (negative count from the end), checking range and duplicates.
pub fn normalize_axes(
    op: &str,
    axes: &[i64],
    rank: usize,
    shape: &[Dim],
) -> Result<Vec<usize>, String> {
    let mut out = Vec::new();
    for &a in axes {
        let n = if a < 0 { a + rank as i64 } else { a };
        if n < 0 || n >= rank as i64 {
            return Err(format!(
                "`{op}` axis {a} is out of range for a rank-{rank} tensor {} (valid axes are {}..{})",
                shape_str(shape),
                -(rank as i64),
                rank
            ));
        }
        if out.contains(&(n as usize)) {
            return Err(format!(
                "`{op}` axis {a} is listed twice (it is axis {n} of the rank-{rank} tensor {})",
                shape_str(shape)
            ));
        }
        out.push(n as usize);
    }
    out.sort_unstable();
    Ok(out)
}

/// Reductions: the shape without (or with size-1) reduced axes.
pub fn reduce(op: &str, x: (DType, &[Dim]), axes: &[usize], keep_dims: bool) -> Inferred {
    if x.0 == DType::Bool {
        return Err(format!(
            "`{op}` needs a number, found {}",
            type_str(x.0, x.1)
        ));
    }
    let mut shape = Vec::new();
    for (i, d) in x.1.iter().enumerate() {
        if axes.contains(&i) {
            if keep_dims {
                shape.push(Dim::Const(1));
            }
        } else {
            shape.push(d.clone());
        }
    }
    Ok((x.0, shape))
}

/// `matmul`: `[.., m, k] x [.., k, n]` over the last two axes, the leading (batch) axes
/// broadcast as NumPy's `@` does (`[B, H, S, D] x [B, H, D, S]`, `[B, S, D] x [D, E]`).
pub fn matmul(a: (DType, &[Dim]), b: (DType, &[Dim])) -> Inferred {
    let dt = same_dtype("matmul", a.0, b.0, a.1, b.1)?;
    if dt == DType::Bool {
        return Err("`matmul` needs numbers, found bool".into());
    }
    let (sa, sb) = (a.1, b.1);
    if sa.len() < 2 || sb.len() < 2 {
        return Err(format!(
            "`matmul` operands must have rank 2 or more (matrices, or batches of matrices in the leading axes): left is {}, right is {}",
            shape_str(sa),
            shape_str(sb)
        ));
    }
    let (ra, rb) = (sa.len(), sb.len());
    let (k1, k2) = (&sa[ra - 1], &sb[rb - 2]);
    if k1 != k2 {
        return Err(format!(
            "`matmul` inner dimensions differ: left is {}, right is {} (left axis {} is {k1}, right axis {} is {k2})",
            shape_str(sa),
            shape_str(sb),
            ra - 1,
            rb - 2
        ));
    }
    let (ba, bb) = (&sa[..ra - 2], &sb[..rb - 2]);
    let mut shape = broadcast("matmul", ba, bb).map_err(|_| {
        let rank = ba.len().max(bb.len());
        let i = (0..rank)
            .find(|&i| {
                i + ba.len() >= rank && i + bb.len() >= rank && {
                    let (x, y) = (&ba[i + ba.len() - rank], &bb[i + bb.len() - rank]);
                    x != y && *x != Dim::Const(1) && *y != Dim::Const(1)
                }
            })
            .unwrap_or(0);
        let (ia, ib) = (i + ba.len() - rank, i + bb.len() - rank);
        format!(
            "`matmul` batch dimensions do not broadcast: left is {}, right is {} (left axis {ia} is {}, right axis {ib} is {})",
            shape_str(sa),
            shape_str(sb),
            ba[ia],
            bb[ib]
        )
    })?;
    shape.push(sa[ra - 2].clone());
    shape.push(sb[rb - 1].clone());
    Ok((dt, shape))
}

/// `conv2d`: NHWC input, HWIO kernel.
pub fn conv2d(x: (DType, &[Dim]), k: (DType, &[Dim]), stride: usize, padding: Padding) -> Inferred {
    let dt = same_dtype("conv2d", x.0, k.0, x.1, k.1)?;
    if !dt.is_float() {
        return Err(format!(
            "`conv2d` needs float tensors, found {}",
            type_str(x.0, x.1)
        ));
    }
    let (sx, sk) = (x.1, k.1);
    if sx.len() != 4 {
        return Err(format!(
            "`conv2d` input must be rank 4 (NHWC), found {}",
            shape_str(sx)
        ));
    }
    if sk.len() != 4 {
        return Err(format!(
            "`conv2d` kernel must be rank 4 (HWIO), found {}",
            shape_str(sk)
        ));
    }
    if sx[3] != sk[2] {
        return Err(format!(
            "`conv2d` channels differ: input is {}, kernel is {} (input axis 3 is {}, kernel axis 2 is {})",
            shape_str(sx),
            shape_str(sk),
            sx[3],
            sk[2]
        ));
    }
    if stride == 0 {
        return Err("`conv2d` stride must be at least 1".into());
    }
    let mut shape = vec![sx[0].clone()];
    for axis in 1..3 {
        let (d, kd) = (&sx[axis], &sk[axis - 1]);
        let out = match (padding, d, kd) {
            (Padding::Same, d, _) if stride == 1 => d.clone(),
            (Padding::Same, Dim::Const(n), _) => Dim::Const(n.div_ceil(stride as u64)),
            (Padding::Valid, Dim::Const(n), Dim::Const(kn)) => {
                if kn > n {
                    return Err(format!(
                        "`conv2d` VALID kernel is larger than the input: input is {}, kernel is {} (axis {axis})",
                        shape_str(sx),
                        shape_str(sk)
                    ));
                }
                Dim::Const((n - kn) / stride as u64 + 1)
            }
            _ => {
                return Err(format!(
                    "`conv2d` with {} padding and stride {stride} needs static spatial dims: input is {}, kernel is {} (axis {axis})",
                    if padding == Padding::Same { "SAME" } else { "VALID" },
                    shape_str(sx),
                    shape_str(sk)
                ))
            }
        };
        shape.push(out);
    }
    shape.push(sk[3].clone());
    Ok((dt, shape))
}

/// `conv2d` with dilations and `depthwise_conv2d`: NHWC input, `[KH, KW, C, F]` kernel
/// (`[KH, KW, C, M]` per channel when depthwise, giving `C*M` channels); the window spans
/// `(k - 1) * dilation + 1` pixels for TF's SAME and VALID rules.
pub fn conv_general(
    x: (DType, &[Dim]),
    k: (DType, &[Dim]),
    stride: usize,
    dilation: [usize; 2],
    padding: Padding,
    depthwise: bool,
) -> Inferred {
    let op = if depthwise {
        "depthwise_conv2d"
    } else {
        "conv2d"
    };
    let dt = same_dtype(op, x.0, k.0, x.1, k.1)?;
    if !dt.is_float() {
        return Err(format!(
            "`{op}` needs float tensors, found {}",
            type_str(x.0, x.1)
        ));
    }
    let (sx, sk) = (x.1, k.1);
    if sx.len() != 4 {
        return Err(format!(
            "`{op}` input must be rank 4 (NHWC), found {}",
            shape_str(sx)
        ));
    }
    if sk.len() != 4 {
        let layout = if depthwise { "[KH, KW, C, M]" } else { "HWIO" };
        return Err(format!(
            "`{op}` kernel must be rank 4 ({layout}), found {}",
            shape_str(sk)
        ));
    }
    if sx[3] != sk[2] {
        return Err(format!(
            "`{op}` channels differ: input is {}, kernel is {} (input axis 3 is {}, kernel axis 2 is {})",
            shape_str(sx),
            shape_str(sk),
            sx[3],
            sk[2]
        ));
    }
    let mut shape = vec![sx[0].clone()];
    for axis in 1..3 {
        let d = &sx[axis];
        let s = stride as u64;
        let out = match (padding, d, &sk[axis - 1]) {
            (Padding::Same, d, _) if s == 1 => d.clone(),
            (Padding::Same, Dim::Const(n), _) => Dim::Const(n.div_ceil(s)),
            (Padding::Valid, Dim::Const(n), Dim::Const(kn)) => {
                let span = kn.saturating_sub(1).saturating_mul(dilation[axis - 1] as u64) + 1;
                if span > *n {
                    return Err(format!(
                        "`{op}` VALID window is larger than the input: input is {}, kernel is {}, dilations {dilation:?} (axis {axis} spans {span})",
                        shape_str(sx),
                        shape_str(sk)
                    ));
                }
                Dim::Const((n - span) / s + 1)
            }
            _ => {
                return Err(format!(
                    "`{op}` with {} padding and stride {stride} needs static spatial dims: input is {}, kernel is {} (axis {axis})",
                    if padding == Padding::Same { "SAME" } else { "VALID" },
                    shape_str(sx),
                    shape_str(sk)
                ))
            }
        };
        shape.push(out);
    }
    let channels = if depthwise {
        sk[2]
            .times(&sk[3])
            .ok_or_else(|| format!("`{op}` output channels overflow 64 bits"))?
    } else {
        sk[3].clone()
    };
    shape.push(channels);
    Ok((dt, shape))
}

/// `max_pool2d` / `avg_pool2d`: NHWC input, TF's output size (`SAME`: `ceil(in / stride)`;
/// `VALID`: `(in - k) / stride + 1`, the window must fit). Max takes numbers, avg floats.
pub fn pool2d(
    kind: PoolKind,
    x: (DType, &[Dim]),
    ksize: [usize; 2],
    strides: [usize; 2],
    padding: Padding,
) -> Inferred {
    let op = kind.name();
    let (dt, sx) = x;
    let ok_dtype = match kind {
        PoolKind::Max => dt != DType::Bool,
        PoolKind::Avg => dt.is_float(),
    };
    if !ok_dtype {
        let want = if kind == PoolKind::Max {
            "a number"
        } else {
            "a float tensor (f32 or f64)"
        };
        return Err(format!("`{op}` needs {want}, found {}", type_str(dt, sx)));
    }
    if sx.len() != 4 {
        return Err(format!(
            "`{op}` input must be rank 4 (NHWC), found {}",
            shape_str(sx)
        ));
    }
    let mut shape = vec![sx[0].clone()];
    for axis in 1..3 {
        let (d, k, s) = (&sx[axis], ksize[axis - 1] as u64, strides[axis - 1] as u64);
        let out = match (padding, d) {
            (Padding::Same, d) if s == 1 => d.clone(),
            (Padding::Same, Dim::Const(n)) => Dim::Const(n.div_ceil(s)),
            (Padding::Valid, Dim::Const(n)) => {
                // TF's `(in - k + stride) / stride`, truncated; negative is an error.
                let out = (*n as i128 - k as i128 + s as i128) / s as i128;
                if out < 0 {
                    return Err(format!(
                        "`{op}` VALID window {ksize:?} is larger than the input {} (axis {axis} is {n}, the window {k}, the stride {s})",
                        shape_str(sx)
                    ));
                }
                Dim::Const(out as u64)
            }
            (Padding::Valid, d) if k == 1 && s == 1 => d.clone(),
            _ => {
                return Err(format!(
                    "`{op}` with {} padding, window {ksize:?} and strides {strides:?} needs static spatial dims: input is {} (axis {axis})",
                    if padding == Padding::Same { "SAME" } else { "VALID" },
                    shape_str(sx)
                ))
            }
        };
        shape.push(out);
    }
    shape.push(sx[3].clone());
    Ok((dt, shape))
}

/// `bias_add(x, b)`: b is rank 1 with the size of x's last dim.
pub fn bias_add(x: (DType, &[Dim]), b: (DType, &[Dim])) -> Inferred {
    let dt = same_dtype("bias_add", x.0, b.0, x.1, b.1)?;
    if b.1.len() != 1 || x.1.last() != b.1.last() {
        return Err(format!(
            "`bias_add` bias must be rank 1 with the size of the input's last axis: input is {}, bias is {}",
            shape_str(x.1),
            shape_str(b.1)
        ));
    }
    Ok((dt, x.1.to_vec()))
}

/// `reshape(x, dims)`: element counts must be provably equal; one `-1` is inferred as the
/// input's count divided by the other dims' (`B*4*64*64` over `[B, -1, 64]` is `256`),
/// which must divide exactly.
pub fn reshape(x: &[Dim], target: &[Option<Dim>]) -> Result<Shape, String> {
    let shown = || {
        let parts: Vec<String> = target
            .iter()
            .map(|d| d.as_ref().map_or("-1".to_string(), |d| d.to_string()))
            .collect();
        format!("[{}]", parts.join(", "))
    };
    let overflow = |what: &str, shape: String| {
        format!("`reshape` {what} {shape} has more elements than fit in 64 bits")
    };
    let from = Monomial::checked_of(x).ok_or_else(|| overflow("input", shape_str(x)))?;
    let unknown: Vec<usize> = (0..target.len()).filter(|&i| target[i].is_none()).collect();
    let known: Vec<Dim> = target.iter().flatten().cloned().collect();
    let to = Monomial::checked_of(&known).ok_or_else(|| overflow("target", shown()))?;
    match unknown.len() {
        0 => {
            if from != to {
                return Err(format!(
                    "`reshape` changes the element count: input is {} ({from} elements), target is {} ({to} elements)",
                    shape_str(x),
                    shown()
                ));
            }
            Ok(known)
        }
        1 => {
            let Some(rest) = from.divide(&to) else {
                return Err(format!(
                    "`reshape` cannot infer -1: input is {} ({from} elements), target is {} ({to} elements without the -1), and {to} does not divide {from}",
                    shape_str(x),
                    shown()
                ));
            };
            let dim = Dim::from_monomial(rest);
            Ok(target
                .iter()
                .map(|d| d.clone().unwrap_or_else(|| dim.clone()))
                .collect())
        }
        _ => Err(format!(
            "`reshape` takes at most one -1, target is {}",
            shown()
        )),
    }
}

/// `transpose(x, perm)`: perm must be a permutation of the axes.
pub fn transpose(x: &[Dim], perm: &[usize]) -> Result<Shape, String> {
    let mut seen = vec![false; x.len()];
    if perm.len() != x.len()
        || perm
            .iter()
            .any(|&p| p >= x.len() || std::mem::replace(&mut seen[p], true))
    {
        return Err(format!(
            "`transpose` permutation {perm:?} is not a permutation of the {} axes of {}",
            x.len(),
            shape_str(x)
        ));
    }
    Ok(perm.iter().map(|&p| x[p].clone()).collect())
}

/// `resize(x, [h, w], method)`: NHWC (or HWC) images of numbers to `[N, h, w, C]`; `NEAREST`
/// keeps the dtype, `BILINEAR` gives f32 (f64 for f64 images). Static sizes must be positive.
pub fn resize(x: (DType, &[Dim]), size: &[Dim], method: ResizeMethod) -> Inferred {
    let (dt, sx) = x;
    if dt == DType::Bool {
        return Err(format!(
            "`resize` needs numbers, found {}",
            type_str(dt, sx)
        ));
    }
    let r = sx.len();
    if r != 3 && r != 4 {
        return Err(format!(
            "`resize` images must be rank 4 (NHWC) or 3 (HWC), found {}",
            type_str(dt, sx)
        ));
    }
    if sx[r - 3] == Dim::Const(0) || sx[r - 2] == Dim::Const(0) {
        return Err(format!(
            "`resize` images must have a positive height and width, found {}",
            type_str(dt, sx)
        ));
    }
    let mut shape = sx.to_vec();
    shape[r - 3] = size[0].clone();
    shape[r - 2] = size[1].clone();
    let out = match (method, dt) {
        (ResizeMethod::Nearest, _) | (ResizeMethod::Bilinear, DType::F64) => dt,
        (ResizeMethod::Bilinear, _) => DType::F32,
    };
    Ok((out, shape))
}
