//! `kube-apiserver`: the Kubernetes API server (see the library's
//! `app::command`).

fn main() -> std::process::ExitCode {
    kube_apiserver::app::command::run(std::env::args_os())
}
