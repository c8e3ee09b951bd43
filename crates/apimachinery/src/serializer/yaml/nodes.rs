//! The first document of a YAML stream as go-yaml's parser (decode.go
//! `parser`) builds it: a tree of nodes, each anchor naming the node it
//! was set on from that point on, each alias pointing at the node its
//! anchor named when it was read ("unknown anchor 'a' referenced"
//! otherwise). Built from the event stream with an explicit stack, so any
//! depth the scanner lets through costs no recursion.

use std::collections::HashMap;

use super::events::{Event, Events};

/// A node of the tree; children are indices into [`Document::nodes`].
pub(super) enum Node {
    Scalar {
        tag: Option<String>,
        value: String,
        implicit: bool,
    },
    Sequence(Vec<usize>),
    /// Keys and values alternating.
    Mapping(Vec<usize>),
    Alias {
        name: String,
        target: usize,
    },
}

pub(super) struct Document {
    pub(super) nodes: Vec<Node>,
    /// The root node; none for a stream without documents.
    pub(super) root: Option<usize>,
}

/// Parses the first document (go-yaml's `Unmarshal` reads no further).
pub(super) fn parse(bytes: &[u8]) -> Result<Document, String> {
    let mut events = Events::new(bytes)?;
    let mut doc = Document {
        nodes: Vec::new(),
        root: None,
    };
    let mut anchors: HashMap<String, usize> = HashMap::new();
    let mut open: Vec<usize> = Vec::new();
    loop {
        let (node, anchor) = match events.next()? {
            Event::StreamEnd | Event::DocumentEnd => return Ok(doc),
            Event::End => {
                open.pop();
                continue;
            }
            Event::DocumentStart | Event::Other => continue,
            Event::Scalar {
                anchor,
                tag,
                value,
                implicit,
            } => (
                Node::Scalar {
                    tag,
                    value,
                    implicit,
                },
                anchor,
            ),
            Event::SequenceStart { anchor } => (Node::Sequence(Vec::new()), anchor),
            Event::MappingStart { anchor } => (Node::Mapping(Vec::new()), anchor),
            Event::Alias(name) => {
                let Some(&target) = anchors.get(&name) else {
                    return Err(format!("yaml: unknown anchor '{name}' referenced"));
                };
                (Node::Alias { name, target }, None)
            }
        };
        let index = doc.nodes.len();
        let collection = matches!(node, Node::Sequence(_) | Node::Mapping(_));
        doc.nodes.push(node);
        if let Some(name) = anchor {
            anchors.insert(name, index);
        }
        match open.last() {
            Some(&parent) => match &mut doc.nodes[parent] {
                Node::Sequence(children) | Node::Mapping(children) => children.push(index),
                _ => unreachable!("only collections are open"),
            },
            None => doc.root = Some(index),
        }
        if collection {
            open.push(index);
        }
    }
}
