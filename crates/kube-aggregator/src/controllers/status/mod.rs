//! The `Available` condition of APIServices (upstream's
//! `pkg/controllers/status`).

pub mod local;
