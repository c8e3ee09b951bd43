//! The command (upstream's `cmd/kube-apiserver/app.NewAPIServerCommand`
//! and `component-base/cli.Run`): the command line is parsed, completed
//! and validated (every error reported together, exit 1), logging is set
//! up (`component_base::logs`, upstream's `logsapi.ValidateAndApply`),
//! then the server chain is built and run.

use std::process::ExitCode;

use apimachinery::serializer;

use crate::options::{Options, VersionFlag};

/// Parses `args` (the program name first), then runs the server until it
/// stops; the exit code is upstream's: 0, or 1 for any error.
pub fn run<I, T>(args: I) -> ExitCode
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let opts = match Options::parse_from(args) {
        Ok(opts) => opts,
        Err(e) if e.use_stderr() => {
            // Upstream exits 1 on a bad command line (clap would use 2).
            let _ = e.print();
            return ExitCode::from(1);
        }
        Err(e) => e.exit(),
    };
    match &opts.version {
        VersionFlag::Off | VersionFlag::Override(_) => {}
        VersionFlag::Print => {
            println!("Kubernetes v1.37.0");
            return ExitCode::SUCCESS;
        }
        VersionFlag::Raw => {
            println!("{:#}", super::config::version_info());
            return ExitCode::SUCCESS;
        }
    }
    for warning in &opts.deprecation_warnings {
        eprintln!("{warning}");
    }
    let completed = opts.complete();
    let mut errors = completed.validate();
    errors.extend(completed.unsupported());
    if !errors.is_empty() {
        for e in &errors {
            eprintln!("Error: {e}");
        }
        return ExitCode::from(1);
    }
    let logs = match completed.logging().apply() {
        Ok(output) => output,
        Err(e) => {
            eprintln!("Error: setting up logging: {e}");
            return ExitCode::from(1);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_stack_size(serializer::THREAD_STACK_BYTES)
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("Error: starting the runtime: {e}");
            return ExitCode::from(1);
        }
    };
    let code = match runtime.block_on(super::run::run(completed)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!(error = %e, "server failed");
            eprintln!("Error: {e}");
            ExitCode::from(1)
        }
    };
    // Upstream's `defer logs.FlushLogs()`.
    logs.flush();
    code
}
