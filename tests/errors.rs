//! Errors that need no kernel: limits and device selection.
mod common;
use tessera::{Error, Gpu, MAX_COLUMN_LEN, runtime};

fn column_length_limit_is_enforced() {
    assert!(runtime::check_len(MAX_COLUMN_LEN).is_ok());
    let e = runtime::check_len(MAX_COLUMN_LEN + 1).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)));
    assert!(
        e.to_string()
            .contains("4294967296 items exceeds the limit of 4294967295"),
        "{e}"
    );
}

fn oversized_allocation_is_refused_before_the_driver(gpu: &tessera::Gpu) {
    let e = gpu.zeros::<i32>(MAX_COLUMN_LEN + 1);
    assert!(matches!(e, Err(Error::InvalidArgument(_))));
}

fn out_of_memory_is_reported_as_such(gpu: &tessera::Gpu) {
    // 2^32 - 1 f64 items = 32 GiB at a time, many times over the device's memory.
    let held: Result<Vec<_>, _> = (0..8).map(|_| gpu.zeros::<f64>(MAX_COLUMN_LEN)).collect();
    match held {
        Err(Error::OutOfMemory { bytes }) => assert_eq!(bytes, MAX_COLUMN_LEN * 8),
        Err(e) => panic!("expected OutOfMemory, got {e}"),
        Ok(_) => panic!("256 GiB allocated: the device is larger than this test assumes"),
    }
}

fn missing_device_is_named() {
    match Gpu::with_device(4096) {
        Err(Error::NoDriver) => eprintln!("no driver here: the error path checked is NoDriver"),
        Err(Error::NoDevice(m)) => assert!(m.contains("device 4096 requested"), "{m}"),
        other => panic!("expected an error, got {other:?}"),
    }
}

fn no_driver_or_device_is_a_clean_error_not_a_panic() {
    // On machines without a GPU this exercises the driver probe; with one it opens the GPU.
    match Gpu::new() {
        Ok(g) => assert!(!g.name().is_empty()),
        Err(e) => assert!(matches!(e, Error::NoDriver | Error::NoDevice(_)), "{e}"),
    }
}

/// A file's I/O and parse errors keep their cause for `source()`, and name the file.
fn io_and_parse_errors_keep_their_source() {
    use std::error::Error as _;
    let dir = std::env::temp_dir().join(format!("tessera-errors-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    // No .tbl files: an I/O error on the first table, with the OS error as its source.
    let e = tessera::ssb::tbl::load_tbl_dir(&dir, false).unwrap_err();
    assert!(matches!(e, Error::Io { .. }), "{e:?}");
    let io = e.source().and_then(|s| s.downcast_ref::<std::io::Error>());
    assert_eq!(
        io.map(|s| s.kind()),
        Some(std::io::ErrorKind::NotFound),
        "{e:?}"
    );
    assert!(e.to_string().contains(".tbl"), "{e}");
    // A data directory whose meta.json is not JSON: a parse error with serde's as source.
    std::fs::write(dir.join("meta.json"), "{ not json").unwrap();
    let e = tessera::ssb::format::read_dir(&dir).unwrap_err();
    assert!(matches!(e, Error::Parse { .. }), "{e:?}");
    assert!(
        e.source().is_some() && e.to_string().contains("meta.json"),
        "{e}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

harness! {
    gpu: [
        oversized_allocation_is_refused_before_the_driver,
        out_of_memory_is_reported_as_such,
    ],
    cpu: [
        column_length_limit_is_enforced,
        missing_device_is_named,
        no_driver_or_device_is_a_clean_error_not_a_panic,
        io_and_parse_errors_keep_their_source,
    ],
}
