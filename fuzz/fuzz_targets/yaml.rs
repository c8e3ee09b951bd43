//! Request bodies and apply configurations in YAML
//! (`apimachinery::serializer::yaml`, upstream's yaml serializer with
//! go-yaml's depth and alias limits): any bytes yield a JSON tree or an
//! error, never a panic, a stack overflow, a quadratic scan or an alias
//! expansion that exhausts memory; a decoded tree printed as JSON (which
//! is YAML) decodes back to itself.
#![no_main]

use apimachinery::serializer::yaml;
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    // Where the server decodes: a thread with its stack.
    kube_fuzz::on_server_stack(|| {
        if let Ok(value) = yaml::decode(data) {
            if !implicit_keys_fit(&value) {
                return;
            }
            let printed = as_yaml_text(&value);
            let again = yaml::decode(printed.as_bytes()).expect("JSON decodes as YAML");
            assert_eq!(again, value, "{printed}");
        }
    });
});

/// The tree as JSON, with the characters YAML 1.1 does not take raw (DEL,
/// C1 controls, its line breaks U+0085/U+2028/U+2029, U+FEFF and the
/// non-characters U+FFFE/U+FFFF) written as `\u` escapes, which both read.
fn as_yaml_text(value: &Value) -> String {
    let json = serde_json::to_string(value).expect("a tree prints");
    let mut out = String::with_capacity(json.len());
    for c in json.chars() {
        match c {
            '\u{7f}'..='\u{9f}' | '\u{2028}' | '\u{2029}' | '\u{feff}' | '\u{fffe}' | '\u{ffff}' => {
                out.push_str(&format!("\\u{:04x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out
}

/// Whether every key, printed, fits go-yaml's (and libyaml's) implicit key
/// (its `:` at most 1024 characters after its start): a longer one is only
/// YAML as an explicit `? ` key, so its JSON is not YAML upstream either.
fn implicit_keys_fit(value: &Value) -> bool {
    let mut pending = vec![value];
    while let Some(v) = pending.pop() {
        match v {
            Value::Array(items) => pending.extend(items),
            Value::Object(map) => {
                if map.keys().any(|k| as_yaml_text(&Value::from(k.as_str())).chars().count() > 1000) {
                    return false;
                }
                pending.extend(map.values());
            }
            _ => {}
        }
    }
    true
}
