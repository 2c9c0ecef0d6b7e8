//! Assembling the PTX with NVIDIA's `ptxas` on a machine without a GPU. `ptxas` ships in PyPI's
//! `nvidia-cuda-nvcc` wheel; version 13.0.88 matches the H100 machine's CUDA 13.0.
use std::path::{Path, PathBuf};
use std::process::Command;

const WHEEL: &str = "nvidia-cuda-nvcc==13.0.88";

/// Path of ptxas: `$PTXAS`, else the cached copy under target/cuda-tools, fetched with pip.
fn ptxas(root: &Path) -> Result<PathBuf, String> {
    if let Some(p) = std::env::var_os("PTXAS") {
        return Ok(PathBuf::from(p));
    }
    let dir = root.join("target/cuda-tools");
    let bin = dir.join(tessera_ptx_build::FETCHED_PTXAS);
    if bin.exists() {
        return Ok(bin);
    }
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    eprintln!("fetching ptxas ({WHEEL}) with pip into {}", dir.display());
    let ok = Command::new("python3")
        .args(["-m", "pip", "download", "--quiet", "--no-deps", "-d"])
        .arg(&dir)
        .arg(WHEEL)
        .status()
        .map_err(|e| format!("cannot run python3 -m pip (needed once to fetch ptxas): {e}"))?;
    if !ok.success() {
        return Err(format!(
            "`pip download {WHEEL}` failed; set PTXAS to a ptxas binary instead"
        ));
    }
    let wheel = std::fs::read_dir(&dir)
        .map_err(|e| e.to_string())?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|x| x == "whl"))
        .ok_or("pip downloaded no wheel")?;
    let script = format!(
        "import sys, zipfile\nzipfile.ZipFile(sys.argv[1]).extract('{}', sys.argv[2])",
        tessera_ptx_build::FETCHED_PTXAS
    );
    let ok = Command::new("python3")
        .arg("-c")
        .arg(&script)
        .arg(&wheel)
        .arg(&dir)
        .status()
        .map_err(|e| e.to_string())?;
    if !ok.success() || !bin.exists() {
        return Err(format!("could not extract ptxas from {}", wheel.display()));
    }
    let _ = std::fs::remove_file(&wheel);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755))
            .map_err(|e| e.to_string())?;
    }
    Ok(bin)
}

/// Assembles `ptx` for sm_90 (into `cubin` when given) and prints one line per kernel:
/// registers, spills, stack frame, shared memory. The stack frame counts apart from spills: a
/// local array that ptxas cannot keep in registers (one indexed at run time, say) lives there,
/// in local memory, without a spill.
pub fn check(root: &Path, ptx: &Path, cubin: Option<&Path>) -> Result<(), String> {
    let bin = ptxas(root)?;
    let out = Command::new(&bin)
        .args(["-arch=sm_90", "-v", "-o"])
        .arg(cubin.unwrap_or(Path::new("/dev/null")))
        .arg(ptx)
        .output()
        .map_err(|e| format!("cannot run {}: {e}", bin.display()))?;
    let log = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        return Err(format!("ptxas rejected {}:\n{log}", ptx.display()));
    }
    let mut table = comfy_table::Table::new();
    table
        .load_style(comfy_table::presets::NOTHING)
        .set_header(["kernel", "regs", "spill B", "stack B", "smem B"]);
    let (mut kernel, mut spills, mut stack) = (String::new(), 0u64, 0u64);
    let (mut spilling, mut stacking) = (0usize, 0usize);
    for line in log.lines() {
        if let Some(rest) = line.split("Compiling entry function '").nth(1) {
            kernel = rest.split('\'').next().unwrap_or("").to_string();
        } else if line.contains("spill stores") {
            spills = field_sum(line, "spill");
            stack = field_sum(line, "stack frame");
        } else if let Some(rest) = line.split("Used ").nth(1) {
            let regs = rest.split_whitespace().next().unwrap_or("?");
            let smem = field_sum(rest, "smem");
            table.add_row([
                kernel.clone(),
                regs.into(),
                spills.to_string(),
                stack.to_string(),
                smem.to_string(),
            ]);
            spilling += (spills > 0) as usize;
            stacking += (stack > 0) as usize;
            (spills, stack) = (0, 0);
        }
    }
    for c in 1..5 {
        if let Some(col) = table.column_mut(c) {
            col.set_cell_alignment(comfy_table::CellAlignment::Right);
        }
    }
    println!("{table}");
    if spilling > 0 {
        println!("  note: {spilling} kernels spill registers");
    }
    if stacking > 0 {
        println!("  note: {stacking} kernels keep a stack frame in local memory");
    }
    Ok(())
}

/// Sum of the numbers in the comma-separated parts of a ptxas line that mention `what`.
fn field_sum(line: &str, what: &str) -> u64 {
    line.split(',')
        .filter(|p| p.contains(what))
        .filter_map(|p| p.split_whitespace().next()?.parse::<u64>().ok())
        .sum()
}
