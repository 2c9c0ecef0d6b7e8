//! Builds the kernel crate to PTX for every supported architecture and embeds it, so each host
//! binary is self-contained. rustc calls this build script back as the PTX linker.
use std::path::PathBuf;

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
    for arch in tessera_ptx_build::ARCHS {
        let opts = tessera_ptx_build::PtxOptions {
            workspace: root.clone(),
            target_dir: target_dir.clone(),
            arch: arch.to_string(),
            features: features.clone(),
            linker: linker.clone(),
            verbose: false,
        };
        match tessera_ptx_build::build(&opts) {
            Ok(ptx) => {
                // Deflated: PTX text compresses well, and every binary of the library embeds
                // one file per architecture.
                let text = std::fs::read(&ptx).expect("read the PTX");
                let packed = miniz_oxide::deflate::compress_to_vec(&text, 6);
                std::fs::write(out.join(format!("kernels_{arch}.ptx.deflate")), packed)
                    .expect("write the PTX into OUT_DIR");
            }
            Err(e) => {
                eprintln!("error: building tessera's kernels to PTX failed:\n{e}");
                std::process::exit(1);
            }
        }
    }
}
