//! The plan of one SSB query as the kernels read it: a [`Plan`] in device memory, written by
//! the host before the builds (table placement, predicates) and completed by the dimension
//! builds (the range of each dimension's group values). Target-independent and `#[repr(C)]`,
//! so the host writes and decodes the same struct.
//!
//! Group index: every dimension contributes one value per qualifying row (its group column,
//! or 0 when the query only filters on it); the group of a row is the mixed-radix number of
//! `value - group_min` over the four dimensions, date most significant. The builds find each
//! range from the data, so the group table has as many slots as the qualifying value ranges
//! span (q2.1: 7 years x 40 brands), not the product of the dictionaries.

/// Dimension indices.
pub const DATE: usize = 0;
/// The part dimension.
pub const PART: usize = 1;
/// The supplier dimension.
pub const SUPPLIER: usize = 2;
/// The customer dimension.
pub const CUSTOMER: usize = 3;
/// Number of dimensions.
pub const DIMS: usize = 4;

/// Predicate columns a dimension build evaluates (unused ones are [`pred::ANY`]).
pub const PRED_COLS: usize = 4;

/// A column predicate `(kind, a, b)`: see [`pred`] for the kinds.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(
    not(target_arch = "nvptx64"),
    derive(bytemuck::Pod, bytemuck::Zeroable)
)]
pub struct ColPred {
    /// Kind ([`pred::ANY`], [`pred::BETWEEN`], [`pred::EITHER`]).
    pub kind: u32,
    /// First constant.
    pub a: i32,
    /// Second constant.
    pub b: i32,
}

impl ColPred {
    /// No restriction.
    pub const ANY: ColPred = ColPred {
        kind: pred::ANY,
        a: 0,
        b: 0,
    };

    /// Whether it restricts anything.
    #[inline(always)]
    pub fn is_any(self) -> bool {
        self.kind == pred::ANY
    }

    /// Whether `v` satisfies it.
    #[inline(always)]
    pub fn matches(self, v: i32) -> bool {
        pred::matches(self.kind, self.a, self.b, v)
    }

    /// The test of its values as a probe makes it per item ([`pred::ranges`]): computed once,
    /// outside the loop over items.
    #[inline(always)]
    pub fn ranges(self) -> Ranges {
        Ranges(pred::ranges(self.kind, self.a, self.b))
    }
}

/// A [`ColPred`] as two ranges of the values it accepts ([`pred::ranges`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ranges([(i32, u32); 2]);

impl Ranges {
    /// Whether `v` satisfies the predicate: two subtractions and two unsigned compares.
    #[inline(always)]
    pub fn matches(self, v: i32) -> bool {
        let [(s0, n0), (s1, n1)] = self.0;
        ((v.wrapping_sub(s0) as u32) < n0) | ((v.wrapping_sub(s1) as u32) < n1)
    }
}

/// One dimension's part of a [`Plan`].
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(
    not(target_arch = "nvptx64"),
    derive(bytemuck::Pod, bytemuck::Zeroable)
)]
pub struct DimPlan {
    /// Offset of the dimension's payload slots in the payload buffer (`u16` units).
    pub payload: u32,
    /// Smallest key: key `k` has slot `k - key_min`.
    pub key_min: u32,
    /// Slots (key span; 0 when the dimension is not joined).
    pub len: u32,
    /// Offset of the dimension's qualifying-key bitmap in the bitmap buffer (words).
    pub bits: u32,
    /// Smallest group value of a qualifying row (host: `u32::MAX`, the build lowers it).
    pub group_min: u32,
    /// Largest group value of a qualifying row (host: 0, the build raises it).
    pub group_max: u32,
    /// Whether the build reads a group column (else every qualifying row has value 0).
    pub has_group: u32,
    /// Which of the dimension's build columns ([`DimJob::cols`]) is the group column.
    pub group_col: u32,
    /// Offset of the dimension's code map in the bitmap buffer (words), or [`NO_CODES`]: four
    /// bits per key slot, 0 for keys that do not qualify, else `c + 1` where the plan's
    /// [`Plan::code_values`]`[c]` is the row's group value. The probe's first test reads it
    /// in shared memory and keeps the code with each survivor, so the group value of the
    /// supplier (the only dimension coded) costs no lookup in global memory.
    pub codes: u32,
    /// The predicates on the dimension's build columns after the key, in their order.
    pub preds: [ColPred; PRED_COLS],
}

/// The fact table's part of a [`Plan`] (flight 1 filters the fact table itself).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(
    not(target_arch = "nvptx64"),
    derive(bytemuck::Pod, bytemuck::Zeroable)
)]
pub struct FactPlan {
    /// lo_orderdate range (flight 1 without a join).
    pub orderdate: ColPred,
    /// lo_discount.
    pub discount: ColPred,
    /// lo_quantity.
    pub quantity: ColPred,
    /// 1: flight 1 joins the date table instead of testing the lo_orderdate range.
    pub date_join: u32,
    /// 1: flight 4 joins part before customer (its filter is the narrower one).
    pub part_first: u32,
}

/// Flags the kernels raise in a [`Plan`] (0: clear, 1: raised).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(
    not(target_arch = "nvptx64"),
    derive(bytemuck::Pod, bytemuck::Zeroable)
)]
pub struct PlanStatus {
    /// The qualifying group values span more than [`GLOBAL_GROUPS`] groups.
    pub groups_overflow: u32,
    /// A dimension key lay outside its table's range, or a group value did not fit a slot.
    pub bad_dimension: u32,
    /// The coded dimension had more group values than [`CODE_SLOTS`]: its code map is
    /// incomplete and the probe reads the bitmap and looks the values up instead.
    pub codes_overflow: u32,
}

/// The plan of one query in device memory: written by the host before the builds, completed
/// by them (group ranges, code values) and read by the probe.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(
    not(target_arch = "nvptx64"),
    derive(bytemuck::Pod, bytemuck::Zeroable)
)]
pub struct Plan {
    /// Per dimension ([`DATE`], [`PART`], [`SUPPLIER`], [`CUSTOMER`]).
    pub dims: [DimPlan; DIMS],
    /// The fact table's predicates.
    pub fact: FactPlan,
    /// What the kernels found wrong.
    pub status: PlanStatus,
    /// The coded dimension's group values by code (`value + 1`, 0 for a free slot), in the
    /// order the build first met them. Like the group ranges, they are the same in every run
    /// over the same data: a later run finds its values already there.
    pub code_values: [u32; CODE_SLOTS],
}

// The layout both crates rely on: packed 32-bit words, no padding.
const _: () = {
    assert!(size_of::<ColPred>() == 12);
    assert!(size_of::<DimPlan>() == (9 + 3 * PRED_COLS) * 4);
    assert!(size_of::<FactPlan>() == 11 * 4);
    assert!(size_of::<PlanStatus>() == 3 * 4);
    assert!(size_of::<Plan>() == (DIMS * (9 + 3 * PRED_COLS) + 11 + 3 + CODE_SLOTS) * 4);
    assert!(core::mem::offset_of!(Plan, code_values) == size_of::<Plan>() - CODE_SLOTS * 4);
};

/// Columns a dimension's build reads (date has the most: key and four predicate columns).
pub const JOB_COLS: usize = 5;

/// The build's job for one dimension: the device addresses of its build columns (key first,
/// then the predicate columns in the plan's order) and its row count. The jobs stay the same
/// for every query, so the host writes them once per engine.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(
    not(target_arch = "nvptx64"),
    derive(bytemuck::Pod, bytemuck::Zeroable)
)]
pub struct DimJob {
    /// Device addresses of the `i32` columns.
    pub cols: [u64; JOB_COLS],
    /// Rows of each column.
    pub rows: u64,
}

const _: () = assert!(size_of::<DimJob>() == (JOB_COLS + 1) * 8);

/// Bits of a code in a [`DimPlan::codes`] map (and beside each probe survivor's tile offset).
pub const CODE_BITS: u32 = 4;
/// Group values a code map holds (codes `1..=CODE_SLOTS`; 0 means "does not qualify").
pub const CODE_SLOTS: usize = (1 << CODE_BITS) - 1;
/// Words of a code map over `len` key slots.
pub const fn code_words(len: usize) -> usize {
    (len * CODE_BITS as usize).div_ceil(32)
}
/// [`DimPlan::codes`] of a dimension without a code map.
pub const NO_CODES: u32 = u32::MAX;

/// Group slots a block aggregates in shared memory; larger group tables use global atomics,
/// which contended on q3.1's 150 groups (its layout spans 21 x 21 x 6 = 2,646 slots: the ASIA
/// nations' codes run from CHINA to VIETNAM, the largest of the 13 queries at any scale).
pub const SMEM_GROUPS: usize = 2688;
/// Group slots of the global table (the largest SSB query, q3.2-q3.4 over all cities and
/// years, needs 250 x 250 x 7 = 437,500).
pub const GLOBAL_GROUPS: usize = 1 << 19;
/// Words the probe kernels stage in shared memory for their first test: a code map of 40,960
/// keys (supplier at SF 20) or a bitmap of 163,840 (SF 81). Larger code maps give way to the
/// bitmap, larger bitmaps are read from global memory. Sized with [`SMEM_GROUPS`] to keep
/// flight 3's static shared memory (tiles of 3,072 rows) under 48 KB.
pub const FILTER_WORDS: usize = 5120;
/// Largest payload a `u16` slot holds (slots store `value + 1`, 0 means "no qualifying row").
pub const MAX_PAYLOAD: u32 = u16::MAX as u32 - 1;

/// Predicate kinds of the plan's three-word predicates `(kind, a, b)`.
pub mod pred {
    /// No restriction.
    pub const ANY: u32 = 0;
    /// `a <= v <= b`.
    pub const BETWEEN: u32 = 1;
    /// `v == a || v == b`.
    pub const EITHER: u32 = 2;

    /// Whether `v` satisfies the predicate `(kind, a, b)` (unknown kinds never match).
    ///
    /// Tested as [`ranges`] are; the probes compute those once ([`super::ColPred::ranges`]):
    /// per item, two subtractions and two unsigned compares, with no branch, where testing the
    /// kind per item costs several times that in the probe kernels, which are bound by their
    /// instructions, not by memory.
    #[inline(always)]
    pub fn matches(kind: u32, a: i32, b: i32, v: i32) -> bool {
        super::Ranges(ranges(kind, a, b)).matches(v)
    }

    /// The predicate `(kind, a, b)` as two ranges `(start, len)` of the values it accepts,
    /// each `start, start + 1, ..., start + len - 1` (wrapping): every `i32` is two ranges,
    /// `i32::MIN` for `u32::MAX` values and `i32::MAX` for one.
    #[inline(always)]
    pub fn ranges(kind: u32, a: i32, b: i32) -> [(i32, u32); 2] {
        // `a <= b`: `b - a + 1` values, which is 2^32 (0 as a `u32`) only for all of them.
        let span = b.wrapping_sub(a) as u32;
        let all = [(i32::MIN, u32::MAX), (i32::MAX, 1)];
        let between = if a > b {
            [(0, 0); 2]
        } else if span == u32::MAX {
            all
        } else {
            [(a, span + 1), (0, 0)]
        };
        let either = [(a, 1), (b, 1)];
        let none = [(0, 0); 2];
        // Selects on the kind, not a `match`, so that they stay branch-free.
        let pick = |k: u32, r: [(i32, u32); 2], other: [(i32, u32); 2]| {
            if kind == k { r } else { other }
        };
        pick(ANY, all, pick(BETWEEN, between, pick(EITHER, either, none)))
    }
}

/// The shape of a query's group table, derived from the plan's group ranges.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GroupLayout {
    /// Smallest value per dimension.
    pub min: [u32; DIMS],
    /// Values per dimension (1 for a dimension without a group column or qualifying row).
    pub ext: [u32; DIMS],
    /// Weight of each dimension in the index (0 when the table is larger than
    /// [`GLOBAL_GROUPS`]).
    pub stride: [u32; DIMS],
    /// Number of slots.
    pub total: u64,
}

impl GroupLayout {
    /// The layout from the plan's group ranges (`range(d)` reads dimension `d`'s
    /// `(group_min, group_max)`).
    #[inline(always)]
    pub fn from_ranges(range: impl Fn(usize) -> (u32, u32)) -> GroupLayout {
        let mut min = [0u32; DIMS];
        let mut ext = [1u32; DIMS];
        let mut total = 1u64;
        for d in 0..DIMS {
            let (lo, hi) = range(d);
            if lo <= hi {
                min[d] = lo;
                ext[d] = hi - lo + 1;
            }
            total *= ext[d] as u64;
        }
        let mut stride = [0u32; DIMS];
        if total <= GLOBAL_GROUPS as u64 {
            let mut s = 1u32;
            for d in (0..DIMS).rev() {
                stride[d] = s;
                s *= ext[d];
            }
        }
        GroupLayout {
            min,
            ext,
            stride,
            total,
        }
    }

    /// Slot of the row whose dimensions have values `v` (each within its range).
    #[inline(always)]
    pub fn index(&self, v: [u32; DIMS]) -> u32 {
        let mut i = 0u32;
        for ((v, min), stride) in v.iter().zip(self.min).zip(self.stride) {
            i = i.wrapping_add(v.wrapping_sub(min).wrapping_mul(stride));
        }
        i
    }

    /// The dimension values of slot `i` (inverse of [`GroupLayout::index`]).
    pub fn decode(&self, i: u32) -> [u32; DIMS] {
        core::array::from_fn(|d| self.min[d] + i / self.stride[d] % self.ext[d])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(ranges: [(u32, u32); DIMS]) -> GroupLayout {
        GroupLayout::from_ranges(|d| ranges[d])
    }

    #[test]
    fn index_and_decode_are_inverse() {
        // q2.1-like: years 1992..1998, 40 brands from 80, supplier filter only, no customer.
        let g = plan([(1992, 1998), (80, 119), (0, 0), (0, 0)]);
        assert_eq!(g.total, 7 * 40);
        let mut seen = [false; 280];
        for y in 1992..=1998 {
            for b in 80..120 {
                let i = g.index([y, b, 0, 0]);
                assert!(!seen[i as usize]);
                seen[i as usize] = true;
                assert_eq!(g.decode(i), [y, b, 0, 0]);
            }
        }
    }

    #[test]
    fn empty_ranges_count_as_one_and_oversized_tables_have_no_strides() {
        assert_eq!(plan([(u32::MAX, 0), (0, 0), (5, 4), (0, 0)]).total, 1);
        let g = plan([(0, 999), (0, 999), (0, 999), (0, 0)]);
        assert!(g.total > GLOBAL_GROUPS as u64);
        assert_eq!(g.stride, [0; DIMS]);
    }

    #[test]
    fn predicates() {
        assert!(pred::matches(pred::ANY, 0, 0, 7));
        assert!(pred::matches(pred::BETWEEN, 1, 3, 3) && !pred::matches(pred::BETWEEN, 1, 3, 4));
        assert!(pred::matches(pred::EITHER, 1, 5, 5) && !pred::matches(pred::EITHER, 1, 5, 3));
        assert!(!pred::matches(9, 0, 0, 0));
    }

    /// The two-range form accepts exactly what the predicate's definition does, at the edges
    /// of `i32` and of each range.
    #[test]
    fn ranges_accept_what_the_predicate_does() {
        let edges = [
            i32::MIN,
            i32::MIN + 1,
            -2,
            -1,
            0,
            1,
            2,
            3,
            7,
            i32::MAX - 1,
            i32::MAX,
        ];
        let defined = |kind: u32, a: i32, b: i32, v: i32| match kind {
            pred::ANY => true,
            pred::BETWEEN => a <= v && v <= b,
            pred::EITHER => v == a || v == b,
            _ => false,
        };
        for kind in [pred::ANY, pred::BETWEEN, pred::EITHER, 3, u32::MAX] {
            for a in edges {
                for b in edges {
                    for v in edges.iter().flat_map(|&e| [e, a, b]) {
                        for v in [v, v.wrapping_add(1), v.wrapping_sub(1)] {
                            assert_eq!(
                                pred::matches(kind, a, b, v),
                                defined(kind, a, b, v),
                                "kind {kind}, a {a}, b {b}, v {v}"
                            );
                        }
                    }
                }
            }
        }
    }
}

/// How a lineorder column is stored for the probes over compressed columns
/// (`ssb::queries::SSB_FLIGHT*_PACKED`): one of the `column` kinds.
pub mod column {
    /// `i32` values, 4 bytes each (scheme None, or NSF at 4 bytes).
    pub const PLAIN: u32 = 0;
    /// NSF, one byte per value.
    pub const NSF1: u32 = 1;
    /// NSF, two bytes per value.
    pub const NSF2: u32 = 2;
    /// GPU-FOR: `data` is the blocks, `index` the block index ([`super::PackedCol::index`]).
    pub const GPU_FOR: u32 = 3;
    /// Not a kind: a probe kernel specialized for no kind reads the column's at run time.
    pub const DYNAMIC: u32 = KIND_MASK;

    /// Bits of one slot's kind in a probe's [`kinds`].
    const KIND_BITS: usize = 4;
    const KIND_MASK: u32 = (1 << KIND_BITS) - 1;

    /// The kinds a compressed probe is specialized for, one per slot (the flight's columns
    /// in its order) in 4 bits each, [`DYNAMIC`] for a slot past `slots`: the probe's
    /// `Packed<KINDS>` parameter.
    pub const fn kinds(slots: &[u32]) -> u32 {
        let mut k = u32::MAX;
        let mut s = 0;
        while s < slots.len() {
            assert!(slots[s] < DYNAMIC && s < super::FLIGHT_COLS);
            k &= !(KIND_MASK << (KIND_BITS * s)) | slots[s] << (KIND_BITS * s);
            s += 1;
        }
        k
    }

    /// Slot `slot`'s kind in `kinds` ([`DYNAMIC`]: read at run time).
    #[inline(always)]
    pub const fn kind_of(kinds: u32, slot: usize) -> u32 {
        kinds >> (KIND_BITS * slot) & KIND_MASK
    }

    /// The columns' kinds the specialized compressed probes take, in each flight's column
    /// order (`FLIGHT1`: lo_orderdate, lo_discount, lo_quantity, lo_extendedprice; the
    /// others as their plain probes' parameters): GPU-FOR but for lo_orderdate, NSF at 2
    /// bytes over its minimum at every scale, and, in `*_SUPP`, lo_suppkey, 2 bytes from SF 17
    /// to 32 (32,769 to 65,535 suppliers: GPU-FOR takes more from 16 bits on). The kernels
    /// are named by them, a letter a column: `f` GPU-FOR, `n` NSF2.
    pub mod probes {
        use super::{GPU_FOR as F, NSF2 as N};
        /// Any kinds, read at run time.
        pub const ANY: [u32; 0] = [];
        /// Flight 1 (`nfff`).
        pub const FLIGHT1: [u32; 4] = [N, F, F, F];
        /// Flights 2 and 3 (`ffnf`).
        pub const FLIGHT23: [u32; 4] = [F, F, N, F];
        /// Flights 2 and 3 with lo_suppkey in NSF2 (`nfnf`).
        pub const FLIGHT23_SUPP: [u32; 4] = [N, F, N, F];
        /// Flight 4 (`fffnff`).
        pub const FLIGHT4: [u32; 6] = [F, F, F, N, F, F];
        /// Flight 4 with lo_suppkey in NSF2 (`nffnff`).
        pub const FLIGHT4_SUPP: [u32; 6] = [N, F, F, N, F, F];
    }
}

/// Most lineorder columns a probe reads (flight 4).
pub const FLIGHT_COLS: usize = 6;

/// One lineorder column as a compressed probe reads it: its kind ([`mod@column`]) and the device
/// addresses of its arrays. The host writes a flight's columns once per engine, in the order
/// of the flight's kernel parameters.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(
    not(target_arch = "nvptx64"),
    derive(bytemuck::Pod, bytemuck::Zeroable)
)]
pub struct PackedCol {
    /// Device address of the values (PLAIN, NSF) or of the GPU-FOR blocks; GPU-FOR data is
    /// followed by [`FOR_PAD_WORDS`] readable words (a value reads, and masks, the two words
    /// from its place, and a walk brings lines from its block's into L2, which for the
    /// column's last block may lie past its data).
    pub data: u64,
    /// Device address of the GPU-FOR block index (0 for the other kinds): per block,
    /// [`INDEX_WORDS`] words, its start (as in the format's block starts, a word offset into
    /// `data`), its header's widths word and reference, and a zero word, which the host
    /// derives when it uploads the column. A value read by row then waits on two dependent
    /// loads, the index and its words, not three (the start, the header, the words).
    pub index: u64,
    /// Device address of the GPU-FOR block starts (0 for the other kinds): per block, its
    /// start, as in the format. A walk reads these, 4 bytes a block where an index entry is
    /// 16, and its headers from the blocks, whose words it reads next.
    pub starts: u64,
    /// The kind, one of [`mod@column`].
    pub kind: u32,
    /// NSF's reference, added to every stored value (`NsfHeader::reference`); 0 for the
    /// other kinds.
    pub reference: u32,
}

const _: () = assert!(size_of::<PackedCol>() == 32);

/// A compressed probe's columns, in the order of its flight's plain probe (unused slots
/// zeroed), passed to the kernel by value: their fields are then read from the launch's
/// parameters, which instructions take as constant operands, instead of a load from global
/// memory at each use or a register held across the tile loop.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(
    not(target_arch = "nvptx64"),
    derive(bytemuck::Pod, bytemuck::Zeroable)
)]
pub struct PackedCols {
    /// The columns.
    pub cols: [PackedCol; FLIGHT_COLS],
}

/// Words of a GPU-FOR block's entry in a query column's index ([`PackedCol::index`]): its
/// start, widths word, reference and a zero, one 16-byte load.
pub const INDEX_WORDS: usize = 4;

/// Words the host allocates past a GPU-FOR query column's data ([`PackedCol::data`]): a
/// value reads two words from its place, and a walk brings the four 128-byte lines from the
/// one holding a block's start into L2.
pub const FOR_PAD_WORDS: usize = 128;

/// Most lineorder rows one probe launch takes (its `n`): the compressed probes count tiles
/// and rows in 32 bits and look two grids of tiles past the last, which this leaves room for
/// up to 4,095 blocks of 2,048 rows.
pub const MAX_PROBE_ROWS: u32 = u32::MAX - (1 << 24);

/// Most GPU-FOR blocks of a column in a warp's part of a compressed probe's tile (its
/// `IPT / 4`: a thread's four consecutive rows, 32 lanes, one block of 128).
pub const WARP_BLOCKS: usize = 2;
/// Words of a miniblock's entry in a compressed probe's header table: the miniblock's
/// address (two words), its block's reference, its width; one 16-byte load.
pub const HEAD_ENTRY_WORDS: usize = 4;

/// Bytes of a compressed probe's header table, its dynamic shared memory, for blocks of `nt`
/// threads: an entry per warp, column, block and miniblock. Dynamic because the flights'
/// static shared memory leaves too little of the 48 KB that needs no opt-in.
pub const fn head_table_bytes(nt: usize) -> usize {
    nt / 32 * FLIGHT_COLS * WARP_BLOCKS * crate::compress::format::MINIBLOCKS * HEAD_ENTRY_WORDS * 4
}

/// Rows per lane in a round of a compressed probe's tail queue (`crate::block::TailQueue`):
/// one, so that the chain the round runs by row holds few registers.
pub const TAIL_ROUND_ROWS: usize = 1;

/// Bytes of dynamic shared memory a probe of flights 2-4 over compressed columns takes past
/// its header table where its rounds are tied to a tile: its tail queue, a row and a word per
/// entry, `32 * (TAIL_ROUND_ROWS + 1)` entries per warp (fewer than a round held, and the 32
/// one push adds).
pub const fn tail_queue_bytes(nt: usize) -> usize {
    nt * (TAIL_ROUND_ROWS + 1) * 2 * 4
}
