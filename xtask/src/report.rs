//! `cargo xtask report DIR [--out FILE]`: one markdown table per sonic workload comparing our
//! median with each peer's, from the JSON of one benchmark run.
//!
//! Reads `DIR/sonic-bench.json` (required), `DIR/torch-peers.json`,
//! `DIR/flashinfer-peers.json` and `DIR/cake-peers.json` (each optional), all in the shared
//! results schema (see `plot.rs`). For every shape (dtype, V, B) of every workload, each peer's
//! cell is one of:
//!
//! - a time in µs and our speedup (peer median / our median; above 1 we are faster), from the
//!   fastest of the peer's entry points for that workload;
//! - **not run**: the peer could, but the file has no figure for it (no harness cell, a failed
//!   or skipped measurement, or the file is missing); where [`capability`] knows why (a harness
//!   that runs only f32, say), the reason goes under the table.
//!
//! There is no "not supported" cell: no peer here lacks a workload outright. What a peer cannot
//! fuse (FlashInfer: penalties, logit bias, the bitmask) is left out of its cell and marked `‡`.
//! An earlier version called FlashInfer's bf16 sampling "not supported"; its sampling kernels
//! are templates over the probability type, and our harness simply runs them in f32 only.
//!
//! A figure whose row note says the peer did only part of the workload (FlashInfer's
//! heterogeneous and verify_hetero cells) is marked `‡`: it is a lower bound of the peer's time,
//! so the speedup next to it understates ours.
//!
//! FlashInfer's cake sampling (`cake-peers.json`, bench/peers/cake_peer.py) has a column of its
//! own in the topk50_topp09_t07 table only: FlashInfer's OnlineSoftmax + `cake_sampling`, the
//! fastest way FlashInfer has from logits to a top-k/top-p sample on Hopper. Our ratio against
//! it is the headline, summed up under the file list. When that file has figures, the
//! harness's `not_built` note for cake is dropped.
//!
//! Why: one table that puts every peer next to us from one run, and says which figures are
//! missing and which are partial.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde_json::Value;

/// One result row of any producer, kept even without a median (then "not run").
#[derive(Debug, Clone)]
struct Entry {
    impl_name: String,
    workload: String,
    dtype: String,
    vocab: u64,
    batch: u64,
    median_us: Option<f64>,
    /// GB/s over the bytes the producer counts for the row.
    gb_per_s: Option<f64>,
    note: String,
}

/// A results file: its header fields and rows.
struct Doc {
    file: String,
    header: String,
    /// `not_built` notes (FlashInfer entry points the harness could not build), shown as is.
    not_built: Vec<String>,
    rows: Vec<Entry>,
    /// The device-to-device copy bandwidth the producer measured (sonic-bench's ceilings).
    copy_gbs: Option<f64>,
}

fn read_doc(path: &Path) -> Result<Doc> {
    let file = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let doc: Value = serde_json::from_str(&text).with_context(|| format!("{file}: not JSON"))?;
    let header = header_of(&doc);
    let not_built = doc["not_built"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|n| format!("{}: {}", n["impl"].as_str().unwrap_or("?"), n["note"].as_str().unwrap_or("")))
                .collect()
        })
        .unwrap_or_default();
    // Rows that do not name their shape cannot be placed in a table.
    let (measured, _) = crate::plot::parse_results(&doc, &file)?;
    let rows = measured
        .into_iter()
        .map(|m| Entry {
            impl_name: m.impl_name,
            workload: m.workload,
            dtype: m.dtype,
            vocab: m.vocab,
            batch: m.batch,
            median_us: m.median_us,
            gb_per_s: m.gb_per_s,
            note: m.note,
        })
        .collect();
    let copy_gbs = doc["ceilings"]["copy_gbs"].as_f64().filter(|g| g.is_finite() && *g > 0.0);
    Ok(Doc { file, header, not_built, rows, copy_gbs })
}

/// A results file's header line: its device, date and versions, and a warning when its cells
/// were timed without the L2 flush (`sonic-bench --warm-l2`), which flushed peers do not share.
fn header_of(doc: &Value) -> String {
    let field = |k: &str| doc[k].as_str().map(|v| format!("{k} {v}"));
    let mut parts: Vec<String> = ["device", "date", "torch", "flashinfer", "timer"].iter().filter_map(|k| field(k)).collect();
    if doc["warm_l2"].as_bool() == Some(true) {
        parts.push("**warm L2 (--warm-l2): no flush between replays, so not comparable with flushed runs**".into());
    }
    parts.join(", ")
}

/// What a peer can do for a workload in a dtype.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cap {
    /// The peer's entry points for it (the fastest measured one counts); empty: the peer could
    /// do it but its harness has no such cell, so it is always "not run".
    Impls(&'static [&'static str]),
    /// The peer could, but our harness does not run it; the reason goes under the table.
    NotRun(&'static str),
}

/// The peers, their files and column labels.
const PEERS: &[(&str, &str)] =
    &[("torch", "torch-peers.json"), ("FlashInfer", "flashinfer-peers.json"), (CAKE, "cake-peers.json")];
/// FlashInfer's cake sampling: a column in the topk50_topp09_t07 table only.
const CAKE: &str = "FlashInfer cake";
const HEADLINE_WORKLOAD: &str = "topk50_topp09_t07";
const CAKE_IMPLS: &[&str] = &["flashinfer.softmax+cake_sampling", "flashinfer.softmax+cake_sampling.eager"];

/// Whether `peer` has a column in `workload`'s table.
fn shown(peer: &str, workload: &str) -> bool {
    peer != CAKE || workload == HEADLINE_WORKLOAD
}

const FI_TOPK: &[&str] = &["flashinfer.top_k", "flashinfer.filtered_topk", "flashinfer.radix_topk_multi_cta"];
const FI_F32_ONLY: &str = "our FlashInfer harness runs its sampling and verification entry points on f32 \
                           only (bf16 logits would go through OnlineSoftmax to f32 probabilities first)";

/// Which entry points stand for `peer` on `workload` in `dtype` (torch_peers.py and
/// bench/peers/flashinfer/harness.cu say what each one times).
fn capability(peer: &str, workload: &str, dtype: &str) -> Cap {
    match (peer, workload) {
        ("torch", "greedy") => Cap::Impls(&["torch.argmax"]),
        ("torch", "topk50_topp09_t07") => Cap::Impls(&["torch.sort_topk_topp"]),
        ("torch", "topk128") => Cap::Impls(&["torch.topk"]),
        ("torch", "random_full") => Cap::Impls(&["torch.softmax_multinomial"]),
        ("FlashInfer", "random_full") if dtype == "f32" => Cap::Impls(&["flashinfer.sampling_from_logits"]),
        ("FlashInfer", "topk128") => Cap::Impls(FI_TOPK),
        ("FlashInfer", "topk50_topp09_t07") if dtype == "f32" => {
            Cap::Impls(&["flashinfer.softmax+top_k_top_p_sampling_from_probs"])
        }
        ("FlashInfer", "heterogeneous") if dtype == "f32" => Cap::Impls(&["flashinfer.softmax+per_row_sampling"]),
        ("FlashInfer", "verify_uniform" | "verify_hetero") if dtype == "f32" => {
            Cap::Impls(&["flashinfer.softmax+chain_speculative_sampling"])
        }
        ("FlashInfer", "topk50_topp09_t07" | "heterogeneous" | "random_full" | "verify_uniform" | "verify_hetero") => {
            Cap::NotRun(FI_F32_ONLY)
        }
        (CAKE, HEADLINE_WORKLOAD) if dtype == "f32" => Cap::Impls(CAKE_IMPLS),
        (CAKE, HEADLINE_WORKLOAD) => Cap::NotRun(
            "FlashInfer's cake sampling takes f32 probabilities, and our cake peer feeds it from f32 logits only",
        ),
        _ => Cap::Impls(&[]),
    }
}

/// Notes printed under each workload's table.
fn workload_notes(workload: &str) -> &'static str {
    match workload {
        "greedy" => "FlashInfer: not run (its header API has no argmax; a k = 1 sampling call was not timed).",
        "topk50_topp09_t07" => "torch: the sort-based fallback of serving engines (sort, top-k, softmax, cumsum, top-p, \
                               exponential race). FlashInfer: OnlineSoftmax (T inside) + TopKTopPSamplingFromProb, both timed. \
                               FlashInfer cake: OnlineSoftmax (T inside, PDL) + flashinfer.cake_sampling (cluster radix top-k, \
                               sparse top-p, inverse-CDF sample; probabilities in), both timed, CUDA-graph replay unless the \
                               cell says eager; cake alone is in cake-peers.json as flashinfer.cake_sampling.",
        "heterogeneous" => "Per row a random mix of greedy, T, top-k up to 4128, top-p, min-p, penalties, logit bias and a \
                            grammar bitmask on 30% of rows. FlashInfer takes per-row arrays for T, top-k, top-p, min-p and \
                            seeds but cannot mix min-p with top-k/top-p in one call, so its cell runs one call chain per \
                            group of rows (rows ordered by group, no gather): OnlineSoftmax for all rows, then \
                            TopKTopPSamplingFromProb (greedy rows as k = 1), MinPSamplingFromProb, and \
                            RadixTopKRenormProb + TopPRenormProb + MinPSamplingFromProb; all timed. FlashInfer cannot do \
                            repetition/frequency/presence penalties, logit bias, or a grammar bitmask fused with \
                            sampling, nor logprobs: those parts are left out of its cell (‡). torch: not run (no \
                            torch_peers.py cell).",
        "random_full" => "T 1, no truncation: every row is sampled from its whole distribution. torch: softmax + \
                          multinomial. FlashInfer: SamplingFromLogits (no probabilities written).",
        "topk128" => "Top-k alone, k = 128, values and indices. FlashInfer: the fastest of TopKDispatch, FilteredTopK and \
                      RadixTopKMultiCTA per shape (named).",
        "verify_uniform" | "verify_hetero" => "FlashInfer: OnlineSoftmax of the target rows + ChainSpeculativeSampling \
                      (one call pair per draft count in verify_hetero; T 1, dense draft probabilities, no penalties, \
                      bitmask or truncation there: ‡). torch: not run.",
        "verify_accepted" => "sonic only: greedy requests whose every draft is accepted, the case where skipping rows \
                              past a rejection saves nothing. No peer cell was run (the peer harnesses predate it).",
        "verify_accept70" => "sonic only: greedy requests whose drafts are their rows' argmax with probability 0.7 \
                              (else a random token). No peer cell was run (the peer harnesses predate it).",
        "verify_sampled" => "sonic only: random requests (T 1) whose drafts are sampled from a q of 0.7 · p + 0.3 · \
                             noise of their own target rows, so each draft is accepted with probability Σ min(p, q) ≥ \
                             0.7 and chains stop anywhere. No peer cell was run (the peer harnesses predate it).",
        "peaked_topp095" | "flat_topp095" => "sonic only: T 1, top-p 0.95 on peaked and on flat rows (the exact pass). \
                                              No peer cell was run.",
        "flat_full" => "sonic only: T 1, no truncation, on flat_topp095's rows (stage 2 decides them: the fast \
                        path that the exact pass is measured against). No peer cell was run.",
        "crowded_topk50" => "sonic only: topk50_topp09_t07's settings on rows whose best tokens crowd into the first \
                             tile, as in a vocabulary ordered by frequency. No peer cell was run.",
        _ => "",
    }
}

/// Whether a row's note says the peer did only part of the workload.
fn partial(e: &Entry) -> bool {
    let n = e.note.to_ascii_lowercase();
    n.contains("lower bound") || n.contains("not supported")
}

/// The fastest measured entry among `impls` for one shape of one workload.
fn best<'a>(doc: Option<&'a Doc>, impls: &[&str], workload: &str, dtype: &str, vocab: u64, batch: u64) -> Option<&'a Entry> {
    doc.iter()
        .flat_map(|d| &d.rows)
        .filter(|e| {
            impls.contains(&e.impl_name.as_str())
                && e.workload == workload
                && e.dtype == dtype
                && e.vocab == vocab
                && e.batch == batch
                && e.median_us.is_some()
        })
        .min_by(|a, b| a.median_us.unwrap_or(f64::INFINITY).total_cmp(&b.median_us.unwrap_or(f64::INFINITY)))
}

/// The headline: our speedup over FlashInfer's OnlineSoftmax + cake sampling on sonic's
/// topk50_topp09_t07 f32 shapes (geometric mean, least and most).
fn headline(sonic: &Doc, cake: Option<&Doc>) -> String {
    let mut ratios: Vec<(f64, u64, u64)> = Vec::new();
    for e in sonic.rows.iter().filter(|e| e.workload == HEADLINE_WORKLOAD && e.dtype == "f32") {
        let theirs = best(cake, CAKE_IMPLS, HEADLINE_WORKLOAD, "f32", e.vocab, e.batch).and_then(|c| c.median_us);
        if let (Some(ours), Some(theirs)) = (e.median_us, theirs) {
            ratios.push((theirs / ours, e.vocab, e.batch));
        }
    }
    let what = "sonic against FlashInfer's OnlineSoftmax + cake sampling (topk50_topp09_t07, f32)";
    if ratios.is_empty() {
        return format!("**Headline**, {what}: not run (no cake-peers.json figure for any of sonic's shapes).
");
    }
    let gmean = (ratios.iter().map(|r| r.0.ln()).sum::<f64>() / ratios.len() as f64).exp();
    let lo = ratios.iter().min_by(|a, b| a.0.total_cmp(&b.0)).copied().unwrap_or_default();
    let hi = ratios.iter().max_by(|a, b| a.0.total_cmp(&b.0)).copied().unwrap_or_default();
    format!(
        "**Headline**, {what}: {gmean:.2}× (geometric mean over {} shapes; least {:.2}× at V {} B {}, most {:.2}× at V {} B {}; \
         above 1× sonic is faster).\n",
        ratios.len(),
        lo.0,
        lo.1,
        lo.2,
        hi.0,
        hi.1,
        hi.2
    )
}

/// The comparison as markdown.
fn render(sonic: &Doc, peers: &[(&str, Option<Doc>)]) -> String {
    let mut md = String::from("# sonic against its peers, shape by shape\n\n");
    md += "Generated by `cargo xtask report DIR` from the JSON of one run; edit nothing here by hand.\n\n";
    let _ = writeln!(md, "- `{}`: {}", sonic.file, sonic.header);
    for (label, doc) in peers {
        match doc {
            Some(d) => {
                let _ = writeln!(md, "- `{}`: {}", d.file, d.header);
                for n in &d.not_built {
                    let _ = writeln!(md, "  - not in this run: {n}");
                }
            }
            None => {
                let _ = writeln!(md, "- {label}: no results file, so every {label} cell is \"not run\"");
            }
        }
    }
    if let Some((_, cake)) = peers.iter().find(|(label, _)| *label == CAKE) {
        md += "\n";
        md += &headline(sonic, cake.as_ref());
    }
    md += "\nEach cell: the peer's median in µs and our speedup (peer / sonic; above 1× sonic is faster). \
           **not run**: the peer could, but this run has no figure for it (the reason under the table where \
           the harness leaves it out on purpose). **‡**: the peer did only part of the \
           workload (its row note says which), so its time is a lower bound and the speedup understates ours.\n";
    if let Some(copy) = sonic.copy_gbs {
        let _ = writeln!(
            md,
            "\nIn parentheses after a time: its GB/s (over the bytes that result's producer counts as moved) as a \
             fraction of the device-to-device copy bandwidth `{}` measured in the same run, {copy:.0} GB/s.",
            sonic.file
        );
    }

    // Workloads in sonic-bench's order of appearance, then any peer-only ones are listed at the end.
    let mut workloads: Vec<String> = Vec::new();
    for e in &sonic.rows {
        if !workloads.contains(&e.workload) {
            workloads.push(e.workload.clone());
        }
    }
    for workload in &workloads {
        let shapes: BTreeSet<(bool, String, u64, u64)> = sonic
            .rows
            .iter()
            .filter(|e| &e.workload == workload)
            .map(|e| (e.dtype != "f32", e.dtype.clone(), e.vocab, e.batch))
            .collect();
        let peers: Vec<&(&str, Option<Doc>)> = peers.iter().filter(|(label, _)| shown(label, workload)).collect();
        let _ = write!(md, "\n## {workload}\n\n| dtype | V | B | sonic µs |");
        for (label, _) in &peers {
            let _ = write!(md, " {label} µs | vs {label} |");
        }
        md += "\n|---|---|---|---|";
        md += &"---|---|".repeat(peers.len());
        md += "\n";
        let mut unrun: BTreeSet<(&str, &str)> = BTreeSet::new();
        for (_, dtype, vocab, batch) in &shapes {
            let ours_entry =
                sonic.rows.iter().find(|e| &e.workload == workload && &e.dtype == dtype && e.vocab == *vocab && e.batch == *batch);
            let ours = ours_entry.and_then(|e| e.median_us);
            let ours_frac = ours_entry.map_or(String::new(), |e| copy_fraction(e, sonic.copy_gbs));
            let _ = write!(md, "| {dtype} | {vocab} | {batch} | {} |", ours.map_or("not run".to_string(), |t| format!("{t:.1}{ours_frac}")));
            for (label, doc) in peers.iter().map(|p| (p.0, &p.1)) {
                let cell = match capability(label, workload, dtype) {
                    Cap::NotRun(why) => {
                        unrun.insert((label, why));
                        " not run | – |".to_string()
                    }
                    Cap::Impls(impls) => {
                        let best = best(doc.as_ref(), impls, workload, dtype, *vocab, *batch);
                        match (best, best.and_then(|e| e.median_us)) {
                            (Some(e), Some(t)) => {
                                let mark = if partial(e) { " ‡" } else { "" };
                                let name = if impls.len() > 1 {
                                    format!(" ({})", e.impl_name.trim_start_matches("flashinfer."))
                                } else {
                                    String::new()
                                };
                                let speedup = ours.map_or("–".to_string(), |o| format!("{:.2}×", t / o));
                                let frac = copy_fraction(e, sonic.copy_gbs);
                                format!(" {t:.1}{frac}{name}{mark} | {speedup} |")
                            }
                            _ => " not run | – |".to_string(),
                        }
                    }
                };
                md += &cell;
            }
            md += "\n";
        }
        md += "\n";
        let notes = workload_notes(workload);
        if !notes.is_empty() {
            md += notes;
            md += "\n";
        }
        for (label, why) in unrun {
            let _ = writeln!(md, "\n{label} not run: {why}.");
        }
    }

    // Peer workloads with no sonic counterpart: named, so that nothing measured goes unseen.
    let mut extra: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (_, doc) in peers {
        for e in doc.iter().flat_map(|d| &d.rows) {
            if !workloads.contains(&e.workload) {
                extra.entry(e.workload.clone()).or_default().insert(e.impl_name.clone());
            }
        }
    }
    if !extra.is_empty() {
        md += "\n## Peer workloads without a sonic counterpart\n\n";
        for (workload, impls) in extra {
            let _ = writeln!(md, "- `{workload}`: {} (in the peer files; sonic-bench has no such cell)", impls.into_iter().collect::<Vec<_>>().join(", "));
        }
    }
    md
}

/// ` (x.x%)`: `e`'s GB/s as a fraction of the copy bandwidth, or nothing when either is unknown.
fn copy_fraction(e: &Entry, copy_gbs: Option<f64>) -> String {
    match (e.gb_per_s, copy_gbs) {
        (Some(g), Some(c)) => format!(" ({:.1}%)", 100.0 * g / c),
        _ => String::new(),
    }
}

/// The harness lists cake as not built; once cake-peers.json has a figure, that note is stale.
fn drop_cake_not_built(peers: &mut [(&str, Option<Doc>)]) {
    let cake_ran = peers
        .iter()
        .any(|(label, doc)| *label == CAKE && doc.iter().flat_map(|d| &d.rows).any(|e| e.median_us.is_some()));
    if cake_ran {
        for (_, doc) in peers.iter_mut() {
            if let Some(d) = doc {
                d.not_built.retain(|n| !n.starts_with("flashinfer.cake_sampling"));
            }
        }
    }
}

pub fn run(args: &[String]) -> Result<()> {
    let Some(dir) = args.first().filter(|a| !a.starts_with("--")).map(PathBuf::from) else {
        bail!("usage: cargo xtask report DIR [--out FILE]   (DIR holds sonic-bench.json and the peer JSON)")
    };
    let out = args.iter().position(|a| a == "--out").and_then(|i| args.get(i + 1)).map(PathBuf::from);
    let sonic = read_doc(&dir.join("sonic-bench.json"))?;
    let mut peers = Vec::new();
    for &(label, file) in PEERS {
        let path = dir.join(file);
        let doc = if path.exists() { Some(read_doc(&path)?) } else { None };
        peers.push((label, doc));
    }
    drop_cake_not_built(&mut peers);
    let md = render(&sonic, &peers);
    match out {
        Some(path) => {
            std::fs::write(&path, &md).with_context(|| format!("writing {}", path.display()))?;
            println!("report: wrote {}", path.display());
        }
        None => print!("{md}"),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(impl_name: &str, workload: &str, dtype: &str, median: Option<f64>, note: &str) -> Entry {
        Entry {
            impl_name: impl_name.into(),
            workload: workload.into(),
            dtype: dtype.into(),
            vocab: 128256,
            batch: 64,
            median_us: median,
            gb_per_s: None,
            note: note.into(),
        }
    }

    fn doc(file: &str, rows: Vec<Entry>) -> Doc {
        Doc { file: file.into(), header: String::new(), not_built: Vec::new(), rows, copy_gbs: None }
    }

    /// A warm-L2 run says so in its header; a flushed one, or one from before the field, does not.
    #[test]
    fn warm_l2_runs_are_marked_in_the_header() {
        let warm: Value = serde_json::from_str(r#"{"device":"H200","date":"d","warm_l2":true}"#).expect("json");
        let flushed: Value = serde_json::from_str(r#"{"device":"H200","date":"d","warm_l2":false}"#).expect("json");
        let older: Value = serde_json::from_str(r#"{"device":"H200","date":"d"}"#).expect("json");
        assert!(header_of(&warm).starts_with("device H200, date d, **warm L2"), "{}", header_of(&warm));
        assert_eq!(header_of(&flushed), "device H200, date d");
        assert_eq!(header_of(&older), "device H200, date d");
    }

    /// With the copy bandwidth and GB/s known, every measured time carries its fraction.
    #[test]
    fn times_carry_their_copy_fraction() {
        let mut ours = entry("sonic", "topk50_topp09_t07", "f32", Some(10.0), "");
        ours.gb_per_s = Some(400.0);
        let mut sonic = doc("sonic-bench.json", vec![ours]);
        sonic.copy_gbs = Some(4000.0);
        let mut theirs = entry("flashinfer.softmax+top_k_top_p_sampling_from_probs", "topk50_topp09_t07", "f32", Some(20.0), "");
        theirs.gb_per_s = Some(200.0);
        let md = render(&sonic, &[("torch", None), ("FlashInfer", Some(doc("flashinfer-peers.json", vec![theirs])))]);
        assert!(md.contains("| f32 | 128256 | 64 | 10.0 (10.0%) | not run | – | 20.0 (5.0%) | 2.00× |"), "{md}");
        assert!(md.contains("measured in the same run, 4000 GB/s"), "{md}");
    }

    #[test]
    fn cells_say_measured_or_not_run_never_not_supported() {
        let sonic = doc(
            "sonic-bench.json",
            vec![
                entry("sonic", "topk50_topp09_t07", "f32", Some(10.0), ""),
                entry("sonic", "topk50_topp09_t07", "bf16", Some(8.0), ""),
                entry("sonic", "heterogeneous", "f32", Some(20.0), ""),
                entry("sonic", "topk128", "f32", Some(5.0), ""),
            ],
        );
        let fi = doc(
            "flashinfer-peers.json",
            vec![
                entry("flashinfer.softmax+top_k_top_p_sampling_from_probs", "topk50_topp09_t07", "f32", Some(25.0), ""),
                entry("flashinfer.softmax+per_row_sampling", "heterogeneous", "f32", Some(30.0), "left out (a lower bound)"),
                entry("flashinfer.top_k", "topk128", "f32", Some(9.0), ""),
                entry("flashinfer.filtered_topk", "topk128", "f32", Some(7.5), ""),
                entry("flashinfer.radix_topk_multi_cta", "topk128", "f32", None, "error"),
                entry("flashinfer.chain_speculative_sampling", "verify4", "f32", Some(1.0), ""),
            ],
        );
        let md = render(&sonic, &[("torch", None), ("FlashInfer", Some(fi))]);
        assert!(md.contains("| f32 | 128256 | 64 | 10.0 | not run | – | 25.0 | 2.50× |"), "{md}");
        assert!(md.contains("| bf16 | 128256 | 64 | 8.0 | not run | – | not run | – |"), "{md}");
        assert!(md.contains("| f32 | 128256 | 64 | 20.0 | not run | – | 30.0 ‡ | 1.50× |"), "{md}");
        assert!(md.contains("| f32 | 128256 | 64 | 5.0 | not run | – | 7.5 (filtered_topk) | 1.50× |"), "{md}");
        assert!(md.contains("FlashInfer not run: our FlashInfer harness runs its sampling and verification entry points on f32 only"), "{md}");
        assert!(!md.contains("not supported"), "{md}");
        assert!(md.contains("`verify4`: flashinfer.chain_speculative_sampling"), "{md}");
        assert!(!md.contains("Headline"), "{md}");
    }

    #[test]
    fn cake_has_a_column_in_the_headline_table_only() {
        let mut sonic = doc(
            "sonic-bench.json",
            vec![
                entry("sonic", "topk50_topp09_t07", "f32", Some(10.0), ""),
                entry("sonic", "topk50_topp09_t07", "bf16", Some(8.0), ""),
                entry("sonic", "topk128", "f32", Some(5.0), ""),
            ],
        );
        let mut second = entry("sonic", "topk50_topp09_t07", "f32", Some(20.0), "");
        second.batch = 256;
        sonic.rows.push(second);
        let mut cake_rows = vec![
            entry("flashinfer.softmax+cake_sampling", "topk50_topp09_t07", "f32", Some(40.0), ""),
            entry("flashinfer.softmax+cake_sampling.eager", "topk50_topp09_t07", "f32", Some(55.0), ""),
            entry("flashinfer.cake_sampling", "topk50_topp09_t07", "f32", Some(1.0), "probabilities in"),
        ];
        let mut b256 = entry("flashinfer.softmax+cake_sampling", "topk50_topp09_t07", "f32", Some(10.0), "");
        b256.batch = 256;
        cake_rows.push(b256);
        let mut fi = doc("flashinfer-peers.json", vec![]);
        fi.not_built = vec!["flashinfer.cake_sampling: not built: needs FlashInfer's JIT build".into()];
        let mut peers = [("torch", None), ("FlashInfer", Some(fi)), (CAKE, Some(doc("cake-peers.json", cake_rows)))];
        drop_cake_not_built(&mut peers);
        let md = render(&sonic, &peers);
        // Graph replay (40) beats eager (55); cake alone (1.0, probabilities in) is not the cell.
        assert!(md.contains("| f32 | 128256 | 64 | 10.0 | not run | – | not run | – | 40.0 (softmax+cake_sampling) | 4.00× |"), "{md}");
        assert!(md.contains("| f32 | 128256 | 256 | 20.0 | not run | – | not run | – | 10.0 (softmax+cake_sampling) | 0.50× |"), "{md}");
        assert!(md.contains("| bf16 | 128256 | 64 | 8.0 | not run | – | not run | – | not run | – |"), "{md}");
        assert!(md.contains("FlashInfer cake not run: FlashInfer's cake sampling takes f32 probabilities"), "{md}");
        // No cake column in the other tables.
        assert!(md.contains("## topk128\n\n| dtype | V | B | sonic µs | torch µs | vs torch | FlashInfer µs | vs FlashInfer |\n"), "{md}");
        // Geometric mean of 4.0 and 0.5 is sqrt(2).
        assert!(md.contains("OnlineSoftmax + cake sampling (topk50_topp09_t07, f32): 1.41× (geometric mean over 2 shapes; least 0.50× at V 128256 B 256, most 4.00× at V 128256 B 64"), "{md}");
        assert!(!md.contains("not in this run: flashinfer.cake_sampling"), "{md}");
    }

    #[test]
    fn cake_headline_without_figures_says_not_run_and_keeps_the_note() {
        let sonic = doc("sonic-bench.json", vec![entry("sonic", "topk50_topp09_t07", "f32", Some(10.0), "")]);
        let mut fi = doc("flashinfer-peers.json", vec![]);
        fi.not_built = vec!["flashinfer.cake_sampling: not built".into()];
        let mut peers = [("torch", None), ("FlashInfer", Some(fi)), (CAKE, None)];
        drop_cake_not_built(&mut peers);
        let md = render(&sonic, &peers);
        assert!(md.contains("(topk50_topp09_t07, f32): not run (no cake-peers.json figure"), "{md}");
        assert!(md.contains("not in this run: flashinfer.cake_sampling: not built"), "{md}");
        assert!(md.contains("- FlashInfer cake: no results file"), "{md}");
    }
}
