//! The inputs of the thesis' top-k experiments (§4.5.2-4.5.4), shared by the top-k suite and
//! the tests: the same `n`, distribution and seed give the same keys on every machine.
use rayon::prelude::*;

/// Key distributions of Figures 4-10 to 4-13.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Distribution {
    /// `U(0, 1)`.
    Uniform,
    /// `U(0, 10^6)`: the high bits vary little, so a radix pass reduces little.
    HugeFloats,
    /// `U(0, 1)` sorted ascending: every key improves a running top-k (a heap's worst case).
    Increasing,
    /// All `1.0` except four keys, each differing from `1.0` in one of its four bytes: a radix
    /// select removes one key per pass.
    BucketKiller,
}

impl Distribution {
    /// All four, in the thesis' order.
    pub const ALL: [Distribution; 4] = [
        Distribution::Uniform,
        Distribution::HugeFloats,
        Distribution::Increasing,
        Distribution::BucketKiller,
    ];

    /// Short name for tables and JSON.
    pub fn name(self) -> &'static str {
        match self {
            Distribution::Uniform => "uniform",
            Distribution::HugeFloats => "huge",
            Distribution::Increasing => "increasing",
            Distribution::BucketKiller => "bucket-killer",
        }
    }

    /// The distribution called `name` (as [`Distribution::name`] gives it).
    pub fn parse(name: &str) -> Result<Distribution, String> {
        Distribution::ALL
            .into_iter()
            .find(|d| d.name() == name)
            .ok_or_else(|| {
                let names: Vec<_> = Distribution::ALL.iter().map(|d| d.name()).collect();
                format!("no distribution {name:?}; one of {}", names.join(", "))
            })
    }

    /// `n` keys of this distribution (generated in parallel, deterministic for `seed`).
    pub fn f32s(self, n: usize, seed: u64) -> Vec<f32> {
        match self {
            Distribution::Uniform => crate::random_vec::<f32>(n, seed),
            Distribution::HugeFloats => {
                let mut v = crate::random_vec::<f32>(n, seed);
                v.par_iter_mut().for_each(|x| *x *= 1e6);
                v
            }
            Distribution::Increasing => {
                let mut v = crate::random_vec::<f32>(n, seed);
                v.par_sort_unstable_by(f32::total_cmp);
                v
            }
            Distribution::BucketKiller => {
                let mut v = vec![1.0f32; n];
                let one = 1.0f32.to_bits();
                // Byte b of 1.0's bits raised by one: four distinct keys above 1.0, at
                // positions spread by the seed.
                for b in 0..4.min(n) {
                    let pos = (seed as usize)
                        .wrapping_add(b.wrapping_mul(0x9e37_79b9))
                        .wrapping_mul(2_654_435_761)
                        % n;
                    v[pos] = f32::from_bits(one + (1 << (8 * b)));
                }
                v
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distributions_parse_from_their_names() {
        for d in Distribution::ALL {
            assert_eq!(Distribution::parse(d.name()), Ok(d));
        }
        let err = Distribution::parse("zipf").unwrap_err();
        assert!(err.contains("bucket-killer"), "{err}");
    }

    #[test]
    fn distributions_have_their_shape() {
        let n = 10_000;
        let u = Distribution::Uniform.f32s(n, 1);
        assert!(u.iter().all(|&x| (0.0..1.0).contains(&x)));
        let h = Distribution::HugeFloats.f32s(n, 1);
        assert!(h.iter().all(|&x| (0.0..1e6).contains(&x)) && h.iter().any(|&x| x > 1e5));
        let i = Distribution::Increasing.f32s(n, 1);
        assert!(i.windows(2).all(|w| w[0] <= w[1]));
        let b = Distribution::BucketKiller.f32s(n, 1);
        let odd: Vec<u32> = b
            .iter()
            .filter(|&&x| x != 1.0)
            .map(|x| x.to_bits())
            .collect();
        assert_eq!(odd.len(), 4, "four keys differ from 1.0");
        for x in odd {
            let diff = x ^ 1.0f32.to_bits();
            assert_eq!((0..4).filter(|b| (diff >> (8 * b)) & 0xff != 0).count(), 1);
        }
        assert_eq!(
            Distribution::Uniform.f32s(100, 7),
            Distribution::Uniform.f32s(100, 7)
        );
    }
}
