//! The token cache (upstream's cached token authenticator): the answer
//! for a token and audiences is reused without asking the authenticators
//! until the entry expires. Keys are SHA-256 digests, so the cache never
//! holds a token itself.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

use super::TokenResponse;

/// Entries kept at most; past this, expired entries are dropped first and
/// then everything (a cold cache only costs re-verification).
const MAX_ENTRIES: usize = 4096;

type Key = [u8; 32];

/// Cached answers (by default, successful authentications).
pub struct TokenCache<V = TokenResponse> {
    ttl: Duration,
    entries: Mutex<HashMap<Key, (Instant, V)>>,
}

fn key(token: &str, audiences: &[String]) -> Key {
    let mut hasher = Sha256::new();
    for aud in audiences {
        hasher.update(aud.as_bytes());
        hasher.update([0]);
    }
    hasher.update([0xff]);
    hasher.update(token.as_bytes());
    hasher.finalize().into()
}

impl<V: Clone> TokenCache<V> {
    pub fn new(ttl: Duration) -> Self {
        TokenCache {
            ttl,
            entries: Mutex::new(HashMap::new()),
        }
    }

    pub fn get(&self, token: &str, audiences: &[String]) -> Option<V> {
        let key = key(token, audiences);
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        match entries.get(&key) {
            Some((expires, resp)) if *expires > Instant::now() => Some(resp.clone()),
            Some(_) => {
                entries.remove(&key);
                None
            }
            None => None,
        }
    }

    pub fn insert(&self, token: &str, audiences: &[String], resp: V) {
        let key = key(token, audiences);
        let now = Instant::now();
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        if entries.len() >= MAX_ENTRIES {
            entries.retain(|_, (expires, _)| *expires > now);
            if entries.len() >= MAX_ENTRIES {
                entries.clear();
            }
        }
        entries.insert(key, (now + self.ttl, resp));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::authentication::user::UserInfo;

    fn resp(name: &str) -> TokenResponse {
        TokenResponse {
            user: UserInfo {
                name: name.into(),
                ..UserInfo::default()
            },
            audiences: vec!["api".into()],
        }
    }

    #[test]
    fn hits_are_per_token_and_audiences_and_expire() {
        let cache: TokenCache = TokenCache::new(Duration::from_millis(50));
        let api = vec!["api".to_owned()];
        cache.insert("t1", &api, resp("alice"));
        assert_eq!(
            cache.get("t1", &api).map(|r| r.user.name),
            Some("alice".into())
        );
        assert!(cache.get("t2", &api).is_none());
        assert!(cache.get("t1", &["other".to_owned()]).is_none());
        std::thread::sleep(Duration::from_millis(60));
        assert!(cache.get("t1", &api).is_none());
    }
}
