//! Secure serving flags: the HTTPS listener and its TLS settings.

use super::spec::{FlagSpec, Kind};

pub const FLAGS: &[FlagSpec] = &[
    FlagSpec::new("bind-address", Kind::Ip, "0.0.0.0",
        "IP address to listen on for --secure-port; it must be reachable by the cluster and clients. An unspecified address (0.0.0.0 or ::) listens on all interfaces and address families."),
    FlagSpec::new("cert-dir", Kind::Str, "/var/run/kubernetes",
        "Directory for TLS certificates; ignored when --tls-cert-file and --tls-private-key-file are given."),
    FlagSpec::new("disable-http2-serving", Kind::Bool, "",
        "Serve HTTP/1.1 only. [default=false]"),
    FlagSpec::new("http2-max-streams-per-connection", Kind::Int, "",
        "Maximum number of concurrent streams per HTTP/2 connection announced to clients; 0 uses the HTTP/2 library's default."),
    FlagSpec::new("permit-address-sharing", Kind::Bool, "",
        "Bind with SO_REUSEADDR, so wildcard and specific addresses can be bound together and sockets in TIME_WAIT do not block a restart. [default=false]"),
    FlagSpec::new("permit-port-sharing", Kind::Bool, "",
        "Bind with SO_REUSEPORT, so several processes can listen on the same address and port. [default=false]"),
    FlagSpec::new("secure-port", Kind::Int, "6443",
        "Port to serve HTTPS on, with authentication and authorization. Cannot be 0."),
    FlagSpec::new("tls-cert-file", Kind::Str, "",
        "Default serving certificate (PEM, intermediate CAs appended after it). Without it and --tls-private-key-file, a self-signed certificate is generated for the public address."),
    FlagSpec::new("tls-cipher-suites", Kind::StringSlice, "",
        "Comma-separated cipher suites (IANA names such as TLS_AES_128_GCM_SHA256 or TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256) the server accepts; when omitted the TLS library's defaults apply."),
    FlagSpec::new("tls-curve-preferences", Kind::Int32Slice, "",
        "Comma-separated numeric TLS curve IDs allowed for key exchange (e.g. 29 for X25519, 23 for P-256); order is ignored. When omitted the defaults apply."),
    FlagSpec::new("tls-min-version", Kind::Str, "",
        "Lowest TLS version accepted: VersionTLS10, VersionTLS11, VersionTLS12 or VersionTLS13."),
    FlagSpec::new("tls-private-key-file", Kind::Str, "",
        "Private key (PEM) of --tls-cert-file."),
    FlagSpec::new("tls-sni-cert-key", Kind::NamedCertKey, "",
        "Extra certificate and key served by SNI, as 'cert,key' optionally followed by ':' and comma-separated domain patterns (wildcards allowed, e.g. 'foo.crt,foo.key:*.foo.com,foo.com'). Without patterns the certificate's names are used; exact names win over wildcards. Repeat the flag for more pairs."),
];
