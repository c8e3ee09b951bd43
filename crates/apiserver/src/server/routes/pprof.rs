//! The profiling handlers behind `/debug/pprof/` (what upstream takes from
//! Go's `net/http/pprof`): a CPU profile in pprof's gzip'd protobuf format,
//! symbol lookup, the command line and the index. The block and mutex
//! profiles are Go's with their sampling off (valid and empty: nothing
//! samples blocking in a Rust process), in Go's text form with
//! `?debug=1`. Go's other runtime profiles (heap, goroutine, threadcreate,
//! allocs, trace) have no counterpart here and are answered "Unknown
//! profile", as Go answers a name it does not know.

use std::io::Write;
use std::sync::mpsc;
use std::time::Duration;

use axum::body::Body;
use flate2::write::GzEncoder;
use flate2::Compression;
use http::{header, HeaderValue, Request, Response, StatusCode};
use pprof::protos::{Message, Profile, ValueType};

pub const ROOT: &str = "/debug/pprof";
pub const INDEX: &str = "/debug/pprof/";
pub const PROFILE: &str = "/debug/pprof/profile";
pub const SYMBOL: &str = "/debug/pprof/symbol";
pub const CMDLINE: &str = "/debug/pprof/cmdline";

/// A profile the index lists: its name and what it is.
pub type Listed = (&'static str, &'static str);

const CPU: Listed = (
    "profile",
    "CPU profile; `seconds` sets its length (30 by default). Read it with `go tool pprof`.",
);
const SYMBOLS: Listed = (
    "symbol",
    "Function names of program counters (`0x…+0x…`, in the query or a POST body).",
);
const COMMAND_LINE: Listed = ("cmdline", "The command line of the process.");
const BLOCK: Listed = (
    "block",
    "Go's blocking profile, empty: nothing samples blocking here (upstream fills it with --contention-profiling).",
);
const MUTEX: Listed = (
    "mutex",
    "Go's mutex contention profile, empty as upstream's (its sampling is off).",
);

/// What the index lists on the secure port, in Go's (alphabetical) order.
pub const SECURE_PORT_PROFILES: &[Listed] = &[BLOCK, MUTEX, CPU, SYMBOLS];
/// What the index lists on the debug socket.
pub const SOCKET_PROFILES: &[Listed] = &[BLOCK, COMMAND_LINE, MUTEX, CPU, SYMBOLS];

/// Go's default CPU profile length.
const DEFAULT_SECONDS: u64 = 30;
/// Samples per second, as Go's CPU profiler takes them.
const FREQUENCY: i32 = 100;
/// Libraries not unwound through from the profiling signal (unwinding in
/// them can deadlock), as the `pprof` crate advises.
const BLOCKLIST: &[&str] = &["libc", "libgcc", "pthread", "vdso"];

/// `/debug/pprof` → `/debug/pprof/`, as `http.Redirect` answers.
pub async fn redirect_to_index() -> Response<Body> {
    let mut resp = text(
        StatusCode::FOUND,
        "text/html; charset=utf-8",
        format!("<a href=\"{INDEX}\">Found</a>.\n\n"),
    );
    resp.headers_mut()
        .insert(header::LOCATION, HeaderValue::from_static(INDEX));
    resp
}

/// `/debug/pprof/`: the list of profiles; below it the block and mutex
/// profiles, and any other name is a profile this process does not have.
pub async fn index(req: Request<Body>, profiles: &'static [Listed]) -> Response<Body> {
    let name = req.uri().path().strip_prefix(INDEX).unwrap_or_default();
    match name {
        "" => {}
        "block" => return contention_profile(debug_level(&req), "block").await,
        "mutex" => return contention_profile(debug_level(&req), "mutex").await,
        _ => return error(StatusCode::NOT_FOUND, "Unknown profile"),
    }
    let mut html = String::from(
        "<html>\n<head><title>/debug/pprof/</title></head>\n<body>\n/debug/pprof/\n<ul>\n",
    );
    for (name, what) in profiles {
        html.push_str(&format!("<li><a href=\"{name}\">{name}</a>: {what}</li>\n"));
    }
    html.push_str("</ul>\n</body>\n</html>\n");
    nosniff(text(StatusCode::OK, "text/html; charset=utf-8", html))
}

/// `/debug/pprof/profile?seconds=N`: samples every thread's stack 100
/// times a second for N seconds (30 when missing or not a positive
/// integer, as Go) and answers the gzip'd `perftools.profiles.Profile`.
/// A client that goes away ends the profile early.
pub async fn profile(req: Request<Body>) -> Response<Body> {
    let seconds = query_param(&req, "seconds")
        .and_then(|s| s.parse::<i64>().ok())
        .and_then(|s| u64::try_from(s).ok())
        .filter(|s| *s > 0)
        .unwrap_or(DEFAULT_SECONDS);
    let (cancel, cancelled) = mpsc::channel::<()>();
    let taken =
        tokio::task::spawn_blocking(move || cpu_profile(Duration::from_secs(seconds), &cancelled))
            .await;
    drop(cancel);
    match taken {
        Ok(Ok(bytes)) => {
            let mut resp = Response::new(Body::from(bytes));
            let headers = resp.headers_mut();
            headers.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/octet-stream"),
            );
            headers.insert(
                header::CONTENT_DISPOSITION,
                HeaderValue::from_static("attachment; filename=\"profile\""),
            );
            nosniff(resp)
        }
        Ok(Err(message)) => error(StatusCode::INTERNAL_SERVER_ERROR, &message),
        Err(join) => error(StatusCode::INTERNAL_SERVER_ERROR, &join.to_string()),
    }
}

/// Go's `debug` parameter of a named profile: a number, 0 when missing or
/// not one (Go's `strconv.Atoi` of the form value, errors ignored).
fn debug_level(req: &Request<Body>) -> i64 {
    query_param(req, "debug")
        .and_then(|d| d.parse().ok())
        .unwrap_or(0)
}

/// The block or mutex profile as Go's `pprof.Handler` answers it: the
/// gzip'd protobuf, or with `debug` other than 0 plain text, which for a
/// positive `debug` is Go's legacy text format (a header naming the
/// profile, `cycles/second`, and for the mutex profile its sampling
/// period, then one line per sample: none here).
async fn contention_profile(debug: i64, name: &'static str) -> Response<Body> {
    if debug == 0 {
        return match empty_contention_profile() {
            Ok(bytes) => named_profile(name, bytes),
            Err(message) => error(StatusCode::INTERNAL_SERVER_ERROR, &message),
        };
    }
    let body = if debug > 0 {
        let header = if name == "mutex" {
            "mutex"
        } else {
            "contention"
        };
        let mut text = format!(
            "--- {header}:\ncycles/second={}\n",
            cycles_per_second().await
        );
        if name == "mutex" {
            text.push_str("sampling period=0\n");
        }
        text.into_bytes()
    } else {
        // Go writes the protobuf for a negative `debug`, typed as text.
        match empty_contention_profile() {
            Ok(bytes) => bytes,
            Err(message) => return error(StatusCode::INTERNAL_SERVER_ERROR, &message),
        }
    };
    let mut resp = Response::new(Body::from(body));
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    nosniff(resp)
}

/// Go's `runtime_cyclesPerSecond`: how fast the CPU tick counter the
/// profiles count in runs, measured once against the clock over 100 ms as
/// Go measures it (the time-stamp counter on x86-64; elsewhere this
/// process counts nanoseconds).
async fn cycles_per_second() -> i64 {
    static MEASURED: tokio::sync::OnceCell<i64> = tokio::sync::OnceCell::const_new();
    *MEASURED
        .get_or_init(|| async {
            let (ticks, started) = (cpu_ticks(), std::time::Instant::now());
            tokio::time::sleep(Duration::from_millis(100)).await;
            let elapsed = started.elapsed().as_nanos().max(1);
            let counted = u128::from(cpu_ticks().wrapping_sub(ticks));
            i64::try_from(counted * 1_000_000_000 / elapsed).unwrap_or(i64::MAX)
        })
        .await
}

#[cfg(target_arch = "x86_64")]
fn cpu_ticks() -> u64 {
    // SAFETY: RDTSC reads a counter; every x86-64 CPU has it.
    unsafe { std::arch::x86_64::_rdtsc() }
}

#[cfg(not(target_arch = "x86_64"))]
fn cpu_ticks() -> u64 {
    static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    let start = START.get_or_init(std::time::Instant::now);
    u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

/// Runs the CPU profiler until `duration` passes or `cancelled`'s sender
/// is dropped; the encoded, gzip'd profile or Go's wording of the failure.
fn cpu_profile(duration: Duration, cancelled: &mpsc::Receiver<()>) -> Result<Vec<u8>, String> {
    let guard = pprof::ProfilerGuardBuilder::default()
        .frequency(FREQUENCY)
        .blocklist(BLOCKLIST)
        .build()
        .map_err(|e| match e {
            pprof::Error::Running => {
                "Could not enable CPU profiling: cpu profiling already in use".to_owned()
            }
            other => format!("Could not enable CPU profiling: {other}"),
        })?;
    let _ = cancelled.recv_timeout(duration);
    let profile = guard
        .report()
        .build()
        .and_then(|report| report.pprof())
        .map_err(|e| format!("Could not build the CPU profile: {e}"))?;
    drop(guard);
    gzip(&profile.encode_to_vec())
}

/// Gzips an encoded profile, as Go's profile writer does.
fn gzip(encoded: &[u8]) -> Result<Vec<u8>, String> {
    let mut gzip = GzEncoder::new(Vec::new(), Compression::default());
    gzip.write_all(encoded)
        .and_then(|()| gzip.finish())
        .map_err(|e| format!("Could not compress the profile: {e}"))
}

/// Go's block and mutex profiles as Go writes them while their sampling
/// rates are zero (upstream's without `--contention-profiling`, and its
/// mutex profile always): a gzip'd `Profile` whose samples are
/// `contentions`/`count` and `delay`/`nanoseconds`, with none taken. Rust
/// code has no Go runtime to sample blocking in.
fn empty_contention_profile() -> Result<Vec<u8>, String> {
    let strings = ["", "contentions", "count", "delay", "nanoseconds"];
    let value_type = |ty: i64, unit: i64| ValueType { ty, unit };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX));
    let profile = Profile {
        sample_type: vec![value_type(1, 2), value_type(3, 4)],
        period_type: Some(value_type(1, 2)),
        period: 1,
        time_nanos: now,
        string_table: strings.iter().map(|s| (*s).to_owned()).collect(),
        ..Profile::default()
    };
    gzip(&profile.encode_to_vec())
}

/// A named profile as Go's `pprof.Handler` answers it (`debug=0`).
fn named_profile(name: &str, bytes: Vec<u8>) -> Response<Body> {
    let mut resp = Response::new(Body::from(bytes));
    let headers = resp.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/octet-stream"),
    );
    if let Ok(value) = HeaderValue::from_str(&format!("attachment; filename=\"{name}\"")) {
        headers.insert(header::CONTENT_DISPOSITION, value);
    }
    nosniff(resp)
}

/// `/debug/pprof/symbol`: `num_symbols: 1` (symbols can be looked up),
/// then, for each `+`-separated address of a POST body (or of the query of
/// a GET), the address and its function's name, as Go's handler answers.
pub async fn symbol(req: Request<Body>) -> Response<Body> {
    let words = if req.method() == http::Method::POST {
        match axum::body::to_bytes(req.into_body(), 1 << 20).await {
            Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
            Err(e) => return error(StatusCode::BAD_REQUEST, &format!("reading request: {e}")),
        }
    } else {
        req.uri().query().unwrap_or_default().to_owned()
    };
    let mut out = String::from("num_symbols: 1\n");
    for word in words.split('+') {
        let Some(pc) = parse_address(word.trim()) else {
            continue;
        };
        if let Some(name) = function_name(pc) {
            out.push_str(&format!("{pc:#x} {name}\n"));
        }
    }
    text(StatusCode::OK, "text/plain; charset=utf-8", out)
}

/// An address as Go's `strconv.ParseUint(s, 0, 64)` reads it; zero is none.
fn parse_address(word: &str) -> Option<u64> {
    let parsed = if let Some(hex) = word.strip_prefix("0x").or_else(|| word.strip_prefix("0X")) {
        u64::from_str_radix(hex, 16)
    } else if let Some(octal) = word.strip_prefix('0').filter(|rest| !rest.is_empty()) {
        u64::from_str_radix(octal, 8)
    } else {
        word.parse()
    };
    parsed.ok().filter(|pc| *pc != 0)
}

/// The demangled name of the function holding `pc`, if symbols know it.
fn function_name(pc: u64) -> Option<String> {
    let address = usize::try_from(pc).ok()? as *mut std::ffi::c_void;
    let mut name = None;
    backtrace::resolve(address, |symbol| {
        if name.is_none() {
            name = symbol.name().map(|n| format!("{n:#}"));
        }
    });
    name
}

/// `/debug/pprof/cmdline`: the arguments separated by NUL bytes.
pub async fn cmdline() -> Response<Body> {
    let args: Vec<String> = std::env::args_os()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    nosniff(text(
        StatusCode::OK,
        "text/plain; charset=utf-8",
        args.join("\0"),
    ))
}

fn query_param(req: &Request<Body>, name: &str) -> Option<String> {
    form_urlencoded::parse(req.uri().query()?.as_bytes())
        .find(|(key, _)| key == name)
        .map(|(_, value)| value.into_owned())
}

fn text(status: StatusCode, content_type: &'static str, body: String) -> Response<Body> {
    let mut resp = Response::new(Body::from(body));
    *resp.status_mut() = status;
    resp.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    resp
}

fn nosniff(mut resp: Response<Body>) -> Response<Body> {
    resp.headers_mut().insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    resp
}

/// A failure as Go's pprof handlers report it: plain text, one line, with
/// `X-Go-Pprof: 1` (which pprof tools look for).
fn error(status: StatusCode, message: &str) -> Response<Body> {
    let mut resp = text(status, "text/plain; charset=utf-8", format!("{message}\n"));
    resp.headers_mut()
        .insert("x-go-pprof", HeaderValue::from_static("1"));
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_read_as_go_reads_them() {
        assert_eq!(parse_address("0x10"), Some(16));
        assert_eq!(parse_address("010"), Some(8));
        assert_eq!(parse_address("10"), Some(10));
        assert_eq!(parse_address("0"), None);
        assert_eq!(parse_address("zz"), None);
    }

    #[tokio::test]
    async fn a_known_function_is_named() {
        // A return address inside the function, as profiles hold them.
        let pc = addresses_read_as_go_reads_them as fn() as usize as u64 + 1;
        let req = Request::post(SYMBOL)
            .body(Body::from(format!("{pc:#x}+0x0")))
            .unwrap();
        let resp = symbol(req).await;
        let body = axum::body::to_bytes(resp.into_body(), 1 << 20)
            .await
            .unwrap();
        let body = String::from_utf8(body.to_vec()).unwrap();
        assert!(body.starts_with("num_symbols: 1\n"), "{body}");
        assert!(body.contains("addresses_read_as_go_reads_them"), "{body}");
    }

    #[tokio::test]
    async fn unknown_profiles_are_404_with_go_pprof_header() {
        let req = Request::get("/debug/pprof/heap")
            .body(Body::empty())
            .unwrap();
        let resp = index(req, SECURE_PORT_PROFILES).await;
        assert_eq!(resp.status(), StatusCode::NOT_FOUND);
        assert_eq!(resp.headers()["x-go-pprof"], "1");
        let body = axum::body::to_bytes(resp.into_body(), 1 << 20)
            .await
            .unwrap();
        assert_eq!(&body[..], b"Unknown profile\n");
    }

    #[tokio::test]
    async fn block_and_mutex_are_gos_empty_contention_profiles() {
        for name in ["block", "mutex"] {
            let req = Request::get(format!("{INDEX}{name}"))
                .body(Body::empty())
                .unwrap();
            let resp = index(req, SECURE_PORT_PROFILES).await;
            assert_eq!(resp.status(), StatusCode::OK);
            assert_eq!(
                resp.headers()[header::CONTENT_DISPOSITION],
                format!("attachment; filename=\"{name}\"").as_str()
            );
            let body = axum::body::to_bytes(resp.into_body(), 1 << 20)
                .await
                .unwrap();
            let mut raw = Vec::new();
            std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&body[..]), &mut raw)
                .unwrap();
            let profile = Profile::decode(raw.as_slice()).unwrap();
            let names: Vec<&str> = profile
                .sample_type
                .iter()
                .map(|t| profile.string_table[t.ty as usize].as_str())
                .collect();
            assert_eq!(names, ["contentions", "delay"]);
            assert!(profile.sample.is_empty());
        }
    }

    #[tokio::test]
    async fn debug_asks_for_gos_text_format() {
        let text = |path: &'static str| async move {
            let resp = index(
                Request::get(path).body(Body::empty()).unwrap(),
                SECURE_PORT_PROFILES,
            )
            .await;
            assert_eq!(
                resp.headers()[header::CONTENT_TYPE],
                "text/plain; charset=utf-8"
            );
            let body = axum::body::to_bytes(resp.into_body(), 1 << 20)
                .await
                .unwrap();
            String::from_utf8(body.to_vec()).unwrap()
        };
        let block = text("/debug/pprof/block?debug=1").await;
        let lines: Vec<&str> = block.lines().collect();
        assert_eq!(lines[0], "--- contention:", "{block}");
        let cycles: i64 = lines[1]
            .strip_prefix("cycles/second=")
            .unwrap()
            .parse()
            .unwrap();
        assert!(cycles > 1_000_000, "{block}");
        let mutex = text("/debug/pprof/mutex?debug=2").await;
        assert_eq!(
            mutex,
            format!("--- mutex:\ncycles/second={cycles}\nsampling period=0\n")
        );
    }

    #[tokio::test]
    async fn the_index_lists_what_is_served() {
        let req = Request::get(INDEX).body(Body::empty()).unwrap();
        let resp = index(req, SOCKET_PROFILES).await;
        assert_eq!(resp.status(), StatusCode::OK);
        let body = axum::body::to_bytes(resp.into_body(), 1 << 20)
            .await
            .unwrap();
        let body = String::from_utf8(body.to_vec()).unwrap();
        for name in ["block", "cmdline", "mutex", "profile", "symbol"] {
            assert!(body.contains(&format!("href=\"{name}\"")), "{body}");
        }
    }
}
