//! Builds the kernel crate to PTX for every supported architecture and embeds it, so each host
//! binary is self-contained. rustc calls this build script back as the PTX linker.
//!
//! A release build also embeds each architecture's cubin where the machine has a `ptxas`
//! (`tessera_ptx_build::find_ptxas`), so that the GPUs of those architectures start without the
//! driver's JIT; `TESSERA_CUBIN=0` leaves it out, `TESSERA_CUBIN=1` asks for it in any profile.
use std::path::{Path, PathBuf};

fn main() {
    tessera_ptx_build::run_as_linker_if_requested();
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let root = manifest
        .parent()
        .expect("host/ lives in the workspace")
        .to_path_buf();
    for dir in [
        "gpu-kernels/src",
        "gpu-kernels/Cargo.toml",
        "xtask/ptx-build/src",
    ] {
        println!("cargo::rerun-if-changed={}", root.join(dir).display());
    }
    let target_dir = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"))
        .join("ptx");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("set by cargo"));
    let linker = std::env::current_exe().expect("the build script knows its own path");
    // This crate's features of the same names select the kernel sets beyond the product's.
    let features: Vec<String> = tessera_ptx_build::FEATURES
        .iter()
        .filter(|f| std::env::var_os(format!("CARGO_FEATURE_{}", f.to_uppercase())).is_some())
        .map(|f| f.to_string())
        .collect();
    for var in ["TESSERA_CUBIN", "PTXAS", "CUDA_HOME", "CUDA_PATH"] {
        println!("cargo::rerun-if-env-changed={var}");
    }
    let cubins = match std::env::var("TESSERA_CUBIN").as_deref() {
        Ok("0") => false,
        Ok("1") => true,
        _ => std::env::var("PROFILE").as_deref() == Ok("release"),
    };
    let ptxas = cubins
        .then(|| tessera_ptx_build::find_ptxas(&root.join("target/cuda-tools")))
        .flatten();
    if let Some(p) = &ptxas {
        println!("cargo::rerun-if-changed={}", p.display());
    }
    // The architectures' cubins are assembled side by side, each ptxas on one core.
    std::thread::scope(|scope| {
        for arch in tessera_ptx_build::ARCHS {
            let opts = tessera_ptx_build::PtxOptions {
                workspace: root.clone(),
                target_dir: target_dir.clone(),
                arch: arch.to_string(),
                features: features.clone(),
                linker: linker.clone(),
                verbose: false,
            };
            let ptx = match tessera_ptx_build::build(&opts) {
                Ok(ptx) => ptx,
                Err(e) => {
                    eprintln!("error: building tessera's kernels to PTX failed:\n{e}");
                    std::process::exit(1);
                }
            };
            // Deflated: PTX text compresses well, and every binary of the library embeds one
            // file per architecture.
            let text = std::fs::read(&ptx).expect("read the PTX");
            let packed = miniz_oxide::deflate::compress_to_vec(&text, 6);
            std::fs::write(out.join(format!("kernels_{arch}.ptx.deflate")), packed)
                .expect("write the PTX into OUT_DIR");
            let (ptxas, out) = (ptxas.clone(), out.clone());
            scope.spawn(move || {
                let cubin = ptxas.map_or(Vec::new(), |p| cubin(&p, &ptx, arch));
                std::fs::write(out.join(format!("kernels_{arch}.cubin.deflate")), cubin)
                    .expect("write the cubin into OUT_DIR");
            });
        }
    });
}

/// `ptx` assembled for `arch` by `ptxas`, deflated; empty (the binary then JIT-compiles the
/// PTX) with a warning where `ptxas` fails, since the PTX alone is a complete build.
fn cubin(ptxas: &Path, ptx: &Path, arch: &str) -> Vec<u8> {
    match tessera_ptx_build::assemble(ptxas, ptx, arch) {
        Ok(image) => miniz_oxide::deflate::compress_to_vec(&image, 6),
        Err(e) => {
            let first = e.to_string().lines().next().unwrap_or_default().to_string();
            println!("cargo::warning=no {arch} cubin embedded (the PTX is): {first}");
            Vec::new()
        }
    }
}
