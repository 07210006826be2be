//! tripcap: a flight recorder for RDMA (RoCE) networks.
//!
//! The path of a packet, one module per stage:
//! capture thread ([`capture`]) → [`ring`] → window dump ([`window`], written with
//! [`capture_file`], described by [`sidecar`]) → analysis ([`wire`], [`analyze`]).
//! The path of a log line: [`follow`] → triggers (the `tripcap-triggers` crate) →
//! [`recorder`], which opens and extends windows.
//! [`daemon`] wires them together and owns nothing else; [`config`] and [`cli`]
//! say what to run, [`demo`] and [`traffic`] run it without an RDMA NIC.

pub mod analyze;
pub mod capture;
pub mod capture_file;
pub mod cli;
pub mod config;
pub mod daemon;
pub mod demo;
pub mod follow;
pub mod interfaces;
pub mod recorder;
pub mod ring;
pub mod sidecar;
pub mod traffic;
pub mod window;
pub mod wire;
