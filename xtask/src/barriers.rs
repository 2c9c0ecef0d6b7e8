//! Static check that no CTA barrier in the PTX sits under a thread-dependent branch.
//!
//! `bar.sync` (like every `bar.*` and `barrier.*.aligned`) is an *aligned* barrier: all threads of
//! a warp must execute the same barrier instruction. LLVM may duplicate a barrier into both arms
//! of a branch on the thread index (tail duplication); lanes of one warp then wait at different
//! instructions, which is undefined behaviour and hung a kernel on the H100. ptxas does not
//! reject it, so we look for it here.
//!
//! The analysis, per `.visible .entry`:
//! 1. Taint (flow-insensitively, to a fixpoint) every register whose value may differ between
//!    lanes of a warp: read from `%tid`/`%laneid`/`%lanemask_*`, returned by an atomic, or
//!    computed from a tainted register.
//! 2. A branch is divergent when its predicate (or `brx.idx` index) is tainted. Its region is
//!    every block reachable from it before its immediate post-dominator, where lanes reconverge.
//! 3. Any aligned barrier inside a divergent region is reported.
//!
//! Values in memory are not tracked: a load from a uniform address is uniform, as in LLVM's own
//! divergence analysis. Warp votes are uniform by definition. The taint is conservative
//! otherwise (e.g. `%tid.x / 32` counts as divergent), so a report may need a closer look.
//!
//! Known gap: a register assigned differently on the two sides of a divergent branch is
//! divergent after the join ("sync dependence"); we do not taint it. Doing so flow-insensitively
//! drowns the real PTX in false reports, because LLVM reuses registers (a look-back loop run by
//! some lanes counts down the register that held the uniform tile index), so it needs a
//! flow-sensitive taint.
use std::collections::{HashMap, HashSet};
use std::path::Path;

/// Special registers whose value differs between lanes of one warp.
const LANE_VARYING: &[&str] = &["%tid", "%laneid", "%lanemask_"];

/// One aligned barrier reached under a divergent branch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Divergent {
    /// Kernel name.
    pub kernel: String,
    /// 1-based line of the barrier in the PTX file.
    pub barrier_line: usize,
    /// 1-based line of the thread-dependent branch that controls it.
    pub branch_line: usize,
}

/// Result of checking every kernel of a PTX file.
#[derive(Debug, Default)]
pub struct Report {
    /// Number of `.visible .entry` kernels analysed.
    pub kernels: usize,
    /// Number of aligned barrier instructions in them.
    pub barriers: usize,
    /// The barriers under a thread-dependent branch.
    pub divergent: Vec<Divergent>,
}

/// Checks `src`, the PTX file at `ptx`, prints a one-line summary, and fails naming the kernels
/// and lines of any divergent barrier.
pub fn check(ptx: &Path, src: &str) -> Result<(), String> {
    let report = analyze(src);
    println!(
        "  barriers: {} kernels, {} aligned barriers, {} divergent",
        report.kernels,
        report.barriers,
        report.divergent.len()
    );
    if report.divergent.is_empty() {
        return Ok(());
    }
    let list: Vec<String> = report
        .divergent
        .iter()
        .map(|d| {
            format!(
                "  {}: barrier at {}:{} under the thread-dependent branch at line {}",
                d.kernel,
                ptx.display(),
                d.barrier_line,
                d.branch_line
            )
        })
        .collect();
    Err(format!(
        "divergent barriers (lanes of a warp may wait at different bar.sync: undefined behaviour):\n{}",
        list.join("\n")
    ))
}

/// Analyses every `.visible .entry` in the PTX text `src`.
pub fn analyze(src: &str) -> Report {
    let lines: Vec<&str> = src.lines().collect();
    let mut report = Report::default();
    let mut i = 0;
    while i < lines.len() {
        let Some(rest) = lines[i].trim_start().strip_prefix(".visible .entry ") else {
            i += 1;
            continue;
        };
        let name = rest.split(['(', ' ']).next().unwrap_or("").to_string();
        let end = body_end(&lines, i);
        let kernel = Kernel::parse(&lines, i, end);
        report.kernels += 1;
        report.barriers += kernel.barriers().count();
        report
            .divergent
            .extend(
                kernel
                    .divergent_barriers()
                    .into_iter()
                    .map(|(barrier_line, branch_line)| Divergent {
                        kernel: name.clone(),
                        barrier_line,
                        branch_line,
                    }),
            );
        i = end + 1;
    }
    report
}

/// Index of the line closing the kernel that starts at `start`: braces balance again there.
/// Counting braces (rather than looking for a `}` in column 0) copes with inline-asm scopes.
fn body_end(lines: &[&str], start: usize) -> usize {
    let mut depth = 0usize;
    let mut opened = false;
    for (i, line) in lines.iter().enumerate().skip(start) {
        for c in strip_comment(line).chars() {
            match c {
                '{' => (depth, opened) = (depth + 1, true),
                '}' => depth = depth.saturating_sub(1),
                _ => {}
            }
        }
        if opened && depth == 0 {
            return i;
        }
    }
    lines.len() - 1
}

fn strip_comment(line: &str) -> &str {
    line.split("//").next().unwrap_or("")
}

/// One PTX instruction, e.g. `@!%p3 bra $L__BB0_2;` or `add.s32 %r1, %r2, 1;`.
#[derive(Debug)]
struct Inst {
    /// 1-based line in the file.
    line: usize,
    /// Guard predicate register (`@%p` or `@!%p`), if any.
    guard: Option<String>,
    /// Full opcode with its modifiers, e.g. `setp.lt.u32`.
    opcode: String,
    /// Comma-separated operands, trimmed.
    operands: Vec<String>,
}

impl Inst {
    /// Opcode without modifiers: `setp`, `bra`, `bar`, ...
    fn root(&self) -> &str {
        self.opcode.split('.').next().unwrap_or("")
    }

    /// Aligned CTA barriers (all `bar.*` but the warp-level `bar.warp.sync`, and
    /// `barrier.*.aligned`): only these require warp-uniform control flow.
    fn is_aligned_barrier(&self) -> bool {
        match self.root() {
            "bar" => !self.opcode.starts_with("bar.warp"),
            "barrier" => self.opcode.split('.').any(|m| m == "aligned"),
            _ => false,
        }
    }

    /// Ends a basic block.
    fn is_terminator(&self) -> bool {
        matches!(self.root(), "bra" | "brx" | "ret" | "exit" | "trap")
    }

    /// Registers written. Stores, branches, barriers and fences write none; the others write
    /// their first operand (`%p1|%p2` names two).
    fn defs(&self) -> Vec<&str> {
        let writes = !matches!(
            self.root(),
            "st" | "red"
                | "bra"
                | "brx"
                | "bar"
                | "barrier"
                | "ret"
                | "exit"
                | "trap"
                | "fence"
                | "membar"
                | "prefetch"
                | "call"
        );
        match self.operands.first() {
            Some(op) if writes && !op.starts_with('[') => registers(op).collect(),
            _ => Vec::new(),
        }
    }

    /// Registers read, including the guard.
    fn uses(&self) -> impl Iterator<Item = &str> {
        let skip = usize::from(!self.defs().is_empty());
        self.guard
            .as_deref()
            .into_iter()
            .chain(self.operands.iter().skip(skip).flat_map(|op| registers(op)))
    }

    /// The result differs between lanes whatever the inputs: atomics (each lane gets a
    /// different old value) and lane-indexed special registers.
    fn is_lane_varying(&self) -> bool {
        self.root() == "atom"
            || self
                .operands
                .iter()
                .any(|op| LANE_VARYING.iter().any(|s| op.contains(s)))
    }
}

/// Register names (`%r12`, `%tp`, `%tid` for `%tid.x`) in an operand.
fn registers(op: &str) -> impl Iterator<Item = &str> {
    op.match_indices('%').map(move |(i, _)| {
        let len = op[i + 1..]
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(op.len() - i - 1);
        &op[i..i + 1 + len]
    })
}

/// A basic block: instructions, then the indices of its successor blocks.
#[derive(Debug, Default)]
struct Block {
    insts: Vec<Inst>,
    succ: Vec<usize>,
}

/// A kernel's control-flow graph.
#[derive(Debug)]
struct Kernel {
    blocks: Vec<Block>,
}

impl Kernel {
    /// Parses lines `start..=end` (the entry's header to its closing brace) into basic blocks.
    fn parse(lines: &[&str], start: usize, end: usize) -> Kernel {
        // Statements end at ';'; they may span lines (`.branchtargets` lists) and several may
        // share one (inline asm `{ .reg .pred %tp; setp ...; vote ...; }`).
        let body_start = (start..=end)
            .find(|&i| strip_comment(lines[i]).contains('{'))
            .unwrap_or(end);
        let mut stmts: Vec<(usize, String)> = Vec::new();
        let mut cur = String::new();
        let mut cur_line = 0;
        for (i, line) in lines.iter().enumerate().take(end + 1).skip(body_start) {
            for part in strip_comment(line).split_inclusive(';') {
                // The line of a statement is where its instruction starts, after labels.
                let so_far = cur.trim().trim_start_matches(['{', '}']).trim();
                if !part.trim().is_empty() && (so_far.is_empty() || so_far.ends_with(':')) {
                    cur_line = i + 1;
                }
                cur.push(' ');
                cur.push_str(part);
                if part.ends_with(';') {
                    stmts.push((cur_line, std::mem::take(&mut cur)));
                }
            }
        }
        stmts.push((end + 1, cur));

        let mut blocks = vec![Block::default()];
        let mut labels: HashMap<String, usize> = HashMap::new();
        let mut tables: HashMap<String, Vec<String>> = HashMap::new();
        // Registers declared in an inline-asm scope (`{ .reg .pred %tp; ... }`) are distinct
        // per scope: renamed `%tp__<scope>` so that the taint of one does not leak to the others.
        let (mut depth, mut scope, mut scoped) = (0usize, 0usize, HashMap::new());
        for (line, stmt) in stmts {
            let mut s = stmt.trim();
            while let Some(c) = s.chars().next().filter(|c| matches!(c, '{' | '}')) {
                if c == '{' {
                    (depth, scope) = (depth + 1, scope + 1);
                } else {
                    depth = depth.saturating_sub(1);
                    if depth <= 1 {
                        scoped.clear();
                    }
                }
                s = s[1..].trim_start();
            }
            s = s.trim_end_matches(';').trim();
            if depth >= 2 && s.starts_with(".reg") {
                for r in registers(s) {
                    scoped.insert(r.to_string(), format!("{r}__{scope}"));
                }
            }
            // Leading `label:` prefixes. A label starts a new block (unless the current one is
            // still empty); a `.branchtargets` label names a jump table instead.
            let mut pending = Vec::new();
            while let Some((label, rest)) = split_label(s) {
                pending.push(label.to_string());
                s = rest;
            }
            if let Some(targets) = s.strip_prefix(".branchtargets") {
                let targets: Vec<String> =
                    targets.split(',').map(|t| t.trim().to_string()).collect();
                for label in pending {
                    tables.insert(label, targets.clone());
                }
                continue;
            }
            if !pending.is_empty() && !blocks.last().is_some_and(|b| b.insts.is_empty()) {
                blocks.push(Block::default());
            }
            for label in pending {
                labels.insert(label, blocks.len() - 1);
            }
            if s.is_empty() || s.starts_with('.') || s.starts_with('}') {
                continue; // directive (.reg, .shared, .pragma ...) or closing brace
            }
            let mut inst = parse_inst(line, s);
            for op in inst.operands.iter_mut().chain(&mut inst.guard) {
                *op = rename(op, &scoped);
            }
            let ends = inst.is_terminator();
            blocks.last_mut().expect("never empty").insts.push(inst);
            if ends {
                blocks.push(Block::default());
            }
        }

        // Successors: branch targets, plus the next block on fall-through or a guarded branch.
        let n = blocks.len();
        for (i, block) in blocks.iter_mut().enumerate() {
            let next = (i + 1 < n).then_some(i + 1);
            let succ = match block.insts.last() {
                Some(inst) if inst.root() == "bra" => {
                    let target = inst.operands.first().and_then(|l| labels.get(l)).copied();
                    let fall = if inst.guard.is_some() { next } else { None };
                    target.into_iter().chain(fall).collect()
                }
                Some(inst) if inst.root() == "brx" => {
                    let table = inst.operands.get(1).and_then(|t| tables.get(t));
                    let targets = table.into_iter().flatten().filter_map(|l| labels.get(l));
                    let fall = if inst.guard.is_some() { next } else { None };
                    targets.copied().chain(fall).collect()
                }
                Some(inst) if inst.is_terminator() => Vec::new(),
                _ => next.into_iter().collect(),
            };
            block.succ = succ;
        }
        // A lane that leaves the kernel by `exit` or `trap` (an unreachable switch default, a
        // panic) never waits at a barrier, and exited threads do not hold one up: drop the
        // edges into blocks that lead only there, so that such a path does not make its
        // branch's lanes meet only at the kernel's end.
        let mut dead: Vec<bool> = blocks
            .iter()
            .map(|b| {
                b.insts
                    .last()
                    .is_some_and(|i| i.guard.is_none() && matches!(i.root(), "exit" | "trap"))
            })
            .collect();
        loop {
            let mut changed = false;
            for i in 0..n {
                if !dead[i] && !blocks[i].succ.is_empty() && blocks[i].succ.iter().all(|&s| dead[s])
                {
                    dead[i] = true;
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        for (i, block) in blocks.iter_mut().enumerate() {
            if !dead[i] {
                block.succ.retain(|&s| !dead[s]);
            }
        }
        Kernel { blocks }
    }

    fn barriers(&self) -> impl Iterator<Item = &Inst> {
        self.blocks
            .iter()
            .flat_map(|b| &b.insts)
            .filter(|i| i.is_aligned_barrier())
    }

    /// (barrier line, branch line) of each aligned barrier under a divergent branch.
    fn divergent_barriers(&self) -> Vec<(usize, usize)> {
        let ipdom = self.immediate_post_dominators();
        let mut tainted: HashSet<&str> = HashSet::new();
        loop {
            let before = tainted.len();
            for inst in self.blocks.iter().flat_map(|b| &b.insts) {
                // A vote's result is the same in every lane of the warp.
                if inst.root() == "vote" {
                    continue;
                }
                if inst.is_lane_varying() || inst.uses().any(|r| tainted.contains(r)) {
                    tainted.extend(inst.defs());
                }
            }
            if tainted.len() == before {
                break;
            }
        }
        let regions: HashMap<usize, Vec<usize>> = (0..self.blocks.len())
            .filter(|&b| self.branch_on(b, &tainted))
            .map(|b| (b, self.region(b, ipdom[b])))
            .collect();
        let mut found: Vec<(usize, usize)> = regions
            .iter()
            .flat_map(|(&b, region)| {
                let branch_line = self.blocks[b].insts.last().map_or(0, |i| i.line);
                region
                    .iter()
                    .flat_map(|&x| &self.blocks[x].insts)
                    .filter(|i| i.is_aligned_barrier())
                    .map(move |i| (i.line, branch_line))
            })
            .collect();
        found.sort_unstable();
        // One report per barrier: the first (by line) branch that controls it.
        found.dedup_by_key(|&mut (barrier, _)| barrier);
        found
    }

    /// Whether block `b` ends in a branch whose direction may differ between lanes.
    fn branch_on(&self, b: usize, tainted: &HashSet<&str>) -> bool {
        let block = &self.blocks[b];
        let Some(inst) = block.insts.last() else {
            return false;
        };
        let selector = match inst.root() {
            "bra" => inst.guard.as_deref(),
            "brx" => inst.operands.first().and_then(|op| registers(op).next()),
            _ => None,
        };
        let guard_tainted = inst.guard.as_deref().is_some_and(|g| tainted.contains(g));
        block.succ.len() > 1 && (guard_tainted || selector.is_some_and(|r| tainted.contains(r)))
    }

    /// Blocks reachable from `b`'s successors without passing `stop` (its immediate
    /// post-dominator: where all paths from `b`, hence all lanes, meet again).
    fn region(&self, b: usize, stop: Option<usize>) -> Vec<usize> {
        let mut seen = vec![false; self.blocks.len()];
        let mut stack = self.blocks[b].succ.clone();
        let mut region = Vec::new();
        while let Some(x) = stack.pop() {
            if Some(x) == stop || seen[x] {
                continue;
            }
            seen[x] = true;
            region.push(x);
            stack.extend(&self.blocks[x].succ);
        }
        region
    }

    /// Immediate post-dominator of every block (None: the virtual exit), from the classic
    /// iterative data-flow over bit sets; kernels have at most a few hundred blocks.
    fn immediate_post_dominators(&self) -> Vec<Option<usize>> {
        let n = self.blocks.len();
        let words = n.div_ceil(64);
        let full = vec![u64::MAX; words];
        // pdom[b]: blocks on every path from b to the exit, b included.
        let mut pdom: Vec<Vec<u64>> = vec![full; n];
        let mut changed = true;
        while changed {
            changed = false;
            for b in (0..n).rev() {
                let mut new = vec![0u64; words];
                if !self.blocks[b].succ.is_empty() {
                    new.fill(u64::MAX);
                    for &s in &self.blocks[b].succ {
                        for (w, p) in new.iter_mut().zip(&pdom[s]) {
                            *w &= p;
                        }
                    }
                }
                new[b / 64] |= 1 << (b % 64);
                if new != pdom[b] {
                    pdom[b] = new;
                    changed = true;
                }
            }
        }
        let count: Vec<u32> = pdom
            .iter()
            .map(|set| set.iter().map(|w| w.count_ones()).sum())
            .collect();
        let contains = |set: &[u64], x: usize| set[x / 64] >> (x % 64) & 1 == 1;
        // The post-dominators of b form a chain; the immediate one is post-dominated by all
        // the others, so its set is exactly pdom[b] without b.
        (0..n)
            .map(|b| {
                let want = count[b] - 1;
                (0..n).find(|&x| x != b && contains(&pdom[b], x) && count[x] == want)
            })
            .collect()
    }
}

/// `op` with each register found in `names` replaced by its new name.
fn rename(op: &str, names: &HashMap<String, String>) -> String {
    let mut out = op.to_string();
    for r in registers(op)
        .filter(|r| names.contains_key(*r))
        .collect::<HashSet<_>>()
    {
        let parts: Vec<&str> = out.split(r).collect();
        // Only whole tokens: `%tp` must not rename `%tpx`.
        let mut joined = parts[0].to_string();
        for part in &parts[1..] {
            let whole = !part.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_');
            joined.push_str(if whole { &names[r] } else { r });
            joined.push_str(part);
        }
        out = joined;
    }
    out
}

/// Splits a leading `label:` off a statement.
fn split_label(s: &str) -> Option<(&str, &str)> {
    let (label, rest) = s.split_once(':')?;
    let label = label.trim();
    let ident = !label.is_empty()
        && label
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '$' | '%'));
    (ident && !label.starts_with('%')).then(|| (label, rest.trim()))
}

/// Parses `[@[!]%p] opcode op, op, ...` (without the trailing ';').
fn parse_inst(line: usize, s: &str) -> Inst {
    let (guard, s) = match s.strip_prefix('@') {
        Some(rest) => {
            let (g, rest) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
            (Some(g.trim_start_matches('!').to_string()), rest.trim())
        }
        None => (None, s),
    };
    let (opcode, ops) = s.split_once(char::is_whitespace).unwrap_or((s, ""));
    let operands = ops
        .split(',')
        .map(str::trim)
        .filter(|o| !o.is_empty())
        .map(str::to_string)
        .collect();
    Inst {
        line,
        guard,
        opcode: opcode.to_string(),
        operands,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Wraps a kernel body in a `.visible .entry` with one u32 parameter.
    fn kernel(body: &str) -> String {
        format!(
            ".version 8.0\n.target sm_90\n.address_size 64\n\n\
             .visible .entry k(\n\t.param .u32 k_param_0\n)\n{{\n\
             \t.reg .pred %p<4>;\n\t.reg .b32 %r<8>;\n{body}\n\tret;\n}}\n"
        )
    }

    fn divergent_lines(body: &str) -> Vec<usize> {
        let report = analyze(&kernel(body));
        assert_eq!(report.kernels, 1);
        report.divergent.iter().map(|d| d.barrier_line).collect()
    }

    #[test]
    fn uniform_barrier_is_clean() {
        let report = analyze(&kernel(
            "\tmov.u32 %r1, %tid.x;\n\tbar.sync 0;\n\tadd.s32 %r2, %r1, 1;",
        ));
        assert_eq!((report.barriers, report.divergent.len()), (1, 0));
    }

    #[test]
    fn barrier_under_tid_branch_is_flagged() {
        // The body starts on line 11: the branch is on line 13, the first barrier on 15.
        let body = "\tmov.u32 %r1, %tid.x;\n\
                    \tsetp.eq.s32 %p1, %r1, 0;\n\
                    \t@%p1 bra $L__BB0_2;\n\
                    // %bb.1:\n\
                    \tbar.sync 0;\n\
                    $L__BB0_2:\n\
                    \tbar.sync 0;";
        let report = analyze(&kernel(body));
        assert_eq!(report.barriers, 2);
        let d = &report.divergent;
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!(
            (d[0].kernel.as_str(), d[0].barrier_line, d[0].branch_line),
            ("k", 15, 13)
        );
    }

    #[test]
    fn barrier_after_post_dominator_is_clean() {
        let body = "\tmov.u32 %r1, %laneid;\n\
                    \tsetp.eq.s32 %p1, %r1, 0;\n\
                    \t@%p1 bra $L__BB0_2;\n\
                    \tadd.s32 %r2, %r2, 1;\n\
                    $L__BB0_2:\n\
                    \tbar.sync 0;";
        assert_eq!(divergent_lines(body), Vec::<usize>::new());
    }

    #[test]
    fn path_to_exit_does_not_hide_the_post_dominator() {
        // One arm of the lane-dependent branch ends the thread (an unreachable default); the
        // others meet before the barrier.
        let body = "\tmov.u32 %r1, %laneid;\n\
                    \tsetp.eq.s32 %p1, %r1, 0;\n\
                    \t@%p1 bra $L__BB0_3;\n\
                    \tadd.s32 %r2, %r2, 1;\n\
                    $L__BB0_2:\n\
                    \tbar.sync 0;\n\
                    \tret;\n\
                    $L__BB0_3:\n\
                    \tsetp.eq.s32 %p2, %r1, 1;\n\
                    \t@%p2 bra $L__BB0_2;\n\
                    \texit;";
        assert_eq!(divergent_lines(body), Vec::<usize>::new());
    }

    #[test]
    fn barrier_under_parameter_branch_is_clean() {
        let body = "\tld.param.u32 %r1, [k_param_0];\n\
                    \tsetp.eq.s32 %p1, %r1, 0;\n\
                    \t@%p1 bra $L__BB0_2;\n\
                    \tbar.sync 0;\n\
                    $L__BB0_2:\n\
                    \tret;";
        assert_eq!(divergent_lines(body), Vec::<usize>::new());
    }

    #[test]
    fn jump_table_on_lane_index_is_divergent_but_vote_is_uniform() {
        // The ballot of a lane-dependent predicate is warp-uniform: branching on it is fine.
        let body = "\tmov.u32 %r1, %laneid;\n\
                    \t{ .reg .pred %tp; setp.ne.u32 %tp, %r1, 0; vote.sync.ballot.b32 %r3, %tp, -1; }\n\
                    \tsetp.eq.s32 %p1, %r3, 0;\n\
                    \t@%p1 bra $L__BB0_1;\n\
                    \tbar.sync 0;\n\
                    $L__BB0_1:\n\
                    \t$L_brx_0: .branchtargets\n\
                    \t\t$L__BB0_2,\n\
                    \t\t$L__BB0_3;\n\
                    \tbrx.idx %r1, $L_brx_0;\n\
                    $L__BB0_2:\n\
                    \tbar.sync 0;\n\
                    \tbra.uni $L__BB0_4;\n\
                    $L__BB0_3:\n\
                    \tbar.sync 0;\n\
                    $L__BB0_4:\n\
                    \tret;";
        assert_eq!(divergent_lines(body), vec![22, 25]);
    }

    #[test]
    fn atomic_result_is_divergent_and_kernels_are_separate() {
        let body = "\tatom.global.add.u32 %r1, [%rd1], 1;\n\
                    \tsetp.eq.s32 %p1, %r1, 0;\n\
                    \t@!%p1 bra $L__BB0_2;\n\
                    \tbar.sync 0;\n\
                    $L__BB0_2:\n\
                    \tret;";
        let two = format!("{}{}", kernel(body), kernel("\tbar.sync 0;"));
        let report = analyze(&two);
        assert_eq!((report.kernels, report.barriers), (2, 2));
        assert_eq!(report.divergent.len(), 1);
    }
}
