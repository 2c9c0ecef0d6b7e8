//! Builds the kernel crate to PTX for every supported architecture and embeds it, so each host
//! binary is self-contained: split into kernel families, one module each, which `Gpu` loads
//! when a kernel of the family is first launched (`OUT_DIR/kernels.rs` lists them). rustc
//! calls this build script back as the PTX linker.
//!
//! A release build also embeds each family's cubin where the machine has a `ptxas`
//! (`tessera_ptx_build::find_ptxas`), so that the GPUs of those architectures start without the
//! driver's JIT; `TESSERA_CUBIN=0` leaves them out, `TESSERA_CUBIN=1` asks for them in any
//! profile.
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
    // Each architecture's PTX is split into kernel families, each embedded as a module of its
    // own, so that a program loads only the families it launches (`tessera_ptx_build::split`).
    let mut jobs = Vec::new();
    let mut kernels: Option<Vec<(String, usize)>> = None;
    for arch in tessera_ptx_build::ARCHS {
        let opts = tessera_ptx_build::PtxOptions {
            workspace: root.clone(),
            target_dir: target_dir.clone(),
            arch: arch.to_string(),
            features: features.clone(),
            linker: linker.clone(),
            verbose: false,
        };
        let ptx = tessera_ptx_build::build(&opts).unwrap_or_else(|e| fail("building", &e));
        let text = std::fs::read_to_string(&ptx).expect("read the PTX");
        let parts = tessera_ptx_build::split(&text).unwrap_or_else(|e| fail("splitting", &e));
        let mut names: Vec<(String, usize)> = parts
            .iter()
            .enumerate()
            .flat_map(|(f, part)| part.kernels.iter().map(move |k| (k.clone(), f)))
            .collect();
        names.sort();
        if let Some(w) = names.windows(2).find(|w| w[0].0 == w[1].0) {
            fail("splitting", &format!("kernel {} appears twice", w[0].0));
        }
        match &kernels {
            Some(k) if *k != names => fail(
                "splitting",
                &"the architectures' PTX holds different kernels".to_string(),
            ),
            Some(_) => {}
            None => kernels = Some(names),
        }
        for part in parts {
            // Kept beside the PTX, where `assemble` keeps each one's cubin.
            let path = ptx.with_file_name(format!("tessera_kernels.{}.ptx", part.family));
            if std::fs::read(&path).ok().as_deref() != Some(part.ptx.as_bytes()) {
                std::fs::write(&path, &part.ptx).expect("write a family's PTX");
            }
            // Deflated: PTX text compresses well, and every binary of the library embeds it.
            let packed = miniz_oxide::deflate::compress_to_vec(part.ptx.as_bytes(), 6);
            let name = format!("kernels_{}_{arch}", part.family);
            std::fs::write(out.join(format!("{name}.ptx.deflate")), packed)
                .expect("write the PTX into OUT_DIR");
            let has_kernels = !part.kernels.is_empty();
            jobs.push((part.ptx.len(), arch, path, name, has_kernels));
        }
    }
    // The largest first, as many side by side as cargo runs jobs (one ptxas runs on one core).
    jobs.sort_by_key(|job| std::cmp::Reverse(job.0));
    let next = std::sync::atomic::AtomicUsize::new(0);
    let workers = std::env::var("NUM_JOBS")
        .ok()
        .and_then(|n| n.parse::<usize>().ok())
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .max(1);
    std::thread::scope(|scope| {
        for _ in 0..workers.min(jobs.len()) {
            scope.spawn(|| {
                while let Some((_, arch, ptx, name, has_kernels)) =
                    jobs.get(next.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
                {
                    let cubin = match &ptxas {
                        Some(p) if *has_kernels => cubin(p, ptx, arch, name),
                        _ => Vec::new(),
                    };
                    std::fs::write(out.join(format!("{name}.cubin.deflate")), cubin)
                        .expect("write the cubin into OUT_DIR");
                }
            });
        }
    });
    let kernels = kernels.expect("at least one architecture");
    std::fs::write(out.join("kernels.rs"), index(&out, &kernels)).expect("write kernels.rs");
}

fn fail(what: &str, e: &dyn std::fmt::Display) -> ! {
    eprintln!("error: {what} tessera's kernels failed:\n{e}");
    std::process::exit(1);
}

/// The Rust source that `host/src/runtime/gpu.rs` includes: the architectures, every family's
/// embedded files for each, and every kernel's family, sorted by name.
fn index(out: &Path, kernels: &[(String, usize)]) -> String {
    let file = |family: &str, arch: &str, kind: &str| {
        let path = out.join(format!("kernels_{family}_{arch}.{kind}.deflate"));
        format!("include_bytes!({:?})", path.display().to_string())
    };
    let each_arch = |family: &str, kind: &str| {
        let files: Vec<String> = tessera_ptx_build::ARCHS
            .iter()
            .map(|arch| file(family, arch, kind))
            .collect();
        format!("[{}]", files.join(", "))
    };
    let families: Vec<String> = tessera_ptx_build::family_names()
        .map(|f| {
            format!(
                "    Family {{\n        name: {f:?},\n        ptx: {},\n        cubin: {},\n    }},\n",
                each_arch(f, "ptx"),
                each_arch(f, "cubin")
            )
        })
        .collect();
    let rows: Vec<String> = kernels
        .iter()
        .map(|(name, f)| format!("    ({name:?}, {f}),\n"))
        .collect();
    format!(
        "// Generated by host/build.rs.\n\
         pub(crate) const ARCHS: [&str; {}] = {:?};\n\
         pub(crate) const FAMILIES: [Family; {}] = [\n{}];\n\
         pub(crate) const KERNELS: [(&str, u8); {}] = [\n{}];\n",
        tessera_ptx_build::ARCHS.len(),
        tessera_ptx_build::ARCHS,
        families.len(),
        families.concat(),
        rows.len(),
        rows.concat()
    )
}

/// `ptx` assembled for `arch` by `ptxas`, deflated; empty (the binary then JIT-compiles the
/// PTX) with a warning where `ptxas` fails, since the PTX alone is a complete build.
fn cubin(ptxas: &Path, ptx: &Path, arch: &str, name: &str) -> Vec<u8> {
    match tessera_ptx_build::assemble(ptxas, ptx, arch) {
        Ok(image) => miniz_oxide::deflate::compress_to_vec(&image, 6),
        Err(e) => {
            let first = e.to_string().lines().next().unwrap_or_default().to_string();
            println!("cargo::warning=no cubin {name} embedded (the PTX is): {first}");
            Vec::new()
        }
    }
}
