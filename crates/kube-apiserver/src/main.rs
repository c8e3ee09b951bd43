//! `kube-apiserver`: the Kubernetes API server (see the library's
//! `app::command`).

/// jemalloc rather than the system allocator: measured on this server's
/// GETs and creates, +12–18 % requests per CPU-second for ≈ 6 % more
/// memory (docs/benchmarks.md, "Allocator, linked"). Built without the
/// `jemalloc` feature, the system allocator serves (for heap profilers).
#[cfg(feature = "jemalloc")]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() -> std::process::ExitCode {
    kube_apiserver::app::command::run(std::env::args_os())
}
