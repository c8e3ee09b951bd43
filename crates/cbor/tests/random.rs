//! Randomized properties over many generated JSON trees: every tree
//! survives CBOR unchanged (numbers keep their kind), encoding is
//! deterministic whatever the key order, and damaged input (bit flips,
//! truncation, random bytes) is an error or a value, never a panic.

use kube_cbor::{decode, encode};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{Map, Number, Value};

fn random_string(rng: &mut StdRng) -> String {
    const ALPHABET: &[char] = &[
        'a', 'z', 'K', '0', '-', '.', '/', ' ', 'é', '☃', '𝄞', '\0', '"',
    ];
    let len = rng.random_range(0..30);
    (0..len)
        .map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())])
        .collect()
}

fn random_number(rng: &mut StdRng) -> Number {
    match rng.random_range(0..6) {
        0 => Number::from(rng.random_range(-30i64..30)),
        1 => Number::from(rng.random::<i64>()),
        2 => Number::from(rng.random::<u32>()),
        3 => {
            Number::from_f64(f64::from(rng.random_range(-1000i32..1000)) / 8.0).unwrap_or(0.into())
        }
        4 => Number::from_f64(rng.random::<f64>() * 1e10).unwrap_or(0.into()),
        _ => Number::from_f64(f64::from_bits(rng.random::<u64>()))
            .unwrap_or_else(|| Number::from(rng.random::<i16>())),
    }
}

fn random_value(rng: &mut StdRng, depth: usize) -> Value {
    let leaf = depth >= 6 || rng.random_bool(0.4);
    match rng.random_range(0..if leaf { 5 } else { 7 }) {
        0 => Value::Null,
        1 => Value::Bool(rng.random()),
        2 => Value::Number(random_number(rng)),
        3 | 4 => Value::String(random_string(rng)),
        5 => Value::Array(
            (0..rng.random_range(0..6))
                .map(|_| random_value(rng, depth + 1))
                .collect(),
        ),
        _ => {
            let mut map = Map::new();
            for _ in 0..rng.random_range(0..8) {
                map.insert(random_string(rng), random_value(rng, depth + 1));
            }
            Value::Object(map)
        }
    }
}

fn same_number_kinds(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.is_f64() == y.is_f64(),
        (Value::Array(x), Value::Array(y)) => x.iter().zip(y).all(|(x, y)| same_number_kinds(x, y)),
        (Value::Object(x), Value::Object(y)) => x.iter().all(|(k, v)| same_number_kinds(v, &y[k])),
        _ => true,
    }
}

fn reversed_keys(v: &Value) -> Value {
    match v {
        Value::Object(map) => Value::Object(
            map.iter()
                .rev()
                .map(|(k, v)| (k.clone(), reversed_keys(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(reversed_keys).collect()),
        other => other.clone(),
    }
}

#[test]
fn random_trees_round_trip() {
    let mut rng = StdRng::seed_from_u64(0x6b75_6265);
    for _ in 0..2000 {
        let value = random_value(&mut rng, 0);
        let bytes = encode(&value);
        let back = decode(&bytes).unwrap_or_else(|e| panic!("{value}: {e}"));
        assert_eq!(back, value);
        assert!(
            same_number_kinds(&back, &value),
            "{value} came back as {back}"
        );
        assert_eq!(
            encode(&reversed_keys(&value)),
            bytes,
            "key order leaked into {value}"
        );
    }
}

#[test]
fn damaged_input_never_panics() {
    let mut rng = StdRng::seed_from_u64(7);
    for _ in 0..2000 {
        let bytes = encode(&random_value(&mut rng, 0));
        let mut flipped = bytes.clone();
        for _ in 0..rng.random_range(1..4) {
            let i = rng.random_range(0..flipped.len());
            flipped[i] ^= 1 << rng.random_range(0..8);
        }
        let _ = decode(&flipped);
        let cut = rng.random_range(0..bytes.len());
        assert!(decode(&bytes[..cut]).is_err(), "a truncated item decoded");
        let noise: Vec<u8> = (0..rng.random_range(0..64)).map(|_| rng.random()).collect();
        let _ = decode(&noise);
    }
}
