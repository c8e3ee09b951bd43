//! Tests of `ensure_pki` against real temporary directories.

use std::fs;
use std::os::unix::fs::PermissionsExt;

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use x509_parser::extensions::GeneralName;

use super::*;

fn mode(path: &Path) -> u32 {
    fs::metadata(path).unwrap().permissions().mode() & 0o777
}

fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap()
}

/// DNS names and IPs of a PEM certificate's SAN extension.
fn sans_of(pem: &str) -> (Vec<String>, Vec<IpAddr>) {
    let (_, parsed) = x509_parser::pem::parse_x509_pem(pem.as_bytes()).unwrap();
    let cert = parsed.parse_x509().unwrap();
    let ext = cert.subject_alternative_name().unwrap().unwrap();
    let mut dns = Vec::new();
    let mut ips = Vec::new();
    for name in &ext.value.general_names {
        match name {
            GeneralName::DNSName(d) => dns.push((*d).to_string()),
            GeneralName::IPAddress(b) => ips.push(match b.len() {
                4 => IpAddr::from(<[u8; 4]>::try_from(*b).unwrap()),
                _ => IpAddr::from(<[u8; 16]>::try_from(*b).unwrap()),
            }),
            _ => {}
        }
    }
    (dns, ips)
}

fn subject_of(pem: &str) -> (Vec<String>, Vec<String>) {
    let (_, parsed) = x509_parser::pem::parse_x509_pem(pem.as_bytes()).unwrap();
    let cert = parsed.parse_x509().unwrap();
    let cn = cert
        .subject()
        .iter_common_name()
        .map(|a| a.as_str().unwrap().to_string())
        .collect();
    let orgs = cert
        .subject()
        .iter_organization()
        .map(|a| a.as_str().unwrap().to_string())
        .collect();
    (cn, orgs)
}

fn options() -> PkiOptions {
    PkiOptions {
        ip_addresses: vec!["0.0.0.0".parse().unwrap(), "192.0.2.10".parse().unwrap()],
        dns_names: vec!["node-1".into()],
        service_ip: Some("10.96.0.1".parse().unwrap()),
        ..PkiOptions::default()
    }
}

#[test]
fn generates_everything_with_expected_names_and_permissions() {
    let dir = tempfile::tempdir().unwrap();
    let pki = ensure_pki(dir.path(), &options()).unwrap();

    let (dns, ips) = sans_of(&read(&pki.serving_cert));
    for want in [
        "localhost",
        "kubernetes",
        "kubernetes.default",
        "kubernetes.default.svc",
        "kubernetes.default.svc.cluster.local",
        "node-1",
    ] {
        assert!(
            dns.iter().any(|d| d == want),
            "missing DNS SAN {want}: {dns:?}"
        );
    }
    for want in ["127.0.0.1", "::1", "10.96.0.1", "192.0.2.10"] {
        let want: IpAddr = want.parse().unwrap();
        assert!(ips.contains(&want), "missing IP SAN {want}: {ips:?}");
    }
    assert!(!ips.iter().any(IpAddr::is_unspecified));

    let (cn, orgs) = subject_of(&read(&pki.admin_cert));
    assert_eq!(cn, [ADMIN_USER]);
    assert_eq!(orgs, [ADMIN_GROUP]);

    for key in [
        &pki.ca_key,
        &pki.serving_key,
        &pki.admin_key,
        &pki.sa_key,
        &pki.kubeconfig,
    ] {
        assert_eq!(mode(key), 0o600, "{}", key.display());
    }
    for public in [
        &pki.ca_cert,
        &pki.serving_cert,
        &pki.admin_cert,
        &pki.sa_pub,
    ] {
        assert_eq!(mode(public), 0o644, "{}", public.display());
    }
    assert_eq!(mode(pki.ca_cert.parent().unwrap()), 0o700);
    assert_eq!(mode(dir.path()), 0o700);
    assert!(read(&pki.sa_pub).starts_with("-----BEGIN PUBLIC KEY-----"));
    assert!(read(&pki.sa_key).starts_with("-----BEGIN PRIVATE KEY-----"));
}

#[test]
fn second_call_reuses_existing_material() {
    let dir = tempfile::tempdir().unwrap();
    let first = ensure_pki(dir.path(), &options()).unwrap();
    let snapshot: Vec<String> = [
        &first.ca_cert,
        &first.ca_key,
        &first.serving_cert,
        &first.serving_key,
        &first.admin_cert,
        &first.admin_key,
        &first.sa_key,
        &first.sa_pub,
        &first.kubeconfig,
    ]
    .into_iter()
    .map(|p| read(p))
    .collect();

    // A key, the kubeconfig and the directories loosened by hand are
    // tightened again.
    fs::set_permissions(&first.sa_key, fs::Permissions::from_mode(0o644)).unwrap();
    fs::set_permissions(&first.kubeconfig, fs::Permissions::from_mode(0o644)).unwrap();
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o755)).unwrap();
    let pki_dir = first.ca_cert.parent().unwrap();
    fs::set_permissions(pki_dir, fs::Permissions::from_mode(0o755)).unwrap();
    let second = ensure_pki(dir.path(), &options()).unwrap();
    assert_eq!(first, second);
    let again: Vec<String> = [
        &second.ca_cert,
        &second.ca_key,
        &second.serving_cert,
        &second.serving_key,
        &second.admin_cert,
        &second.admin_key,
        &second.sa_key,
        &second.sa_pub,
        &second.kubeconfig,
    ]
    .into_iter()
    .map(|p| read(p))
    .collect();
    assert_eq!(snapshot, again);
    assert_eq!(mode(&second.sa_key), 0o600);
    assert_eq!(mode(&second.kubeconfig), 0o600);
    assert_eq!(mode(dir.path()), 0o700);
    assert_eq!(mode(pki_dir), 0o700);
}

#[test]
fn new_names_reissue_only_the_serving_certificate() {
    let dir = tempfile::tempdir().unwrap();
    let first = ensure_pki(dir.path(), &options()).unwrap();
    let ca = read(&first.ca_cert);
    let admin = read(&first.admin_cert);
    let serving = read(&first.serving_cert);

    let mut opts = options();
    opts.ip_addresses.push("198.51.100.7".parse().unwrap());
    let second = ensure_pki(dir.path(), &opts).unwrap();
    assert_eq!(read(&second.ca_cert), ca);
    assert_eq!(read(&second.admin_cert), admin);
    let reissued = read(&second.serving_cert);
    assert_ne!(reissued, serving);
    let (_, ips) = sans_of(&reissued);
    assert!(ips.contains(&"198.51.100.7".parse().unwrap()));
}

#[test]
fn replaced_ca_reissues_leaves_but_keeps_signing_key() {
    let dir = tempfile::tempdir().unwrap();
    let first = ensure_pki(dir.path(), &options()).unwrap();
    let serving = read(&first.serving_cert);
    let admin = read(&first.admin_cert);
    let sa_key = read(&first.sa_key);
    fs::remove_file(&first.ca_cert).unwrap();
    fs::remove_file(&first.ca_key).unwrap();

    let second = ensure_pki(dir.path(), &options()).unwrap();
    assert_ne!(read(&second.serving_cert), serving);
    assert_ne!(read(&second.admin_cert), admin);
    assert_eq!(read(&second.sa_key), sa_key);
}

#[test]
fn kubeconfig_host_is_a_serving_name() {
    let dir = tempfile::tempdir().unwrap();
    let opts = PkiOptions {
        server_host: "apiserver.example".into(),
        ..options()
    };
    let pki = ensure_pki(dir.path(), &opts).unwrap();
    let (dns, _) = sans_of(&read(&pki.serving_cert));
    assert!(dns.iter().any(|d| d == "apiserver.example"), "{dns:?}");
}

#[test]
fn lone_ca_certificate_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let first = ensure_pki(dir.path(), &options()).unwrap();
    fs::remove_file(&first.ca_key).unwrap();
    let err = ensure_pki(dir.path(), &options()).unwrap_err();
    assert!(matches!(err, PkiError::Invalid(_)), "{err}");
}

#[test]
fn kubeconfig_embeds_ca_and_admin_credentials() {
    let dir = tempfile::tempdir().unwrap();
    let opts = PkiOptions {
        server_host: "::1".into(),
        secure_port: 16443,
        ..options()
    };
    let pki = ensure_pki(dir.path(), &opts).unwrap();
    let (_, ips) = sans_of(&read(&pki.serving_cert));
    assert!(ips.contains(&"::1".parse().unwrap()));
    let config: serde_yaml::Value = serde_yaml::from_str(&read(&pki.kubeconfig)).unwrap();
    let decode = |v: &serde_yaml::Value| {
        String::from_utf8(STANDARD.decode(v.as_str().unwrap()).unwrap()).unwrap()
    };

    assert_eq!(config["apiVersion"], "v1");
    assert_eq!(config["kind"], "Config");
    let context_name = config["current-context"].as_str().unwrap();
    let context = &config["contexts"][0];
    assert_eq!(context["name"], context_name);
    assert_eq!(context["context"]["user"], ADMIN_USER);

    let cluster = &config["clusters"][0];
    assert_eq!(cluster["name"], context["context"]["cluster"]);
    assert_eq!(cluster["cluster"]["server"], "https://[::1]:16443");
    assert_eq!(
        decode(&cluster["cluster"]["certificate-authority-data"]),
        read(&pki.ca_cert)
    );

    let user = &config["users"][0];
    assert_eq!(user["name"], ADMIN_USER);
    assert_eq!(
        decode(&user["user"]["client-certificate-data"]),
        read(&pki.admin_cert)
    );
    assert_eq!(
        decode(&user["user"]["client-key-data"]),
        read(&pki.admin_key)
    );
}
