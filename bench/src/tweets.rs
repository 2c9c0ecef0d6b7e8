//! A synthetic tweets table for the thesis' top-k queries (§4.5.8): 250 million tweets of one
//! month at full size, each with its time, retweet and like counts, language and user, generated
//! in parallel (deterministic for a seed whatever the thread count) with a progress bar.
//!
//! The shapes follow what such data looks like: tweets arrive in time order (the table is
//! stored as it arrives, so `tweet_time < X` keeps a prefix), retweet counts are heavy-tailed
//! (Pareto, most zero or small), likes follow retweets with noise, a few languages dominate,
//! and user activity is skewed (about 57 million users for 250 million tweets, a few very
//! active).
use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressStyle};
use rand::{Rng, SeedableRng, rngs::StdRng};
use rand_distr::{Distribution as _, LogNormal, Pareto};
use rayon::prelude::*;

/// Tweets at full size, as in the thesis' MapD experiment.
pub const FULL_ROWS: usize = 250_000_000;
/// Seconds in the month the tweets span (May 2017).
pub const MONTH_SECONDS: u32 = 31 * 86_400;
/// Distinct users per tweet (57 million users for 250 million tweets).
pub const USERS_PER_TWEET: f64 = 57.0 / 250.0;

/// The languages, by code: `lang[i]` indexes this list.
pub const LANGS: [&str; 11] = [
    "en", "ja", "es", "pt", "ar", "ko", "th", "fr", "tr", "id", "und",
];
/// Each language's share of tweets, in percent (sums to 100).
const LANG_PERCENT: [u32; 11] = [35, 15, 10, 8, 7, 5, 4, 4, 3, 3, 6];

/// The columns of the tweets table.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Tweets {
    /// Seconds since the start of the month, non-decreasing with the row.
    pub time: Vec<u32>,
    /// Retweets.
    pub retweets: Vec<u32>,
    /// Likes.
    pub likes: Vec<u32>,
    /// Language, an index into [`LANGS`].
    pub lang: Vec<u32>,
    /// Author.
    pub user: Vec<u32>,
}

/// Rows per parallel chunk (each with its own seeded generator).
const CHUNK: usize = 1 << 20;

impl Tweets {
    /// `n` tweets for `seed`, with a progress bar on a terminal when `progress`.
    pub fn generate(n: usize, seed: u64, progress: bool) -> Tweets {
        let bar = if progress && std::io::stderr().is_terminal() {
            let style = ProgressStyle::with_template(
                "{msg:>10} [{bar:40}] {percent:>3}% {elapsed} (eta {eta})",
            )
            .map(|s| s.progress_chars("=> "))
            .unwrap_or_else(|_| ProgressStyle::default_bar());
            let bar = ProgressBar::new(n as u64).with_style(style);
            bar.set_message("tweets");
            bar
        } else {
            ProgressBar::hidden()
        };
        let users = ((n as f64 * USERS_PER_TWEET) as u32).max(1);
        let mut t = Tweets {
            time: vec![0; n],
            retweets: vec![0; n],
            likes: vec![0; n],
            lang: vec![0; n],
            user: vec![0; n],
        };
        let retweets: Pareto<f64> = Pareto::new(1.0, 1.16).expect("valid Pareto parameters");
        let like_factor: LogNormal<f64> =
            LogNormal::new(1.0, 0.8).expect("valid log-normal parameters");
        t.time
            .par_chunks_mut(CHUNK)
            .zip(t.retweets.par_chunks_mut(CHUNK))
            .zip(t.likes.par_chunks_mut(CHUNK))
            .zip(t.lang.par_chunks_mut(CHUNK))
            .zip(t.user.par_chunks_mut(CHUNK))
            .enumerate()
            .for_each(|(c, ((((time, rt), likes), lang), user))| {
                let mut rng =
                    StdRng::seed_from_u64(seed ^ (c as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15));
                let first = c * CHUNK;
                for i in 0..time.len() {
                    // Arrival order: row r at r / n of the month.
                    time[i] = ((first + i) as u64 * MONTH_SECONDS as u64 / n as u64) as u32;
                    let r = (retweets.sample(&mut rng) - 1.0).min(1e7) as u32;
                    rt[i] = r;
                    likes[i] = ((r as f64 + 1.0) * like_factor.sample(&mut rng)).min(4e9) as u32;
                    lang[i] = pick_lang(rng.random_range(0..100));
                    // Skewed activity: low user ids tweet most.
                    let u: f64 = rng.random();
                    user[i] = ((u * u * users as f64) as u32).min(users - 1);
                }
                bar.inc(time.len() as u64);
            });
        bar.finish_and_clear();
        t
    }

    /// Rows.
    pub fn len(&self) -> usize {
        self.time.len()
    }

    /// Whether the table is empty.
    pub fn is_empty(&self) -> bool {
        self.time.is_empty()
    }

    /// The code of language `name` in [`LANGS`].
    pub fn lang_code(name: &str) -> Option<u32> {
        LANGS.iter().position(|&l| l == name).map(|i| i as u32)
    }
}

/// The language whose cumulative share holds percentile `p` (0..100).
fn pick_lang(p: u32) -> u32 {
    let mut acc = 0;
    for (i, &share) in LANG_PERCENT.iter().enumerate() {
        acc += share;
        if p < acc {
            return i as u32;
        }
    }
    (LANGS.len() - 1) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_and_determinism() {
        assert_eq!(LANG_PERCENT.iter().sum::<u32>(), 100);
        let n = 300_000;
        let t = Tweets::generate(n, 7, false);
        assert_eq!(t.len(), n);
        assert!(t.time.windows(2).all(|w| w[0] <= w[1]));
        assert!(*t.time.last().unwrap() < MONTH_SECONDS);
        // Heavy tail: most tweets have few retweets, some many.
        let zero_or_one = t.retweets.iter().filter(|&&r| r <= 1).count();
        assert!(zero_or_one > n / 2, "{zero_or_one}");
        assert!(t.retweets.iter().any(|&r| r > 1000));
        // English is the largest language, at about 35%.
        let en = t.lang.iter().filter(|&&l| l == 0).count() as f64 / n as f64;
        assert!((0.33..0.37).contains(&en), "{en}");
        assert_eq!(Tweets::lang_code("es"), Some(2));
        let users = (n as f64 * USERS_PER_TWEET) as u32;
        assert!(t.user.iter().all(|&u| u < users));
        assert_eq!(t, Tweets::generate(n, 7, false));
        assert_ne!(t.retweets, Tweets::generate(n, 8, false).retweets);
    }
}
