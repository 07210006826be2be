//! Starting an agent, part by part: [`AgentBuilder::start`] checks what can be
//! checked, then [`Starting`] starts the parts in order and remembers what it
//! started, so a part that fails to start stops everything before it.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc::{unbounded_channel, Receiver, UnboundedReceiver, UnboundedSender};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::outcomes::{deliver_outcomes, Counts, DeliveryFinish};
use super::{
    lines, output, Agent, AgentBuilder, AgentError, RunOptions, TriggerAt, MANUAL_TRIGGER,
};
use crate::capture::live::{self, LiveCapture, LiveSpec};
use crate::capture::replay::{Replay, ReplayReport};
use crate::capture::InterfaceInfo;
use crate::clock::now_ns;
use crate::config::Config;
use crate::deliver::{CaptureCounts, DeliverStats, Delivery};
use crate::follow::{FollowOptions, Follower, LogLine};
use crate::matcher::Matcher;
use crate::packet_triggers::PacketTriggerDef;
use crate::recorder::{Firing, Recorder, RecorderParts, TriggerId, TriggerSpec, TriggerTable};
use crate::ring::{Ring, RingConfig, WATERMARK_END};
use crate::tasks::Tasks;
use crate::window::{CaptureOutcome, WindowOptions};

impl AgentBuilder {
    /// How to run beyond the config.
    pub fn options(mut self, opts: RunOptions) -> AgentBuilder {
        self.opts = opts;
        self
    }

    /// Match these lines like followed log lines (`tripcap wrap` feeds its
    /// child's output here). The agent's run ends only after they have closed,
    /// so every line sent before is matched.
    pub fn lines(mut self, lines: Receiver<LogLine>) -> AgentBuilder {
        self.lines = Some(lines);
        self
    }

    /// Send each capture's outcome here as soon as it is written.
    pub fn outcomes(mut self, tx: UnboundedSender<CaptureOutcome>) -> AgentBuilder {
        self.outcomes = Some(tx);
        self
    }

    /// Check, then start every part; on error, everything already started is
    /// stopped first. `shutdown` stops a live agent (and a replay early).
    pub async fn start(self, shutdown: CancellationToken) -> Result<Agent, AgentError> {
        let checked = check(&self.config, &self.opts)?;
        let mut starting = Starting {
            tasks: Tasks::current(),
            ring: None,
            delivery: None,
        };
        match starting.start(self, checked, shutdown).await {
            Ok(agent) => Ok(agent),
            Err(e) => {
                starting.stop().await;
                Err(e)
            }
        }
    }
}

/// What was checked before anything starts.
struct Checked {
    set: tripcap_triggers::TriggerSet,
    /// `[fleet]`'s job, when set.
    fleet_job: Option<String>,
    host: String,
    sources: Sources,
    follower: Option<Follower>,
}

enum Sources {
    Live(Vec<LiveSpec>),
    Replay(Replay),
}

/// Everything that can fail without starting anything: triggers, filter,
/// output directory (and what an earlier run left there), sources, log globs.
fn check(config: &Config, opts: &RunOptions) -> Result<Checked, AgentError> {
    let set = config.trigger_set()?;
    for note in config.check()? {
        tracing::warn!("{note}");
    }
    let fleet_job = config.fleet_job()?;
    let host = config.host.clone().unwrap_or_else(output::host_name);
    output::prepare_output(&config.output.dir)?;
    output::recover_spool(&config.output.dir, &host);
    let sources = if !opts.replay.is_empty() {
        Sources::Replay(Replay::open(
            &opts.replay,
            config.capture.headers_only && config.capture.snaplen_set,
        )?)
    } else if !config.capture.interfaces.is_empty() {
        let spec = |iface: &String| LiveSpec {
            iface: iface.clone(),
            filter: config.capture.filter.clone(),
            snaplen: config.capture.snaplen,
            headers_only: config.capture.headers_only,
            buffer_size: config.capture.buffer_size,
            promiscuous: config.capture.promiscuous,
            rdma_sniffer: crate::interfaces::is_rdma_device(&config.output.sysfs_root, iface),
        };
        Sources::Live(config.capture.interfaces.iter().map(spec).collect())
    } else {
        return Err(AgentError::NoSource);
    };
    let follower = if config.logs.paths.is_empty() {
        None
    } else {
        let opts = FollowOptions {
            max_line_bytes: usize::try_from(config.logs.max_line_bytes).unwrap_or(usize::MAX),
            ..FollowOptions::default()
        };
        let f = Follower::new(config.logs.paths.clone(), opts)
            .map_err(|e| AgentError::Follow(e.to_string()))?;
        Some(f)
    };
    Ok(Checked {
        set,
        fleet_job,
        host,
        sources,
        follower,
    })
}

/// The capture sources, opened: every interface opens, or none is used.
struct Opened {
    interfaces: Arc<Vec<InterfaceInfo>>,
    /// Packets are all newer than this.
    started_at: i64,
    live: Vec<LiveCapture>,
    replay: Option<Replay>,
}

fn open_sources(sources: Sources) -> Result<Opened, AgentError> {
    Ok(match sources {
        Sources::Live(specs) => {
            let live = specs
                .iter()
                .map(live::open)
                .collect::<Result<Vec<_>, _>>()?;
            let infos = live.iter().map(|c| c.info().clone()).collect();
            Opened {
                interfaces: Arc::new(infos),
                started_at: now_ns(),
                live,
                replay: None,
            }
        }
        Sources::Replay(r) => Opened {
            interfaces: Arc::new(r.interfaces().to_vec()),
            started_at: r.first_ts().map_or(i64::MIN, |t| t - 1),
            live: Vec::new(),
            replay: Some(r),
        },
    })
}

/// Every trigger, registered once in one table and named by its id from here on.
struct Registered {
    table: TriggerTable,
    matcher: Matcher,
    manual: TriggerId,
    /// Windows opened for other agents' announcements, with `[fleet]`.
    fleet: Option<TriggerId>,
    packet: Vec<(TriggerId, PacketTriggerDef)>,
    /// `--trigger-at` times with their triggers.
    at: Vec<(i64, TriggerId)>,
}

fn register(
    set: tripcap_triggers::TriggerSet,
    config: &Config,
    opts: &RunOptions,
) -> Result<Registered, AgentError> {
    let mut table = TriggerTable::default();
    let mut matcher = Matcher::new(set, config.perftest);
    matcher.register(&mut table);
    let (pre, post) = opts.manual_window.unwrap_or((
        tripcap_triggers::DEFAULT_PRE,
        tripcap_triggers::DEFAULT_POST,
    ));
    let manual = table.add(TriggerSpec {
        name: MANUAL_TRIGGER.into(),
        class: "manual".into(),
        pre,
        post,
        cooldown: Duration::ZERO,
    });
    let fleet = config.fleet.is_some().then(|| {
        table.add(TriggerSpec {
            name: crate::fleet::FLEET_TRIGGER.into(),
            class: "fleet".into(),
            pre: Duration::ZERO,
            post: Duration::ZERO,
            cooldown: Duration::ZERO,
        })
    });
    let packet = config
        .packet_triggers
        .iter()
        .map(|d| (table.add(d.spec()), d.clone()))
        .collect();
    let at = resolve_trigger_at(&opts.trigger_at, &table, manual)?;
    Ok(Registered {
        table,
        matcher,
        manual,
        fleet,
        packet,
        at,
    })
}

/// The `--trigger-at` times with their trigger ids.
fn resolve_trigger_at(
    at: &[TriggerAt],
    table: &TriggerTable,
    manual: TriggerId,
) -> Result<Vec<(i64, TriggerId)>, AgentError> {
    at.iter()
        .map(|t| match &t.trigger {
            None => Ok((t.at_ns, manual)),
            Some(name) => table
                .find(name)
                .map(|id| (t.at_ns, id))
                .ok_or_else(|| AgentError::UnknownTrigger(name.clone())),
        })
        .collect()
}

/// What the recorder is made of besides the config, the ring and the sources.
struct RecorderInputs {
    host: String,
    triggers: TriggerTable,
    /// With `[fleet]`: the book of incidents and where opened windows are announced.
    fleet: Option<(
        Arc<crate::fleet::FleetBook>,
        UnboundedSender<crate::recorder::Opened>,
    )>,
    /// The host's baseline, which windows compare their captures with.
    baseline: Option<crate::analyze::baseline::SharedProfile>,
}

/// What has started so far, for stopping it when a later part fails.
struct Starting {
    tasks: Tasks,
    ring: Option<Arc<Ring>>,
    delivery: Option<Delivery>,
}

impl Starting {
    /// Stop what started: interfaces whose thread never started must not hold
    /// windows open, delivery stops on its own token, then every tracked part.
    async fn stop(self) {
        if let Some(ring) = &self.ring {
            ring.advance_all(WATERMARK_END);
        }
        if let Some(d) = self.delivery {
            d.finish(None).await;
        }
        self.tasks.shutdown().await;
    }

    async fn start(
        &mut self,
        b: AgentBuilder,
        checked: Checked,
        shutdown: CancellationToken,
    ) -> Result<Agent, AgentError> {
        let AgentBuilder {
            config,
            opts,
            lines: extra_lines,
            outcomes,
        } = b;
        let Checked {
            set,
            fleet_job,
            host,
            sources,
            follower,
        } = checked;
        let tasks = self.tasks.clone();
        // Delivery and the API first: a misconfiguration stops us before capture.
        let (api, deliver_stats, capture_counts) = self.delivery_and_api(&config, &host).await?;

        let replaying = matches!(sources, Sources::Replay(_));
        let opened = open_sources(sources)?;
        let max_age = config.effective_max_age(&set);
        let reg = register(set, &config, &opts)?;
        let ring = self.ring(&config, max_age, &opened)?;
        let book = fleet_job.as_ref().map(crate::fleet::FleetBook::new);
        let (opened_tx, opened_rx) = unbounded_channel();
        let (deviations, packet): (Vec<_>, Vec<_>) = reg
            .packet
            .into_iter()
            .partition(|(_, d)| d.kind == crate::packet_triggers::PacketTriggerKind::Deviation);
        // The baseline: kept on disk while capturing live; a replay (old
        // traffic, often another host's) only feeds its deviation triggers.
        let baseline = (config.baseline.enabled && (!replaying || !deviations.is_empty()))
            .then(crate::analyze::baseline::SharedProfile::default);
        let history = match (&baseline, replaying) {
            (Some(_), false) => Some(config.baseline.open(&config.output.dir).map_err(|e| {
                AgentError::Output {
                    path: config.baseline.dir(&config.output.dir).display().to_string(),
                    message: format!("cannot keep the baseline history there ({e}): set `[baseline] dir` to a writable directory, or `enabled = false`"),
                }
            })?),
            _ => None,
        };
        let (recorder, done) = self.recorder(
            &config,
            &ring,
            &opened,
            RecorderInputs {
                host: host.clone(),
                triggers: reg.table,
                fleet: book.as_ref().map(|b| (Arc::clone(b), opened_tx)),
                baseline: baseline.clone(),
            },
        );

        // Replays wait for their uploads before the run ends, unless interrupted.
        let counts = Arc::new(Counts::default());
        let replay_ended = CancellationToken::new();
        if let Some(delivery) = self.delivery.take() {
            let finish = DeliveryFinish {
                delivery,
                upload_wait: replaying.then(|| {
                    opts.upload_wait
                        .unwrap_or(crate::deliver::DEFAULT_UPLOAD_WAIT)
                }),
                replay_ended: replay_ended.clone(),
            };
            tasks.spawn(deliver_outcomes(
                done,
                finish,
                outcomes,
                Arc::clone(&counts),
            ));
        }
        // Packet triggers see every block sealed from now on: before the sources.
        if !packet.is_empty() {
            crate::packet_triggers::spawn(
                &ring,
                Arc::clone(&opened.interfaces),
                Arc::clone(&recorder),
                packet,
                &tasks,
            )
            .map_err(AgentError::Thread)?;
        }
        let baseline_stats = Arc::new(crate::baseline::keeper::BaselineStats::default());
        let baseline_on = baseline.is_some();
        if let Some(profile) = baseline {
            crate::baseline::keeper::spawn(
                crate::baseline::keeper::KeeperParts {
                    ring: Arc::clone(&ring),
                    interfaces: Arc::clone(&opened.interfaces),
                    recorder: Arc::clone(&recorder),
                    history,
                    interval: config.baseline.interval,
                    keep: config.baseline.keep,
                    profile,
                    deviations,
                    may_skip: !replaying,
                    stats: Arc::clone(&baseline_stats),
                },
                &tasks,
            )
            .map_err(AgentError::Thread)?;
        }
        let interfaces = Arc::clone(&opened.interfaces);
        let started_at = opened.started_at;
        let replay_done = self.sources(opened, &ring, &recorder, reg.at, &opts)?;
        // The fleet after the sources: NATS is never in the capture path, and a
        // local trigger meanwhile is announced once the link is up.
        let fleet_stats = match (book, fleet_job, reg.fleet, &config.fleet) {
            (Some(book), Some(job), Some(trigger), Some(fc)) => {
                let stats = Arc::new(crate::fleet::FleetStats::default());
                let addresses = if fc.addresses.is_empty() {
                    crate::fleet::interface_addresses(&config.capture.interfaces)
                } else {
                    fc.addresses.clone()
                };
                let parts = crate::fleet::FleetParts {
                    config: fc.clone(),
                    job,
                    host: host.clone(),
                    addresses,
                    recorder: Arc::clone(&recorder),
                    trigger,
                    ring: Arc::clone(&ring),
                    started_at,
                    opened: opened_rx,
                    book,
                    stats: Arc::clone(&stats),
                };
                crate::fleet::start(parts, &tasks).await?;
                Some(stats)
            }
            _ => None,
        };

        if let Some(api) = api {
            let view = crate::api::AgentView {
                interfaces,
                ring: Arc::clone(&ring),
                recorder: Arc::clone(&recorder),
                manual_trigger: reg.manual,
                replay: replaying,
                follow: follower.as_ref().map(|f| f.stats()),
                deliver: Some(deliver_stats),
                captures: capture_counts,
                tasks: tasks.clone(),
                fleet: fleet_stats,
                baseline: baseline_on.then(|| Arc::clone(&baseline_stats)),
            };
            tasks.spawn(api.run(view, tasks.stop_token().clone()));
        }
        let clock = if replaying {
            lines::Clock::Ring(Arc::clone(&ring))
        } else {
            lines::Clock::Wall
        };
        let lines_done = start_lines(
            &tasks,
            follower,
            extra_lines,
            reg.matcher,
            Arc::clone(&recorder),
            clock,
        );
        Ok(Agent {
            tasks,
            shutdown,
            linger: opts.linger,
            lines_done,
            recorder,
            manual: reg.manual,
            counts,
            replay_done,
            replay_ended,
            ring,
        })
    }

    /// Bind the API (not serving yet) and start delivery.
    async fn delivery_and_api(
        &mut self,
        config: &Config,
        host: &str,
    ) -> Result<
        (
            Option<crate::api::Api>,
            Arc<DeliverStats>,
            Arc<CaptureCounts>,
        ),
        AgentError,
    > {
        let api = match &config.api {
            Some(a) => Some(
                crate::api::Api::bind(a)
                    .await
                    .map_err(|e| AgentError::Deliver(e.to_string()))?,
            ),
            None => None,
        };
        let delivery = Delivery::start(
            config.output.dir.clone(),
            host.to_string(),
            config.spool.clone(),
            config.upload.clone(),
            &self.tasks,
        )
        .map_err(|e| AgentError::Deliver(e.to_string()))?;
        let counters = (delivery.stats(), delivery.captures());
        self.delivery = Some(delivery);
        Ok((api, counters.0, counters.1))
    }

    /// The ring, and its prefault thread.
    fn ring(
        &mut self,
        config: &Config,
        max_age: Duration,
        opened: &Opened,
    ) -> Result<Arc<Ring>, AgentError> {
        let ring = Ring::new(
            RingConfig {
                memory_limit: usize::try_from(config.ring.memory_limit).unwrap_or(usize::MAX),
                block_size: usize::try_from(config.ring.block_size)
                    .unwrap_or(crate::ring::DEFAULT_BLOCK_SIZE),
                max_age,
                prefault: crate::ring::DEFAULT_PREFAULT,
                compress: config.ring.compress,
            },
            opened.interfaces.len(),
            opened.started_at,
        );
        self.ring = Some(Arc::clone(&ring));
        if let Some(prefault) = ring.prefaulter(self.tasks.stop_token().clone()) {
            self.tasks
                .thread("ring-prefault", prefault)
                .map_err(AgentError::Thread)?;
        }
        let linktypes: Vec<u32> = opened
            .interfaces
            .iter()
            .map(|i| u32::from(i.desc.linktype))
            .collect();
        for _ in 0..config.ring.compress_threads {
            let stop = self.tasks.stop_token().clone();
            if let Some(compress) = ring.compressor(linktypes.clone(), stop) {
                self.tasks
                    .thread("ring-compress", compress)
                    .map_err(AgentError::Thread)?;
            }
        }
        Ok(ring)
    }

    /// The recorder, and the channel its windows report their outcomes on.
    fn recorder(
        &self,
        config: &Config,
        ring: &Arc<Ring>,
        opened: &Opened,
        inputs: RecorderInputs,
    ) -> (Arc<Recorder>, UnboundedReceiver<CaptureOutcome>) {
        let RecorderInputs {
            host,
            triggers,
            fleet,
            baseline,
        } = inputs;
        let (done_tx, done_rx) = unbounded_channel();
        let (book, announce) = fleet.unzip();
        let recorder = Recorder::new(RecorderParts {
            ring: Arc::clone(ring),
            interfaces: Arc::clone(&opened.interfaces),
            dir: config.output.dir.clone(),
            host,
            triggers,
            max_window: config.output.max_window,
            window_options: WindowOptions {
                reports: config.output.reports,
                sysfs_root: Some(config.output.sysfs_root.clone()),
                fleet: book.map(|b| b as Arc<dyn crate::window::FleetParticipants>),
                baseline,
            },
            done: done_tx,
            tasks: self.tasks.clone(),
            announce,
        });
        (Arc::new(recorder), done_rx)
    }

    /// Capture threads, or the replay (whose report comes on the channel
    /// returned): packets flow from here on.
    fn sources(
        &self,
        opened: Opened,
        ring: &Arc<Ring>,
        recorder: &Arc<Recorder>,
        trigger_at: Vec<(i64, TriggerId)>,
        opts: &RunOptions,
    ) -> Result<Option<oneshot::Receiver<ReplayReport>>, AgentError> {
        let n = opened.live.len();
        for (i, cap) in opened.live.into_iter().enumerate() {
            live::spawn(cap, i as u16, Arc::clone(ring), &self.tasks)
                .map_err(AgentError::Thread)?;
        }
        let Some(replay) = opened.replay else {
            tracing::info!(
                interfaces = n,
                memory_limit = ring.memory_limit(),
                "capturing"
            );
            return Ok(None);
        };
        let (tx, rx) = oneshot::channel();
        let (rec, ring, stop) = (
            Arc::clone(recorder),
            Arc::clone(ring),
            self.tasks.stop_token().clone(),
        );
        let speed = opts.speed;
        self.tasks
            .thread("replay", move || {
                let fire = |t: i64, trigger: TriggerId| {
                    let f = Firing { trigger, at_ns: t, ..Firing::default() };
                    if let Err(e) = rec.fire(f) {
                        tracing::error!(error = %e, "trigger at a replay time: cannot open a capture");
                    }
                };
                let report = replay.run(&ring, speed, trigger_at, fire, &stop);
                ring.advance_all(WATERMARK_END); // every window closes with what it holds
                let _ = tx.send(report);
            })
            .map_err(AgentError::Thread)?;
        Ok(Some(rx))
    }
}

/// Start the log-line path (follower, wrapped lines, matcher); the token is
/// cancelled once every line read has been matched (at once without lines).
fn start_lines(
    tasks: &Tasks,
    follower: Option<Follower>,
    extra: Option<Receiver<LogLine>>,
    matcher: Matcher,
    recorder: Arc<Recorder>,
    clock: lines::Clock,
) -> CancellationToken {
    let done = CancellationToken::new();
    if follower.is_none() && extra.is_none() {
        done.cancel();
        return done;
    }
    let (line_tx, line_rx) = tokio::sync::mpsc::channel(1024);
    if let Some(follower) = follower {
        tasks.spawn(follower.run(line_tx.clone(), tasks.stop_token().clone()));
    }
    if let Some(mut extra) = extra {
        // Not stopped by the token: wrap closes it after its job's last line.
        let tx = line_tx.clone();
        tasks.spawn(async move {
            while let Some(line) = extra.recv().await {
                if tx.send(line).await.is_err() {
                    break;
                }
            }
        });
    }
    drop(line_tx);
    let d = done.clone();
    tasks.spawn(async move {
        lines::match_lines(line_rx, matcher, recorder, clock).await;
        d.cancel();
    });
    done
}
