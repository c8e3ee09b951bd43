//! Helpers shared by the fuzz targets: how one fuzzer input becomes the
//! several inputs some parsers take.

/// The input before and after its first NUL byte (the second part is empty
/// when there is none). Text formats never hold a NUL, so seeds for
/// two-document targets are written as `first\0second`.
pub fn halves(data: &[u8]) -> (&[u8], &[u8]) {
    match data.iter().position(|&b| b == 0) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &[]),
    }
}

/// The first byte as a choice among `n` options, and the rest.
pub fn choose(data: &[u8], n: usize) -> (usize, &[u8]) {
    match data.split_first() {
        Some((&b, rest)) => (usize::from(b) % n, rest),
        None => (0, data),
    }
}

/// The kinds (group, version, kind) the merge targets try: a flat one,
/// one with associative lists everywhere, one with nested structs and
/// lists, one with a map-typed list, and one without a schema.
pub const KINDS: &[(&str, &str, &str)] = &[
    ("", "v1", "ConfigMap"),
    ("", "v1", "Pod"),
    ("apps", "v1", "Deployment"),
    ("", "v1", "Service"),
    ("example.com", "v1", "Untyped"),
];

/// The kind the first byte picks from [`KINDS`], and the rest.
pub fn kind(data: &[u8]) -> ((&'static str, &'static str, &'static str), &[u8]) {
    let (i, rest) = choose(data, KINDS.len());
    (KINDS[i], rest)
}

/// Runs `f` where the server runs request decoding: on a thread with the
/// server's stack (`serializer::THREAD_STACK_BYTES`), deep enough for every
/// recursive walk of a tree nested to upstream's 10,000 levels. libFuzzer's
/// main thread has far less, so a target that decodes JSON or YAML would
/// report overflows the server cannot have. A panic on that thread still
/// aborts the process (libfuzzer-sys's panic hook), which is the crash
/// libFuzzer records.
pub fn on_server_stack<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    std::thread::scope(|scope| {
        let worker = std::thread::Builder::new()
            .stack_size(apimachinery::serializer::THREAD_STACK_BYTES)
            .spawn_scoped(scope, f)
            .expect("a decoding thread starts");
        match worker.join() {
            Ok(result) => result,
            Err(panic) => std::panic::resume_unwind(panic),
        }
    })
}
