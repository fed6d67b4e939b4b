//! The command line: one file per subcommand, all over the same core. Errors are one line on
//! stderr with exit code 2; a panic never reaches the user as a backtrace.

use clap::{Parser, Subcommand};

mod batch;
mod chargeback;
mod check;
mod check_config;
mod defrag;
mod experiment;
mod explore;
mod export;
mod export_k8s;
mod gpu;
mod import;
mod import_k8s;
mod import_nvidia_smi;
mod layout;
mod mode;
mod regime;
mod regime_sweep;
mod relayout;
mod runstats;
pub mod simulate;
mod solve;
pub mod sweep;

/// Terminal planner for fleets of NVIDIA MIG GPUs, with the OrigaMIG optimizer.
#[derive(Parser, Debug)]
#[command(name = "migplan", version, about)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Open the interactive planner on a scenario file (no subcommand opens the demo).
    Tui(crate::tui::Args),
    /// Validate a scenario file and print a one-line summary.
    Check(check::Args),
    /// Check a mig-parted config file: every config on every GPU model it applies to, placeable
    /// by the slice rules or which profile fails, and the capacity it leaves unused.
    CheckConfig(check_config::Args),
    /// Plan which verified MIG layout each GPU of one model gets for a demand.
    Layout(layout::Args),
    /// Preview a GPU's re-layout: every VM its host's drain displaces, and where each could go.
    Relayout(relayout::Args),
    /// Preview a GPU's mode change (whole, shared, MIG with a layout) as a drain; --apply writes it.
    Mode(mode::Args),
    /// One OrigaMIG optimizer call on a scenario's current state (§5).
    Solve(solve::Args),
    /// The defragmentation pass across GPU modes: soft shares repacked, the fewest MIG tenants
    /// restarted at their next deploy to free GPUs.
    Defrag(defrag::Args),
    /// The batch plan of the pending queue across GPU modes: MIG layouts by the exact planner,
    /// shares and gangs by the packing score; --apply writes the placements.
    Batch(batch::Args),
    /// GPU-hours per tenant by the chargeback rule.
    Chargeback(chargeback::Args),
    /// Export the fleet's current layouts (mig-parted config, Kubernetes artefacts).
    #[command(subcommand)]
    Export(export::Format),
    /// Read a mig-parted config against a scenario, or a real fleet (nvidia-smi, Kubernetes)
    /// into a new scenario.
    #[command(subcommand)]
    Import(import::Format),
    /// Configuration-space statistics of a GPU model (paper §3).
    Explore(explore::Args),
    /// One GPU with given GIs: slice map, CF, free starts, capacity, and why a profile fits or not.
    Gpu(gpu::Args),
    /// Run one simulation of a policy over a scenario and print its metrics.
    Simulate(simulate::Args),
    /// Run every combination of policies, loads and seeds in parallel; CSV rows, means with
    /// 95 % confidence intervals and Fig. 4 as SVG.
    Sweep(sweep::Args),
    /// Experiments that write their tables (command line, commit, date): the paper's, beside its values (§6.4-§6.8), and this project's own (paired runs, speed, scale, eight-GPU nodes).
    Experiment(experiment::Args),
}

/// Runs the command line; returns the process exit code.
/// The output flags of a command that proposes a change of the fleet (`batch`, `defrag`,
/// `mode`): `--json`, and `--apply -o OUT` to write the scenario after the change.
#[derive(clap::Args, Debug)]
pub struct ChangeOutput {
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    /// Apply the change and write the scenario after it to the file of `-o`.
    #[arg(long, requires = "out")]
    pub apply: bool,
    /// With --apply: the scenario file to write (written atomically; may be the input).
    #[arg(short = 'o', long = "out", value_name = "OUT.toml", requires = "apply")]
    pub out: Option<std::path::PathBuf>,
}

impl ChangeOutput {
    /// Prints the change (JSON or text); with `--apply`, checks the fleet after it and writes
    /// `sc` with that fleet to `-o`. `what` names the change in the internal-error message.
    pub fn finish(
        &self,
        sc: &crate::scenario::Scenario,
        after: &crate::fleet::Fleet,
        text: impl FnOnce() -> String,
        json: impl FnOnce() -> serde_json::Value,
        what: &str,
    ) -> anyhow::Result<()> {
        if self.json {
            println!("{}", serde_json::to_string_pretty(&json())?);
        } else {
            print!("{}", text());
        }
        if let (true, Some(out)) = (self.apply, &self.out) {
            let mut next = sc.clone();
            next.fleet = after.clone();
            next.fleet
                .check_invariants()
                .map_err(|e| anyhow::anyhow!("internal: {what} broke an invariant: {e}"))?;
            crate::scenario::save(&next, out).map_err(|e| anyhow::anyhow!("-o {}: {e:#}", out.display()))?;
            if !self.json {
                println!("wrote {}", out.display());
            }
        }
        Ok(())
    }
}

pub fn run() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return code;
        }
    };
    quiet_on_broken_pipe();
    let result = std::panic::catch_unwind(|| dispatch(cli));
    match result {
        Ok(Ok(())) => 0,
        Ok(Err(e)) => {
            eprintln!("migplan: {}", crate::catalog::one_line(&format!("{e:#}")));
            2
        }
        Err(_) => {
            eprintln!("migplan: internal error (a bug): see the message above");
            3
        }
    }
}

/// A reader that goes away early (`migplan ... | head`) makes `println!` panic with "Broken
/// pipe": that is not a bug, so the process ends quietly with status 0, as Unix tools do.
fn quiet_on_broken_pipe() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info.payload();
        let msg = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or("");
        if msg.contains("Broken pipe") {
            std::process::exit(0);
        }
        previous(info);
    }));
}

/// Rows as left-aligned columns separated by two spaces, one line per row with its trailing
/// spaces trimmed. A column is as wide as its widest cell; rows may have fewer cells than others.
pub(crate) fn table_lines(rows: &[Vec<String>]) -> Vec<String> {
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..cols)
        .map(|c| {
            rows.iter()
                .map(|r| r.get(c).map_or(0, |s| s.chars().count()))
                .max()
                .unwrap_or(0)
        })
        .collect();
    rows.iter()
        .map(|r| {
            let line: Vec<String> = r
                .iter()
                .enumerate()
                .map(|(c, s)| format!("{s:<w$}", w = widths[c]))
                .collect();
            line.join("  ").trim_end().to_string()
        })
        .collect()
}

/// Prints `rows` laid out by [`table_lines`].
pub(crate) fn print_table(rows: &[Vec<String>]) {
    for line in table_lines(rows) {
        println!("{line}");
    }
}

fn dispatch(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        None => crate::tui::run(crate::session::Session::demo()?),
        Some(Command::Tui(a)) => crate::tui::run(crate::tui::session_of(&a)?),
        Some(Command::Check(a)) => check::run(a),
        Some(Command::CheckConfig(a)) => check_config::run(a),
        Some(Command::Layout(a)) => layout::run(a),
        Some(Command::Relayout(a)) => relayout::run(a),
        Some(Command::Mode(a)) => mode::run(a),
        Some(Command::Solve(a)) => solve::run(a),
        Some(Command::Defrag(a)) => defrag::run(a),
        Some(Command::Batch(a)) => batch::run(a),
        Some(Command::Chargeback(a)) => chargeback::run(a),
        Some(Command::Export(a)) => export::run(a),
        Some(Command::Import(a)) => import::run(a),
        Some(Command::Explore(a)) => explore::run(a),
        Some(Command::Gpu(a)) => gpu::run(a),
        Some(Command::Simulate(a)) => simulate::run(a),
        Some(Command::Experiment(a)) => experiment::run(a),
        Some(Command::Sweep(a)) => sweep::run(a),
    }
}
