//! Launch bounds in the PTX: rustc cannot attach `__launch_bounds__` to a kernel, so the kernel
//! crate exports a 64-bit global `__tessera_bounds_NAME = NT << 32 | MIN_BLOCKS` per kernel that
//! asks for them (see the `kernel!` macro), and the link step turns each into the entry's
//! `.maxntid NT, 1, 1` and `.minnctapersm MIN_BLOCKS` directives, which make ptxas fit the
//! registers to that many resident blocks. The globals are removed.

const PREFIX: &str = "__tessera_bounds_";

/// A `.u64` initializer, or a `.b8` array one (`{3, 0, 0, 0, 0, 1}`, little-endian, trailing
/// zero bytes omitted), as llc writes them.
fn parse_value(v: &str) -> Result<u64, String> {
    match v.strip_prefix('{').and_then(|r| r.strip_suffix('}')) {
        Some(bytes) => bytes.split(',').enumerate().try_fold(0u64, |acc, (i, b)| {
            let b: u8 = b.trim().parse().map_err(|e| format!("{e}"))?;
            if i >= 8 {
                return Err("more than 8 bytes".to_string());
            }
            Ok(acc | (b as u64) << (8 * i))
        }),
        None => v.parse().map_err(|e| format!("{e}")),
    }
}

/// Rewrites `ptx` as described above; `Err` names a malformed bounds global.
pub fn apply(ptx: &str) -> Result<String, String> {
    let mut bounds = Vec::new();
    let mut kept = Vec::new();
    for line in ptx.lines() {
        match line.find(PREFIX) {
            Some(at) if line.trim_start().starts_with(".visible .global") => {
                let rest = &line[at + PREFIX.len()..];
                let (name, value) = rest
                    .split_once('=')
                    .ok_or_else(|| format!("no value in `{line}`"))?;
                let v = parse_value(value.trim().trim_end_matches(';').trim())
                    .map_err(|e| format!("bad value in `{line}`: {e}"))?;
                let name = name.trim().trim_end_matches("[8]");
                bounds.push((name.to_string(), v >> 32, v & 0xffff_ffff));
            }
            _ => kept.push(line),
        }
    }
    let mut out = String::with_capacity(ptx.len() + 64 * bounds.len());
    let mut pending: Option<(u64, u64)> = None;
    for line in kept {
        out.push_str(line);
        out.push('\n');
        if let Some(name) = line
            .trim_start()
            .strip_prefix(".visible .entry ")
            .and_then(|r| r.split('(').next())
        {
            pending = bounds
                .iter()
                .find(|b| b.0 == name.trim())
                .map(|b| (b.1, b.2));
        }
        if line.starts_with(')')
            && let Some((nt, min)) = pending.take()
        {
            out.push_str(&format!(".maxntid {nt}, 1, 1\n.minnctapersm {min}\n"));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inserts_directives_and_drops_globals() {
        let ptx = ".version 8.0\n\
            .visible .global .align 8 .u64 __tessera_bounds_k2 = 1099511627779;\n\
            .visible .entry k1(\n\t.param .u64 a\n)\n{\n\tret;\n}\n\
            .visible .entry k2(\n\t.param .u64 a\n)\n{\n\tret;\n}\n";
        let out = apply(ptx).unwrap();
        assert!(!out.contains(PREFIX));
        let k2 = out.find(".visible .entry k2").unwrap();
        let d = out.find(".maxntid 256, 1, 1\n.minnctapersm 3\n").unwrap();
        assert!(d > k2, "directives follow k2's parameters");
        assert_eq!(out.matches(".maxntid").count(), 1, "k1 has no bounds");
        assert!(apply(".visible .global .u64 __tessera_bounds_x = y;").is_err());
        let bytes = ".visible .global .align 8 .b8 __tessera_bounds_k[8] = {3, 0, 0, 0, 0, 1};\n\
            .visible .entry k(\n)\n{\n}\n";
        assert!(
            apply(bytes)
                .unwrap()
                .contains(".maxntid 256, 1, 1\n.minnctapersm 3\n")
        );
    }
}
