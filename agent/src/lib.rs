//! tripcap: a flight recorder for RDMA (RoCE) networks.
//!
//! The path of a packet, one module per stage:
//! capture thread ([`capture`]) → [`ring`] → window dump ([`window`], written with
//! [`capture_file`], described by [`sidecar`]) → analysis ([`wire`], [`analyze`]).
//! The path of a log line: [`follow`] (or a wrapped job's output, [`wrap`]) →
//! [`matcher`] (the `tripcap-triggers` crate, windows placed by the line's evidence)
//! → [`recorder`], which opens and extends windows. [`triggers_cmd`] runs the same
//! matching over existing logs without capturing.
//! [`agent`] wires them together and owns nothing else; [`config`] and [`cli`]
//! say what to run, [`demo`] and [`traffic`] run it without an RDMA NIC.

pub mod agent;
pub mod analyze;
pub mod api;
pub mod auth;
pub mod baseline;
pub mod caps;
pub mod capture;
pub mod capture_file;
pub mod cli;
pub mod clock;
pub mod collect;
pub mod config;
pub mod counters;
pub mod deliver;
pub mod demo;
pub mod digest;
pub mod ethtool;
pub mod fleet;
pub mod follow;
pub mod interfaces;
pub mod matcher;
pub mod packet_triggers;
pub mod private_file;
pub mod recorder;
pub mod ring;
pub mod s3;
pub mod selftest;
pub mod sidecar;
pub mod tasks;
pub mod traffic;
pub mod triggers_cmd;
pub mod units;
pub mod window;
pub mod wire;
pub mod wireshark_profile;
pub mod wrap;
