//! The aggregator's controllers (upstream's `pkg/controllers`).

pub mod autoregister;
pub mod status;
