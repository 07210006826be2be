//! The `tripcap` binary: parses flags, calls the library, maps the result to an
//! exit code. Errors are printed as one line that says what to do.

use std::io::Write as _;
use std::process::ExitCode;

use anyhow::Context;
use clap::Parser;
use tokio_util::sync::CancellationToken;
use tripcap::agent;
use tripcap::cli::{CheckArgs, Cli, Command, LogFormat, RunArgs};
use tripcap::config::Config;
use tripcap::window::CaptureOutcome;

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_logging(cli.log_format, cli.verbose);
    // Before any thread: file capabilities granted as permitted (`setcap …+p`) become
    // effective for every thread started later. Failing leaves the process as it was;
    // a capture that needed them says so itself.
    if let Err(e) = tripcap::caps::raise_permitted() {
        tracing::debug!("cannot raise permitted capabilities: {e}");
    }
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("tripcap: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn init_logging(format: LogFormat, verbose: u8) {
    let default = match verbose {
        0 => "info",
        1 => "debug",
        _ => "trace",
    };
    let mut filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    // The NATS client logs every reconnect attempt at info; the fleet says what
    // matters (disconnected, reconnected) itself. RUST_LOG=async_nats=… wins.
    if !std::env::var("RUST_LOG").is_ok_and(|v| v.contains("async_nats")) {
        if let Ok(d) = "async_nats=warn".parse() {
            filter = filter.add_directive(d);
        }
    }
    // A log line that cannot be written (stderr closed or full) is dropped: the
    // subscriber must not report it with eprintln!, which panics the task that logged.
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .log_internal_errors(false);
    match format {
        LogFormat::Human => builder.init(),
        LogFormat::Json => builder.json().init(),
    }
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

fn load(
    config: Option<&std::path::Path>,
    quick: &tripcap::cli::QuickArgs,
) -> anyhow::Result<Config> {
    let mut c = match config {
        Some(path) => Config::load(path)?,
        None => Config::default(),
    };
    c.apply(&quick.flags());
    Ok(c)
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Run(args) => run_agent(args),
        Command::Triggers(args) => triggers(args),
        Command::Wrap(args) => wrap(args),
        Command::Check(args) => check(args),
        Command::Collect(args) => collect(args),
        Command::Interfaces => {
            let report = tripcap::interfaces::report(std::path::Path::new("/sys"))
                .context("cannot list capture devices")?;
            print!("{report}");
            Ok(ExitCode::SUCCESS)
        }
        Command::Demo(args) => {
            let report = runtime()?.block_on(tripcap::demo::run(&args.out, args.replay))?;
            print!("{}", tripcap::demo::describe(&report));
            Ok(match report.capture {
                CaptureOutcome::Written { .. } => ExitCode::SUCCESS,
                CaptureOutcome::Failed { .. } => ExitCode::FAILURE,
            })
        }
        Command::Selftest(args) => selftest(args),
        Command::WiresharkProfile(args) => wireshark_profile(args),
        Command::Baseline(args) => baseline(args),
        Command::Generate(args) => {
            let file = std::fs::File::create(&args.out)
                .with_context(|| format!("cannot create `{}`", args.out.display()))?;
            let start = args.start.unwrap_or_else(tripcap::clock::now_ns);
            let write = if args.realistic {
                tripcap::traffic::write_realistic
            } else {
                tripcap::traffic::write_synthetic
            };
            let out = write(
                std::io::BufWriter::with_capacity(1 << 20, file),
                args.packets,
                args.snaplen,
                args.rate,
                args.flows,
                start,
            )
            .with_context(|| format!("cannot write `{}`", args.out.display()))?;
            out.into_inner()
                .map_err(|e| e.into_error())
                .and_then(|f| f.sync_all())
                .with_context(|| format!("cannot write `{}`", args.out.display()))?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Analyze(args) => {
            let stdout = std::io::stdout();
            let mut out = std::io::BufWriter::new(stdout.lock());
            tripcap::analyze::run(&args, &mut out)?;
            std::io::Write::flush(&mut out).ok();
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn triggers(args: tripcap::cli::TriggersArgs) -> anyhow::Result<ExitCode> {
    use tripcap::cli::TriggersCommand;
    use tripcap::triggers_cmd::{self, Format};
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::with_capacity(1 << 16, stdout.lock());
    match args.command {
        TriggersCommand::List(a) => {
            if a.patterns {
                triggers_cmd::list_patterns(&mut out)
            } else {
                triggers_cmd::list(&mut out)
            }
            .context("cannot write to stdout")?;
        }
        TriggersCommand::Test(a) => {
            let (set, perftest) = match &a.config {
                Some(path) => {
                    let c = Config::load(path)?;
                    (c.trigger_set()?, c.perftest)
                }
                None => (triggers_cmd::all_builtin(), None),
            };
            let mut matcher = tripcap::matcher::Matcher::new(set, perftest);
            let format = if a.json { Format::Json } else { Format::Table };
            let summary = triggers_cmd::test_files(&mut matcher, &a.files, format, &mut out)?;
            std::io::Write::flush(&mut out).context("cannot write to stdout")?;
            eprintln!(
                "{} firing(s) in {} line(s) of {} file(s)",
                summary.firings, summary.lines, summary.files
            );
        }
    }
    std::io::Write::flush(&mut out).context("cannot write to stdout")?;
    Ok(ExitCode::SUCCESS)
}

fn baseline(args: tripcap::cli::BaselineArgs) -> anyhow::Result<ExitCode> {
    use tripcap::baseline::show;
    use tripcap::cli::BaselineCommand;
    let from = match &args.command {
        BaselineCommand::Show(a) => &a.from,
        BaselineCommand::Export(a) => &a.from,
    };
    let config = match &from.config {
        Some(path) => Config::load(path)?,
        None => Config::default(),
    };
    let dir = from
        .dir
        .clone()
        .unwrap_or_else(|| config.baseline.dir(&config.output.dir));
    let back = from.since.unwrap_or(config.baseline.keep);
    let since =
        tripcap::clock::now_ns().saturating_sub(i64::try_from(back.as_nanos()).unwrap_or(i64::MAX));
    let profile = show::load_profile(&dir, since)?;
    let mut out = std::io::stdout().lock();
    match &args.command {
        BaselineCommand::Show(a) if a.json => {
            serde_json::to_writer_pretty(&mut out, &profile).context("cannot write to stdout")?;
            writeln!(out).context("cannot write to stdout")?;
        }
        BaselineCommand::Show(_) => {
            write!(out, "{}", show::render(&profile, &dir)).context("cannot write to stdout")?
        }
        BaselineCommand::Export(a) => {
            show::export(&profile, &a.file)?;
            let n = profile.bands.values().map(|b| b.samples).max().unwrap_or(0);
            writeln!(
                out,
                "wrote {}: the baseline of {} ({n} intervals at most per class); `tripcap analyze CAPTURE --baseline {0}` compares a capture with it",
                a.file.display(),
                dir.display()
            )
            .context("cannot write to stdout")?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn wireshark_profile(args: tripcap::cli::WiresharkProfileArgs) -> anyhow::Result<ExitCode> {
    use tripcap::wireshark_profile as wp;
    let (parent, fix) = match &args.out {
        Some(dir) => (
            dir.clone(),
            "give -o a directory you can write, or use --install",
        ),
        None => (
            wp::install_parent()?,
            "make it writable, or write the profile elsewhere with -o DIR and copy it there",
        ),
    };
    let written = wp::write(&parent, &args.roce_ports, fix)?;
    let mut out = std::io::stdout().lock();
    for (path, what) in &written {
        writeln!(out, "wrote {}: {what}", path.display()).context("cannot write to stdout")?;
    }
    let dir = parent.join(wp::PROFILE_NAME);
    if args.install {
        writeln!(
            out,
            "installed the profile `{}` in {}: `wireshark -C {0}` or `tshark -C {0}` uses it",
            wp::PROFILE_NAME,
            dir.display()
        )
    } else {
        writeln!(
            out,
            "to use it, copy {} into Wireshark's profiles directory (`--install` does), then `wireshark -C {}`",
            dir.display(),
            wp::PROFILE_NAME
        )
    }
    .context("cannot write to stdout")?;
    Ok(ExitCode::SUCCESS)
}

fn wrap(args: tripcap::cli::WrapArgs) -> anyhow::Result<ExitCode> {
    let run = args.run;
    let mut config = load(run.config.as_deref(), &run.quick)?;
    if config.packs.is_empty() && config.triggers.is_empty() {
        // Nothing configured: watch the job's output with every built-in pack.
        config.packs = tripcap_triggers::PACK_NAMES
            .iter()
            .map(|p| p.to_string())
            .collect();
    }
    let opts = run.options();
    match runtime()?.block_on(tripcap::wrap::run(
        config,
        opts,
        &args.command,
        !args.no_linger,
    )) {
        Ok(code) => Ok(ExitCode::from(code)),
        Err(e) => {
            eprintln!("tripcap: {e}");
            Ok(ExitCode::from(e.exit_code()))
        }
    }
}

fn collect(args: tripcap::cli::CollectArgs) -> anyhow::Result<ExitCode> {
    let token = match &args.token_env {
        Some(name) => match std::env::var(name) {
            Ok(t) if !t.trim().is_empty() => Some(t.trim().to_string()),
            _ => anyhow::bail!(
                "--token-env {name}: the variable is not set or empty: export {name}=<token> first"
            ),
        },
        None => None,
    };
    runtime()?.block_on(async {
        let shutdown = CancellationToken::new();
        let on_signal = shutdown.clone();
        tokio::spawn(async move {
            wait_for_signal().await;
            on_signal.cancel();
        });
        let storage = match (args.store, args.dir) {
            (Some(url), _) => tripcap::collect::StorageChoice::Bucket {
                url,
                settings: tripcap::s3::Settings {
                    endpoint: args.endpoint,
                    region: args.region,
                    ..Default::default()
                },
            },
            (None, Some(dir)) => tripcap::collect::StorageChoice::Dir(dir),
            (None, None) => anyhow::bail!("give --dir DIR or --store s3://BUCKET/PREFIX"),
        };
        tripcap::collect::run(args.listen, storage, token, args.max_file_size, shutdown)
            .await
            .map_err(anyhow::Error::from)
    })?;
    Ok(ExitCode::SUCCESS)
}

fn check(args: CheckArgs) -> anyhow::Result<ExitCode> {
    let config = load(args.config.as_deref(), &args.quick)?;
    let notes = config.check()?;
    let set = config.trigger_set()?;
    for n in &notes {
        println!("note: {n}");
    }
    println!(
        "{}",
        tripcap::interfaces::sniffing_line(tripcap::interfaces::rdma_sniffing())
    );
    println!(
        "ok: {} trigger(s), filter `{}`, snaplen {}, ring {} bytes, output {}",
        set.defs().len(),
        config.capture.filter,
        config.capture.snaplen_text(),
        config.ring.memory_limit,
        config.output.dir.display()
    );
    println!("{}", config.history_line());
    let b = &config.baseline;
    if b.enabled {
        println!(
            "baseline: a summary every {} into {}, kept {} within {} bytes",
            humantime::format_duration(b.interval),
            b.dir(&config.output.dir).display(),
            humantime::format_duration(b.keep),
            b.max_bytes
        );
    } else {
        println!("baseline: off");
    }
    Ok(ExitCode::SUCCESS)
}

fn selftest(args: tripcap::cli::SelftestArgs) -> anyhow::Result<ExitCode> {
    let config = load(args.config.as_deref(), &args.quick).map_err(|e| format!("{e:#}"));
    let checks = runtime()?.block_on(tripcap::selftest::run(config));
    if args.json {
        let doc = serde_json::json!({
            "ready": checks.iter().all(|c| c.ok),
            "checks": checks,
        });
        println!("{doc:#}");
    } else {
        print!("{}", tripcap::selftest::table(&checks));
    }
    Ok(if checks.iter().all(|c| c.ok) {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn run_agent(args: RunArgs) -> anyhow::Result<ExitCode> {
    let config = load(args.config.as_deref(), &args.quick)?;
    let opts = args.options();
    let rt = runtime()?;
    let summary = rt.block_on(async {
        let shutdown = CancellationToken::new();
        let on_signal = shutdown.clone();
        tokio::spawn(async move {
            wait_for_signal().await;
            // Cancel first: nothing that can fail (a log line to a closed stderr)
            // comes between the signal and the stop.
            on_signal.cancel();
            tracing::info!("stopping: closing open captures");
        });
        // Each capture's line is printed as it is written.
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let printer = tokio::spawn(async move {
            while let Some(c) = rx.recv().await {
                if let CaptureOutcome::Written { pcapng, report, .. } = c {
                    let state = if report.window.complete {
                        "complete"
                    } else {
                        "incomplete"
                    };
                    // A closed stdout loses the line, never the agent.
                    let mut out = std::io::stdout().lock();
                    let _ = writeln!(
                        out,
                        "{}\t{} packets\t{state}",
                        pcapng.display(),
                        report.packets
                    );
                }
            }
        });
        let summary = agent::run(config, opts, shutdown, Some(tx)).await;
        let _ = printer.await;
        summary
    })?;
    Ok(if summary.failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

async fn wait_for_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    match (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) {
        (Ok(mut term), Ok(mut int)) => {
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
            }
        }
        _ => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}
