//! The CEL libraries rules can use: each expression is compiled as a rule
//! on `spec` and must hold for the given object.

use kube_cel::RuleSet;
use serde_json::{json, Value};

/// The schema of `spec` the expressions run against.
fn spec_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "maxLength": 64},
            "tags": {"type": "array", "maxItems": 10, "items": {"type": "string", "maxLength": 32}},
            "nums": {"type": "array", "maxItems": 10, "items": {"type": "integer"}},
            "ratio": {"type": "number"},
            "port": {"x-kubernetes-int-or-string": true},
            "timeout": {"type": "string", "format": "duration"},
            "created": {"type": "string", "format": "date-time"},
            "endpoint": {"type": "string", "maxLength": 256},
            "memory": {"type": "string", "maxLength": 32},
            "address": {"type": "string", "maxLength": 64},
            "labels": {"type": "object", "maxProperties": 10,
                       "additionalProperties": {"type": "string", "maxLength": 64}},
            "optional": {"type": "string", "maxLength": 10}
        }
    })
}

fn spec_value() -> Value {
    json!({
        "name": "Web-Server",
        "tags": ["a", "b", "c"],
        "nums": [3, 1, 2],
        "ratio": 0.5,
        "port": 8080,
        "timeout": "1m30s",
        "created": "2024-01-02T03:04:05Z",
        "endpoint": "https://example.com:8443/api/v1?watch=true&x=1&x=2",
        "memory": "1536Mi",
        "address": "10.0.0.1",
        "labels": {"app": "web", "tier": "front"}
    })
}

/// Compiles `rule` on `spec` and evaluates it against `spec_value()`;
/// returns the error messages (empty when the rule holds).
fn eval(rule: &str) -> Vec<String> {
    let schema = json!({
        "type": "object",
        "properties": {"spec": {
            "x-kubernetes-validations": [{"rule": rule}],
            "type": "object",
            "properties": spec_schema()["properties"].clone()
        }}
    });
    let rules = match RuleSet::compile(&schema) {
        Ok(rules) => rules,
        Err(errors) => panic!("{rule}: {errors:#?}"),
    };
    rules
        .validate(&json!({"spec": spec_value()}), None)
        .iter()
        .map(ToString::to_string)
        .collect()
}

fn holds(rules: &[&str]) {
    for rule in rules {
        let errors = eval(rule);
        assert!(errors.is_empty(), "{rule}: {errors:?}");
    }
}

#[test]
fn string_functions() {
    holds(&[
        "self.name.lowerAscii() == 'web-server'",
        "self.name.upperAscii() == 'WEB-SERVER'",
        "'  x '.trim() == 'x'",
        "self.name.split('-') == ['Web', 'Server']",
        "self.tags.join(',') == 'a,b,c'",
        "self.name.replace('-', '_') == 'Web_Server'",
        "self.name.indexOf('-') == 3",
        "self.name.lastIndexOf('e') == 8",
        "self.name.substring(4) == 'Server'",
        "self.name.substring(0, 3) == 'Web'",
        "self.name.charAt(0) == 'W'",
        "self.name.startsWith('Web') && self.name.endsWith('Server')",
        "self.name.contains('-S')",
        "self.name.matches('^[A-Za-z-]+$')",
        "size(self.name) == 10 && self.name.size() == 10",
        "'%s has %d tags'.format([self.name, size(self.tags)]) == 'Web-Server has 3 tags'",
    ]);
}

#[test]
fn list_functions() {
    holds(&[
        "self.tags.isSorted() && !self.nums.isSorted()",
        "self.nums.sum() == 6",
        "self.nums.min() == 1 && self.nums.max() == 3",
        "self.tags.indexOf('b') == 1 && self.tags.indexOf('z') == -1",
        "['a', 'b', 'a'].lastIndexOf('a') == 2",
        "self.nums.sort() == [1, 2, 3]",
        "self.tags.exists(t, t == 'b') && self.tags.all(t, t.size() == 1)",
        "self.tags.exists_one(t, t == 'c')",
        "self.nums.map(n, n * 2) == [6, 2, 4]",
        "self.nums.filter(n, n > 1) == [3, 2]",
        "'a' in self.tags && !('z' in self.tags)",
    ]);
}

#[test]
fn maps_and_presence() {
    holds(&[
        "has(self.labels) && !has(self.optional)",
        "self.labels['app'] == 'web'",
        "'tier' in self.labels",
        "self.labels.all(k, k.size() <= 4)",
        "size(self.labels) == 2",
    ]);
}

#[test]
fn regex_functions() {
    holds(&[
        "self.name.find('[A-Z][a-z]+') == 'Web'",
        "self.name.findAll('[A-Z]') == ['W', 'S']",
        "self.name.findAll('[A-Z]', 1) == ['W']",
        "self.name.find('[0-9]') == ''",
    ]);
}

#[test]
fn url_functions() {
    holds(&[
        "isURL(self.endpoint) && !isURL('not a url')",
        "url(self.endpoint).getScheme() == 'https'",
        "url(self.endpoint).getHost() == 'example.com:8443'",
        "url(self.endpoint).getHostname() == 'example.com'",
        "url(self.endpoint).getPort() == '8443'",
        "url(self.endpoint).getEscapedPath() == '/api/v1'",
        "url(self.endpoint).getQuery()['x'] == ['1', '2']",
    ]);
}

#[test]
fn numbers_and_int_or_string() {
    holds(&[
        "self.ratio == 0.5 && self.ratio < 1.0",
        "self.ratio > 0 && self.ratio < 1 && self.nums[0] > 2.5",
        "type(self.port) == int && self.port == 8080",
        "self.nums[0] + 1 == 4",
    ]);
}

#[test]
fn durations_and_timestamps() {
    holds(&[
        "self.timeout == duration('90s')",
        "self.timeout > duration('1m')",
        "self.created < timestamp('2025-01-01T00:00:00Z')",
        "self.created.getFullYear() == 2024",
        "self.created + duration('24h') == timestamp('2024-01-03T03:04:05Z')",
    ]);
}

#[test]
fn quantity_functions() {
    holds(&[
        "isQuantity(self.memory) && !isQuantity('1.5.5')",
        "quantity(self.memory) == quantity('1.5Gi')",
        "quantity(self.memory).isGreaterThan(quantity('1Gi'))",
        "quantity(self.memory).isLessThan(quantity('2G'))",
        "quantity('500m').compareTo(quantity('0.5')) == 0",
        "quantity('1k').asInteger() == 1000",
        "quantity('1.5').isInteger() == false && quantity('2').isInteger()",
        "quantity('250m').asApproximateFloat() == 0.25",
        "quantity('-1').sign() == -1 && quantity('0').sign() == 0",
        "quantity('1Gi').add(quantity('1Gi')) == quantity('2Gi')",
        "quantity('1Gi').sub(1) == quantity('1073741823')",
        "quantity('1').add(2) == quantity('3')",
    ]);
}

#[test]
fn ip_and_cidr_functions() {
    holds(&[
        "isIP(self.address) && !isIP('10.0.0.256')",
        "ip(self.address).family() == 4 && ip('::1').family() == 6",
        "ip('127.0.0.1').isLoopback() && ip('::1').isLoopback()",
        "ip('0.0.0.0').isUnspecified()",
        "ip('fe80::1').isLinkLocalUnicast() && ip('ff02::1').isLinkLocalMulticast()",
        "ip('8.8.8.8').isGlobalUnicast() && !ip('127.0.0.1').isGlobalUnicast()",
        "string(ip('10.0.0.1')) == '10.0.0.1'",
        "ip(self.address) == ip('10.0.0.1')",
        "isCIDR('10.0.0.0/8') && !isCIDR('10.0.0.0/33')",
        "cidr('10.0.0.0/8').containsIP(ip(self.address))",
        "cidr('10.0.0.0/8').containsIP('10.1.2.3') && !cidr('10.0.0.0/8').containsIP('11.0.0.1')",
        "cidr('10.0.0.0/8').containsCIDR('10.1.0.0/16')",
        "cidr('10.0.0.0/8').containsCIDR(cidr('10.1.0.0/16'))",
        "cidr('10.1.2.3/8').masked() == cidr('10.0.0.0/8')",
        "cidr('10.0.0.0/8').prefixLength() == 8",
        "cidr('10.0.0.0/8').ip() == ip('10.0.0.0')",
        "string(cidr('fd00::/64')) == 'fd00::/64'",
    ]);
}

#[test]
fn failing_library_calls_are_evaluation_errors() {
    let errors = eval("url('relative') != null");
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0].contains("URL parse error during conversion from string"),
        "{errors:?}"
    );
}

#[test]
fn format_functions() {
    holds(&[
        "!format.dns1123Label().validate('web-server').hasValue()",
        "format.dns1123Label().validate('Web-Server').hasValue()",
        "format.named('dns1123Label').value().validate(self.name).value().size() == 1",
        "!format.named('nope').hasValue()",
        "!format.uuid().validate('123e4567-e89b-12d3-a456-426614174000').hasValue()",
        "format.labelValue().validate('a b').hasValue()",
        "!format.date().validate('2024-01-31').hasValue()",
        "!format.uri().validate(self.endpoint).hasValue()",
    ]);
}

#[test]
fn bind_and_sets() {
    holds(&[
        "cel.bind(n, self.name.lowerAscii(), n.startsWith('web') && n.endsWith('server'))",
        "cel.bind(t, self.tags, t.size() == 3 && cel.bind(u, t[0], u == 'a'))",
        "sets.contains(self.tags, ['a', 'c']) && !sets.contains(self.tags, ['z'])",
        "sets.equivalent(self.tags, ['c', 'b', 'a', 'a'])",
        "sets.intersects(self.tags, ['z', 'b']) && !sets.intersects(self.tags, ['z'])",
    ]);
}

#[test]
fn optional_syntax() {
    holds(&[
        "self.?optional.orValue('none') == 'none'",
        "self.?name.orValue('none') == 'Web-Server'",
        "self.labels[?'app'].hasValue() && !self.labels[?'zone'].hasValue()",
        "optional.of(1).value() == 1 && !optional.none().hasValue()",
    ]);
}

#[test]
fn two_variable_comprehensions() {
    holds(&[
        "self.tags.all(i, t, i < 3 && t.size() == 1)",
        "self.labels.all(k, v, k.size() <= 4 && v.size() <= 5)",
        "self.tags.exists(i, t, i == 2 && t == 'c')",
        "!self.labels.exists(k, v, k == v)",
        "self.nums.existsOne(i, n, n == i + 3) && !self.nums.existsOne(i, n, i == n)",
        "self.nums.transformList(i, n, n * i) == [0, 1, 4]",
        "self.nums.transformList(i, n, n > 1, n * 10) == [30, 20]",
        "self.labels.transformMap(k, v, v + '!') == {'app': 'web!', 'tier': 'front!'}",
        "self.labels.transformMap(k, v, k == 'app', v) == {'app': 'web'}",
    ]);
}
