//! The probe kernels, one per query flight (the flight's queries differ only in their plan).
//! Each walks its block's tiles of lineorder and reads like the SQL: the first key column in
//! full and its test (supplier's bitmap in shared memory, or flight 1's date range), then, over
//! the warp's survivors only, every further column where rows still qualify, a lookup per
//! joined dimension, and the aggregate added to the block's group table. Where the columns
//! are [`Queued`](crate::ssb::Queued), a warp runs those rounds only once its survivors fill
//! one, carrying the rest to its next tiles (`crate::block::for_each_queued_survivor`): the
//! plain probes always, the compressed ones for a selective first test. The other compressed
//! probes of flights 2-4, whose rounds are tied to a tile by its header table, run a round's
//! first join at once and queue the rows that still qualify for the rest of the chain, read
//! by row (`crate::block::TailQueue`): the tile's chain of dependent loads ends after one lookup.
#[cfg(target_arch = "nvptx64")]
pub use device::*;

#[cfg(target_arch = "nvptx64")]
mod device {
    use crate::arch::{Atomic, Shared, thread_idx};
    use crate::block::*;
    use crate::ssb::plan::{CODE_BITS, CUSTOMER, DATE, PART, Plan, SUPPLIER, TAIL_ROUND_ROWS};
    use crate::ssb::{DenseMap, FactColumn, GroupPart, GroupTable, Queued, Staged, stage_first};

    /// Shared memory of a probe kernel.
    #[derive(Clone, Copy)]
    pub struct ProbeShared {
        /// The first dimension's code map or bitmap, when it fits.
        pub filter: Shared<u32>,
        /// The code map's group values (16 entries).
        pub values: Shared<u32>,
        /// Group sums.
        pub sums: Shared<u64>,
        /// Which group slots hold rows, one bit each.
        pub occupied: Shared<u32>,
        /// The tile offsets of the rows that pass the first probe ([`warp_compact`]).
        pub survivors: Shared<u16>,
        /// The survivors carried to the next tile where they are queued ([`Carry`]).
        pub carry: Carry,
        /// Where a probe whose rounds are tied to a tile defers the rest of its chain
        /// ([`TailQueue`]; unused where its survivors are queued).
        pub tail: TailQueue,
    }

    /// Survivors of a tile's first test a lane takes per round: 64 per warp covers the
    /// rows a region filter (1 in 5) leaves of a 256-row warp tile in one round.
    const S: usize = 2;

    /// Adds the supplier's part to the survivors' groups when the query groups by it: from
    /// their codes when the first test was the code map, else by joining `lo_suppkey` again.
    #[inline(always)]
    unsafe fn group_by_supplier<C: FactColumn, const NT: usize, const IPT: usize>(
        filter: Staged,
        (lo_suppkey, supplier): (C, Join),
        at: (usize, &[u32; S]),
        codes: &[u32; S],
        flags: &mut [bool; S],
        groups: &GroupTable,
        group: &mut [u32; S],
    ) {
        if !groups.grouped(SUPPLIER) {
            return;
        }
        match filter.code_map() {
            Some(map) => groups.fold(group, SUPPLIER, &map.values(codes)),
            // SAFETY: forwarded contracts.
            None => unsafe { join_rows::<C, NT, IPT>(lo_suppkey, at, flags, supplier, group) },
        }
    }

    /// The rest of a round's chain after its first steps, `tail(rows, group, live)` over the
    /// rows still flagged: at once where the probe queues its survivors (its rounds are full
    /// already), else deferred in the warp's `queue` ([`TailQueue`]) until they fill a round,
    /// `held` of them so far. A deferring walk ends with [`TailQueue::flush`].
    ///
    /// # Safety
    /// As for [`TailQueue::push`] where the columns are not queued.
    #[inline(always)]
    unsafe fn then_tail<C: FactColumn>(
        (queue, held): (TailQueue, &mut u32),
        (start, offsets): (usize, &[u32; S]),
        group: &[u32; S],
        flags: &[bool; S],
        tail: impl Fn(&[u32; S], &[u32; S], &[bool; S]),
    ) {
        let rows = offsets.map(|o| start as u32 + o);
        if C::QUEUED {
            tail(&rows, group, flags);
        } else {
            // SAFETY: forwarded.
            unsafe {
                queue.push::<S, TAIL_ROUND_ROWS, S>(
                    held,
                    &rows,
                    group,
                    flags,
                    #[inline(always)]
                    |r, g, l| tail(r, g, l),
                )
            };
        }
    }

    /// Where a probe kernel's results go: the plan (status words) and the global group table.
    #[derive(Clone, Copy)]
    pub struct Out {
        /// The query's plan.
        pub plan: *mut Plan,
        /// Global sums, [`GLOBAL_GROUPS`](crate::ssb::plan::GLOBAL_GROUPS) slots.
        pub sums: *mut u64,
        /// Global counts, [`GLOBAL_GROUPS`](crate::ssb::plan::GLOBAL_GROUPS) slots.
        pub counts: *mut u32,
    }

    /// Flight 1: `SUM(lo_extendedprice * lo_discount)` where lo_orderdate is in the plan's
    /// range (or joins the qualifying dates), and lo_discount, lo_quantity qualify.
    ///
    /// # Safety
    /// The columns hold `n` rows; `payload` holds the built date table when the plan joins it;
    /// `out` is a plan and zeroed group tables.
    #[inline(always)]
    pub unsafe fn flight1<C: FactColumn, const NT: usize, const IPT: usize>(
        lo_orderdate: C,
        lo_discount: C,
        lo_quantity: C,
        lo_extendedprice: C,
        n: usize,
        payload: *mut u16,
        out: Out,
        temp: [Shared<u64>; 2],
        (survivors, carry): (Shared<u16>, Carry),
    ) {
        // SAFETY: forwarded contracts.
        unsafe {
            let plan = out.plan;
            let fact = &raw const (*plan).fact;
            let (orderdate, discount) = ((*fact).orderdate.ranges(), (*fact).discount.ranges());
            let quantity = (*fact).quantity.ranges();
            let date_join = (*fact).date_join != 0;
            let date = DenseMap::of(plan, DATE, payload);
            let (mut sum, mut count) = (0u64, 0u64);
            let mut round = #[inline(always)]
            |start: usize, offsets: &[u32; S], _: &[u32; S], live: &[bool; S]| {
                let mut flags = *live;
                let disc = lo_discount.gather::<NT, IPT, S>(start, offsets, &flags);
                // A compressed probe's rounds of a tile (a year's rows, q1.1) read lo_quantity
                // beside lo_discount, at every live row: most of its sectors hold a row that
                // passes the discount test anyway, and the round's chain then waits on one
                // value load before lo_extendedprice's, not two. Queued rounds (a month or a
                // week) keep the test first: their rows are sparse, and their time the walk's.
                let early = (C::READ_AHEAD && !C::QUEUED)
                    .then(|| lo_quantity.gather::<NT, IPT, S>(start, offsets, live));
                for s in 0..S {
                    flags[s] &= discount.matches(disc[s]);
                }
                let qty = early
                    .unwrap_or_else(|| lo_quantity.gather::<NT, IPT, S>(start, offsets, &flags));
                for s in 0..S {
                    flags[s] &= quantity.matches(qty[s]);
                }
                let price = lo_extendedprice.gather::<NT, IPT, S>(start, offsets, &flags);
                for s in 0..S {
                    if flags[s] {
                        let v = price[s] as i64 * disc[s] as i64;
                        sum = sum.wrapping_add(v as u64);
                        count += 1;
                    }
                }
            };
            let mut carried = 0u32;
            let cols = [lo_orderdate, lo_discount, lo_quantity, lo_extendedprice];
            // None of the later columns brought into L2 ahead: lo_extendedprice is read at one
            // row in 50, whose sectors those of its blocks would multiply.
            C::for_each_tile::<NT, IPT, 4, 0>(
                &cols,
                n,
                #[inline(always)]
                |start, valid, d| {
                    let mut flags = [false; IPT];
                    if date_join {
                        block_pred::<i32, NT, IPT>(d, valid, &mut flags, Combine::Set, |_| true);
                        let mut year = [0u32; IPT];
                        block_lookup::<i32, DenseMap, NT, IPT>(d, &mut flags, date, &mut year);
                    } else {
                        block_pred::<i32, NT, IPT>(d, valid, &mut flags, Combine::Set, |v| {
                            orderdate.matches(v)
                        });
                    }
                    // Queued, the date test is selective: a warp tile keeps a few rows, and
                    // most of q1.3's none, whose queue step would only rewrite the carried
                    // rows in place. Unqueued, the tile-by-tile probes keep the ballots.
                    let count = if C::QUEUED {
                        warp_compact_sparse::<i32, NT, IPT>(&flags, survivors)
                    } else {
                        warp_compact::<i32, NT, IPT>(&flags, survivors)
                    };
                    if !C::QUEUED || count != 0 {
                        survivor_rounds::<i32, NT, IPT, S, 0>(
                            C::QUEUED,
                            survivors,
                            count,
                            start,
                            carry,
                            &mut carried,
                            #[inline(always)]
                            |start, offsets, codes, live| round(start, offsets, codes, live),
                        );
                    }
                },
            );
            flush_queued_survivors::<S, 0>(
                C::QUEUED,
                carry,
                carried,
                #[inline(always)]
                |start, offsets, codes, live| round(start, offsets, codes, live),
            );
            let sum = block_reduce::<u64, NT, 1>(&[sum], usize::MAX, 0, u64::wrapping_add, temp[0]);
            let count = block_sum::<u64, NT, 1>(&[count], usize::MAX, temp[1]);
            if thread_idx() == 0 && count != 0 {
                u64::atomic_add(out.sums, sum);
                u32::atomic_add(out.counts, count as u32);
            }
        }
    }

    /// Flights 2-4's walk over lineorder (`cols`, the flight's columns in its kernel's order,
    /// `lo_suppkey` first): for each of the block's tiles, the rows whose
    /// `lo_suppkey` passes the query's supplier filter (`filter`, staged in shared memory) are
    /// packed per warp into `survivors`, each with its supplier's code when the filter is the
    /// code map, and `f(start, offsets, codes, live)` runs over them, [`S`] per lane and round
    /// (rows `start + offsets[s]` where `live[s]`; with `start` 0 where `C` queues them across
    /// tiles in `carry`). `AHEAD` (0 or 1): whether a compressed walk brings the joined key's
    /// next tile into L2 ([`FactColumn::for_each_tile`]): a filter that keeps a row in 5 reads
    /// most of its sectors, and the rounds then wait on L2 for them, not on DRAM.
    ///
    /// # Safety
    /// The columns hold `n` rows; `survivors` holds `compact_slots(NT, IPT)` entries, `carry`
    /// `carry_slots(NT, S)`.
    #[inline(always)]
    unsafe fn for_each_supplier_survivor<
        C: FactColumn,
        const NT: usize,
        const IPT: usize,
        const K: usize,
        const AHEAD: usize,
    >(
        n: usize,
        cols: &[C; K],
        filter: Staged,
        (survivors, carry): (Shared<u16>, Carry),
        mut f: impl FnMut(usize, &[u32; S], &[u32; S], &[bool; S]),
    ) {
        let mut carried = 0u32;
        // SAFETY: forwarded contracts; every thread of the block gets to each tile.
        unsafe {
            C::for_each_tile::<NT, IPT, K, AHEAD>(
                cols,
                n,
                #[inline(always)]
                |start, valid, suppkey| {
                    let mut flags = [false; IPT];
                    block_pred::<i32, NT, IPT>(suppkey, valid, &mut flags, Combine::Set, |_| true);
                    let codes = filter.codes::<NT, IPT>(suppkey, &flags);
                    let count = warp_compact_coded::<i32, NT, IPT, CODE_BITS>(&codes, survivors);
                    survivor_rounds::<i32, NT, IPT, S, CODE_BITS>(
                        C::QUEUED,
                        survivors,
                        count,
                        start,
                        carry,
                        &mut carried,
                        #[inline(always)]
                        |start, offsets, codes, live| f(start, offsets, codes, live),
                    );
                },
            );
            flush_queued_survivors::<S, CODE_BITS>(
                C::QUEUED,
                carry,
                carried,
                #[inline(always)]
                |start, offsets, codes, live| f(start, offsets, codes, live),
            );
        }
    }

    /// A dimension's join: its table and its part of the group slots.
    type Join = (DenseMap, GroupPart);

    /// Dimension `d`'s [`Join`].
    ///
    /// # Safety
    /// As for [`DenseMap::of`].
    #[inline(always)]
    unsafe fn join_of(plan: *const Plan, d: usize, payload: *mut u16, groups: &GroupTable) -> Join {
        // SAFETY: forwarded.
        (unsafe { DenseMap::of(plan, d, payload) }, groups.part(d))
    }

    /// `JOIN` a dimension (`(dim, part)`: its table and its part of the group slots) on the
    /// flagged rows' `keys`: rows without a qualifying dimension row lose their flag; the
    /// others add the dimension's part to their group slot.
    #[inline(always)]
    unsafe fn join_keys<const NT: usize, const IPT: usize>(
        keys: &[i32; IPT],
        flags: &mut [bool; IPT],
        (dim, part): Join,
        group: &mut [u32; IPT],
    ) {
        let mut v = [0u32; IPT];
        // SAFETY: forwarded contracts.
        unsafe { block_lookup::<i32, DenseMap, NT, IPT>(keys, flags, dim, &mut v) };
        part.fold(group, &v);
    }

    /// [`join_keys`] on the fact column `col` at the survivors' rows, read only where they
    /// are still flagged.
    #[inline(always)]
    unsafe fn join_rows<C: FactColumn, const NT: usize, const IPT: usize>(
        col: C,
        (start, offsets): (usize, &[u32; S]),
        flags: &mut [bool; S],
        join: Join,
        group: &mut [u32; S],
    ) {
        // SAFETY: forwarded contracts.
        unsafe {
            let keys = col.gather::<NT, IPT, S>(start, offsets, flags);
            join_keys::<NT, S>(&keys, flags, join, group);
        }
    }

    /// [`join_keys`] on `col` at the rows where `flags`, at the places
    /// [`FactColumn::place_rows`] found for them.
    ///
    /// # Safety
    /// As for [`FactColumn::gather_placed`].
    #[inline(always)]
    unsafe fn join_placed<C: FactColumn, const NT: usize>(
        col: C,
        places: &[C::Place; S],
        rows: &[u32; S],
        flags: &mut [bool; S],
        join: Join,
        group: &mut [u32; S],
    ) {
        // SAFETY: forwarded.
        unsafe {
            let keys = col.gather_placed(places, rows, flags);
            join_keys::<NT, S>(&keys, flags, join, group);
        }
    }

    /// The tail of flights 2 and 3's rounds ([`then_tail`]), by row: the date's join, and
    /// `lo_revenue` added to the rows' groups.
    ///
    /// # Safety
    /// The tail is called with rows the columns hold, by every lane of the warp.
    #[inline(always)]
    unsafe fn revenue_by_date<'a, C: FactColumn + 'a, const NT: usize, const IPT: usize>(
        lo_orderdate: C,
        lo_revenue: C,
        date: Join,
        groups: &'a GroupTable,
    ) -> impl Fn(&[u32; S], &[u32; S], &[bool; S]) + Copy + 'a {
        #[inline(always)]
        move |rows: &[u32; S], group: &[u32; S], live: &[bool; S]| {
            let (mut flags, mut group) = (*live, *group);
            // SAFETY: by the caller's contract.
            unsafe {
                let day = lo_orderdate.place_rows(rows, live);
                let placed = lo_revenue.place_rows(rows, live);
                join_placed::<C, NT>(lo_orderdate, &day, rows, &mut flags, date, &mut group);
                let read = if C::READ_AHEAD { live } else { &flags };
                let revenue = lo_revenue.gather_placed(&placed, rows, read);
                groups.add(&flags, &group, |k| revenue[k] as i64 as u64);
            }
        }
    }

    /// Flight 2: `SUM(lo_revenue)` by d_year, p_brand1 over the qualifying suppliers and parts.
    ///
    /// # Safety
    /// The columns hold `n` rows; the plan's tables are built; `out` holds zeroed tables.
    #[inline(always)]
    pub unsafe fn flight2<C: FactColumn, const NT: usize, const IPT: usize>(
        lo_suppkey: C,
        lo_partkey: C,
        lo_orderdate: C,
        lo_revenue: C,
        n: usize,
        payload: *mut u16,
        bits: *mut u32,
        out: Out,
        sh: ProbeShared,
    ) {
        // SAFETY: forwarded contracts.
        unsafe {
            let plan = out.plan;
            let Some(groups) =
                GroupTable::new::<NT>(plan, out.sums, out.counts, sh.sums, sh.occupied)
            else {
                return;
            };
            let supplier = stage_first::<NT>(plan, SUPPLIER, bits, sh.filter, sh.values);
            let part = join_of(plan, PART, payload, &groups);
            let date = join_of(plan, DATE, payload, &groups);
            // By row, after the part join.
            let tail = revenue_by_date::<C, NT, IPT>(lo_orderdate, lo_revenue, date, &groups);
            let mut held = 0u32;
            // lo_partkey not brought into L2 ahead: measured slower here, where flights 3 and
            // 4 gain from it (docs/perf-log.md); why is not known yet.
            for_each_supplier_survivor::<C, NT, IPT, _, 0>(
                n,
                &[lo_suppkey, lo_partkey],
                supplier,
                (sh.survivors, sh.carry),
                #[inline(always)]
                |start, offsets, _, live| {
                    let at = (start, offsets);
                    let (mut flags, mut group) = (*live, [0u32; S]);
                    join_rows::<C, NT, IPT>(lo_partkey, at, &mut flags, part, &mut group);
                    then_tail::<C>((sh.tail, &mut held), at, &group, &flags, tail);
                },
            );
            sh.tail.flush::<TAIL_ROUND_ROWS, S>(held, tail);
            groups.flush::<NT>();
        }
    }

    /// Flight 3: `SUM(lo_revenue)` by customer and supplier nation or city and d_year.
    ///
    /// # Safety
    /// As for [`flight2`].
    #[inline(always)]
    pub unsafe fn flight3<C: FactColumn, const NT: usize, const IPT: usize>(
        lo_suppkey: C,
        lo_custkey: C,
        lo_orderdate: C,
        lo_revenue: C,
        n: usize,
        payload: *mut u16,
        bits: *mut u32,
        out: Out,
        sh: ProbeShared,
    ) {
        // SAFETY: forwarded contracts.
        unsafe {
            let plan = out.plan;
            let Some(groups) =
                GroupTable::new::<NT>(plan, out.sums, out.counts, sh.sums, sh.occupied)
            else {
                return;
            };
            let first = stage_first::<NT>(plan, SUPPLIER, bits, sh.filter, sh.values);
            let supplier = (lo_suppkey, join_of(plan, SUPPLIER, payload, &groups));
            let customer = join_of(plan, CUSTOMER, payload, &groups);
            let date = join_of(plan, DATE, payload, &groups);
            // By row, after the customer join.
            let tail = revenue_by_date::<C, NT, IPT>(lo_orderdate, lo_revenue, date, &groups);
            let mut held = 0u32;
            for_each_supplier_survivor::<C, NT, IPT, _, 1>(
                n,
                &[lo_suppkey, lo_custkey],
                first,
                (sh.survivors, sh.carry),
                #[inline(always)]
                |start, offsets, codes, live| {
                    let at = (start, offsets);
                    let (mut flags, mut group) = (*live, [0u32; S]);
                    let g = (&groups, &mut group);
                    group_by_supplier::<C, NT, IPT>(
                        first, supplier, at, codes, &mut flags, g.0, g.1,
                    );
                    join_rows::<C, NT, IPT>(lo_custkey, at, &mut flags, customer, &mut group);
                    then_tail::<C>((sh.tail, &mut held), at, &group, &flags, tail);
                },
            );
            sh.tail.flush::<TAIL_ROUND_ROWS, S>(held, tail);
            groups.flush::<NT>();
        }
    }

    /// Flight 4: `SUM(lo_revenue - lo_supplycost)` by year and customer nation, supplier
    /// nation and category, or supplier city and brand.
    ///
    /// `first_key` is the key of the narrower of the part and customer joins, which the
    /// walk joins (lo_partkey where the plan's `part_first`, else lo_custkey), `second_key`
    /// the other's, which the tail reads by row: the host orders them, so that the walk reads
    /// a column it knows at compile time (the compressed probes' descriptors stay constant
    /// operands) and keeps no header table for the other.
    ///
    /// # Safety
    /// As for [`flight2`].
    #[inline(always)]
    pub unsafe fn flight4<C: FactColumn, const NT: usize, const IPT: usize>(
        lo_suppkey: C,
        first_key: C,
        second_key: C,
        lo_orderdate: C,
        lo_revenue: C,
        lo_supplycost: C,
        n: usize,
        payload: *mut u16,
        bits: *mut u32,
        out: Out,
        sh: ProbeShared,
    ) {
        // SAFETY: forwarded contracts.
        unsafe {
            let plan = out.plan;
            let Some(groups) =
                GroupTable::new::<NT>(plan, out.sums, out.counts, sh.sums, sh.occupied)
            else {
                return;
            };
            let first = stage_first::<NT>(plan, SUPPLIER, bits, sh.filter, sh.values);
            let supplier = (lo_suppkey, join_of(plan, SUPPLIER, payload, &groups));
            let part = join_of(plan, PART, payload, &groups);
            let customer = join_of(plan, CUSTOMER, payload, &groups);
            let date = join_of(plan, DATE, payload, &groups);
            // Each arm below names its join's table: a (table, part) pair selected as a value
            // costs the plain probe time (docs/perf-log.md).
            let part_first = (*plan).fact.part_first != 0;
            // By row, after the walk's join: the other, the date's join, the revenue and the
            // supply cost.
            let tail = #[inline(always)]
            |rows: &[u32; S], group: &[u32; S], live: &[bool; S]| {
                let (mut flags, mut group) = (*live, *group);
                let at = (0, rows);
                // Only the value columns are placed: placing the joins' too spills.
                let rev = lo_revenue.place_rows(rows, live);
                let cost = lo_supplycost.place_rows(rows, live);
                let second = Queued(second_key);
                if part_first {
                    join_rows::<_, NT, IPT>(second, at, &mut flags, customer, &mut group);
                } else {
                    join_rows::<_, NT, IPT>(second, at, &mut flags, part, &mut group);
                }
                join_rows::<_, NT, IPT>(Queued(lo_orderdate), at, &mut flags, date, &mut group);
                let revenue = lo_revenue.gather_placed(&rev, rows, &flags);
                let supplycost = lo_supplycost.gather_placed(&cost, rows, &flags);
                groups.add(&flags, &group, |k| {
                    (revenue[k] as i64 - supplycost[k] as i64) as u64
                });
            };
            let mut held = 0u32;
            for_each_supplier_survivor::<C, NT, IPT, _, 1>(
                n,
                &[lo_suppkey, first_key],
                first,
                (sh.survivors, sh.carry),
                #[inline(always)]
                |start, offsets, codes, live| {
                    let at = (start, offsets);
                    let (mut flags, mut group) = (*live, [0u32; S]);
                    let g = (&groups, &mut group);
                    group_by_supplier::<C, NT, IPT>(
                        first, supplier, at, codes, &mut flags, g.0, g.1,
                    );
                    if part_first {
                        join_rows::<C, NT, IPT>(first_key, at, &mut flags, part, &mut group);
                    } else {
                        join_rows::<C, NT, IPT>(first_key, at, &mut flags, customer, &mut group);
                    }
                    then_tail::<C>((sh.tail, &mut held), at, &group, &flags, tail);
                },
            );
            sh.tail.flush::<TAIL_ROUND_ROWS, S>(held, tail);
            groups.flush::<NT>();
        }
    }
}

/// Declares a probe kernel's shared memory at the top of an entry point.
#[cfg(target_arch = "nvptx64")]
macro_rules! probe_shared {
    () => {
        probe_shared!(crate::block::TailQueue::unused())
    };
    ($tail:expr) => {
        ProbeShared {
            filter: crate::shared_array!(ssb_filter: [u32; crate::ssb::plan::FILTER_WORDS]),
            values: crate::shared_array!(ssb_code_values: [u32; crate::ssb::plan::CODE_SLOTS + 1]),
            sums: crate::shared_array!(ssb_sums: [u64; crate::ssb::plan::SMEM_GROUPS]),
            occupied: crate::shared_array!(ssb_occupied: [u32; crate::ssb::plan::SMEM_GROUPS / 32]),
            survivors: crate::shared_array!(ssb_survivors: [u16; crate::block::compact_slots(NT, IPT)]),
            carry: probe_carry!(),
            tail: $tail,
        }
    };
}

/// Declares a probe kernel's carried survivors ([`Carry`]) at the top of an entry point.
#[cfg(target_arch = "nvptx64")]
macro_rules! probe_carry {
    () => {
        crate::block::Carry {
            rows: crate::shared_array!(ssb_carry_rows: [u32; crate::block::carry_slots(NT, 2)]),
            codes: crate::shared_array!(ssb_carry_codes: [u8; crate::block::carry_slots(NT, 2)]),
        }
    };
}

crate::kernel! {
    /// Flight 1: `(lo_orderdate, lo_discount, lo_quantity, lo_extendedprice, n, payload, plan,
    /// sums, counts)`; persistent (any grid).
    SSB_FLIGHT1 = ssb_flight1[NT = 256, IPT = 8, MIN_BLOCKS = 4](
        lo_orderdate: *const i32, lo_discount: *const i32, lo_quantity: *const i32,
        lo_extendedprice: *const i32, n: u32, payload: *mut u16, plan: *mut crate::ssb::plan::Plan,
        sums: *mut u64, counts: *mut u32
    ) {
        let temp = [
            crate::shared_array!(ssb_sum_temp: [u64; NT / 32 + 1]),
            crate::shared_array!(ssb_count_temp: [u64; NT / 32 + 1]),
        ];
        let survivors = crate::shared_array!(ssb_survivors: [u16; crate::block::compact_slots(NT, IPT)]);
        let carry = probe_carry!();
        // SAFETY: the host passes columns of n rows, the query's built plan and tables, and
        // zeroed group tables.
        unsafe {
            // The plain probes always queue their survivors across tiles.
            use crate::ssb::Queued as Q;
            flight1::<_, NT, IPT>(Q(lo_orderdate), Q(lo_discount), Q(lo_quantity),
                Q(lo_extendedprice), n as usize, payload, Out { plan, sums, counts }, temp,
                (survivors, carry))
        }
    }
}

crate::kernel! {
    /// Flight 2: `(lo_suppkey, lo_partkey, lo_orderdate, lo_revenue, n, payload, bits, plan,
    /// sums, counts)`; persistent.
    SSB_FLIGHT2 = ssb_flight2[NT = 256, IPT = 8, MIN_BLOCKS = 4](
        lo_suppkey: *const i32, lo_partkey: *const i32, lo_orderdate: *const i32,
        lo_revenue: *const i32, n: u32, payload: *mut u16, bits: *mut u32, plan: *mut crate::ssb::plan::Plan,
        sums: *mut u64, counts: *mut u32
    ) {
        let sh = probe_shared!();
        // SAFETY: as for flight 1, with the built supplier bitmap.
        unsafe {
            // The plain probes always queue their survivors across tiles.
            use crate::ssb::Queued as Q;
            flight2::<_, NT, IPT>(Q(lo_suppkey), Q(lo_partkey), Q(lo_orderdate), Q(lo_revenue),
                n as usize, payload, bits, Out { plan, sums, counts }, sh)
        }
    }
}

crate::kernel! {
    /// Flight 3: `(lo_suppkey, lo_custkey, lo_orderdate, lo_revenue, n, payload, bits, plan,
    /// sums, counts)`; persistent.
    SSB_FLIGHT3 = ssb_flight3[NT = 256, IPT = 8, MIN_BLOCKS = 4](
        lo_suppkey: *const i32, lo_custkey: *const i32, lo_orderdate: *const i32,
        lo_revenue: *const i32, n: u32, payload: *mut u16, bits: *mut u32, plan: *mut crate::ssb::plan::Plan,
        sums: *mut u64, counts: *mut u32
    ) {
        let sh = probe_shared!();
        // SAFETY: as for flight 2.
        unsafe {
            // The plain probes always queue their survivors across tiles.
            use crate::ssb::Queued as Q;
            flight3::<_, NT, IPT>(Q(lo_suppkey), Q(lo_custkey), Q(lo_orderdate), Q(lo_revenue),
                n as usize, payload, bits, Out { plan, sums, counts }, sh)
        }
    }
}

crate::kernel! {
    /// Flight 4: `(lo_suppkey, first_key, second_key, lo_orderdate, lo_revenue,
    /// lo_supplycost, n, payload, bits, plan, sums, counts)`, the keys lo_partkey and
    /// lo_custkey in the plan's join order (`part_first`: lo_partkey first); persistent.
    SSB_FLIGHT4 = ssb_flight4[NT = 256, IPT = 8, MIN_BLOCKS = 4](
        lo_suppkey: *const i32, first_key: *const i32, second_key: *const i32,
        lo_orderdate: *const i32, lo_revenue: *const i32, lo_supplycost: *const i32, n: u32,
        payload: *mut u16, bits: *mut u32, plan: *mut crate::ssb::plan::Plan, sums: *mut u64, counts: *mut u32
    ) {
        let sh = probe_shared!();
        // SAFETY: as for flight 2.
        unsafe {
            // The plain probes always queue their survivors across tiles.
            use crate::ssb::Queued as Q;
            flight4::<_, NT, IPT>(Q(lo_suppkey), Q(first_key), Q(second_key), Q(lo_orderdate),
                Q(lo_revenue), Q(lo_supplycost), n as usize, payload, bits,
                Out { plan, sums, counts }, sh)
        }
    }
}

/// The probe of flight 1 over compressed columns, specialized for the kinds of
/// [`column::probes`]`::$kinds` ([`column::probes::ANY`]: read at run time, any kinds).
///
/// [`column::probes`]: crate::ssb::plan::column::probes
/// [`column::probes::ANY`]: crate::ssb::plan::column::probes::ANY
macro_rules! packed_flight1 {
    ($($(#[$m:meta])* $name:ident = $entry:ident<$kinds:ident>($wrap:path);)*) => {$(
        crate::kernel! {
            $(#[$m])*
            $name = $entry[NT = 256, IPT = 8, MIN_BLOCKS = 4](
                cols: crate::ssb::plan::PackedCols, n: u32, payload: *mut u16,
                plan: *mut crate::ssb::plan::Plan, sums: *mut u64, counts: *mut u32
            ) {
                let temp = [
                    crate::shared_array!(ssb_sum_temp: [u64; NT / 32 + 1]),
                    crate::shared_array!(ssb_count_temp: [u64; NT / 32 + 1]),
                ];
                let survivors = crate::shared_array!(ssb_survivors: [u16; crate::block::compact_slots(NT, IPT)]);
                let carry = probe_carry!();
                // SAFETY: the host launches with `head_table_bytes(NT)` of dynamic shared memory.
                let heads = unsafe { crate::arch::dynamic_shared::<u32>(crate::ssb::plan::head_table_bytes(NT) / 4) };
                // SAFETY: as for flight 1, with `cols` describing the four columns of n rows, in
                // the kinds the kernel is specialized for.
                unsafe {
                    use crate::ssb::plan::column::{kinds, probes};
                    type P = crate::ssb::Packed<{ kinds(&probes::$kinds) }>;
                    let c = |i: usize| $wrap(P::new(&cols, i, heads));
                    flight1::<_, NT, IPT>(c(0), c(1), c(2), c(3), n as usize, payload,
                        Out { plan, sums, counts }, temp, (survivors, carry))
                }
            }
        }
    )*};
}

packed_flight1! {
    /// Flight 1 over compressed columns of any kinds: `(cols, n, payload, plan, sums,
    /// counts)`, `cols` the flight's four columns in [`SSB_FLIGHT1`]'s order; persistent.
    SSB_FLIGHT1_PACKED = ssb_flight1_packed<ANY>(core::convert::identity);
    /// [`SSB_FLIGHT1_PACKED`] for lo_orderdate in NSF2, the rest GPU-FOR.
    SSB_FLIGHT1_PACKED_NFFF = ssb_flight1_packed_nfff<FLIGHT1>(core::convert::identity);
    /// [`SSB_FLIGHT1_PACKED_NFFF`] with its survivors queued across tiles (a selective date
    /// range).
    SSB_FLIGHT1_PACKED_NFFF_QUEUED = ssb_flight1_packed_nfff_queued<FLIGHT1>(crate::ssb::Queued);
}

/// The tail queue of a compressed probe: in its dynamic shared memory past the header table
/// where the probe defers its tails (`tail`), else none.
#[cfg(target_arch = "nvptx64")]
macro_rules! packed_tail {
    () => {
        crate::block::TailQueue::unused()
    };
    (tail) => {{
        use crate::ssb::plan::TAIL_ROUND_ROWS as R;
        use crate::ssb::plan::{head_table_bytes, tail_queue_bytes};
        let (heads, slots) = (head_table_bytes(NT) / 4, crate::block::tail_slots(NT, R));
        const { assert!(2 * crate::block::tail_slots(NT, R) * 4 == tail_queue_bytes(NT)) };
        // SAFETY: the host launches such a probe with both parts.
        let dynamic =
            unsafe { crate::arch::dynamic_shared::<u32>(heads + tail_queue_bytes(NT) / 4) };
        crate::block::TailQueue {
            rows: dynamic.offset(heads),
            words: dynamic.offset(heads + slots),
        }
    }};
}

/// The probes of flights 2-4 over compressed columns: one parameter list, `cols` the
/// flight's columns in its plain probe's order; persistent, with the blocks per SM each
/// takes (the registers ptxas may give it); specialized as flight 1's.
macro_rules! packed_probes {
    ($($(#[$m:meta])* $name:ident = $entry:ident<$kinds:ident>($wrap:path $(, $tail:ident)?)[IPT = $ipt:literal, MIN_BLOCKS = $mb:literal]: $flight:ident($($c:literal),*);)*) => {$(
        crate::kernel! {
            $(#[$m])*
            $name = $entry[NT = 256, IPT = $ipt, MIN_BLOCKS = $mb](
                cols: crate::ssb::plan::PackedCols, n: u32, payload: *mut u16, bits: *mut u32,
                plan: *mut crate::ssb::plan::Plan, sums: *mut u64, counts: *mut u32
            ) {
                // SAFETY: the host launches with `head_table_bytes(NT)` of dynamic shared
                // memory, and `tail_queue_bytes(NT)` more where the probe defers its tails.
                let heads = unsafe { crate::arch::dynamic_shared::<u32>(crate::ssb::plan::head_table_bytes(NT) / 4) };
                let sh = probe_shared!(packed_tail!($($tail)?));
                // SAFETY: as for the flight's plain probe, with `cols` describing its columns
                // of n rows, in the kinds the kernel is specialized for.
                unsafe {
                    use crate::ssb::plan::column::{kinds, probes};
                    type P = crate::ssb::Packed<{ kinds(&probes::$kinds) }>;
                    let c = |i: usize| $wrap(P::new(&cols, i, heads));
                    $flight::<_, NT, IPT>($(c($c)),*, n as usize, payload, bits,
                        Out { plan, sums, counts }, sh)
                }
            }
        }
    )*};
}

packed_probes! {
    /// Flight 2 over compressed columns of any kinds: `(cols, n, payload, bits, plan, sums,
    /// counts)`.
    SSB_FLIGHT2_PACKED = ssb_flight2_packed<ANY>(core::convert::identity, tail)[IPT = 8, MIN_BLOCKS = 3]: flight2(0, 1, 2, 3);
    /// [`SSB_FLIGHT2_PACKED`] for lo_orderdate in NSF2, the rest GPU-FOR.
    SSB_FLIGHT2_PACKED_FFNF = ssb_flight2_packed_ffnf<FLIGHT23>(core::convert::identity, tail)[IPT = 8, MIN_BLOCKS = 3]: flight2(0, 1, 2, 3);
    /// [`SSB_FLIGHT2_PACKED`] for lo_suppkey and lo_orderdate in NSF2, the rest GPU-FOR.
    SSB_FLIGHT2_PACKED_NFNF = ssb_flight2_packed_nfnf<FLIGHT23_SUPP>(core::convert::identity, tail)[IPT = 8, MIN_BLOCKS = 3]: flight2(0, 1, 2, 3);
    /// Flight 3 over compressed columns of any kinds.
    SSB_FLIGHT3_PACKED = ssb_flight3_packed<ANY>(core::convert::identity, tail)[IPT = 8, MIN_BLOCKS = 4]: flight3(0, 1, 2, 3);
    /// [`SSB_FLIGHT3_PACKED`] for lo_orderdate in NSF2, the rest GPU-FOR.
    SSB_FLIGHT3_PACKED_FFNF = ssb_flight3_packed_ffnf<FLIGHT23>(core::convert::identity, tail)[IPT = 8, MIN_BLOCKS = 4]: flight3(0, 1, 2, 3);
    /// [`SSB_FLIGHT3_PACKED`] for lo_suppkey and lo_orderdate in NSF2, the rest GPU-FOR; at 3
    /// blocks per SM, where at 4 ptxas spills (the perf log, 2026-12-06).
    SSB_FLIGHT3_PACKED_NFNF = ssb_flight3_packed_nfnf<FLIGHT23_SUPP>(core::convert::identity, tail)[IPT = 8, MIN_BLOCKS = 3]: flight3(0, 1, 2, 3);
    /// Flight 4 over compressed columns of any kinds, its six columns in [`SSB_FLIGHT4`]'s
    /// order.
    SSB_FLIGHT4_PACKED = ssb_flight4_packed<ANY>(core::convert::identity, tail)[IPT = 8, MIN_BLOCKS = 3]: flight4(0, 1, 2, 3, 4, 5);
    /// [`SSB_FLIGHT4_PACKED`] for lo_orderdate in NSF2, the rest GPU-FOR.
    SSB_FLIGHT4_PACKED_FFFNFF = ssb_flight4_packed_fffnff<FLIGHT4>(core::convert::identity, tail)[IPT = 8, MIN_BLOCKS = 3]: flight4(0, 1, 2, 3, 4, 5);
    /// [`SSB_FLIGHT4_PACKED`] for lo_suppkey and lo_orderdate in NSF2, the rest GPU-FOR.
    SSB_FLIGHT4_PACKED_NFFNFF = ssb_flight4_packed_nffnff<FLIGHT4_SUPP>(core::convert::identity, tail)[IPT = 8, MIN_BLOCKS = 3]: flight4(0, 1, 2, 3, 4, 5);
    /// [`SSB_FLIGHT2_PACKED_FFNF`] with its survivors queued across tiles (for a selective
    /// supplier filter), as the other `_QUEUED` probes. With no header table for the later
    /// columns, those with an NSF first column fit 64 registers (4 blocks per SM); those
    /// with a GPU-FOR one, which spill at 64, keep 3.
    SSB_FLIGHT2_PACKED_FFNF_QUEUED = ssb_flight2_packed_ffnf_queued<FLIGHT23>(crate::ssb::Queued)[IPT = 8, MIN_BLOCKS = 3]: flight2(0, 1, 2, 3);
    /// [`SSB_FLIGHT2_PACKED_NFNF`], its survivors queued.
    SSB_FLIGHT2_PACKED_NFNF_QUEUED = ssb_flight2_packed_nfnf_queued<FLIGHT23_SUPP>(crate::ssb::Queued)[IPT = 8, MIN_BLOCKS = 4]: flight2(0, 1, 2, 3);
    /// [`SSB_FLIGHT3_PACKED_FFNF`], its survivors queued.
    SSB_FLIGHT3_PACKED_FFNF_QUEUED = ssb_flight3_packed_ffnf_queued<FLIGHT23>(crate::ssb::Queued)[IPT = 8, MIN_BLOCKS = 3]: flight3(0, 1, 2, 3);
    /// [`SSB_FLIGHT3_PACKED_NFNF`], its survivors queued.
    SSB_FLIGHT3_PACKED_NFNF_QUEUED = ssb_flight3_packed_nfnf_queued<FLIGHT23_SUPP>(crate::ssb::Queued)[IPT = 8, MIN_BLOCKS = 4]: flight3(0, 1, 2, 3);
    /// [`SSB_FLIGHT4_PACKED_FFFNFF`], its survivors queued.
    SSB_FLIGHT4_PACKED_FFFNFF_QUEUED = ssb_flight4_packed_fffnff_queued<FLIGHT4>(crate::ssb::Queued)[IPT = 8, MIN_BLOCKS = 3]: flight4(0, 1, 2, 3, 4, 5);
    /// [`SSB_FLIGHT4_PACKED_NFFNFF`], its survivors queued.
    SSB_FLIGHT4_PACKED_NFFNFF_QUEUED = ssb_flight4_packed_nffnff_queued<FLIGHT4_SUPP>(crate::ssb::Queued)[IPT = 8, MIN_BLOCKS = 4]: flight4(0, 1, 2, 3, 4, 5);
}
