//! Types of the static protobuf schema tables in [`crate::generated`]: for
//! every message, its fields' JSON names, protobuf tags and wire types.

/// The wire type of a field's values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ty {
    String,
    Bytes,
    Int32,
    Int64,
    Bool,
    Double,
    /// Index into [`crate::generated::MESSAGES`].
    Message(usize),
}

/// How many values a field holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shape {
    Single,
    Repeated,
    /// `map<string, V>`: repeated entries with the key at tag 1 and the value at tag 2.
    Map,
}

/// Messages whose JSON form is not an object of their fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Special {
    None,
    /// `{seconds, nanos}`; JSON RFC 3339 with whole seconds.
    Time,
    /// `{seconds, nanos}`; JSON RFC 3339 with microseconds.
    MicroTime,
    /// `{type, intVal, strVal}`; JSON a number or a string.
    IntOrString,
    /// `{string}`; JSON a string.
    Quantity,
    /// `{raw}` holding JSON bytes; JSON the embedded document.
    RawJson,
    /// `{items}` of strings; JSON an array of strings.
    StringList,
    /// `{schema, jSONSchemas}`; JSON a schema object or an array of them.
    SchemaOrArray,
    /// `{allows, schema}`; JSON a boolean or a schema object.
    SchemaOrBool,
    /// `{schema, property}`; JSON a schema object or an array of strings.
    SchemaOrStringArray,
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct FieldDesc {
    pub json: &'static str,
    pub tag: u32,
    pub ty: Ty,
    pub shape: Shape,
    /// k8s-openapi always serializes the field, so decoding fills in the
    /// empty value when the wire omits it.
    pub required: bool,
    /// An optional string whose empty value is kept on decode (other optional
    /// empty strings are dropped, as Go's `omitempty` drops them).
    pub keep_empty: bool,
    /// A Go non-pointer `omitempty` number or bool: Go writes it always,
    /// its JSON form leaves out the zero, so decoding drops a zero.
    pub omit_zero: bool,
    /// A Go non-pointer scalar or struct: Go's marshaller writes it
    /// whatever its value, so an absent one is written as its zero.
    pub always: bool,
    /// A Go embedded struct (always a message field): its fields are
    /// members of the enclosing JSON object rather than a nested object.
    pub inline: bool,
}

#[derive(Debug)]
pub(crate) struct MessageDesc {
    /// Upstream type name, for error messages.
    pub name: &'static str,
    pub special: Special,
    pub fields: &'static [FieldDesc],
}

/// One encodable kind.
#[derive(Debug)]
pub(crate) struct KindDesc {
    pub api_version: &'static str,
    pub kind: &'static str,
    pub message: usize,
}
