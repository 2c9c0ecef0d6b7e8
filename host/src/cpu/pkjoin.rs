//! CPU primary-key join (sort-merge), the oracle of the sample-sort join: both sides sorted by
//! their radix bits in parallel, duplicates detected on the sorted runs, then one merge.
use rayon::prelude::*;

use crate::Result;
pub use crate::ops::PkJoinRows;
use crate::ops::{PkKey, pk_duplicate_error};

/// `(key bits, row)` sorted by key, and the smallest key that occurs twice.
fn sorted_side<K: PkKey>(keys: &[K]) -> (Vec<(u32, u32)>, Option<u32>) {
    let mut v: Vec<(u32, u32)> = keys
        .par_iter()
        .enumerate()
        .map(|(i, k)| (k.to_bits(), i as u32))
        .collect();
    v.par_sort_unstable();
    let dup = v
        .par_windows(2)
        .filter(|w| w[0].0 == w[1].0)
        .map(|w| w[0].0)
        .min();
    (v, dup)
}

/// `SELECT key, A.val, B.val FROM A JOIN B USING (key)` for keys unique on each side,
/// ascending by key; a key that occurs twice on one side is an error naming the smallest such
/// key (side A first), as the GPU join reports it.
pub fn pk_join<K: PkKey, A: Copy + Send + Sync, B: Copy + Send + Sync>(
    a_keys: &[K],
    a_vals: &[A],
    b_keys: &[K],
    b_vals: &[B],
) -> Result<PkJoinRows<K, A, B>> {
    crate::ops::check_pk_inputs(a_keys.len(), a_vals.len(), b_keys.len(), b_vals.len())?;
    let ((a, dup_a), (b, dup_b)) = rayon::join(|| sorted_side(a_keys), || sorted_side(b_keys));
    let dup = [(dup_a, false), (dup_b, true)]
        .into_iter()
        .filter_map(|(d, side)| d.map(|k| ((k as u64) << 1) | side as u64))
        .min();
    if let Some(w) = dup {
        return Err(pk_duplicate_error(
            K::from_bits((w >> 1) as u32),
            w & 1 == 1,
        ));
    }
    let mut out = PkJoinRows {
        keys: Vec::new(),
        a: Vec::new(),
        b: Vec::new(),
    };
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        match a[i].0.cmp(&b[j].0) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                out.keys.push(K::from_bits(a[i].0));
                out.a.push(a_vals[a[i].1 as usize]);
                out.b.push(b_vals[b[j].1 as usize]);
                i += 1;
                j += 1;
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn joins_in_key_order() {
        let r = pk_join(
            &[5u32, 1, 9, 3],
            &[50, 10, 90, 30],
            &[3u32, 9, 4],
            &[3.5f32, 9.5, 4.5],
        )
        .unwrap();
        assert_eq!(r.keys, [3, 9]);
        assert_eq!(r.a, [30, 90]);
        assert_eq!(r.b, [3.5, 9.5]);
    }

    #[test]
    fn signed_keys_sort_as_integers() {
        let r = pk_join(
            &[-5i32, 7, -1, 0],
            &[1u32, 2, 3, 4],
            &[0, -5, 7],
            &[10u32, 20, 30],
        )
        .unwrap();
        assert_eq!(r.keys, [-5, 0, 7]);
        assert_eq!(r.a, [1, 4, 2]);
        assert_eq!(r.b, [20, 10, 30]);
    }

    #[test]
    fn empty_sides_and_no_match() {
        assert!(
            pk_join::<u32, u32, u32>(&[], &[], &[], &[])
                .unwrap()
                .is_empty()
        );
        assert!(
            pk_join(&[1u32], &[1u32], &[], &[] as &[u32])
                .unwrap()
                .is_empty()
        );
        assert!(
            pk_join(&[1u32, 2], &[1u32, 2], &[3, 4], &[3u32, 4])
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn duplicates_name_the_smallest_key_side_a_first() {
        let e = pk_join(&[4u32, 2, 4, 2], &[0u32; 4], &[2, 2], &[0u32; 2]).unwrap_err();
        assert!(
            e.to_string()
                .contains("key 2 appears more than once in a_keys"),
            "{e}"
        );
        let e = pk_join(&[4u32, 1, 4], &[0u32; 3], &[7, 2, 7, 2], &[0u32; 4]).unwrap_err();
        assert!(
            e.to_string()
                .contains("key 2 appears more than once in b_keys"),
            "{e}"
        );
        // Duplicates on a side with no partner rows are still duplicates.
        assert!(pk_join(&[3u32, 3], &[0u32; 2], &[], &[] as &[u32]).is_err());
    }

    #[test]
    fn length_mismatch_is_an_error() {
        let e = pk_join(&[1u32, 2], &[1u32], &[1], &[1u32]).unwrap_err();
        assert!(
            e.to_string().contains("a_vals has 1 items, expected 2"),
            "{e}"
        );
    }
}
