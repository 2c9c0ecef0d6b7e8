//! The Star Schema Benchmark as fused tile-based kernels (thesis §3.7).
//!
//! A query is its dimension builds ([`build`]: one launch for all joined dimensions, a
//! selective build into a perfect-hash table of `u16` payloads plus a bitmap of qualifying
//! keys per dimension) and one probe kernel over lineorder ([`queries`]: one per query
//! flight, the queries of a flight differ only in their [`plan`]). The probe kernels are
//! persistent (a block walks tiles with a grid stride) so that what a block sets up once, the
//! supplier bitmap in shared memory and its group table, is amortized over many tiles; each
//! reads like its SQL: load the first key column and test it, pack each warp's surviving rows
//! (`crate::block::warp_compact`), then for the survivors only: read the next column at their
//! rows (`gather`: sectors without a survivor are not read), probe, ..., and add the aggregate
//! to a shared-memory group table that is flushed to global memory once per block.
//!
//! The probes keep their next tile of the leading column in flight in registers
//! (`for_each_loaded_tile`) rather than prefetching tiles of the leading columns into L2
//! (`prefetch.global.L2`): the prefetch's instructions cost more than the latency it hides.
pub mod plan;

#[cfg(target_arch = "nvptx64")]
mod aggregate;
pub mod build;
#[cfg(target_arch = "nvptx64")]
mod column;
pub mod queries;
#[cfg(target_arch = "nvptx64")]
mod tables;

#[cfg(target_arch = "nvptx64")]
pub use aggregate::{GroupPart, GroupTable};
#[cfg(target_arch = "nvptx64")]
pub use column::{FactColumn, Packed, Queued};
#[cfg(target_arch = "nvptx64")]
pub use tables::{BitFilter, CodeMap, DenseMap, SharedBits, SharedCodes, Staged, stage_first};

/// Calls `f(start, valid, rows)` for every tile of `NT * IPT` rows of `n` that this block owns
/// (tiles `block, block + grid, ...`), with the tile's `rows` of the first column a probe reads
/// in full already loaded by `load(start, valid)`. `f` must be called uniformly by the block,
/// as it is.
///
/// The loads of the block's next full tile are issued before `f` runs on the current one, so
/// a warp keeps a tile of its leading column in flight while it works through its survivors'
/// chains of dependent loads (gather, lookup, gather, ...); without it DRAM idles whenever
/// most warps are in those rounds. Costs `IPT` registers.
///
/// Full tiles go through their own call site, where `valid` is a constant, so every bounds
/// test in the inlined tile body folds away: otherwise the compiler computes those tests
/// ahead of the full-tile test, and they are a large share of an ALU-bound probe's work. The
/// two copies of the body are affordable because the bodies run their later steps over
/// survivors only ([`crate::block::warp_compact`]).
///
/// Callers mark `f` `#[inline(always)]`: with two call sites LLVM may otherwise outline it
/// (`build-ptx --check` rejects calls).
///
/// `load` is called only for tiles of the `n` rows.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub fn for_each_loaded_tile<const NT: usize, const IPT: usize>(
    n: usize,
    load: impl Fn(usize, usize) -> [i32; IPT],
    f: impl FnMut(usize, usize, &[i32; IPT]),
) {
    for_each_fetched_tile::<NT, IPT, [i32; IPT]>(
        n,
        |start| load(start, NT * IPT),
        |rows| rows,
        &load,
        f,
    )
}

/// [`for_each_loaded_tile`] for a first column whose full tiles are fetched raw
/// (`fetch(start)`) and decoded (`decode(raw)`) only when their turn comes: the next tile's raw
/// data is what stays in flight, so that no value is extracted from a load still under way
/// (an extraction at the load waits there for DRAM). The last, partial tile is `load`ed.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub fn for_each_fetched_tile<const NT: usize, const IPT: usize, R: Copy>(
    n: usize,
    fetch: impl Fn(usize) -> R,
    decode: impl Fn(R) -> [i32; IPT],
    load: impl Fn(usize, usize) -> [i32; IPT],
    mut f: impl FnMut(usize, usize, &[i32; IPT]),
) {
    let tile_rows = NT * IPT;
    let full_tiles = n / tile_rows;
    let grid = crate::arch::grid_dim();
    let mut tile = crate::arch::block_idx();
    if tile < full_tiles {
        let mut raw = fetch(tile * tile_rows);
        loop {
            let rows = decode(raw);
            let next = tile + grid;
            let ahead = if next < full_tiles {
                fetch(next * tile_rows)
            } else {
                raw
            };
            f(tile * tile_rows, tile_rows, &rows);
            tile = next;
            if tile >= full_tiles {
                break;
            }
            raw = ahead;
        }
    }
    if tile == full_tiles && n % tile_rows != 0 {
        let valid = n % tile_rows;
        let rows = load(tile * tile_rows, valid);
        f(tile * tile_rows, valid, &rows);
    }
}

/// The tile of `col` at `start` (`valid` rows).
///
/// # Safety
/// `col` holds at least `start + valid` rows and is 16-byte aligned.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub unsafe fn load<const NT: usize, const IPT: usize>(
    col: *const i32,
    start: usize,
    valid: usize,
) -> [i32; IPT] {
    let mut v = [0i32; IPT];
    // SAFETY: forwarded.
    unsafe { crate::block::block_load::<i32, NT, IPT>(col.add(start), valid, &mut v) };
    v
}

/// Rows `start + offsets[s]` of `col` where `live[s]` (0 elsewhere), one predicated load
/// each: the survivors of a [`crate::block::warp_compact`], which lie close together in the
/// tile, so a warp's loads share sectors much as [`load_sel`]'s do.
///
/// # Safety
/// `col` holds the live rows.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub unsafe fn gather<const S: usize>(
    col: *const i32,
    start: usize,
    offsets: &[u32; S],
    live: &[bool; S],
) -> [i32; S] {
    // SAFETY: loaded only where live, rows the caller vouches for.
    core::array::from_fn(|s| unsafe {
        crate::arch::load_if(live[s], col.wrapping_add(start + offsets[s] as usize))
    })
}

/// The flagged rows of the tile of `col` at `start` (others read as 0; sectors without a
/// flagged row are not read).
///
/// # Safety
/// As for [`load`].
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub unsafe fn load_sel<const NT: usize, const IPT: usize>(
    col: *const i32,
    start: usize,
    valid: usize,
    flags: &[bool; IPT],
) -> [i32; IPT] {
    let mut v = [0i32; IPT];
    // SAFETY: forwarded.
    unsafe { crate::block::block_load_sel::<i32, NT, IPT>(col.add(start), valid, flags, &mut v) };
    v
}
