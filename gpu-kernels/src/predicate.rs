//! Comparison predicates, evaluated identically on the GPU and in the CPU implementations
//! (directly with [`eval`], or as the equivalent closed range of [`range`]).
//!
//! Floating-point semantics are IEEE 754's: every ordered comparison with NaN (`<`, `<=`, `>`,
//! `>=`, `==`, `Between`) is false and `!=` is true, so NaN rows are never selected by the
//! ordered operators and always by `Ne`.

/// A comparison of an item `x` with the constants `a` (and `b` for [`CmpOp::Between`]).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CmpOp {
    /// `x < a`
    Lt = 0,
    /// `x <= a`
    Le = 1,
    /// `x > a`
    Gt = 2,
    /// `x >= a`
    Ge = 3,
    /// `x == a`
    Eq = 4,
    /// `x != a`
    Ne = 5,
    /// `a <= x && x <= b`
    Between = 6,
}

impl CmpOp {
    /// The code passed to kernels.
    pub const fn code(self) -> u32 {
        self as u32
    }
}

/// Evaluates comparison `op` (a [`CmpOp`] code) of `x` with `a` and `b`; unknown codes are false.
#[inline(always)]
pub fn eval<T: PartialOrd + Copy>(op: u32, x: T, a: T, b: T) -> bool {
    match op {
        0 => x < a,
        1 => x <= a,
        2 => x > a,
        3 => x >= a,
        4 => x == a,
        5 => x != a,
        6 => a <= x && x <= b,
        _ => false,
    }
}

/// `lo <= x <= hi`, negated when `negate` is 1: any [`CmpOp`] in the closed-range form that
/// [`range`] gives. The selection kernels evaluate this instead of [`eval`]: a `match` per item
/// lets the compiler clone a kernel's item loop once per operator.
#[inline(always)]
pub fn in_range<T: PartialOrd + Copy>(negate: u32, x: T, lo: T, hi: T) -> bool {
    (lo <= x && x <= hi) != (negate != 0)
}

/// Item types whose comparisons [`range`] can rewrite as closed ranges.
pub trait Bounds: PartialOrd + Copy {
    /// The least value (`-inf` for floats).
    const LOWEST: Self;
    /// The greatest value (`+inf` for floats).
    const HIGHEST: Self;
    /// The greatest value below `v`, if any (none below `-inf` or NaN).
    fn below(v: Self) -> Option<Self>;
    /// The least value above `v`, if any.
    fn above(v: Self) -> Option<Self>;
}

macro_rules! int_bounds {
    ($($t:ty),*) => {$(impl Bounds for $t {
        const LOWEST: Self = <$t>::MIN;
        const HIGHEST: Self = <$t>::MAX;
        fn below(v: Self) -> Option<Self> { v.checked_sub(1) }
        fn above(v: Self) -> Option<Self> { v.checked_add(1) }
    })*};
}
int_bounds!(i32, u32, i64, u64);

macro_rules! float_bounds {
    ($($t:ty),*) => {$(impl Bounds for $t {
        const LOWEST: Self = <$t>::NEG_INFINITY;
        const HIGHEST: Self = <$t>::INFINITY;
        fn below(v: Self) -> Option<Self> {
            (!v.is_nan() && v != <$t>::NEG_INFINITY).then(|| v.next_down())
        }
        fn above(v: Self) -> Option<Self> {
            (!v.is_nan() && v != <$t>::INFINITY).then(|| v.next_up())
        }
    })*};
}
float_bounds!(f32, f64);

/// `(negate, lo, hi)` such that [`in_range`] equals [`eval`] of `op`, `a`, `b` for every `x`
/// (NaN included: NaN is in no range, so only `Ne` selects it).
pub fn range<T: Bounds>(op: CmpOp, a: T, b: T) -> (u32, T, T) {
    let empty = (0, T::HIGHEST, T::LOWEST);
    match op {
        CmpOp::Lt => T::below(a).map_or(empty, |h| (0, T::LOWEST, h)),
        CmpOp::Le => (0, T::LOWEST, a),
        CmpOp::Gt => T::above(a).map_or(empty, |l| (0, l, T::HIGHEST)),
        CmpOp::Ge => (0, a, T::HIGHEST),
        CmpOp::Eq => (0, a, a),
        CmpOp::Ne => (1, a, a),
        CmpOp::Between => (0, a, b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL_OPS: [CmpOp; 7] = [
        CmpOp::Lt,
        CmpOp::Le,
        CmpOp::Gt,
        CmpOp::Ge,
        CmpOp::Eq,
        CmpOp::Ne,
        CmpOp::Between,
    ];

    #[test]
    fn ops_match_their_names() {
        assert!(eval(CmpOp::Lt.code(), 1, 2, 0));
        assert!(!eval(CmpOp::Lt.code(), 2, 2, 0));
        assert!(eval(CmpOp::Le.code(), 2, 2, 0));
        assert!(eval(CmpOp::Gt.code(), 3, 2, 0));
        assert!(eval(CmpOp::Ge.code(), 2, 2, 0));
        assert!(eval(CmpOp::Eq.code(), 2, 2, 0));
        assert!(eval(CmpOp::Ne.code(), 1, 2, 0));
        assert!(eval(CmpOp::Between.code(), 5, 1, 5));
        assert!(!eval(CmpOp::Between.code(), 6, 1, 5));
        assert!(!eval(99, 1, 2, 3));
    }

    #[test]
    fn nan_is_never_ordered() {
        let n = f32::NAN;
        for op in ALL_OPS.into_iter().filter(|&op| op != CmpOp::Ne) {
            assert!(!eval(op.code(), n, 0.0, 1.0), "{op:?}");
        }
        assert!(eval(CmpOp::Ne.code(), n, 0.0, 0.0));
    }

    fn ranges_agree<T: Bounds + core::fmt::Debug>(values: &[T]) {
        for op in ALL_OPS {
            for &a in values {
                for &b in values {
                    let (neg, lo, hi) = range(op, a, b);
                    for &x in values {
                        assert_eq!(
                            in_range(neg, x, lo, hi),
                            eval(op.code(), x, a, b),
                            "{op:?} x={x:?} a={a:?} b={b:?}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn closed_ranges_equal_the_comparisons() {
        let f = [
            f32::NAN,
            f32::NEG_INFINITY,
            f32::MIN,
            -1.5,
            -f32::MIN_POSITIVE,
            -1e-45,
            -0.0,
            0.0,
            1e-45,
            1.0,
            1.0f32.next_up(),
            f32::MAX,
            f32::INFINITY,
        ];
        ranges_agree(&f);
        ranges_agree(&f.map(|v| v as f64));
        ranges_agree(&[i32::MIN, i32::MIN + 1, -1, 0, 1, i32::MAX - 1, i32::MAX]);
        ranges_agree(&[0u32, 1, 2, u32::MAX - 1, u32::MAX]);
        ranges_agree(&[i64::MIN, -1, 0, 1, i64::MAX]);
        ranges_agree(&[0u64, 1, u64::MAX - 1, u64::MAX]);
    }
}
