//! Request bodies and apply configurations in YAML
//! (`apimachinery::serializer::yaml`, upstream's yaml serializer with
//! go-yaml's depth and alias limits): any bytes yield a JSON tree or an
//! error, never a panic, a stack overflow, a quadratic scan or an alias
//! expansion that exhausts memory; a decoded tree printed as JSON (which
//! is YAML) decodes back to itself.
#![no_main]

use apimachinery::serializer::yaml;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(value) = yaml::decode(data) {
        let printed = serde_json::to_vec(&value).expect("a tree prints");
        let again = yaml::decode(&printed).expect("JSON decodes as YAML");
        assert_eq!(again, value, "{}", String::from_utf8_lossy(&printed));
    }
});
