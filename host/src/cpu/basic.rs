//! Selection, projection, scan and sum.
use rayon::prelude::*;

use crate::ops::Predicate;

/// `SELECT y FROM input WHERE pred(y)`, in input order.
pub fn select<T: Copy + Default + PartialOrd + Send + Sync>(
    input: &[T],
    pred: Predicate<T>,
) -> Vec<T> {
    input
        .par_iter()
        .copied()
        .filter(|&y| pred.eval(y))
        .collect()
}

/// `SELECT y FROM R WHERE px(x) AND py(y)`, in input order.
pub fn select_where2<T: Copy + Default + PartialOrd + Send + Sync>(
    x: &[T],
    px: Predicate<T>,
    y: &[T],
    py: Predicate<T>,
) -> crate::Result<Vec<T>> {
    crate::ops::check_same_len("select_where2", "y", y.len(), x.len())?;
    Ok(x.par_iter()
        .zip(y)
        .filter(|&(&a, &b)| px.eval(a) && py.eval(b))
        .map(|(_, &b)| b)
        .collect())
}

fn project(x1: &[f32], x2: &[f32], f: impl Fn(f32, f32) -> f32 + Sync) -> crate::Result<Vec<f32>> {
    crate::ops::check_same_len("project", "x2", x2.len(), x1.len())?;
    Ok(x1.par_iter().zip(x2).map(|(&u, &v)| f(u, v)).collect())
}

/// `a * x1 + b * x2`.
pub fn project_linear(x1: &[f32], x2: &[f32], a: f32, b: f32) -> crate::Result<Vec<f32>> {
    project(x1, x2, |u, v| a * u + b * v)
}

/// `sigmoid(a * x1 + b * x2)`.
pub fn project_sigmoid(x1: &[f32], x2: &[f32], a: f32, b: f32) -> crate::Result<Vec<f32>> {
    project(x1, x2, |u, v| 1.0 / (1.0 + (-(a * u + b * v)).exp()))
}

/// Exclusive prefix sum (wrapping) and the total: chunk sums in parallel, a sequential scan of
/// the chunk sums, then each chunk scanned in parallel from its offset.
pub fn exclusive_scan(input: &[u32]) -> (Vec<u32>, u32) {
    const CHUNK: usize = 1 << 16;
    let sums: Vec<u32> = input
        .par_chunks(CHUNK)
        .map(|c| c.iter().fold(0u32, |a, &x| a.wrapping_add(x)))
        .collect();
    let mut offsets = Vec::with_capacity(sums.len());
    let mut run = 0u32;
    for s in sums {
        offsets.push(run);
        run = run.wrapping_add(s);
    }
    let mut out = vec![0u32; input.len()];
    out.par_chunks_mut(CHUNK)
        .zip(input.par_chunks(CHUNK))
        .zip(offsets)
        .for_each(|((o, c), mut acc)| {
            for (d, &x) in o.iter_mut().zip(c) {
                *d = acc;
                acc = acc.wrapping_add(x);
            }
        });
    (out, run)
}

/// Sum of all items.
pub fn sum_u32(input: &[u32]) -> u64 {
    input.par_iter().map(|&x| x as u64).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn select_keeps_order_and_semantics() {
        let v = [5, 1, 7, 3, 9, 2];
        assert_eq!(select(&v, Predicate::gt(3)), [5, 7, 9]);
        assert_eq!(select(&v, Predicate::between(2, 5)), [5, 3, 2]);
        assert!(select::<i32>(&[], Predicate::gt(0)).is_empty());
        let f = [1.0, f32::NAN, -1.0];
        assert_eq!(select(&f, Predicate::lt(2.0)), [1.0, -1.0]);
        assert_eq!(select(&f, Predicate::ne(1.0)).len(), 2);
    }

    #[test]
    fn select_where2_checks_lengths() {
        assert!(select_where2(&[1, 2], Predicate::gt(0), &[1], Predicate::gt(0)).is_err());
        let r = select_where2(
            &[1, 5, 7],
            Predicate::gt(2),
            &[10, 20, 30],
            Predicate::lt(25),
        )
        .unwrap();
        assert_eq!(r, [20]);
    }

    #[test]
    fn scan_matches_sequential() {
        let v: Vec<u32> = (0..200_003u32)
            .map(|i| i.wrapping_mul(2_654_435_761) >> 7)
            .collect();
        let (s, total) = exclusive_scan(&v);
        let mut run = 0u32;
        for (i, &x) in v.iter().enumerate() {
            assert_eq!(s[i], run);
            run = run.wrapping_add(x);
        }
        assert_eq!(total, run);
        assert_eq!(exclusive_scan(&[]), (vec![], 0));
    }

    #[test]
    fn projections() {
        assert_eq!(
            project_linear(&[1.0, 2.0], &[3.0, 4.0], 2.0, 3.0).unwrap(),
            [11.0, 16.0]
        );
        assert!(project_linear(&[1.0], &[], 1.0, 1.0).is_err());
        let s = project_sigmoid(&[0.0, 100.0, f32::NAN], &[0.0, 0.0, 0.0], 1.0, 1.0).unwrap();
        assert_eq!(s[0], 0.5);
        assert_eq!(s[1], 1.0);
        assert!(s[2].is_nan());
    }
}
