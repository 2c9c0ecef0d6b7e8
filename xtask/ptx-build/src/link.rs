//! The linker that rustc calls for the nvptx `cdylib` (flavour `llbc`).
//!
//! rustc passes: `--export-symbol NAME` per kernel, bitcode objects (`*.o`), rlibs whose members
//! are bitcode objects (compiler_builtins is never LTO'd into the main module), `-L DIR`,
//! `--target T`, `--target-cpu sm_XX`, `-o OUT.ptx`, `-O<n>` and `--debug`.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use crate::{BuildError, LINK_ENV, llvm_bin_dir, sysroot};

/// If this process was started by rustc as the PTX linker, links and exits; otherwise returns.
pub fn run_as_linker_if_requested() {
    if std::env::var_os(LINK_ENV).is_none() {
        return;
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    let code = match link(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("tessera PTX linker: {e}");
            ExitCode::FAILURE
        }
    };
    std::process::exit(if code == ExitCode::SUCCESS { 0 } else { 1 });
}

#[derive(Default, Debug)]
struct LinkArgs {
    exports: Vec<String>,
    objects: Vec<PathBuf>,
    rlibs: Vec<PathBuf>,
    cpu: Option<String>,
    output: Option<PathBuf>,
}

fn parse(args: &[String]) -> Result<LinkArgs, BuildError> {
    let mut la = LinkArgs::default();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = |name: &str| {
            it.next()
                .cloned()
                .ok_or_else(|| BuildError(format!("linker argument {name} has no value")))
        };
        match a.as_str() {
            "--export-symbol" => la.exports.push(value(a)?),
            "--target-cpu" => la.cpu = Some(value(a)?),
            "-o" => la.output = Some(PathBuf::from(value(a)?)),
            "-L" | "--target" => {
                value(a)?;
            }
            s if s.ends_with(".rlib") => la.rlibs.push(PathBuf::from(s)),
            s if s.ends_with(".o") => la.objects.push(PathBuf::from(s)),
            _ => {} // -O3, --debug, and anything newer rustc may add
        }
    }
    Ok(la)
}

fn run(tool: &Path, args: &[&std::ffi::OsStr]) -> Result<(), BuildError> {
    let out = Command::new(tool)
        .args(args)
        .output()
        .map_err(|e| BuildError(format!("cannot run {}: {e}", tool.display())))?;
    if !out.status.success() {
        return Err(BuildError(format!(
            "{} failed:\n{}",
            tool.display(),
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    Ok(())
}

fn link(args: &[String]) -> Result<(), BuildError> {
    let la = parse(args)?;
    let output = la.output.ok_or_else(|| BuildError("no -o given".into()))?;
    let cpu = la.cpu.unwrap_or_else(|| "sm_80".into());
    if la.exports.is_empty() {
        return Err(BuildError(
            "no kernels exported (no --export-symbol)".into(),
        ));
    }
    let bin = llvm_bin_dir(&sysroot()?)?;
    let work = output.with_extension("link");
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).map_err(|e| BuildError(format!("{}: {e}", work.display())))?;

    // rlib members: extract the bitcode objects (skipping lib.rmeta) so llvm-link can read them.
    let mut extra = Vec::new();
    for (i, rlib) in la.rlibs.iter().enumerate() {
        let dir = work.join(format!("rlib{i}"));
        std::fs::create_dir_all(&dir).map_err(|e| BuildError(format!("{}: {e}", dir.display())))?;
        let st = Command::new(bin.join("llvm-ar"))
            .arg("x")
            .arg(std::path::absolute(rlib).unwrap_or(rlib.clone()))
            .current_dir(&dir)
            .status()
            .map_err(|e| BuildError(format!("cannot run llvm-ar: {e}")))?;
        if !st.success() {
            return Err(BuildError(format!("llvm-ar x {} failed", rlib.display())));
        }
        let mut members: Vec<PathBuf> = std::fs::read_dir(&dir)
            .map_err(|e| BuildError(format!("{}: {e}", dir.display())))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "o"))
            .collect();
        members.sort();
        extra.extend(members);
    }

    let linked = work.join("linked.bc");
    let mut a: Vec<&std::ffi::OsStr> = la.objects.iter().map(|p| p.as_os_str()).collect();
    for m in &extra {
        a.push("--only-needed".as_ref());
        a.push(m.as_os_str());
    }
    a.push("-o".as_ref());
    a.push(linked.as_os_str());
    run(&bin.join("llvm-link"), &a)?;

    let optimized = work.join("opt.bc");
    let keep = format!("--internalize-public-api-list={}", la.exports.join(","));
    run(
        &bin.join("opt"),
        &[
            "-strip-debug".as_ref(),
            // Kernels keep tiles in registers as [T; IPT] arrays: their loops must unroll fully
            // even when the per-item work is large (the sigmoid projection was not unrolled at
            // the default threshold and lost its vector loads).
            "-unroll-threshold=2000".as_ref(),
            keep.as_ref(),
            "-passes=internalize,default<O3>".as_ref(),
            linked.as_os_str(),
            "-o".as_ref(),
            optimized.as_os_str(),
        ],
    )?;
    let mcpu = format!("-mcpu={cpu}");
    run(
        &bin.join("llc"),
        &[
            "-mtriple=nvptx64-nvidia-cuda".as_ref(),
            mcpu.as_ref(),
            "-O3".as_ref(),
            optimized.as_os_str(),
            "-o".as_ref(),
            output.as_os_str(),
        ],
    )?;
    let ptx = std::fs::read_to_string(&output)
        .map_err(|e| BuildError(format!("reading {}: {e}", output.display())))?;
    let ptx = crate::bounds::apply(&ptx)
        .map_err(|e| BuildError(format!("launch bounds in {}: {e}", output.display())))?;
    std::fs::write(&output, ptx)
        .map_err(|e| BuildError(format!("writing {}: {e}", output.display())))?;
    let _ = std::fs::remove_dir_all(&work);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_rustc_linker_arguments() {
        let args: Vec<String> = [
            "--export-symbol",
            "k1",
            "a.rcgu.o",
            "libcompiler_builtins-1.rlib",
            "-L",
            "/x",
            "--export-symbol",
            "k2",
            "--target",
            "nvptx64-nvidia-cuda",
            "--target-cpu",
            "sm_90",
            "-o",
            "out.ptx",
            "-O3",
            "--debug",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let la = parse(&args).unwrap();
        assert_eq!(la.exports, ["k1", "k2"]);
        assert_eq!(la.objects, [PathBuf::from("a.rcgu.o")]);
        assert_eq!(la.rlibs.len(), 1);
        assert_eq!(la.cpu.as_deref(), Some("sm_90"));
        assert_eq!(la.output, Some(PathBuf::from("out.ptx")));
    }

    #[test]
    fn missing_value_is_an_error() {
        assert!(parse(&["-o".to_string()]).is_err());
    }
}
