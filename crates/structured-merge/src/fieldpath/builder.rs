//! Sets built by a walk over an object (upstream's `ToFieldSet` and
//! comparison walkers insert each path they reach): the walk moves a cursor
//! down and up a tree and marks where it stands, so a path costs its last
//! element, not its whole length, and a tree nested `d` deep costs `d`, not
//! `d²`. Elements come in the object's order; each node is sorted once
//! when the sets are made.

use super::{PathElement, Set};

/// Up to eight sets gathered in one walk (a comparison's removed, modified
/// and added fields), told apart by their index in [`SetBuilder::mark`].
#[derive(Debug)]
pub(crate) struct SetBuilder {
    nodes: Vec<Node>,
    /// The path walked so far: node indices from the root (0).
    cursor: Vec<usize>,
}

#[derive(Debug, Default)]
struct Node {
    /// Bit `i` set: the path ending here is in set `i`.
    marks: u8,
    children: Vec<(PathElement, usize)>,
}

impl Default for SetBuilder {
    fn default() -> Self {
        SetBuilder {
            nodes: vec![Node::default()],
            cursor: vec![0],
        }
    }
}

impl SetBuilder {
    /// Steps down to `pe` below the current path.
    pub(crate) fn push(&mut self, pe: PathElement) {
        let (parent, child) = (self.current(), self.nodes.len());
        self.nodes.push(Node::default());
        self.nodes[parent].children.push((pe, child));
        self.cursor.push(child);
    }

    /// Steps back up one element.
    pub(crate) fn pop(&mut self) {
        if self.cursor.len() > 1 {
            self.cursor.pop();
        }
    }

    /// Puts the current path in set `set` (the empty path is in no set).
    pub(crate) fn mark(&mut self, set: u8) {
        let at = self.current();
        self.nodes[at].marks |= 1 << set;
    }

    fn current(&self) -> usize {
        self.cursor.last().copied().unwrap_or(0)
    }

    /// Set `set` of the walk.
    pub(crate) fn build(&self, set: u8) -> Set {
        self.subtree(0, 1 << set).unwrap_or_default()
    }

    /// The paths below node `at` in the set of bit `bit`; `None` if none.
    fn subtree(&self, at: usize, bit: u8) -> Option<Set> {
        let mut members = Vec::new();
        let mut children: Vec<(PathElement, Set)> = Vec::new();
        for (pe, child) in &self.nodes[at].children {
            if self.nodes[*child].marks & bit != 0 {
                members.push(pe.clone());
            }
            if let Some(sub) = self.subtree(*child, bit) {
                children.push((pe.clone(), sub));
            }
        }
        if members.is_empty() && children.is_empty() {
            return None;
        }
        Some(Set::from_unsorted(members, children))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fieldpath::Path;

    #[test]
    fn the_walk_builds_what_inserting_each_path_builds() {
        let mut b = SetBuilder::default();
        let mut want = [Set::new(), Set::new()];
        let mut walked = Vec::new();
        for (step, set) in [("spec", None), ("b", Some(0)), ("a", Some(1)), ("", None)] {
            if step.is_empty() {
                b.pop();
                walked.pop();
                continue;
            }
            b.push(PathElement::field(step));
            walked.push(step);
            if let Some(set) = set {
                b.mark(set);
                want[set as usize].insert(&Path::fields(&walked).0);
            }
        }
        b.pop();
        b.pop();
        b.push(PathElement::field("spec"));
        b.push(PathElement::field("b"));
        b.mark(1);
        want[1].insert(&Path::fields(&["spec", "b"]).0);
        b.mark(0);
        assert_eq!(b.build(0), want[0]);
        assert_eq!(b.build(1), want[1]);
        assert_eq!(b.build(1).to_string(), ".spec.b\n.spec.b.a");
        assert!(b.build(2).is_empty());
    }

    #[test]
    fn deep_walks_are_linear() {
        let depth = 10_000;
        let started = std::time::Instant::now();
        let mut b = SetBuilder::default();
        for _ in 0..depth {
            b.push(PathElement::field("a"));
            b.mark(0);
        }
        let set = std::thread::Builder::new()
            .stack_size(256 << 20)
            .spawn(move || {
                let set = b.build(0);
                let mut levels = 0;
                let mut at = &set;
                while let Some(next) = at.child(&PathElement::field("a")) {
                    levels += 1;
                    at = next;
                }
                levels
            })
            .expect("thread")
            .join()
            .expect("no overflow");
        assert_eq!(set, depth - 1);
        assert!(started.elapsed() < std::time::Duration::from_secs(2));
    }
}
