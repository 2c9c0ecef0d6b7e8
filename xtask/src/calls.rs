//! Static check that every device function was inlined into the kernels.
//!
//! The kernels are written as chains of `#[inline(always)]` block functions and closures; a
//! body LLVM decides to outline anyway becomes a `.func` that the kernel `call`s, passing its
//! captures through local memory. That happens silently when a body grows past the inliner's
//! threshold, and the local-memory traffic slows the kernel badly, so `build-ptx --check`
//! rejects any call.
use std::path::Path;

/// Checks `src`, the PTX file at `ptx`, and fails naming the first calls found.
pub fn check(ptx: &Path, src: &str) -> Result<(), String> {
    let calls = find(src);
    println!("  calls: {}", calls.len());
    if calls.is_empty() {
        return Ok(());
    }
    let list: Vec<String> = calls
        .iter()
        .take(10)
        .map(|(kernel, line)| format!("  {kernel}: call at {}:{line}", ptx.display()))
        .collect();
    Err(format!(
        "device functions were not inlined (mark the closure or function #[inline(always)]):\n{}",
        list.join("\n")
    ))
}

/// `(kernel, 1-based line)` of every `call` instruction.
pub fn find(src: &str) -> Vec<(String, usize)> {
    let mut kernel = String::new();
    let mut out = Vec::new();
    for (i, line) in src.lines().enumerate() {
        let t = line.trim_start();
        if let Some(rest) = t
            .strip_prefix(".visible .entry ")
            .or_else(|| t.strip_prefix(".visible .func "))
            .or_else(|| t.strip_prefix(".func "))
        {
            kernel = rest.split(['(', ' ']).next().unwrap_or("").to_string();
        } else if t.starts_with("call.") || t.starts_with("call ") {
            out.push((kernel.clone(), i + 1));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_calls_and_their_kernel() {
        let ptx = ".visible .entry k1(\n)\n{\n\tret;\n}\n.visible .entry k2(\n)\n{\n\t{ // callseq 0\n\tcall.uni f, (param0);\n\t}\n}\n";
        assert_eq!(find(ptx), vec![("k2".to_string(), 10)]);
        assert!(find(".visible .entry k(\n)\n{\n\tadd.s32 %r1, %r2, 1; // recall\n}\n").is_empty());
    }
}
