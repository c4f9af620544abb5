//! Element types and values: dtypes, scalars, dims (static, symbolic, products) and shapes, with their display forms.

use std::fmt;

/// Element type of a tensor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DType {
    F32,
    F64,
    I32,
    I64,
    Bool,
}

impl DType {
    pub fn from_name(name: &str) -> Option<DType> {
        Some(match name {
            "f32" => DType::F32,
            "f64" => DType::F64,
            "i32" => DType::I32,
            "i64" => DType::I64,
            "bool" => DType::Bool,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            DType::F32 => "f32",
            DType::F64 => "f64",
            DType::I32 => "i32",
            DType::I64 => "i64",
            DType::Bool => "bool",
        }
    }

    pub fn is_float(self) -> bool {
        matches!(self, DType::F32 | DType::F64)
    }

    pub fn is_int(self) -> bool {
        matches!(self, DType::I32 | DType::I64)
    }

    /// The size of one element in bytes.
    pub fn size_bytes(self) -> u64 {
        match self {
            DType::F32 | DType::I32 => 4,
            DType::F64 | DType::I64 => 8,
            DType::Bool => 1,
        }
    }

    /// The variant name in `grafo::DType`.
    pub fn variant(self) -> &'static str {
        match self {
            DType::F32 => "F32",
            DType::F64 => "F64",
            DType::I32 => "I32",
            DType::I64 => "I64",
            DType::Bool => "Bool",
        }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One dimension: a known size, a named symbol bound at the call, or a product of symbols
/// and a constant (`B*4`, from `reshape(x, [B * 4, 64])`).
///
/// Dims are kept normalised (see [`Dim::from_monomial`]): a product always has a
/// coefficient other than 1 or at least two symbols, and its symbols are sorted, so two
/// dims are the same size exactly when they are equal.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Dim {
    Const(u64),
    Sym(String),
    Prod(Monomial),
}

impl Dim {
    /// The normalised dim of a monomial: a constant, one symbol, or a product.
    pub fn from_monomial(m: Monomial) -> Dim {
        if m.coef == 0 || m.syms.is_empty() {
            Dim::Const(m.coef)
        } else if m.coef == 1 && m.syms.len() == 1 {
            Dim::Sym(m.syms[0].clone())
        } else {
            Dim::Prod(m)
        }
    }

    /// This dim as a monomial (`B` is `1*B`, `4` is `4`).
    pub fn monomial(&self) -> Monomial {
        match self {
            Dim::Const(n) => Monomial {
                coef: *n,
                syms: vec![],
            },
            Dim::Sym(s) => Monomial {
                coef: 1,
                syms: vec![s.clone()],
            },
            Dim::Prod(m) => m.clone(),
        }
    }

    /// The product of two dims, normalised; `None` if the constant part overflows `u64`.
    pub fn times(&self, other: &Dim) -> Option<Dim> {
        self.monomial()
            .times(&other.monomial())
            .map(Dim::from_monomial)
    }
}

impl fmt::Display for Dim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Dim::Const(n) => write!(f, "{n}"),
            Dim::Sym(s) => f.write_str(s),
            Dim::Prod(m) => write!(f, "{m}"),
        }
    }
}

/// A shape: one [`Dim`] per axis; `[]` is a scalar.
pub type Shape = Vec<Dim>;

/// Formats a shape as `[B, 784]`.
pub fn shape_str(shape: &[Dim]) -> String {
    let parts: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    format!("[{}]", parts.join(", "))
}

/// Formats a dtype and shape as `f32[B, 784]`.
pub fn type_str(dtype: DType, shape: &[Dim]) -> String {
    format!("{}{}", dtype, shape_str(shape))
}

/// A size as `product of symbols * coefficient` (symbols sorted, repeats kept), so that
/// `[B, 28, 28]` and `[B, 784]` are provably the same size; prints as `B*784`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Monomial {
    pub coef: u64,
    pub syms: Vec<String>,
}

impl Monomial {
    /// The element count of a shape; the coefficient saturates at `u64::MAX` on overflow
    /// (use [`Monomial::checked_of`] where an overflow must be reported).
    pub fn of(shape: &[Dim]) -> Monomial {
        Monomial::checked_of(shape).unwrap_or_else(|| {
            let mut syms: Vec<String> = shape.iter().flat_map(|d| d.monomial().syms).collect();
            syms.sort();
            Monomial {
                coef: u64::MAX,
                syms,
            }
        })
    }

    /// The element count of a shape, or `None` if its constant part overflows `u64`.
    pub fn checked_of(shape: &[Dim]) -> Option<Monomial> {
        let one = Monomial {
            coef: 1,
            syms: vec![],
        };
        shape
            .iter()
            .try_fold(one, |acc, d| acc.times(&d.monomial()))
    }

    /// The product of two monomials; `None` if the coefficient overflows `u64`.
    pub fn times(&self, other: &Monomial) -> Option<Monomial> {
        let coef = self.coef.checked_mul(other.coef)?;
        let mut syms = self.syms.clone();
        syms.extend(other.syms.iter().cloned());
        syms.sort();
        Some(Monomial { coef, syms })
    }

    /// `self / other` when it divides exactly (the coefficient divides and every symbol of
    /// `other` occurs in `self` as often), else `None`.
    pub fn divide(&self, other: &Monomial) -> Option<Monomial> {
        if other.coef == 0 || !self.coef.is_multiple_of(other.coef) {
            return None;
        }
        let mut rest = self.syms.clone();
        for s in &other.syms {
            let p = rest.iter().position(|r| r == s)?;
            rest.remove(p);
        }
        Some(Monomial {
            coef: self.coef / other.coef,
            syms: rest,
        })
    }
}

impl fmt::Display for Monomial {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts: Vec<String> = self.syms.clone();
        if self.coef != 1 || self.syms.is_empty() {
            parts.push(self.coef.to_string());
        }
        f.write_str(&parts.join("*"))
    }
}

/// A scalar constant value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scalar {
    Float(f64),
    Int(i64),
    Bool(bool),
}

impl Scalar {
    pub fn as_f64(self) -> f64 {
        match self {
            Scalar::Float(v) => v,
            Scalar::Int(v) => v as f64,
            Scalar::Bool(b) => b as u8 as f64,
        }
    }

    /// The value converted to `dtype` (`as` semantics).
    pub fn convert(self, dtype: DType) -> Scalar {
        match dtype {
            // An integer is rounded to f32 once, as `i64 as f32` does (not through f64).
            DType::F32 => Scalar::Float(match self {
                Scalar::Int(v) => v as f32 as f64,
                other => other.as_f64() as f32 as f64,
            }),
            DType::F64 => Scalar::Float(self.as_f64()),
            DType::I32 => Scalar::Int(match self {
                Scalar::Int(v) => v as i32 as i64,
                other => other.as_f64() as i32 as i64,
            }),
            DType::I64 => Scalar::Int(match self {
                Scalar::Int(v) => v,
                other => other.as_f64() as i64,
            }),
            DType::Bool => Scalar::Bool(self.as_f64() != 0.0),
        }
    }
}

impl fmt::Display for Scalar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scalar::Float(v) => write!(f, "{v:?}"),
            Scalar::Int(v) => write!(f, "{v}"),
            Scalar::Bool(v) => write!(f, "{v}"),
        }
    }
}
