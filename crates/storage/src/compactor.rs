//! Periodic compaction of a Kv's history. Being written.
