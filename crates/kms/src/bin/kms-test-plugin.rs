//! `kms-test-plugin`: serves [`kms::plugin::LocalKeyPlugin`] on a unix
//! socket until SIGTERM or SIGINT, for end-to-end tests and local runs of
//! KMS v2 encryption at rest. Not a real KMS: its master key is fixed.
//!
//!     kms-test-plugin --socket /run/kms.sock [--key-id key-1]

use std::path::PathBuf;
use std::process::ExitCode;

use kms::plugin::LocalKeyPlugin;

/// The fixed master key; every key ID's key derives from it.
const MASTER_KEY: [u8; 32] = *b"kms-test-plugin master key 0001!";

fn usage() -> ExitCode {
    eprintln!("usage: kms-test-plugin --socket PATH [--key-id ID]");
    ExitCode::from(2)
}

async fn stop_signal() {
    let Ok(mut term) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
    else {
        let _ = tokio::signal::ctrl_c().await;
        return;
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = tokio::signal::ctrl_c() => {}
    }
}

fn main() -> ExitCode {
    let mut socket: Option<PathBuf> = None;
    let mut key_id = "key-1".to_owned();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) => (f.to_owned(), Some(v.to_owned())),
            None => (arg, None),
        };
        let Some(value) = inline.or_else(|| args.next()) else {
            return usage();
        };
        match flag.as_str() {
            "--socket" => socket = Some(PathBuf::from(value)),
            "--key-id" => key_id = value,
            _ => return usage(),
        }
    }
    let Some(socket) = socket else {
        return usage();
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("kms-test-plugin: {e}");
            return ExitCode::FAILURE;
        }
    };
    let plugin = LocalKeyPlugin::new(MASTER_KEY, &key_id);
    match runtime.block_on(plugin.serve(&socket, stop_signal())) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("kms-test-plugin: {e}");
            ExitCode::FAILURE
        }
    }
}
