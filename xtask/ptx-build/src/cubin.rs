//! Assembling the PTX ahead of time with NVIDIA's `ptxas`, where the build machine has one, so
//! that a binary loads machine code on the GPUs it was built for instead of waiting for the
//! driver to compile the PTX (minutes for the whole module on a cold driver cache). The PTX
//! stays embedded beside it for every other GPU and for drivers older than the `ptxas`.
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::{BuildError, err};

/// Where `cargo xtask build-ptx --check` keeps the `ptxas` it fetches, under
/// `target/cuda-tools` (the path inside PyPI's `nvidia-cuda-nvcc` wheel).
pub const FETCHED_PTXAS: &str = "nvidia/cu13/bin/ptxas";

/// Where a `ptxas` may be, in the order looked at: `$PTXAS`, `$CUDA_HOME/bin`, `$CUDA_PATH/bin`,
/// `/usr/local/cuda/bin`, each directory of `$PATH`, and under `cuda_tools` the copy that
/// `cargo xtask build-ptx --check` fetches ([`FETCHED_PTXAS`]).
pub fn find_ptxas(cuda_tools: &Path) -> Option<PathBuf> {
    ptxas_candidates(|k| std::env::var_os(k), cuda_tools)
        .into_iter()
        .find(|p| p.is_file())
}

/// [`find_ptxas`]'s places, in order, with `env` for the environment.
fn ptxas_candidates(env: impl Fn(&str) -> Option<OsString>, cuda_tools: &Path) -> Vec<PathBuf> {
    let env = |k: &str| env(k).filter(|v| !v.is_empty());
    let mut candidates: Vec<PathBuf> = Vec::new();
    candidates.extend(env("PTXAS").map(PathBuf::from));
    for home in ["CUDA_HOME", "CUDA_PATH"] {
        candidates.extend(env(home).map(|h| PathBuf::from(h).join("bin/ptxas")));
    }
    candidates.push(PathBuf::from("/usr/local/cuda/bin/ptxas"));
    if let Some(path) = env("PATH") {
        candidates.extend(std::env::split_paths(&path).map(|d| d.join("ptxas")));
    }
    candidates.push(cuda_tools.join(FETCHED_PTXAS));
    candidates
}

/// The SM version a CUDA cubin (an ELF image) was assembled for, such as 90 for `sm_90`, or
/// `None` when `image` is not one.
pub fn cubin_sm(image: &[u8]) -> Option<u32> {
    const EM_CUDA: u16 = 190;
    const ELFOSABI_CUDA: u8 = 0x41;
    // 64-bit little-endian ELF: the machine at byte 18, the flags at byte 48.
    if image.len() < 52 || image[..4] != *b"\x7fELF" || image[4] != 2 || image[5] != 1 {
        return None;
    }
    if image[7] != ELFOSABI_CUDA || u16::from_le_bytes([image[18], image[19]]) != EM_CUDA {
        return None;
    }
    let flags = u32::from_le_bytes([image[48], image[49], image[50], image[51]]);
    // ABI version 8 and later keep the SM in the flags' second byte, earlier ones in the first.
    Some(if image[8] >= 8 {
        flags >> 8 & 0xff
    } else {
        flags & 0xff
    })
}

/// FNV-1a over `bytes`: names a cubin after the PTX and the `ptxas` that made it.
fn fnv1a(seed: u64, bytes: &[u8]) -> u64 {
    bytes.iter().fold(seed, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// The cubin of `ptx` for `arch` assembled by `ptxas`, kept beside the PTX under a name made
/// from the PTX file's name, its text and `ptxas`'s path and size, so that a rebuild whose
/// kernels did not change reuses it.
pub fn assemble(ptxas: &Path, ptx: &Path, arch: &str) -> Result<Vec<u8>, BuildError> {
    let text = std::fs::read(ptx)
        .map_err(|e| BuildError(format!("cannot read {}: {e}", ptx.display())))?;
    let tool_size = std::fs::metadata(ptxas).map_or(0, |m| m.len());
    let key = fnv1a(
        fnv1a(0xcbf2_9ce4_8422_2325, &text),
        format!("{}\0{tool_size}\0{arch}", ptxas.display()).as_bytes(),
    );
    let Some(want) = arch.strip_prefix("sm_").and_then(|v| v.parse::<u32>().ok()) else {
        return err(format!("{arch:?} is not an architecture such as sm_90"));
    };
    let dir = ptx.parent().unwrap_or(Path::new("."));
    // Named after the PTX file (`tessera_kernels.ssb` for `tessera_kernels.ssb.ptx`), so that
    // the cubins of several PTX files in one directory are kept side by side.
    let stem = ptx
        .file_stem()
        .map_or("kernels".into(), |s| s.to_string_lossy());
    let cached = dir.join(format!("{stem}.{arch}.{key:016x}.cubin"));
    if let Ok(image) = std::fs::read(&cached)
        && cubin_sm(&image) == Some(want)
    {
        return Ok(image);
    }
    let partial = cached.with_extension("cubin.partial");
    // The driver's JIT options (its default -O3, one thread), so that the cubin is the code the
    // driver would have made of the PTX.
    let out = Command::new(ptxas)
        .arg(format!("-arch={arch}"))
        .arg("-o")
        .arg(&partial)
        .arg(ptx)
        .output()
        .map_err(|e| BuildError(format!("cannot run {}: {e}", ptxas.display())))?;
    if !out.status.success() {
        return err(format!(
            "{} rejected {} for {arch}:\n{}",
            ptxas.display(),
            ptx.display(),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let image = std::fs::read(&partial)
        .map_err(|e| BuildError(format!("cannot read {}: {e}", partial.display())))?;
    if cubin_sm(&image) != Some(want) {
        return err(format!(
            "{} wrote {}, which is not a cubin for {arch}",
            ptxas.display(),
            partial.display()
        ));
    }
    // The cubins of this file's earlier PTX go: each is as large as its machine code.
    let stale = format!("{stem}.{arch}.");
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with(&stale) && name.ends_with(".cubin") {
            let _ = std::fs::remove_file(entry.path());
        }
    }
    // Written whole under a temporary name, then renamed: a killed build leaves no torn cubin.
    std::fs::rename(&partial, &cached)
        .map_err(|e| BuildError(format!("cannot write {}: {e}", cached.display())))?;
    Ok(image)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 64-byte ELF header as ptxas writes one: `abi` the CUDA ABI version, `flags` e_flags.
    fn header(abi: u8, flags: u32) -> Vec<u8> {
        let mut h = vec![0u8; 64];
        h[..4].copy_from_slice(b"\x7fELF");
        (h[4], h[5], h[6], h[7], h[8]) = (2, 1, 1, 0x41, abi);
        h[18..20].copy_from_slice(&190u16.to_le_bytes());
        h[48..52].copy_from_slice(&flags.to_le_bytes());
        h
    }

    #[test]
    fn cubin_sm_reads_both_abi_layouts() {
        // ptxas 13.0's own header for sm_90 (ABI 8): flags 0x06005a04.
        assert_eq!(cubin_sm(&header(8, 0x0600_5a04)), Some(90));
        assert_eq!(cubin_sm(&header(8, 0x0600_5004)), Some(80));
        // ABI 7 (CUDA 11-12): the SM in the low byte.
        assert_eq!(cubin_sm(&header(7, 0x0050_0550)), Some(80));
    }

    #[test]
    fn cubin_sm_refuses_what_is_not_a_cubin() {
        assert_eq!(cubin_sm(b""), None);
        assert_eq!(
            cubin_sm(b"//\n// Generated by LLVM NVPTX Back-End\n.version 8.0"),
            None
        );
        let mut other = header(8, 0x0600_5a04);
        other[18] = 62; // x86-64
        assert_eq!(cubin_sm(&other), None);
        let mut linux = header(8, 0x0600_5a04);
        linux[7] = 0;
        assert_eq!(cubin_sm(&linux), None);
        assert_eq!(cubin_sm(&header(8, 0x0600_5a04)[..51]), None);
    }

    #[test]
    fn assemble_makes_and_keeps_a_cubin_per_arch() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let Some(ptxas) = find_ptxas(&root.join("target/cuda-tools")) else {
            // CI fetches ptxas (`cargo xtask build-ptx --check`) before its tests run.
            println!("SKIPPED assemble test: no ptxas on this machine");
            return;
        };
        let dir = std::env::temp_dir().join(format!("tessera-cubin-{}", std::process::id()));
        for (arch, sm) in [("sm_80", 80), ("sm_90", 90)] {
            let sub = dir.join(arch);
            std::fs::create_dir_all(&sub).unwrap();
            let ptx = sub.join("tessera_kernels.ptx");
            let text = format!(
                ".version 8.0\n.target {arch}\n.address_size 64\n.visible .entry noop() {{ ret; }}\n"
            );
            std::fs::write(&ptx, text).unwrap();
            let image = assemble(&ptxas, &ptx, arch).unwrap();
            assert_eq!(cubin_sm(&image), Some(sm), "{arch}");
            let kept: Vec<_> = std::fs::read_dir(&sub)
                .unwrap()
                .map(|e| e.unwrap().file_name().into_string().unwrap())
                .filter(|n| n.ends_with(".cubin"))
                .collect();
            assert_eq!(kept.len(), 1, "{arch}: {kept:?}");
            // The second call reads what the first kept (shortened here, to tell them apart).
            std::fs::write(sub.join(&kept[0]), &image[..image.len() - 1]).unwrap();
            let mut reread = image.clone();
            reread.pop();
            assert_eq!(assemble(&ptxas, &ptx, arch).unwrap(), reread, "{arch}");
            // Other PTX makes another cubin, in place of the first.
            std::fs::write(&ptx, std::fs::read_to_string(&ptx).unwrap() + "\n").unwrap();
            assert_eq!(assemble(&ptxas, &ptx, arch).unwrap(), image, "{arch}");
            let now = std::fs::read_dir(&sub)
                .unwrap()
                .filter(|e| {
                    e.as_ref()
                        .unwrap()
                        .path()
                        .extension()
                        .is_some_and(|x| x == "cubin")
                })
                .count();
            assert_eq!(now, 1, "{arch}");
            // Another PTX file in the same directory keeps its cubin beside this one's.
            let family = sub.join("tessera_kernels.ssb.ptx");
            std::fs::write(&family, std::fs::read(&ptx).unwrap()).unwrap();
            assert_eq!(assemble(&ptxas, &family, arch).unwrap(), image, "{arch}");
            assert_eq!(assemble(&ptxas, &ptx, arch).unwrap(), image, "{arch}");
            let mut kept: Vec<_> = std::fs::read_dir(&sub)
                .unwrap()
                .map(|e| e.unwrap().file_name().into_string().unwrap())
                .filter(|n| n.ends_with(".cubin"))
                .collect();
            kept.sort();
            assert_eq!(kept.len(), 2, "{arch}: {kept:?}");
            assert!(
                kept[0].starts_with(&format!("tessera_kernels.{arch}.")),
                "{kept:?}"
            );
            assert!(
                kept[1].starts_with(&format!("tessera_kernels.ssb.{arch}.")),
                "{kept:?}"
            );
        }
        std::fs::remove_dir_all(&dir).unwrap();
        // A PTX ptxas rejects is an error naming it.
        let bad = std::env::temp_dir().join(format!("tessera-bad-{}.ptx", std::process::id()));
        std::fs::write(&bad, ".version 8.0\n.target sm_90\nnot ptx\n").unwrap();
        let e = assemble(&ptxas, &bad, "sm_90").unwrap_err().to_string();
        assert!(e.contains("rejected") && e.contains("sm_90"), "{e}");
        let _ = std::fs::remove_file(&bad);
    }

    #[test]
    fn ptxas_is_looked_for_in_order_the_fetched_copy_last() {
        let vars = [
            ("PTXAS", "/opt/p/ptxas"),
            ("CUDA_HOME", "/opt/home"),
            ("CUDA_PATH", ""),
            ("PATH", "/usr/bin:/opt/bin"),
        ];
        let env = |k: &str| {
            vars.iter()
                .find(|(name, _)| *name == k)
                .map(|(_, v)| OsString::from(v))
        };
        let tools = Path::new("/w/target/cuda-tools");
        let want = [
            "/opt/p/ptxas",
            "/opt/home/bin/ptxas",
            "/usr/local/cuda/bin/ptxas",
            "/usr/bin/ptxas",
            "/opt/bin/ptxas",
            "/w/target/cuda-tools/nvidia/cu13/bin/ptxas",
        ];
        let got = ptxas_candidates(env, tools);
        assert_eq!(
            got,
            want.map(PathBuf::from),
            "an empty CUDA_PATH is no place"
        );
        let none = ptxas_candidates(|_| None, tools);
        assert_eq!(
            none,
            want[2..=2]
                .iter()
                .chain(&want[5..])
                .map(PathBuf::from)
                .collect::<Vec<_>>()
        );
    }

    #[test]
    fn find_ptxas_finds_the_fetched_copy() {
        let dir = std::env::temp_dir().join(format!("tessera-ptxas-{}", std::process::id()));
        let bin = dir.join(FETCHED_PTXAS);
        std::fs::create_dir_all(bin.parent().unwrap()).unwrap();
        std::fs::write(&bin, b"").unwrap();
        // Another ptxas (a CUDA toolkit's) may come first on this machine: some file is found.
        assert!(find_ptxas(&dir).is_some_and(|p| p.is_file()));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
