//! The "independent threads" selection the thesis compares against (its Figure 3-3(a)): each
//! thread counts its matches over a strided range, a prefix sum turns counts into offsets, and
//! each thread re-reads its range and writes its matches from its offset. Three kernels, the
//! input read twice, and uncoalesced writes.

crate::kernel! {
    /// Pass 1: `counts[t]` = matches among items `t, t + T, ..` (`T` threads in the grid).
    INDEP_COUNT_F32 = indep_count_f32[NT = 256, IPT = 1](input: *const f32, n: u32, op: u32, a: f32, b: f32, counts: *mut u32) {
        let (t, stride) = (crate::arch::global_idx(), crate::arch::grid_dim() * NT);
        let (mut i, mut c) = (t, 0u32);
        while i < n as usize {
            // SAFETY: i < n.
            c += crate::predicate::eval(op, unsafe { input.add(i).read() }, a, b) as u32;
            i += stride;
        }
        // SAFETY: one count per thread of the grid.
        unsafe { counts.add(t).write(c) };
    }
}

crate::kernel! {
    /// Pass 3: thread `t` writes its matches from `offsets[t]` on.
    INDEP_WRITE_F32 = indep_write_f32[NT = 256, IPT = 1](input: *const f32, n: u32, op: u32, a: f32, b: f32, offsets: *const u32, out: *mut f32) {
        let (t, stride) = (crate::arch::global_idx(), crate::arch::grid_dim() * NT);
        let mut i = t;
        // SAFETY: one offset per thread; the offsets partition the output.
        let mut o = unsafe { offsets.add(t).read() } as usize;
        while i < n as usize {
            // SAFETY: i < n; o stays below the total count.
            unsafe {
                let y = input.add(i).read();
                if crate::predicate::eval(op, y, a, b) {
                    out.add(o).write(y);
                    o += 1;
                }
            }
            i += stride;
        }
    }
}
