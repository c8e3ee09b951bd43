//! Apply conflicts: fields an applier would change that other managers
//! own, reported with upstream's message and Status causes.

use std::fmt;

use super::ManagerId;
use crate::fieldpath::Path;

/// One field another manager owns.
#[derive(Debug, Clone, PartialEq)]
pub struct Conflict {
    pub manager: ManagerId,
    pub path: Path,
}

/// The conflicts of an apply, by manager identifier then path.
#[derive(Debug, Clone, PartialEq)]
pub struct Conflicts(pub Vec<Conflict>);

impl Conflicts {
    /// The `(field, message)` of each conflict, for Status causes of type
    /// `FieldManagerConflict`.
    pub fn causes(&self) -> Vec<(String, String)> {
        self.0
            .iter()
            .map(|c| {
                (
                    c.path.to_string(),
                    format!("conflict with {}", c.manager.describe()),
                )
            })
            .collect()
    }
}

/// `Apply failed with 1 conflict: conflict with "kubectl" using apps/v1:
/// .spec.replicas`, or for several, one line per field grouped by manager.
impl fmt::Display for Conflicts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let [one] = self.0.as_slice() {
            return write!(
                f,
                "Apply failed with 1 conflict: conflict with {}: {}",
                one.manager.describe(),
                one.path
            );
        }
        write!(f, "Apply failed with {} conflicts: ", self.0.len())?;
        let mut managers: Vec<(String, &ManagerId)> = self
            .0
            .iter()
            .map(|c| (c.manager.key(), &c.manager))
            .collect();
        managers.sort_by(|a, b| a.0.cmp(&b.0));
        managers.dedup_by(|a, b| a.0 == b.0);
        let mut lines = Vec::new();
        for (key, manager) in managers {
            lines.push(format!("conflicts with {}:", manager.describe()));
            for c in self.0.iter().filter(|c| c.manager.key() == key) {
                lines.push(format!("- {}", c.path));
            }
        }
        f.write_str(&lines.join("\n"))
    }
}
