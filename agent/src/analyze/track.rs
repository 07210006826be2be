//! The per-connection state machine shared by the offline analysis
//! ([`super::connections`]) and the live packet triggers ([`crate::packet_triggers`]):
//! one place decides what a RoCE packet means for its queue pair.
//!
//! A *connection* is one direction of a queue pair: (source address, destination address,
//! destination QP). [`Tracker::packet`] updates the connection's state and returns a
//! [`Step`] saying what the packet was: a PSN gap, duplicate or regression (see
//! [`super::connections`] for the rules), a NAK, a CNP, a CE mark, the pause before it and
//! whether requests were outstanding during that pause, and how many AckReq requests of
//! the opposite direction it answered.
//!
//! ACKs vs AckReq: an RC request with the AckReq bit set is *pending* until a packet with
//! an AETH (ACK, NAK, RNR NAK, READ response, atomic ACK) comes back with a PSN at or past
//! it (NAKs answer only the PSNs before theirs). Responses carry the requester's QP, not
//! the responder's, so the reverse connection is *paired* with a request connection of
//! the same address pair the first time one of its AETH PSNs equals a pending PSN there.
//! Until then, when the address pair has only one request connection and it has sent
//! that PSN, the packet answers it, unremembered: a window can open between one queue
//! pair's last request and another's ACK, and a pairing fixed on that guess would leave
//! the right connection unanswered for good. Pending requests are kept
//! per connection up to [`MAX_PENDING`]; older ones are given up on and counted.
//!
//! A connection has *outstanding* requests while one is pending or a multi-packet
//! message is half sent (First/Middle seen, Last not yet): a pause then is a stall, not
//! idleness.
//!
//! Memory: one entry per connection. The live user caps the number
//! ([`Tracker::with_limit`]); a new connection beyond the cap first evicts the one idle
//! longest (counted). Pending queues are allocated once per connection. Nothing is
//! allocated per packet. The maps hash with [`FxHasher`] (a multiply-rotate hash, several
//! times faster than SipHash on these small keys); the live tracker's size cap bounds what
//! a hostile flood of QP numbers could cost.

use std::collections::hash_map::Entry;
use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};

use crate::wire::aeth::{NakCode, Syndrome};
use crate::wire::bth::{psn_distance, Opcode, Operation, Service, PSN_MODULUS};
use crate::wire::{Addr, Roce};

/// The Firefox/rustc hash: fast on small fixed-size keys, not DoS-resistant.
#[derive(Debug, Default, Clone, Copy)]
pub struct FxHasher {
    hash: u64,
}

impl FxHasher {
    #[inline]
    fn add(&mut self, w: u64) {
        self.hash = (self.hash.rotate_left(5) ^ w).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

impl Hasher for FxHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut b = [0u8; 8];
            b[..chunk.len()].copy_from_slice(chunk);
            self.add(u64::from_le_bytes(b));
        }
    }
    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }
    #[inline]
    fn write_u16(&mut self, i: u16) {
        self.add(u64::from(i));
    }
    #[inline]
    fn write_u32(&mut self, i: u32) {
        self.add(u64::from(i));
    }
    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }
    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }
    #[inline]
    fn finish(&self) -> u64 {
        self.hash
    }
}

type FxBuild = BuildHasherDefault<FxHasher>;

/// Pending AckReq requests remembered per connection.
pub const MAX_PENDING: usize = 256;

/// (source, destination, destination QP).
pub type ConnKey = (Addr, Addr, u32);

/// What a request's PSN said.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PsnStep {
    /// Not a request, or the first one, or in order.
    #[default]
    InOrder,
    /// A forward jump: `missing` PSNs not seen at the capture point.
    Gap { missing: u32 },
    /// The previous PSN again (a timeout or RNR retry of one packet).
    Duplicate,
    /// A backward jump: go-back-N from `from` (the PSN expected) back to `to`.
    Regression { from: u32, to: u32 },
}

/// A NAK's kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NakKind {
    /// PSN sequence error.
    Seq,
    /// Receiver not ready.
    Rnr,
    /// Invalid request, remote access/operational error, …
    Other,
}

/// What one packet meant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Step {
    /// Creation index of the packet's connection (stable for its lifetime).
    pub conn: u32,
    /// Whether the connection is new.
    pub new_conn: bool,
    /// PSN continuity of a request.
    pub psn: PsnStep,
    /// A NAK carried by the packet.
    pub nak: Option<NakKind>,
    /// A CNP.
    pub cnp: bool,
    /// ECN CE in the IP header / GRH, or FECN.
    pub ce: bool,
    /// A request with the AckReq bit.
    pub ackreq: bool,
    /// The pause before this packet on its connection (ns; 0 for the first packet).
    pub pause_ns: i64,
    /// Whether requests were outstanding on the connection throughout that pause.
    pub pause_outstanding: bool,
    /// Pending requests of the paired connection this packet answered.
    pub answered: u32,
    /// That paired connection's index, when `answered > 0`.
    pub answered_conn: Option<u32>,
    /// When the oldest of the requests it answered was sent (when `answered > 0`): the
    /// answer's latency is the packet's time minus this.
    pub answered_since: i64,
    /// Pending requests given up on because the queue was full.
    pub overflowed: u32,
}

/// The state of one connection.
#[derive(Debug, Clone)]
pub struct Conn {
    /// Creation index.
    pub id: u32,
    /// First packet.
    pub first_ts: i64,
    /// Last packet.
    pub last_ts: i64,
    /// Last time one of its pending requests was answered.
    pub last_answer_ts: i64,
    last_psn: Option<u32>,
    after_read: bool,
    /// A multi-packet message is half sent.
    pub in_message: bool,
    /// Pending AckReq requests: (PSN, time sent).
    pending: VecDeque<(u32, i64)>,
    /// The request connection this one answers, once paired.
    peer: Option<ConnKey>,
}

impl Conn {
    /// Whether requests are outstanding (pending AckReq or a half-sent message).
    pub fn outstanding(&self) -> bool {
        self.in_message || !self.pending.is_empty()
    }
    /// Pending AckReq requests.
    pub fn pending(&self) -> usize {
        self.pending.len()
    }
    /// Time the oldest pending request was sent.
    pub fn oldest_pending(&self) -> Option<i64> {
        self.pending.front().map(|&(_, ts)| ts)
    }
    /// Pending requests sent before `ts`.
    pub fn pending_before(&self, ts: i64) -> usize {
        self.pending.iter().filter(|&&(_, t)| t < ts).count()
    }
    /// Last sign of life: its own last packet or the last answer to it.
    pub fn last_activity(&self) -> i64 {
        self.last_ts.max(self.last_answer_ts)
    }

    /// Notes an AckReq request at `psn` sent at `ts` as pending; returns how many older
    /// ones were given up on (0 or 1).
    #[inline]
    fn add_pending(&mut self, psn: u32, ts: i64) -> u32 {
        // A retransmission replaces what it re-sends.
        while self
            .pending
            .back()
            .is_some_and(|&(p, _)| psn_distance(p, psn) >= 0)
        {
            self.pending.pop_back();
        }
        let mut overflowed = 0;
        if self.pending.len() >= MAX_PENDING {
            self.pending.pop_front();
            overflowed = 1;
        }
        if self.pending.capacity() == 0 {
            self.pending.reserve_exact(16);
        }
        self.pending.push_back((psn, ts));
        overflowed
    }

    /// An answer at `psn` received at `ts` (`inclusive`: it answers `psn` itself too, as an
    /// ACK does and a NAK does not): drops the pending requests it answers; returns how
    /// many, and when the oldest of them was sent.
    #[inline]
    fn answered_by(&mut self, psn: u32, inclusive: bool, ts: i64) -> (u32, i64) {
        let (mut n, mut since) = (0, ts);
        while let Some(&(p, sent)) = self.pending.front() {
            let d = psn_distance(p, psn);
            if d < 0 || (d == 0 && inclusive) {
                self.pending.pop_front();
                if n == 0 {
                    since = sent;
                }
                n += 1;
            } else {
                break;
            }
        }
        self.last_answer_ts = self.last_answer_ts.max(ts);
        (n, since)
    }
}

/// All connections.
#[derive(Debug)]
pub struct Tracker {
    conns: HashMap<ConnKey, Conn, FxBuild>,
    /// Request connections (those that sent requests) by (src, dst).
    requesters: HashMap<(Addr, Addr), Vec<u32>, FxBuild>,
    next_id: u32,
    limit: usize,
    /// Connections evicted to stay under the limit.
    pub evicted: u64,
}

impl Default for Tracker {
    fn default() -> Tracker {
        Tracker::with_limit(usize::MAX)
    }
}

impl Tracker {
    /// A tracker keeping at most `limit` connections.
    pub fn with_limit(limit: usize) -> Tracker {
        Tracker {
            conns: HashMap::default(),
            requesters: HashMap::default(),
            next_id: 0,
            limit: limit.max(1),
            evicted: 0,
        }
    }

    /// Connections tracked.
    pub fn len(&self) -> usize {
        self.conns.len()
    }

    /// Whether no connection is tracked.
    pub fn is_empty(&self) -> bool {
        self.conns.is_empty()
    }

    /// Every connection.
    pub fn iter(&self) -> impl Iterator<Item = (&ConnKey, &Conn)> {
        self.conns.iter()
    }

    /// One connection.
    pub fn get(&self, key: &ConnKey) -> Option<&Conn> {
        self.conns.get(key)
    }

    /// Forget connections whose last activity is before `ts`; returns how many.
    pub fn evict_idle(&mut self, ts: i64) -> usize {
        let before = self.conns.len();
        self.conns.retain(|_, c| c.last_activity() >= ts);
        let n = before - self.conns.len();
        if n > 0 {
            self.prune_requesters();
        }
        n
    }

    /// Forget all PSN history (after packets were skipped): the next request of each
    /// connection is taken as in order.
    pub fn forget_psns(&mut self) {
        for c in self.conns.values_mut() {
            c.last_psn = None;
            c.pending.clear();
            c.in_message = false;
        }
    }

    fn prune_requesters(&mut self) {
        let conns = &self.conns;
        self.requesters.retain(|&(src, dst), qps| {
            qps.retain(|&qp| conns.contains_key(&(src, dst, qp)));
            !qps.is_empty()
        });
    }

    fn make_room(&mut self) {
        if self.conns.len() < self.limit {
            return;
        }
        let idle = self
            .conns
            .iter()
            .min_by_key(|(_, c)| c.last_activity())
            .map(|(k, _)| *k);
        if let Some(k) = idle {
            self.conns.remove(&k);
            self.evicted += 1;
            self.prune_requesters();
        }
    }

    /// A new connection with id `id`, first seen at `ts`.
    fn new_conn(id: u32, ts: i64) -> Conn {
        Conn {
            id,
            first_ts: ts,
            last_ts: ts,
            last_answer_ts: i64::MIN,
            last_psn: None,
            after_read: false,
            in_message: false,
            pending: VecDeque::new(),
            peer: None,
        }
    }

    /// Account one RoCE packet captured at `ts`.
    // Hot path. Only the pending-queue and answer loops, the NAK decoding and a new
    // connection's setup are split out: also moving the PSN step and the AETH pairing into
    // helpers taking `&mut Step` made the offline analysis run ~3% more instructions.
    pub fn packet(&mut self, ts: i64, r: &Roce<'_>) -> Step {
        let bth = r.transport.bth();
        let key: ConnKey = (r.src, r.dst, bth.dest_qp());
        let mut step = Step::default();
        // One lookup for a known connection (the hot case); room is made first
        // only when a new one would overflow the limit.
        if self.conns.len() >= self.limit && !self.conns.contains_key(&key) {
            self.make_room();
        }
        let opcode = r.transport.opcode();
        let psn = bth.psn();
        let aeth = r.transport.aeth().map(|a| a.syndrome());
        let c = match self.conns.entry(key) {
            Entry::Occupied(o) => o.into_mut(),
            Entry::Vacant(v) => {
                step.new_conn = true;
                let id = self.next_id;
                self.next_id = self.next_id.wrapping_add(1);
                v.insert(Tracker::new_conn(id, ts))
            }
        };
        step.conn = c.id;
        step.ce = r.ecn == Some(3) || bth.fecn();
        if !step.new_conn {
            step.pause_ns = ts.saturating_sub(c.last_ts).max(0);
            step.pause_outstanding = c.outstanding() && c.last_answer_ts <= c.last_ts;
        }
        c.last_ts = c.last_ts.max(ts);
        let mut new_requester = false;
        match opcode {
            Opcode::Cnp => step.cnp = true,
            Opcode::Op(service, op) if !op.is_response() => {
                if let Some(last) = c.last_psn {
                    let expected = (last + 1) % PSN_MODULUS;
                    let d = psn_distance(psn, expected);
                    if d > 0 && !c.after_read {
                        step.psn = PsnStep::Gap { missing: d as u32 };
                    } else if d < 0 && psn == last {
                        step.psn = PsnStep::Duplicate;
                    } else if d < 0 {
                        step.psn = PsnStep::Regression {
                            from: expected,
                            to: psn,
                        };
                    }
                }
                new_requester = c.last_psn.is_none();
                c.last_psn = Some(psn);
                c.after_read = op == Operation::ReadRequest;
                if matches!(service, Service::Rc | Service::Xrc) {
                    c.in_message = matches!(op, Operation::SendFirst | Operation::SendMiddle)
                        || matches!(op, Operation::WriteFirst | Operation::WriteMiddle);
                    if bth.ackreq() {
                        step.ackreq = true;
                        step.overflowed += c.add_pending(psn, ts);
                    }
                }
            }
            _ => {}
        }
        let peer = c.peer;
        if new_requester {
            let qps = self.requesters.entry((r.src, r.dst)).or_default();
            if !qps.contains(&key.2) {
                qps.push(key.2);
            }
        }
        if let Some(s) = aeth {
            step.nak = nak_kind(s);
            let inclusive = step.nak.is_none();
            // A pairing is remembered only when a PSN matched; a guess answers this
            // packet alone, so a wrong one cannot starve the right connection.
            let found = match peer {
                Some(pk) => Some((pk, false)),
                None => self.pair(key, psn),
            };
            if let Some((pk, remember)) = found {
                if remember {
                    if let Some(c) = self.conns.get_mut(&key) {
                        c.peer = Some(pk);
                    }
                }
                if let Some(f) = self.conns.get_mut(&pk) {
                    (step.answered, step.answered_since) = f.answered_by(psn, inclusive, ts);
                    step.answered_conn = Some(f.id);
                }
            }
        }
        step
    }

    /// The request connection that the responses on `resp` (B → A) answer, and whether
    /// that is sure: the one of A → B with a pending request at `psn` (sure), else the
    /// only one, if it has sent `psn` already (a guess: a window can open between one
    /// queue pair's request and another's ACK).
    fn pair(&self, resp: ConnKey, psn: u32) -> Option<(ConnKey, bool)> {
        let (b, a, _) = resp;
        let qps = self.requesters.get(&(a, b))?;
        let exact = qps.iter().find(|&&qp| {
            self.conns
                .get(&(a, b, qp))
                .is_some_and(|c| c.pending.iter().any(|&(p, _)| p == psn))
        });
        match (exact, qps.as_slice()) {
            (Some(&qp), _) => Some(((a, b, qp), true)),
            (None, [qp]) => {
                let sent = self.conns.get(&(a, b, *qp))?.last_psn?;
                // An answer is at most one past the last request (a NAK's expected PSN).
                (psn_distance(psn, sent) <= 1).then_some(((a, b, *qp), false))
            }
            _ => None,
        }
    }
}

/// The NAK an AETH syndrome is, if any.
#[inline]
fn nak_kind(s: Syndrome) -> Option<NakKind> {
    match s {
        Syndrome::Nak(NakCode::PsnSequenceError) => Some(NakKind::Seq),
        Syndrome::Nak(_) => Some(NakKind::Other),
        Syndrome::RnrNak { .. } => Some(NakKind::Rnr),
        Syndrome::Ack { .. } | Syndrome::Reserved(_) => None,
    }
}
