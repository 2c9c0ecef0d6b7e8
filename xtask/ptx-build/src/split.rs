//! The PTX split into kernel families, one module each, so that a program loads (and, where it
//! has no cubin, the driver compiles) only the families it launches: the SSB queries are a
//! tenth of the kernels' PTX, whose JIT as one module takes minutes on a cold driver cache.
//!
//! Any split is correct: a kernel of this PTX is self-contained (no device functions, which
//! `--check` rejects anyway, and no file-scope data), and the one file-scope declaration, the
//! dynamic shared memory, goes into every part. The families only group what programs launch
//! together.

use crate::{BuildError, err};

/// The core family: every kernel no other family claims (selection, projection, hash joins,
/// scans, the bandwidth probes), loaded when a `Gpu` opens.
pub const CORE: &str = "core";

/// The other families, by the prefixes of their kernels' names (the first match wins).
pub const FAMILIES: [(&str, &[&str]); 7] = [
    ("ssb", &["ssb_"]),
    // The hash kernels that read their accumulators' codes at run time (several accumulators,
    // or tables too large for 512 threads): 12 of the group-by's 19 MB of PTX, which a
    // grouping of one accumulator into a moderate table does not launch.
    (
        "groupby_generic",
        &[
            "groupby_hash_wide_",
            "groupby_hash_2",
            "groupby_hash_3",
            "groupby_hash_4",
        ],
    ),
    ("groupby", &["groupby_", "ordered_"]),
    ("topk", &["topk_"]),
    ("sort", &["sort_", "local_sort", "msd_", "radix_", "pk_"]),
    ("partition", &["partition_"]),
    (
        "compress",
        &[
            "for_",
            "dfor_",
            "nsf_",
            "nsv_",
            "rle_",
            "rfor_",
            "vertical_",
        ],
    ),
];

/// Every family's name, [`CORE`] first: the order of [`split`]'s parts.
pub fn family_names() -> impl Iterator<Item = &'static str> {
    std::iter::once(CORE).chain(FAMILIES.iter().map(|(name, _)| *name))
}

/// The family of kernel `name`.
pub fn family_of(name: &str) -> &'static str {
    FAMILIES
        .iter()
        .find(|(_, prefixes)| prefixes.iter().any(|p| name.starts_with(p)))
        .map_or(CORE, |(family, _)| family)
}

/// One family's module.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Part {
    /// The family's name.
    pub family: &'static str,
    /// A complete PTX module: the source's file-scope lines, then the family's kernels.
    pub ptx: String,
    /// The names of its kernels, in the source's order.
    pub kernels: Vec<String>,
}

/// The kernel an entry line begins, if it begins one.
fn entry_name(line: &str) -> Option<&str> {
    let rest = line
        .strip_prefix(".visible .entry ")
        .or_else(|| line.strip_prefix(".entry "))?;
    Some(rest.split('(').next().unwrap_or(rest).trim())
}

/// What may stand at a line's start, unindented: in a kernel (its braces, its launch bounds,
/// labels, comments) and before the first (the module's version, target, address size and the
/// dynamic shared memory). Anything else at file scope (a device function, global data) could
/// be shared by kernels of different families, which a split would break.
fn allowed_at_file_scope(line: &str, in_kernel: bool) -> bool {
    let kernel = [
        "{",
        "}",
        ")",
        "$L__",
        "//",
        ".maxntid",
        ".minnctapersm",
        ".reqntid",
        ".maxnreg",
        ".pragma",
    ];
    let header = [
        "//",
        ".version",
        ".target",
        ".address_size",
        ".extern .shared",
    ];
    let starts = if in_kernel { &kernel[..] } else { &header[..] };
    starts.iter().any(|s| line.starts_with(s))
}

/// `ptx` split into one module per family, in [`family_names`]' order (a family without
/// kernels gets a module without kernels).
pub fn split(ptx: &str) -> Result<Vec<Part>, BuildError> {
    let mut header = String::new();
    let mut bodies: Vec<(String, Vec<String>)> = family_names()
        .map(|_| (String::new(), Vec::new()))
        .collect();
    let mut current: Option<usize> = None;
    let index = |name: &str| {
        let family = family_of(name);
        family_names()
            .position(|x| x == family)
            .expect("a family's name")
    };
    for (n, line) in ptx.split_inclusive('\n').enumerate() {
        if let Some(name) = entry_name(line) {
            let f = index(name);
            bodies[f].1.push(name.to_string());
            current = Some(f);
        } else if let Some(name) = line.trim_start().strip_prefix("// .globl") {
            // LLVM's comment before a kernel goes with it.
            current = Some(index(name.split_whitespace().next().unwrap_or_default()));
        } else if !line.starts_with(char::is_whitespace)
            && !allowed_at_file_scope(line, current.is_some())
        {
            return err(format!(
                "the PTX cannot be split into kernel families: line {} is a file-scope `{}`, \
                 which kernels of different families could share (see \
                 xtask/ptx-build/src/split.rs)",
                n + 1,
                line.trim_end()
            ));
        }
        match current {
            None => header.push_str(line),
            Some(f) => bodies[f].0.push_str(line),
        }
    }
    if !header.contains(".target") {
        return err("the PTX has no `.target` line: it is not a kernel module");
    }
    Ok(family_names()
        .zip(bodies)
        .map(|(family, (body, kernels))| Part {
            family,
            ptx: format!("{header}{body}"),
            kernels,
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &str = "//\n// Generated by LLVM NVPTX Back-End\n//\n\n.version 7.8\n\
        .target sm_90\n.address_size 64\n\n.extern .shared .align 16 .b8 tessera_dynamic_smem[];\n\n";

    fn kernel(name: &str) -> String {
        format!(
            "\t// .globl\t{name}\n.visible .entry {name}(\n\t.param .u64 {name}_param_0\n)\n\
             .maxntid 256, 1, 1\n.minnctapersm 2\n{{\n\t.reg .b32 %r<2>;\n// %bb.0:\n\
             $L__BB0_1:\n\tret;\n\n}}\n"
        )
    }

    #[test]
    fn kernels_go_to_their_families_by_prefix() {
        assert_eq!(family_of("ssb_flight1_packed_nfff"), "ssb");
        assert_eq!(family_of("groupby_hash_wide_4"), "groupby_generic");
        assert_eq!(family_of("groupby_hash_3"), "groupby_generic");
        assert_eq!(family_of("groupby_hash_sum_u32"), "groupby");
        assert_eq!(family_of("ordered_agg_naive_shared"), "groupby");
        assert_eq!(family_of("local_sort_u32_128x8"), "sort");
        assert_eq!(family_of("for_sum_d8"), "compress");
        assert_eq!(family_of("dfor_sum_d8"), "compress");
        assert_eq!(family_of("select_pred_u32"), CORE);
        assert_eq!(family_of("bw_read_u32"), CORE);
        assert_eq!(family_names().next(), Some(CORE));
        let names: Vec<_> = family_names().collect();
        let mut unique = names.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), names.len(), "{names:?}");
    }

    #[test]
    fn split_keeps_the_header_in_every_part_and_each_kernel_once() {
        let names = [
            "bw_copy_u32",
            "ssb_flight1",
            "sort_u32_kv",
            "ssb_build",
            "select_u32",
        ];
        let ptx = HEADER.to_string() + &names.map(kernel).concat();
        let parts = split(&ptx).unwrap();
        assert_eq!(
            parts.iter().map(|p| p.family).collect::<Vec<_>>(),
            family_names().collect::<Vec<_>>()
        );
        let core = &parts[0];
        assert_eq!(core.kernels, ["bw_copy_u32", "select_u32"]);
        assert_eq!(
            core.ptx,
            HEADER.to_string() + &kernel("bw_copy_u32") + &kernel("select_u32")
        );
        let ssb = parts.iter().find(|p| p.family == "ssb").unwrap();
        assert_eq!(ssb.kernels, ["ssb_flight1", "ssb_build"]);
        assert_eq!(
            ssb.ptx,
            HEADER.to_string() + &kernel("ssb_flight1") + &kernel("ssb_build")
        );
        let groupby = parts.iter().find(|p| p.family == "groupby").unwrap();
        assert!(groupby.kernels.is_empty());
        assert_eq!(groupby.ptx, HEADER);
        // Every line of the source is in some part, once (the header in each).
        let total: usize = parts.iter().map(|p| p.ptx.len() - HEADER.len()).sum();
        assert_eq!(total + HEADER.len(), ptx.len());
    }

    #[test]
    fn split_refuses_file_scope_code_or_data() {
        for shared in [
            ".global .align 4 .u32 counter;\n",
            ".func helper()\n{\n\tret;\n}\n",
            ".const .align 4 .b8 table[4] = {1, 2, 3, 4};\n",
        ] {
            for ptx in [
                HEADER.to_string() + shared + &kernel("select_u32"),
                HEADER.to_string() + &kernel("select_u32") + shared + &kernel("ssb_build"),
            ] {
                let e = split(&ptx).unwrap_err().to_string();
                assert!(e.contains("cannot be split") && e.contains("line"), "{e}");
            }
        }
        assert!(split("not ptx\n").is_err());
        assert!(split("").is_err());
    }
}
