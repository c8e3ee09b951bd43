//! What checks answer, and the aggregate of a whole evaluation with
//! upstream's reason and detail strings.

/// Why a check refuses a pod: a short reason and, usually, a detail naming
/// the offending containers, volumes or fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Forbidden {
    pub reason: String,
    pub detail: String,
}

impl Forbidden {
    pub(crate) fn new(reason: impl Into<String>, detail: impl Into<String>) -> Self {
        Forbidden {
            reason: reason.into(),
            detail: detail.into(),
        }
    }
}

/// The refusals of every check run against one pod, in check order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AggregateResult {
    pub forbidden: Vec<Forbidden>,
}

impl AggregateResult {
    pub fn allowed(&self) -> bool {
        self.forbidden.is_empty()
    }

    /// The reasons, comma-separated (used for existing-pod warnings).
    pub fn forbidden_reason(&self) -> String {
        let reasons: Vec<&str> = self.forbidden.iter().map(|f| f.reason.as_str()).collect();
        reasons.join(", ")
    }

    /// Each reason followed by its detail in parentheses, comma-separated
    /// (used in refusals, warnings and audit annotations).
    pub fn forbidden_detail(&self) -> String {
        let mut out = String::new();
        for (i, f) in self.forbidden.iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            out.push_str(&f.reason);
            if !f.detail.is_empty() {
                out.push_str(" (");
                out.push_str(&f.detail);
                out.push(')');
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn details_follow_their_reasons_in_parentheses() {
        let r = AggregateResult {
            forbidden: vec![
                Forbidden::new("host namespaces", "hostNetwork=true"),
                Forbidden::new("no detail", ""),
            ],
        };
        assert!(!r.allowed());
        assert_eq!(r.forbidden_reason(), "host namespaces, no detail");
        assert_eq!(
            r.forbidden_detail(),
            "host namespaces (hostNetwork=true), no detail"
        );
        assert!(AggregateResult::default().allowed());
    }
}
