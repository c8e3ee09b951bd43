//! `kube-apiserver`: the Kubernetes API server (see the library's
//! `app::command`).

/// jemalloc rather than the system allocator: measured on this server's
/// GETs and creates, +12–18 % requests per CPU-second for ≈ 6 % more
/// memory (docs/benchmarks.md, "Allocator, linked"). Built without the
/// `jemalloc` feature, the system allocator serves (for heap profilers).
#[cfg(feature = "jemalloc")]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// jemalloc's options (its `malloc_conf`, read at its start; the
/// `_RJEM_MALLOC_CONF` environment variable still overrides them): a
/// background thread gives memory freed by requests back to the system
/// within about a second (jemalloc's default waits 10 s, and only while
/// the process allocates), as Go's scavenger does for upstream. Measured
/// in docs/benchmarks.md ("jemalloc returns freed memory sooner").
#[cfg(feature = "jemalloc")]
#[export_name = "_rjem_malloc_conf"]
static MALLOC_CONF: &[u8; 60] = b"background_thread:true,dirty_decay_ms:1000,muzzy_decay_ms:0\0";

fn main() -> std::process::ExitCode {
    kube_apiserver::app::command::run(std::env::args_os())
}
