//! The declarative description of a flag: its name, value kind, default,
//! help text and the named flag set (help section) it belongs to.

/// The named flag sets, in the order upstream's `--help` prints them.
///
/// Upstream builds the control-plane sets first and only then adds
/// "cloud provider" (whose flags are all deprecated and hidden) and
/// "global", so those two come after "misc".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Section {
    Generic,
    Etcd,
    SecureServing,
    Auditing,
    Features,
    Authentication,
    Authorization,
    ApiEnablement,
    EgressSelector,
    Admission,
    Metrics,
    Logs,
    Traces,
    Misc,
    CloudProvider,
    Global,
}

impl Section {
    /// The heading printed above the section, e.g. `"Secure serving flags"`.
    pub const fn heading(self) -> &'static str {
        match self {
            Section::Generic => "Generic flags",
            Section::Etcd => "Etcd flags",
            Section::SecureServing => "Secure serving flags",
            Section::Auditing => "Auditing flags",
            Section::Features => "Features flags",
            Section::Authentication => "Authentication flags",
            Section::Authorization => "Authorization flags",
            Section::ApiEnablement => "API enablement flags",
            Section::EgressSelector => "Egress selector flags",
            Section::Admission => "Admission flags",
            Section::Metrics => "Metrics flags",
            Section::Logs => "Logs flags",
            Section::Traces => "Traces flags",
            Section::Misc => "Misc flags",
            Section::CloudProvider => "Cloud provider flags",
            Section::Global => "Global flags",
        }
    }
}

/// The type of a flag's value, matching the pflag value type upstream uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// `true`/`false`; `--flag` alone means true (`--flag=false` to unset).
    Bool,
    /// A signed integer (pflag `int` and `int64`).
    Int,
    /// An unsigned integer.
    Uint,
    /// A 32-bit float (pflag `float32`).
    Float32,
    /// A 64-bit float (pflag `float64`, shown as `float`).
    Float64,
    /// A string.
    Str,
    /// A comma-separated list; repeating the flag appends (pflag `strings`).
    StringSlice,
    /// A list with one item per occurrence, no comma splitting.
    StringArray,
    /// A comma-separated list of 32-bit integers.
    Int32Slice,
    /// A Go duration such as `1m0s`.
    Duration,
    /// An IP address.
    Ip,
    /// `key=value` pairs (pflag `stringToString`).
    StringToString,
    /// `key=value` pairs where a bare key means an empty value
    /// (`--runtime-config`).
    ConfigurationMap,
    /// One `key=value` pair per occurrence (`--oidc-required-claim`).
    MapNoSplit,
    /// `component:key=value` pairs (`--feature-gates`).
    ColonMultimap,
    /// `cert,key[:domain,...]` (`--tls-sni-cert-key`).
    NamedCertKey,
    /// `N1-N2` or `N+offset` (`--service-node-port-range`).
    PortRange,
    /// A resource quantity such as `2Ki`.
    Quantity,
    /// A log verbosity level.
    Level,
    /// `pattern=N,...` per-file verbosity.
    VModule,
    /// `--version`, `--version=raw` or `--version=vX.Y.Z`.
    Version,
    /// Prints help and exits.
    Help,
}

impl Kind {
    /// The value type shown after the flag name in help, as pflag shows it.
    pub const fn type_name(self) -> &'static str {
        match self {
            Kind::Bool | Kind::Help => "",
            Kind::Int => "int",
            Kind::Uint => "uint",
            Kind::Float32 => "float32",
            Kind::Float64 => "float",
            Kind::Str => "string",
            Kind::StringSlice => "strings",
            Kind::StringArray => "stringArray",
            Kind::Int32Slice => "int32Slice",
            Kind::Duration => "duration",
            Kind::Ip => "ip",
            Kind::StringToString => "stringToString",
            Kind::ConfigurationMap | Kind::MapNoSplit => "mapStringString",
            Kind::ColonMultimap => "colonSeparatedMultimapStringString",
            Kind::NamedCertKey => "namedCertKey",
            Kind::PortRange => "<a string in the form 'N1-N2'>",
            Kind::Quantity => "quantity",
            Kind::Level => "Level",
            Kind::VModule => "pattern=N,...",
            Kind::Version => "version",
        }
    }

    /// Whether the flag may be given without a value (`--flag`), and what
    /// that means.
    pub const fn value_when_bare(self) -> Option<&'static str> {
        match self {
            Kind::Bool | Kind::Version => Some("true"),
            _ => None,
        }
    }
}

/// One command-line flag.
#[derive(Debug, Clone, Copy)]
pub struct FlagSpec {
    /// The long name, without the leading `--`.
    pub name: &'static str,
    /// A one-letter alias (`-v`, `-h`).
    pub short: Option<char>,
    pub kind: Kind,
    /// The default, written as it would be on the command line
    /// (`""` is the kind's zero value).
    pub default: &'static str,
    /// What the flag does, in one or two sentences.
    pub help: &'static str,
    /// Set for deprecated flags: the deprecation note.
    pub deprecated: Option<&'static str>,
    /// Hidden flags are accepted but left out of `--help`.
    pub hidden: bool,
}

impl FlagSpec {
    /// A visible flag.
    pub const fn new(
        name: &'static str,
        kind: Kind,
        default: &'static str,
        help: &'static str,
    ) -> Self {
        Self {
            name,
            short: None,
            kind,
            default,
            help,
            deprecated: None,
            hidden: false,
        }
    }

    /// Adds a one-letter alias.
    pub const fn short(mut self, letter: char) -> Self {
        self.short = Some(letter);
        self
    }

    /// Marks the flag deprecated and hides it from help, as pflag's
    /// `MarkDeprecated` does.
    pub const fn deprecated(mut self, note: &'static str) -> Self {
        self.deprecated = Some(note);
        self.hidden = true;
        self
    }

    /// Marks the flag deprecated but keeps it in help with the note appended.
    pub const fn deprecated_shown(mut self, note: &'static str) -> Self {
        self.deprecated = Some(note);
        self
    }
}
