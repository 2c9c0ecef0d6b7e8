//! PyTorch's timings of the same work, from `benches/torch_ops.py`, when `python3` with `torch`
//! and a GPU are present.
use std::path::Path;
use std::process::Command;

/// One PyTorch timing: `(name, median ms)`.
pub type TorchTiming = (String, f64);

/// Runs the script for `n` items; `Err` says why there are no PyTorch figures.
pub fn run(script: &Path, n: u64, reps: usize) -> Result<Vec<TorchTiming>, String> {
    run_args(
        script,
        &["--n", &n.to_string(), "--reps", &reps.to_string()],
    )
}

/// Runs the script with `args`; it prints a JSON object `{name: median ms}`.
pub fn run_args(script: &Path, args: &[&str]) -> Result<Vec<TorchTiming>, String> {
    if !script.exists() {
        return Err(format!("{} not found", script.display()));
    }
    let out = Command::new("python3")
        .arg(script)
        .args(args)
        .output()
        .map_err(|e| format!("python3 not runnable: {e}"))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(err.lines().last().unwrap_or("failed").to_string());
    }
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)
        .map_err(|e| format!("bad JSON from the script: {e}"))?;
    let obj = v.as_object().ok_or("the script's JSON is not an object")?;
    Ok(obj
        .iter()
        .filter_map(|(k, v)| Some((k.clone(), v.as_f64()?)))
        .collect())
}
