//! Checks made before a long run starts, so that it fails at once with the value and the fix
//! instead of after minutes of work: an output file that cannot be written, a data set larger
//! than the memory or disk that will hold it.
use std::path::Path;

use crate::{Error, Result};

/// Checks that `path` can be created or replaced as a file, without touching it: its directory
/// exists and accepts a new file (a probe file is created and removed there), and `path` is not
/// a directory. `flag` names the option that gave the path.
pub fn check_output_file(path: &Path, flag: &str) -> Result<()> {
    let shown = path.display();
    if path.is_dir() {
        return Err(Error::invalid(format!(
            "{flag} {shown}: is a directory; give a file name such as {}",
            path.join("out.json").display()
        )));
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    if !dir.is_dir() {
        return Err(Error::invalid(format!(
            "{flag} {shown}: directory {} does not exist; create it first (mkdir -p {0})",
            dir.display()
        )));
    }
    let probe = dir.join(format!(".tessera-write-probe-{}", std::process::id()));
    std::fs::File::create(&probe).map_err(|e| {
        Error::invalid(format!(
            "{flag} {shown}: cannot create files in {}: {e}",
            dir.display()
        ))
    })?;
    // The probe is ours and empty; failing to remove it is harmless.
    let _ = std::fs::remove_file(&probe);
    Ok(())
}

/// Memory tessera plans with: `TESSERA_MEMORY_BYTES` when set (to share a machine, or to
/// try the checks), else what the operating system can give to a new allocation without
/// swapping (Linux: `MemAvailable` of `/proc/meminfo`); `None` where unknown.
pub fn available_memory() -> Option<u64> {
    if let Some(bytes) = std::env::var("TESSERA_MEMORY_BYTES")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        return Some(bytes);
    }
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// Bytes free for an unprivileged user on the file system that holds `path` (or its nearest
/// existing ancestor); `None` where unknown.
pub fn available_disk(path: &Path) -> Option<u64> {
    let existing = path.ancestors().find(|p| p.exists())?;
    let c = std::ffi::CString::new(existing.as_os_str().as_encoded_bytes()).ok()?;
    let mut st = std::mem::MaybeUninit::<libc::statvfs>::uninit();
    // SAFETY: `c` is a NUL-terminated path and `st` points to writable memory of the size
    // statvfs fills; it is read only after statvfs reported success.
    let rc = unsafe { libc::statvfs(c.as_ptr(), st.as_mut_ptr()) };
    if rc != 0 {
        return None;
    }
    // SAFETY: statvfs returned 0, so it initialised `st`.
    let st = unsafe { st.assume_init() };
    // The field types differ between targets (u32 on some 32-bit ones).
    #[allow(clippy::unnecessary_cast)]
    Some(st.f_bavail as u64 * st.f_frsize as u64)
}

/// Refuses a run that needs `need` bytes of memory when the machine has less available.
/// `what` says what needs it, `fix` what the user can do instead.
pub fn check_memory(need: u64, what: &str, fix: &str) -> Result<()> {
    match available_memory() {
        Some(have) if have < need => Err(Error::invalid(format!(
            "{what} needs about {} of memory, this machine has {} available; {fix}",
            gib(need),
            gib(have)
        ))),
        _ => Ok(()),
    }
}

/// Refuses a run that writes `need` bytes under `dir` when its file system has less free.
pub fn check_disk(dir: &Path, need: u64, what: &str, fix: &str) -> Result<()> {
    match available_disk(dir) {
        Some(have) if have < need => Err(Error::invalid(format!(
            "{what} needs about {} of disk under {}, its file system has {} free; {fix}",
            gib(need),
            dir.display(),
            gib(have)
        ))),
        _ => Ok(()),
    }
}

/// `bytes` as GiB with one decimal (MiB below one GiB), for messages.
pub fn gib(bytes: u64) -> String {
    if bytes >= 1 << 30 {
        format!("{:.1} GiB", bytes as f64 / (1u64 << 30) as f64)
    } else {
        format!("{:.1} MiB", bytes as f64 / (1u64 << 20) as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_file_checks_name_the_path_and_the_fix() {
        let dir = std::env::temp_dir().join(format!("tessera-preflight-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        assert!(check_output_file(&dir.join("r.json"), "--json").is_ok());
        assert!(
            !dir.join("r.json").exists(),
            "the check must not create the file"
        );
        let e = check_output_file(&dir.join("no/such/r.json"), "--json").unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains("--json") && msg.contains("does not exist"),
            "{msg}"
        );
        assert!(msg.contains("mkdir -p"), "{msg}");
        let e = check_output_file(&dir, "--json").unwrap_err().to_string();
        assert!(e.contains("is a directory"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn memory_and_disk_are_known_on_linux_and_refuse_the_impossible() {
        if cfg!(target_os = "linux") {
            assert!(available_memory().is_some_and(|m| m > 0));
            assert!(available_disk(Path::new("/no/such/dir")).is_some());
        }
        let e = check_memory(u64::MAX / 2, "SF 1e9", "use a smaller --sf").unwrap_err();
        assert!(e.to_string().contains("use a smaller --sf"), "{e}");
        let e = check_disk(&std::env::temp_dir(), u64::MAX / 2, "x", "free space").unwrap_err();
        assert!(e.to_string().contains("free space"), "{e}");
    }
}
