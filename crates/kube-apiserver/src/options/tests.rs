//! Tests of the public options API: parsing real command lines, defaults,
//! completion, aggregated validation, unsupported flags and `--help`.

use std::net::IpAddr;

use clap::error::ErrorKind;

use super::complete::TlsVersion;
use super::sets::spec::Kind;
use super::syntax::Cidr;
use super::*;

fn parse(args: &[&str]) -> Options {
    let argv = std::iter::once("kube-apiserver").chain(args.iter().copied());
    Options::parse_from(argv).unwrap_or_else(|err| panic!("{args:?}: {err}"))
}

fn parse_err(args: &[&str]) -> clap::Error {
    let argv = std::iter::once("kube-apiserver").chain(args.iter().copied());
    match Options::parse_from(argv) {
        Ok(_) => panic!("{args:?} should not parse"),
        Err(err) => err,
    }
}

fn secs(seconds: i64) -> GoDuration {
    GoDuration::from_nanos(seconds * 1_000_000_000)
}

/// What `--help` prints.
fn full_help() -> String {
    command::command(&flags::default_data_dir().to_string_lossy())
        .render_help()
        .to_string()
}

fn messages(errors: &[OptionError]) -> Vec<String> {
    errors.iter().map(ToString::to_string).collect()
}

#[test]
fn every_table_default_parses_and_names_are_unique() {
    let mut names = std::collections::BTreeSet::new();
    for (_, spec) in sets::all() {
        assert!(names.insert(spec.name), "duplicate flag --{}", spec.name);
        assert!(
            flags::default_value(spec, "/data").is_ok(),
            "default of --{} does not parse",
            spec.name
        );
        assert!(!spec.help.is_empty(), "--{} has no help", spec.name);
    }
    for name in support::IMPLEMENTED
        .iter()
        .chain(support::PARTIAL.iter().map(|(name, _)| name))
        .chain(support::NO_OPS)
        .chain(support::DEFAULT_IN_EFFECT)
        .chain(support::NOT_IN_EFFECT.iter().map(|(name, _)| name))
    {
        assert!(
            sets::all().any(|(_, spec)| spec.name == *name),
            "support list names unknown flag --{name}"
        );
    }
}

#[test]
fn defaults_match_upstream() {
    let options = parse(&[]);
    assert_eq!(options.secure_serving.secure_port, 6443);
    assert_eq!(
        options.secure_serving.bind_address,
        IpAddr::from([0, 0, 0, 0])
    );
    assert_eq!(
        options.secure_serving.cert_dir,
        PathBuf::from("/var/run/kubernetes")
    );
    assert_eq!(options.secure_serving.http2_max_streams_per_connection, 0);
    assert_eq!(options.etcd.prefix, "/registry");
    assert_eq!(options.etcd.compaction_interval, secs(300));
    assert_eq!(options.etcd.count_metric_poll_period, secs(60));
    assert_eq!(
        options.etcd.storage_media_type,
        "application/vnd.kubernetes.protobuf"
    );
    assert!(options.etcd.watch_cache);
    assert!(options.etcd.servers.is_empty());
    assert_eq!(options.generic.max_requests_inflight, 400);
    assert_eq!(options.generic.max_mutating_requests_inflight, 200);
    assert_eq!(options.generic.request_timeout, secs(60));
    assert_eq!(options.generic.min_request_timeout, 1800);
    assert_eq!(
        options.service_node_port_range,
        PortRange {
            base: 30000,
            size: 2768
        }
    );
    assert_eq!(options.verbosity, 0);
    assert_eq!(options.version, VersionFlag::Off);
    assert!(options.data_dir.ends_with("kube-apiserver"));
    assert!(!options.flags.explicit("secure-port"));
    let event_ttl = options.flags.get("event-ttl").map(|flag| &flag.value);
    assert_eq!(event_ttl, Some(&Value::Duration(secs(3600))));
}

#[test]
fn completion_derives_upstream_defaults() {
    let completed = parse(&[]).complete();
    assert_eq!(
        completed.service_ip_ranges.primary.to_string(),
        "10.0.0.0/24"
    );
    assert_eq!(
        completed.service_ip_ranges.api_server_service_ip,
        IpAddr::from([10, 0, 0, 1])
    );
    assert_eq!(completed.authorization_modes, ["Node", "RBAC"]);
    assert_eq!(completed.http2_max_concurrent_streams, 100);
    assert!(matches!(completed.storage, StorageBackend::Embedded { .. }));
    assert!(!completed.advertise_address.is_unspecified());
    assert_eq!(
        completed.external_hostname,
        completed.advertise_address.to_string()
    );
    assert!(
        completed.validate().is_empty(),
        "{:?}",
        completed.validate()
    );
}

#[test]
fn completion_uses_given_values() {
    let completed = parse(&[
        "--bind-address=127.0.0.2",
        "--etcd-servers=http://127.0.0.1:2379,http://127.0.0.1:22379",
        "--service-cluster-ip-range=10.96.0.0/12,fd00::/108",
        "--runtime-config=api/v1=true,apps/v1=false,api/legacy=true",
        "--feature-gates=WatchList=false",
        "--authorization-mode=AlwaysAllow",
    ])
    .complete();
    assert_eq!(completed.authorization_modes, ["AlwaysAllow"]);
    assert_eq!(completed.advertise_address, IpAddr::from([127, 0, 0, 2]));
    assert_eq!(
        completed.storage,
        StorageBackend::Etcd {
            servers: vec![
                "http://127.0.0.1:2379".into(),
                "http://127.0.0.1:22379".into()
            ]
        }
    );
    assert_eq!(
        Some(completed.service_ip_ranges.primary),
        "10.96.0.0/12".parse::<Cidr>().ok()
    );
    assert_eq!(
        completed
            .service_ip_ranges
            .secondary
            .map(|cidr| cidr.to_string()),
        Some("fd00::/108".to_string())
    );
    assert_eq!(
        completed.runtime_config.keys().collect::<Vec<_>>(),
        vec!["/v1", "apps/v1"]
    );
    assert_eq!(completed.feature_gates.get("WatchList"), Some(&false));
    assert_eq!(completed.tls_min_version, None);
    assert!(
        completed.validate().is_empty(),
        "{:?}",
        completed.validate()
    );
    let tls = parse(&["--tls-min-version=VersionTLS13"]).complete();
    assert_eq!(tls.tls_min_version, Some(TlsVersion::Tls13));
}

#[test]
fn value_syntaxes_parse_from_the_command_line() {
    let options = parse(&[
        "--secure-port",
        "8443",
        "--request-timeout=30s",
        "--livez-grace-period=1h",
        "--etcd-servers=http://a:2379",
        "--etcd-servers",
        "http://b:2379",
        "--service-node-port-range=20000+999",
        "--runtime-config=apps/v1=true",
        "--runtime-config",
        "batch/v1=false",
        "--advertise-address=192.168.1.10",
        "--watch-cache=false",
        "-v",
        "4",
        "--version=raw",
        "--tls_min_version=VersionTLS12",
        "--cors-allowed-origins=//example.com(:|$),^https://a.test$",
    ]);
    assert_eq!(options.secure_serving.secure_port, 8443);
    assert_eq!(options.generic.request_timeout, secs(30));
    assert_eq!(options.generic.livez_grace_period, secs(3600));
    assert_eq!(options.etcd.servers, vec!["http://a:2379", "http://b:2379"]);
    assert_eq!(
        options.service_node_port_range,
        PortRange {
            base: 20000,
            size: 1000
        }
    );
    assert_eq!(options.runtime_config.len(), 2);
    assert_eq!(
        options.generic.advertise_address,
        Some(IpAddr::from([192, 168, 1, 10]))
    );
    assert!(!options.etcd.watch_cache);
    assert_eq!(options.verbosity, 4);
    assert_eq!(options.version, VersionFlag::Raw);
    assert_eq!(options.secure_serving.tls_min_version, "VersionTLS12");
    assert_eq!(options.generic.cors_allowed_origins.len(), 2);
    assert!(options.flags.explicit("secure-port"));
    assert_eq!(parse(&["--version"]).version, VersionFlag::Print);
    assert_eq!(
        parse(&["--secure-port=1", "--secure-port=2"])
            .secure_serving
            .secure_port,
        2
    );
}

#[test]
fn bad_values_are_rejected_while_parsing() {
    let err = parse_err(&["--secure-port=abc"]);
    assert_eq!(err.kind(), ErrorKind::InvalidValue);
    assert!(err.to_string().contains("--secure-port"), "{err}");
    for args in [
        &["--request-timeout=5"][..],
        &["--bind-address=1.2.3"],
        &["--service-node-port-range=9-1"],
        &["--watch-cache=maybe"],
        &["--runtime-config=a=b", "--oidc-required-claim=novalue"],
        &["--no-such-flag"],
        &["stray-argument"],
        &["--watch-cache", "false"],
    ] {
        parse_err(args);
    }
}

#[test]
fn validation_reports_every_problem_at_once() {
    let completed = parse(&[
        "--secure-port=0",
        "--max-requests-inflight=-1",
        "--request-timeout=-1s",
        "--storage-media-type=text/plain",
        "--authorization-mode=AlwaysAllow,Magic",
        "--service-cluster-ip-range=10.0.0.0/30",
        "--feature-gates=NoSuchGate=true",
        "--tls-min-version=VersionTLS99",
        "--strict-transport-security-directives=max-age",
        "--cors-allowed-origins=example.com",
    ])
    .complete();
    let errors = completed.validate();
    let flags: Vec<&str> = errors.iter().map(|error| error.flag).collect();
    for flag in [
        "secure-port",
        "max-requests-inflight",
        "request-timeout",
        "storage-media-type",
        "authorization-mode",
        "service-cluster-ip-range",
        "feature-gates",
        "tls-min-version",
        "strict-transport-security-directives",
        "cors-allowed-origins",
    ] {
        assert!(flags.contains(&flag), "no error for --{flag} in {errors:?}");
    }
    assert!(messages(&errors)
        .contains(&"--feature-gates: unrecognized feature gate: NoSuchGate".to_string()));
    assert!(messages(&errors)
        .iter()
        .all(|message| message.starts_with("--")));
}

#[test]
fn unsupported_flags_stop_startup_only_when_changed() {
    let completed = parse(&[
        "--peer-advertise-ip=10.0.0.1",
        "--profiling=true",
        "--event-ttl=60m",
        "--authorization-mode=RBAC,Node",
        "--enable-admission-plugins=ImagePolicyWebhook",
    ])
    .complete();
    let unsupported = messages(&completed.unsupported());
    assert_eq!(
        unsupported,
        vec!["--peer-advertise-ip: not supported yet by this server".to_string(),]
    );
    assert!(
        completed.validate().is_empty(),
        "{:?}",
        completed.validate()
    );
    let accepted = parse(&["--authorization-mode=AlwaysAllow", "--cloud-provider="]).complete();
    assert!(accepted.validate().is_empty(), "{:?}", accepted.validate());
    assert!(
        accepted.unsupported().is_empty(),
        "{:?}",
        accepted.unsupported()
    );
    let deprecated = parse(&["--apiserver-count=1", "--enable-logs-handler=false"]);
    assert_eq!(
        deprecated.deprecation_warnings,
        vec![
            "Flag --apiserver-count has been deprecated, apiserver-count is deprecated and will be removed in a future version.".to_string(),
            "Flag --enable-logs-handler has been deprecated, Log handler functionality is deprecated".to_string(),
        ]
    );
    assert!(parse(&[]).deprecation_warnings.is_empty());
    assert!(!parse(&["--max-connection-bytes-per-sec=1"])
        .complete()
        .unsupported()
        .is_empty());
    let cbor = parse(&["--feature-gates=CBORServingAndStorage=true"]).complete();
    assert!(messages(&cbor.unsupported()).is_empty());
}

#[test]
fn help_lists_sections_in_upstream_order() {
    let err = parse_err(&["--help"]);
    assert_eq!(err.kind(), ErrorKind::DisplayHelp);
    let help = err.to_string();
    assert!(help.contains("Usage:\n  kube-apiserver [flags]"), "{help}");
    let mut last = 0;
    for (section, _) in sets::SETS {
        let heading = format!("\n{}:\n", section.heading());
        let position = help[last..]
            .find(&heading)
            .map(|offset| offset + last)
            .unwrap_or_else(|| panic!("{heading:?} missing or out of order"));
        last = position;
    }
    assert_eq!(help, full_help());
}

#[test]
fn help_shows_flags_like_pflag() {
    let help = full_help();
    let line = |flag: &str| {
        help.lines()
            .find(|line| line.trim_start().starts_with(flag))
            .unwrap_or_else(|| panic!("{flag} missing from help"))
            .to_string()
    };
    assert!(line("--secure-port int ").ends_with("(default 6443)"));
    assert!(line("--etcd-servers strings ").contains("embedded store"));
    assert!(line("--request-timeout duration ").ends_with("(default 1m0s)"));
    assert!(line("--etcd-prefix string ").ends_with("(default \"/registry\")"));
    assert!(line("--feature-gates colonSeparatedMultimapStringString ").len() > 40);
    assert!(line("--watch-cache ").ends_with("(default true)"));
    assert!(line("--authorization-mode strings ").contains("Node,RBAC when neither"));
    assert!(
        line("--service-node-port-range <a string in the form 'N1-N2'> ")
            .ends_with("(default 30000-32767)")
    );
    assert!(line("-v, --v Level ").contains("verbosity"));
    assert!(line("-h, --help ").contains("help for kube-apiserver"));
    assert!(line("--version version[=true] ").contains("--version=raw"));
    assert!(line("--enable-logs-handler ")
        .ends_with("(DEPRECATED: Log handler functionality is deprecated)"));
    assert!(line("--data-dir string ").contains("(default \""));
    assert!(help.contains("   kube:WatchList=true|false (BETA - default=true)\n"));
    assert!(
        !help.contains("--apiserver-count"),
        "hidden deprecated flags stay out of help"
    );
    // Descriptions start in one column within a section.
    let column = |flag: &str| {
        let text = line(flag);
        let name_end = text.find(flag).unwrap_or(0) + flag.len();
        name_end + text[name_end..].len() - text[name_end..].trim_start().len()
    };
    assert_eq!(column("--secure-port int"), column("--bind-address ip"));
    let types_shown: Vec<&str> = sets::all()
        .filter(|(_, spec)| !spec.hidden && spec.kind == Kind::StringSlice)
        .map(|(_, spec)| spec.name)
        .collect();
    for name in types_shown {
        line(&format!("--{name} strings "));
    }
}
