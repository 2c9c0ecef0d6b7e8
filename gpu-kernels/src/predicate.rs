//! Comparison predicates, evaluated identically on the GPU and in the CPU implementations.
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

#[cfg(test)]
mod tests {
    use super::*;

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
        for op in [
            CmpOp::Lt,
            CmpOp::Le,
            CmpOp::Gt,
            CmpOp::Ge,
            CmpOp::Eq,
            CmpOp::Between,
        ] {
            assert!(!eval(op.code(), n, 0.0, 1.0), "{op:?}");
        }
        assert!(eval(CmpOp::Ne.code(), n, 0.0, 0.0));
    }
}
