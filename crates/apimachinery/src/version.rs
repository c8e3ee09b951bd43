//! Version names as Kubernetes orders them (upstream's
//! `CompareKubeAwareVersionStrings`): GA before beta before alpha, higher
//! numbers first, anything else after them in alphabetical order. Decides
//! the preferred version in discovery and the deprecation warning's advice.

use std::cmp::Ordering;

/// A parsed `v<major>[(alpha|beta)<minor>]` name.
#[derive(Debug, PartialEq, Eq)]
struct KubeVersion {
    major: u64,
    /// 2 = GA, 1 = beta, 0 = alpha.
    stability: u8,
    minor: u64,
}

fn parse(v: &str) -> Option<KubeVersion> {
    let rest = v.strip_prefix('v')?;
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    let major: u64 = rest.get(..digits)?.parse().ok()?;
    if major == 0 {
        return None;
    }
    let tail = &rest[digits..];
    if tail.is_empty() {
        return Some(KubeVersion {
            major,
            stability: 2,
            minor: 0,
        });
    }
    let (stability, number) = if let Some(n) = tail.strip_prefix("beta") {
        (1, n)
    } else if let Some(n) = tail.strip_prefix("alpha") {
        (0, n)
    } else {
        return None;
    };
    if number.is_empty() || !number.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let minor: u64 = number.parse().ok()?;
    if minor == 0 {
        return None;
    }
    Some(KubeVersion {
        major,
        stability,
        minor,
    })
}

/// Orders versions by priority: `Less` means `a` is preferred over `b`.
pub fn priority_order(a: &str, b: &str) -> Ordering {
    match (parse(a), parse(b)) {
        (Some(x), Some(y)) => y
            .stability
            .cmp(&x.stability)
            .then(y.major.cmp(&x.major))
            .then(y.minor.cmp(&x.minor)),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => a.cmp(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_sort_as_upstream() {
        let mut v = vec![
            "v1alpha1",
            "foo1",
            "v2beta1",
            "v1",
            "v10",
            "v11alpha2",
            "v1beta2",
            "v12alpha1",
            "foo10",
            "v2",
            "v3beta1",
        ];
        v.sort_by(|a, b| priority_order(a, b));
        assert_eq!(
            v,
            vec![
                "v10",
                "v2",
                "v1",
                "v3beta1",
                "v2beta1",
                "v1beta2",
                "v12alpha1",
                "v11alpha2",
                "v1alpha1",
                "foo1",
                "foo10"
            ]
        );
    }
}
