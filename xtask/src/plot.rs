//! `cargo xtask plot --in DIR [--out DIR]`: PNG charts from the benchmark's JSON results.
//!
//! Reads every `*.json` in DIR written in the shared results schema (`sonic-bench` and
//! `bench/peers/torch_peers.py` both write it: `{"producer", "device", "date", "ceilings"?,
//! "results": [{"impl", "workload", "dtype", "batch", "vocab", "median_us", ...}]}`), merges
//! them, and writes into the output directory (DIR unless `--out` says otherwise):
//!
//! - `latency-vs-batch-<vocab>-<dtype>.png`: median latency against batch, one line per (impl, workload);
//! - `speedup.png`: peer median / sonic median for the matching f32 workloads (torch peers, and
//!   for top-k alone also the fastest FlashInfer entry point of each shape);
//! - `copy-fraction.png`: sonic's bandwidth as a fraction of the measured copy bandwidth;
//! - `plots.md`: the PNGs, one sentence each on how to read them, and a table of top-k alone
//!   (`topk128`) next to torch.topk and FlashInfer's fastest top-k, shape by shape.
//!
//! Text is drawn with an embedded DejaVu Sans (plotters' ab_glyph backend), so nothing here
//! needs system fonts. JSON files that are not in the schema are skipped with a message.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Once;

use anyhow::{anyhow, bail, Context, Result};
use plotters::coord::combinators::{BindKeyPoints, IntoLogRange, LogCoord, WithKeyPoints};
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint};
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use serde_json::Value;

/// One measurement: a row of some producer's `results`, with a median.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub producer: String,
    pub impl_name: String,
    pub workload: String,
    pub dtype: String,
    pub batch: u64,
    pub vocab: u64,
    pub median_us: f64,
    pub copy_fraction: Option<f64>,
    pub source: String,
}

type Key = (String, String, String, u64, u64); // impl, workload, dtype, vocab, batch

impl Row {
    fn key(&self) -> Key {
        (self.impl_name.clone(), self.workload.clone(), self.dtype.clone(), self.vocab, self.batch)
    }
    fn is_sonic(&self) -> bool {
        self.impl_name == "sonic"
    }
}

/// (vocab, batch, peer median / sonic median).
type Speedup = (u64, u64, f64);

/// sonic's workload, the peer it is compared with, and the panel title. A peer ending in `*`
/// is every impl with that prefix, the fastest of them per shape.
const PAIRS: &[(&str, &str, &str)] = &[
    ("greedy", "torch.argmax", "greedy: sonic vs torch.argmax"),
    ("topk50_topp09_t07", "torch.sort_topk_topp", "top-k 50, top-p 0.9, T 0.7: sonic vs torch sort-based sampling"),
    ("topk128", "torch.topk", "top-k 128, values and indices: sonic vs torch.topk"),
    ("topk128", "flashinfer.*", "top-k 128, values and indices: sonic vs FlashInfer's fastest top-k"),
    (
        "topk50_topp09_t07",
        "flashinfer.softmax+cake_sampling*",
        "top-k 50, top-p 0.9, T 0.7: sonic vs FlashInfer OnlineSoftmax + cake (graph or eager, the faster)",
    ),
    ("verify_uniform", "flashinfer.softmax+chain_speculative_sampling", "verification, uniform: sonic vs FlashInfer softmax + chain"),
];

/// Whether `impl_name` is `peer`, or starts with `peer`'s prefix when `peer` ends in `*`.
fn peer_matches(impl_name: &str, peer: &str) -> bool {
    match peer.strip_suffix('*') {
        Some(prefix) => impl_name.starts_with(prefix),
        None => impl_name == peer,
    }
}

/// The fastest row of `peer` (see [`peer_matches`]) for `workload` at one shape.
fn best_peer<'a>(rows: &'a [Row], peer: &str, workload: &str, dtype: &str, vocab: u64, batch: u64) -> Option<&'a Row> {
    rows.iter()
        .filter(|r| !r.is_sonic() && peer_matches(&r.impl_name, peer) && r.workload == workload)
        .filter(|r| r.dtype == dtype && r.vocab == vocab && r.batch == batch)
        .min_by(|a, b| a.median_us.total_cmp(&b.median_us))
}

/// A markdown table of sonic's top-k alone next to torch.topk and FlashInfer's fastest top-k,
/// one line per shape sonic measured; `None` without sonic `topk128` rows.
pub fn topk_table(rows: &[Row]) -> Option<String> {
    let mut sonic: Vec<&Row> = rows.iter().filter(|r| r.is_sonic() && r.workload == "topk128").collect();
    if sonic.is_empty() {
        return None;
    }
    sonic.sort_by_key(|r| (r.dtype != "f32", r.dtype.clone(), r.vocab, r.batch));
    let cell = |peer: Option<&Row>, ours: f64, named: bool| match peer {
        Some(p) if named => format!("{:.1} ({}) | {:.2}×", p.median_us, p.impl_name, p.median_us / ours),
        Some(p) => format!("{:.1} | {:.2}×", p.median_us, p.median_us / ours),
        None => "– | –".to_string(),
    };
    let mut md = String::from(
        "| dtype | V | B | sonic µs | torch.topk µs | speedup | FlashInfer fastest µs (entry point) | speedup |\n\
         |---|---|---|---|---|---|---|---|\n",
    );
    for r in sonic {
        let torch = best_peer(rows, "torch.topk", "topk128", &r.dtype, r.vocab, r.batch);
        let fi = best_peer(rows, "flashinfer.*", "topk128", &r.dtype, r.vocab, r.batch);
        md += &format!(
            "| {} | {} | {} | {:.1} | {} | {} |\n",
            r.dtype,
            r.vocab,
            r.batch,
            r.median_us,
            cell(torch, r.median_us, false),
            cell(fi, r.median_us, true)
        );
    }
    Some(md)
}

/// One result row as its producer wrote it; `median_us` is `None` where the producer has no
/// figure (an error, a skip). The benchmark JSON schema, read in one place for `plot` and
/// `report`.
#[derive(Debug, Clone, PartialEq)]
pub struct Measured {
    pub impl_name: String,
    pub workload: String,
    pub dtype: String,
    pub batch: u64,
    pub vocab: u64,
    pub median_us: Option<f64>,
    pub gb_per_s: Option<f64>,
    pub copy_fraction: Option<f64>,
    pub note: String,
}

/// Every result of a parsed document that names its shape, and a message for each that does
/// not.
pub fn parse_results(doc: &Value, source: &str) -> Result<(Vec<Measured>, Vec<String>)> {
    let Some(results) = doc["results"].as_array() else { bail!("{source}: no \"results\" array") };
    let finite = |v: &Value| v.as_f64().filter(|x| x.is_finite());
    let (mut rows, mut skipped) = (Vec::new(), Vec::new());
    for (i, r) in results.iter().enumerate() {
        let text = |k: &str| r[k].as_str().map(str::to_string);
        let (Some(impl_name), Some(workload), Some(dtype), Some(batch), Some(vocab)) =
            (text("impl"), text("workload"), text("dtype"), r["batch"].as_u64(), r["vocab"].as_u64())
        else {
            skipped.push(format!("{source}: result {i} lacks impl/workload/dtype/batch/vocab"));
            continue;
        };
        rows.push(Measured {
            impl_name,
            workload,
            dtype,
            batch,
            vocab,
            median_us: finite(&r["median_us"]).filter(|m| *m > 0.0),
            gb_per_s: finite(&r["gb_per_s"]).filter(|g| *g > 0.0),
            copy_fraction: finite(&r["copy_fraction"]),
            note: text("note").unwrap_or_default(),
        });
    }
    Ok((rows, skipped))
}

/// Parses one results document. Rows without a usable median (a skipped or failed
/// measurement) or outside the schema are returned as messages, not rows.
pub fn parse_doc(text: &str, source: &str) -> Result<(Vec<Row>, Vec<String>)> {
    let doc: Value = serde_json::from_str(text).with_context(|| format!("{source}: not JSON"))?;
    let producer = doc["producer"].as_str().unwrap_or("unknown").to_string();
    let (measured, mut skipped) = parse_results(&doc, source)?;
    let mut rows = Vec::new();
    for m in measured {
        match m.median_us {
            Some(median_us) => rows.push(Row {
                producer: producer.clone(),
                impl_name: m.impl_name,
                workload: m.workload,
                dtype: m.dtype,
                batch: m.batch,
                vocab: m.vocab,
                median_us,
                copy_fraction: m.copy_fraction,
                source: source.to_string(),
            }),
            None => skipped.push(format!(
                "{source}: {} {} {} V={} B={}: no median ({})",
                m.impl_name, m.workload, m.dtype, m.vocab, m.batch, m.note
            )),
        }
    }
    Ok((rows, skipped))
}

/// Merges rows from several documents: one row per (impl, workload, dtype, vocab, batch),
/// the later one winning (files are read in name order). Returns the rows sorted by key
/// and a message for each replaced duplicate.
pub fn merge(rows: Vec<Row>) -> (Vec<Row>, Vec<String>) {
    let mut merged: BTreeMap<Key, Row> = BTreeMap::new();
    let mut replaced = Vec::new();
    for row in rows {
        if let Some(old) = merged.insert(row.key(), row.clone()) {
            replaced.push(format!(
                "{} {} {} V={} B={}: {} replaces {}",
                row.impl_name, row.workload, row.dtype, row.vocab, row.batch, row.source, old.source
            ));
        }
    }
    (merged.into_values().collect(), replaced)
}

/// Reads and merges every `*.json` in `dir`; prints what it skipped.
pub fn load_dir(dir: &Path) -> Result<Vec<Row>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    let mut rows = Vec::new();
    for file in &files {
        let name = file.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let text = std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
        match parse_doc(&text, &name) {
            Ok((r, skipped)) => {
                println!("plot: {name}: {} results", r.len());
                skipped.iter().for_each(|s| println!("plot: skipped {s}"));
                rows.extend(r);
            }
            Err(e) => println!("plot: skipped file {e:#}"),
        }
    }
    let (rows, replaced) = merge(rows);
    replaced.iter().for_each(|s| println!("plot: duplicate {s}"));
    Ok(rows)
}

/// Speedups of sonic over a peer on the same workload: (vocab, batch, peer median / sonic
/// median), f32 only; a `prefix*` peer counts its fastest impl per shape.
pub fn speedups(rows: &[Row], sonic_workload: &str, peer_impl: &str) -> Vec<Speedup> {
    let mut peer: BTreeMap<(u64, u64), f64> = BTreeMap::new();
    for r in rows.iter().filter(|r| !r.is_sonic() && peer_matches(&r.impl_name, peer_impl)) {
        if r.dtype == "f32" && r.workload == sonic_workload {
            let best = peer.entry((r.vocab, r.batch)).or_insert(r.median_us);
            *best = best.min(r.median_us);
        }
    }
    rows.iter()
        .filter(|r| r.is_sonic() && r.workload == sonic_workload && r.dtype == "f32")
        .filter_map(|r| peer.get(&(r.vocab, r.batch)).map(|p| (r.vocab, r.batch, p / r.median_us)))
        .collect()
}

pub fn run(args: &[String]) -> Result<()> {
    let value = |flag: &str| args.iter().position(|a| a == flag).and_then(|i| args.get(i + 1)).map(PathBuf::from);
    let Some(input) = value("--in") else { bail!("usage: cargo xtask plot --in DIR [--out DIR]") };
    let out = value("--out").unwrap_or_else(|| input.clone());
    let rows = load_dir(&input)?;
    if rows.is_empty() {
        bail!("no results with a median in {}", input.display());
    }
    std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    let written = write_all(&rows, &out)?;
    for (file, _) in &written {
        println!("plot: wrote {}", out.join(file).display());
    }
    println!("plot: wrote {}", out.join("plots.md").display());
    Ok(())
}

/// Writes every chart that has data, and plots.md; returns (file name, how to read it).
pub fn write_all(rows: &[Row], out: &Path) -> Result<Vec<(String, String)>> {
    register_fonts();
    let vocabs: Vec<u64> = rows.iter().map(|r| r.vocab).collect::<BTreeSet<_>>().into_iter().collect();
    let mut written = Vec::new();
    let shapes: BTreeSet<(u64, String)> = rows.iter().map(|r| (r.vocab, r.dtype.clone())).collect();
    for (vocab, dtype) in shapes {
        let file = format!("latency-vs-batch-{vocab}-{dtype}.png");
        let subset: Vec<&Row> = rows.iter().filter(|r| r.vocab == vocab && r.dtype == dtype).collect();
        draw_latency(&out.join(&file), &format!("Median latency per step, V = {vocab}, {dtype}"), &subset)?;
        written.push((
            file,
            format!(
                "Median latency per sampling step against batch size at V = {vocab}, {dtype} (both axes log): \
                 solid lines with filled markers are sonic, dashed lines with hollow markers are PyTorch peers, \
                 a sonic workload and its peer share a colour, and lower is better."
            ),
        ));
    }
    let pairs: Vec<(&str, Vec<Speedup>)> =
        PAIRS.iter().map(|(w, p, title)| (*title, speedups(rows, w, p))).filter(|(_, s)| !s.is_empty()).collect();
    if !pairs.is_empty() {
        draw_speedup(&out.join("speedup.png"), &pairs, &vocabs)?;
        written.push((
            "speedup.png".into(),
            "Each bar is the peer's median (PyTorch, or FlashInfer's fastest top-k entry point for that shape) \
             divided by sonic's median for the same vocabulary (colour) and batch (group), f32 logits; the bar rises from the 1× line, so bars above it mean sonic is faster by \
             the labelled factor."
                .into(),
        ));
    }
    let fractions: Vec<&Row> = rows.iter().filter(|r| r.is_sonic() && r.copy_fraction.is_some()).collect();
    if !fractions.is_empty() {
        draw_copy_fraction(&out.join("copy-fraction.png"), &fractions, &vocabs)?;
        written.push((
            "copy-fraction.png".into(),
            "Sonic's achieved bandwidth (logits bytes / median time) as a fraction of the device-to-device copy \
             bandwidth measured in the same run, one panel per dtype and workload, one line per vocabulary; \
             1.0 (grey line) would mean a sampling step streams the logits as fast as a plain copy."
                .into(),
        ));
    }
    let mut md =
        String::from("# Benchmark plots\n\nWritten by `cargo xtask plot` from the JSON results in this directory.\n");
    if let Some(table) = topk_table(rows) {
        md += &format!(
            "\n## Top-k alone (k = 128, values and indices)\n\nMedian µs per call, same shapes and same run \
             conditions; speedup = peer median / sonic median (above 1 means sonic is faster). FlashInfer's column \
             is its fastest top-k entry point at that shape.\n\n{table}"
        );
    }
    for (file, how) in &written {
        md += &format!("\n## {file}\n\n{how}\n\n![{file}]({file})\n");
    }
    std::fs::write(out.join("plots.md"), md)?;
    Ok(written)
}

fn register_fonts() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        for family in ["sans-serif", "serif", "monospace"] {
            // Only fails on a malformed font, and the embedded one is not.
            let _ = plotters::style::register_font(family, FontStyle::Normal, dejavu::sans::regular());
            let _ = plotters::style::register_font(family, FontStyle::Bold, dejavu::sans::bold());
        }
    });
}

/// tab10: distinct and colour-blind tolerable.
const PALETTE: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(255, 127, 14),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(23, 190, 207),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
];

const WORKLOADS: [&str; 9] = [
    "greedy",
    "topk50_topp09_t07",
    "heterogeneous",
    "topk128",
    "random_full",
    "peaked_topp095",
    "flat_topp095",
    "flat_full",
    "crowded_topk50",
];

/// A workload's place in the canonical order (and its colour); unknown ones go last.
fn workload_rank(workload: &str) -> usize {
    WORKLOADS.iter().position(|w| *w == workload).unwrap_or_else(|| {
        WORKLOADS.len() + workload.bytes().fold(0usize, |h, b| h.wrapping_mul(31).wrapping_add(b as usize)) % 3
    })
}

fn workload_color(workload: &str) -> RGBColor {
    PALETTE[workload_rank(workload) % PALETTE.len()]
}

fn vocab_color(vocabs: &[u64], vocab: u64) -> RGBColor {
    PALETTE[vocabs.iter().position(|v| *v == vocab).unwrap_or(0) % PALETTE.len()]
}

/// 1-2-5 ticks covering [lo, hi].
fn log_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let mut ticks = Vec::new();
    let mut decade = 10f64.powf(lo.log10().floor());
    while decade <= hi {
        ticks.extend([1.0, 2.0, 5.0].iter().map(|m| m * decade).filter(|t| *t >= lo && *t <= hi));
        decade *= 10.0;
    }
    ticks
}

fn num_label(v: f64) -> String {
    if v >= 10.0 || v == v.round() {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

/// A log-scale axis over [lo, hi] with `ticks` as its key points.
fn log_axis(lo: f64, hi: f64, ticks: Vec<f64>) -> WithKeyPoints<LogCoord<f64>> {
    (lo..hi).log_scale().with_key_points(ticks)
}

/// A categorical axis: slots 0..n at integer positions, fractional positions in between for bars.
struct Slots(usize);

impl Ranged for Slots {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;
    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        let frac = (value + 0.5) / self.0 as f64;
        limit.0 + (f64::from(limit.1 - limit.0) * frac).round() as i32
    }
    fn key_points<H: KeyPointHint>(&self, hint: H) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            Vec::new()
        } else {
            (0..self.0).map(|i| i as f64).collect()
        }
    }
    fn range(&self) -> std::ops::Range<f64> {
        -0.5..self.0 as f64 - 0.5
    }
}

fn err<E: std::fmt::Display>(e: E) -> anyhow::Error {
    anyhow!("drawing: {e}")
}

fn draw_latency(path: &Path, title: &str, rows: &[&Row]) -> Result<()> {
    // (is a peer, workload rank, workload, impl) -> (batch, median): sonic first in the legend.
    type Series<'a> = BTreeMap<(bool, usize, &'a str, &'a str), Vec<(f64, f64)>>;
    let mut series = Series::new();
    for r in rows {
        let key = (!r.is_sonic(), workload_rank(&r.workload), r.workload.as_str(), r.impl_name.as_str());
        series.entry(key).or_default().push((r.batch as f64, r.median_us));
    }
    let batches: Vec<f64> =
        rows.iter().map(|r| r.batch).collect::<BTreeSet<_>>().into_iter().map(|b| b as f64).collect();
    let (bmin, bmax) = (batches[0], batches[batches.len() - 1]);
    let ymin = rows.iter().map(|r| r.median_us).fold(f64::INFINITY, f64::min) / 1.5;
    let ymax = rows.iter().map(|r| r.median_us).fold(0.0, f64::max) * 4.0; // headroom for the legend

    let root = BitMapBackend::new(path, (1200, 800)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 28))
        .margin(20)
        .x_label_area_size(60)
        .y_label_area_size(90)
        .build_cartesian_2d(
            log_axis(bmin / 1.4, bmax * 1.4, batches.clone()),
            log_axis(ymin, ymax, log_ticks(ymin, ymax)),
        )
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc("batch (rows per step, log)")
        .y_desc("median latency, µs (log)")
        .x_label_formatter(&|x| format!("{}", x.round() as u64))
        .y_label_formatter(&|y| num_label(*y))
        .label_style(("sans-serif", 18))
        .axis_desc_style(("sans-serif", 20))
        .draw()
        .map_err(err)?;
    for ((peer, _, workload, impl_name), mut points) in series {
        points.sort_by(|a, b| a.0.total_cmp(&b.0));
        let color = workload_color(workload);
        let label = format!("{impl_name} · {workload}");
        if peer {
            chart
                .draw_series(DashedLineSeries::new(points.clone(), 10, 6, color.stroke_width(2)))
                .map_err(err)?
                .label(label)
                .legend(move |(x, y)| DashedPathElement::new(vec![(x, y), (x + 30, y)], 6, 4, color.stroke_width(2)));
            chart.draw_series(points.iter().map(|&p| Circle::new(p, 5, color.stroke_width(2)))).map_err(err)?;
        } else {
            chart
                .draw_series(LineSeries::new(points.clone(), color.stroke_width(3)))
                .map_err(err)?
                .label(label)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 30, y)], color.stroke_width(3)));
            chart.draw_series(points.iter().map(|&p| Circle::new(p, 6, color.filled()))).map_err(err)?;
        }
    }
    draw_legend(&mut chart, 17)?;
    root.present().map_err(err)?;
    Ok(())
}

/// The series legend every chart here draws: upper left, on a white box, `font` points.
fn draw_legend<'a, DB, CT>(chart: &mut ChartContext<'a, DB, CT>, font: u32) -> Result<()>
where
    DB: DrawingBackend + 'a,
    CT: CoordTranslate,
{
    chart
        .configure_series_labels()
        .legend_area_size(45)
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK)
        .label_font(("sans-serif", font))
        .draw()
        .map_err(err)
}

fn draw_speedup(path: &Path, pairs: &[(&str, Vec<Speedup>)], all_vocabs: &[u64]) -> Result<()> {
    let root = BitMapBackend::new(path, (1400, 560 * pairs.len() as u32)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    for (area, (title, speedups)) in root.split_evenly((pairs.len(), 1)).iter().zip(pairs) {
        let batches: Vec<u64> = speedups.iter().map(|s| s.1).collect::<BTreeSet<_>>().into_iter().collect();
        let vocabs: Vec<u64> = speedups.iter().map(|s| s.0).collect::<BTreeSet<_>>().into_iter().collect();
        let lo = speedups.iter().map(|s| s.2).fold(1.0, f64::min) / 1.5;
        let hi = speedups.iter().map(|s| s.2).fold(1.0, f64::max) * 2.5;
        let n = batches.len() as f64;
        let mut chart = ChartBuilder::on(area)
            .caption(format!("Speedup, f32 — {title}"), ("sans-serif", 24))
            .margin(20)
            .x_label_area_size(50)
            .y_label_area_size(90)
            .build_cartesian_2d(Slots(batches.len()), log_axis(lo, hi, log_ticks(lo, hi)))
            .map_err(err)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_desc("batch")
            .y_desc("peer median / sonic median (log)")
            .x_label_formatter(&|x| batches.get(x.round() as usize).map(|b| format!("B = {b}")).unwrap_or_default())
            .y_label_formatter(&|y| format!("{}×", num_label(*y)))
            .label_style(("sans-serif", 18))
            .axis_desc_style(("sans-serif", 20))
            .draw()
            .map_err(err)?;
        chart
            .draw_series(std::iter::once(PathElement::new(vec![(-0.5, 1.0), (n - 0.5, 1.0)], BLACK.stroke_width(1))))
            .map_err(err)?;
        let width = 0.8 / vocabs.len() as f64;
        let label_style = TextStyle::from(("sans-serif", 14).into_font()).pos(Pos::new(HPos::Center, VPos::Bottom));
        for (j, &vocab) in vocabs.iter().enumerate() {
            let color = vocab_color(all_vocabs, vocab);
            let bars: Vec<(f64, f64)> = speedups
                .iter()
                .filter(|s| s.0 == vocab)
                .map(|s| (batches.iter().position(|b| *b == s.1).unwrap_or(0) as f64 - 0.4 + j as f64 * width, s.2))
                .collect();
            chart
                .draw_series(
                    bars.iter().map(|&(x, s)| {
                        Rectangle::new([(x + 0.05 * width, 1.0), (x + 0.95 * width, s)], color.filled())
                    }),
                )
                .map_err(err)?
                .label(format!("V = {vocab}"))
                .legend(move |(x, y)| Rectangle::new([(x, y - 6), (x + 20, y + 6)], color.filled()));
            chart
                .draw_series(bars.iter().map(|&(x, s)| {
                    let y = if s >= 1.0 { s * 1.04 } else { 1.04 };
                    Text::new(format!("{}×", num_label(s)), (x + width / 2.0, y), label_style.clone())
                }))
                .map_err(err)?;
        }
        draw_legend(&mut chart, 17)?;
    }
    root.present().map_err(err)?;
    Ok(())
}

fn draw_copy_fraction(path: &Path, rows: &[&Row], all_vocabs: &[u64]) -> Result<()> {
    // f32 before bf16, workloads in the canonical order.
    let panels: BTreeSet<(bool, usize, &str, &str)> = rows
        .iter()
        .map(|r| (r.dtype != "f32", workload_rank(&r.workload), r.dtype.as_str(), r.workload.as_str()))
        .collect();
    let cols = panels.len().min(3);
    let nrows = panels.len().div_ceil(cols);
    let root = BitMapBackend::new(path, (560 * cols as u32, 460 * nrows as u32)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let ymax = rows.iter().filter_map(|r| r.copy_fraction).fold(1.0, f64::max) * 1.1;
    for (area, (_, _, dtype, workload)) in root.split_evenly((nrows, cols)).iter().zip(panels) {
        let subset: Vec<&&Row> = rows.iter().filter(|r| r.dtype == dtype && r.workload == workload).collect();
        let batches: Vec<f64> =
            subset.iter().map(|r| r.batch).collect::<BTreeSet<_>>().into_iter().map(|b| b as f64).collect();
        let (bmin, bmax) = (batches[0], batches[batches.len() - 1]);
        let mut chart = ChartBuilder::on(area)
            .caption(format!("sonic {workload}, {dtype}"), ("sans-serif", 20))
            .margin(12)
            .x_label_area_size(45)
            .y_label_area_size(60)
            .build_cartesian_2d(log_axis(bmin / 1.4, bmax * 1.4, batches.clone()), 0.0..ymax)
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc("batch (log)")
            .y_desc("fraction of copy bandwidth")
            .max_light_lines(1)
            .x_label_formatter(&|x| format!("{}", x.round() as u64))
            .y_label_formatter(&|y| format!("{y:.1}"))
            .label_style(("sans-serif", 14))
            .axis_desc_style(("sans-serif", 15))
            .draw()
            .map_err(err)?;
        chart
            .draw_series(std::iter::once(PathElement::new(
                vec![(bmin / 1.4, 1.0), (bmax * 1.4, 1.0)],
                RGBColor(150, 150, 150).stroke_width(2),
            )))
            .map_err(err)?;
        let vocabs: BTreeSet<u64> = subset.iter().map(|r| r.vocab).collect();
        for vocab in vocabs {
            let color = vocab_color(all_vocabs, vocab);
            let mut points: Vec<(f64, f64)> = subset
                .iter()
                .filter(|r| r.vocab == vocab)
                .filter_map(|r| r.copy_fraction.map(|f| (r.batch as f64, f)))
                .collect();
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            chart
                .draw_series(LineSeries::new(points.clone(), color.stroke_width(2)))
                .map_err(err)?
                .label(format!("V = {vocab}"))
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 24, y)], color.stroke_width(2)));
            chart.draw_series(points.iter().map(|&p| Circle::new(p, 4, color.filled()))).map_err(err)?;
        }
        draw_legend(&mut chart, 13)?;
    }
    root.present().map_err(err)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const SONIC: &str = r#"{"producer":"sonic-bench","device":"NVIDIA H200","date":"2026-11-29",
      "ceilings":{"copy_gbs":4300.0,"copy_memcpy_gbs":2760.0,"copy_kernel_gbs":4300.0,"empty_graph_us":3.1},
      "results":[
        {"impl":"sonic","workload":"greedy","dtype":"f32","batch":1,"vocab":128256,"median_us":9.0,"p10_us":8.8,"p90_us":9.5,"bytes":513024,"gb_per_s":57.0,"copy_fraction":0.013,"exact_rows":0,"note":""},
        {"impl":"sonic","workload":"greedy","dtype":"f32","batch":64,"vocab":128256,"median_us":20.0,"p10_us":19.0,"p90_us":21.0,"bytes":32833536,"gb_per_s":1641.0,"copy_fraction":0.38,"exact_rows":0,"note":""},
        {"impl":"sonic","workload":"topk50_topp09_t07","dtype":"f32","batch":1,"vocab":128256,"median_us":12.0,"p10_us":11.0,"p90_us":13.0,"bytes":513024,"gb_per_s":42.0,"copy_fraction":0.01,"exact_rows":0,"note":""},
        {"impl":"sonic","workload":"topk50_topp09_t07","dtype":"f32","batch":64,"vocab":128256,"median_us":25.0,"p10_us":24.0,"p90_us":26.0,"bytes":32833536,"gb_per_s":1313.0,"copy_fraction":0.31,"exact_rows":0,"note":""},
        {"impl":"sonic","workload":"greedy","dtype":"bf16","batch":64,"vocab":128256,"median_us":null,"note":"error: boom"},
        {"impl":"sonic","workload":"topk128","dtype":"f32","batch":64,"vocab":128256,"median_us":16.8,"p10_us":16.0,"p90_us":17.0,"bytes":32833536,"gb_per_s":1954.0,"copy_fraction":0.45,"exact_rows":0,"note":""}
      ]}"#;
    const FLASHINFER: &str = r#"{"producer":"flashinfer-peers","device":"NVIDIA H200","date":"2026-11-29","results":[
        {"impl":"flashinfer.top_k","workload":"topk128","dtype":"f32","batch":64,"vocab":128256,"median_us":50.4,"note":""},
        {"impl":"flashinfer.radix_topk_multi_cta","workload":"topk128","dtype":"f32","batch":64,"vocab":128256,"median_us":42.0,"note":""},
        {"impl":"flashinfer.top_k_mask_logits","workload":"topk_mask50","dtype":"f32","batch":64,"vocab":128256,"median_us":10.0,"note":""}
      ]}"#;
    const PEERS: &str = r#"{"producer":"torch-peers","device":"NVIDIA H200","date":"2026-11-29","results":[
        {"impl":"torch.argmax","workload":"greedy","dtype":"f32","batch":1,"vocab":128256,"median_us":40.0,"p10_us":39.0,"p90_us":41.0,"bytes":513024,"gb_per_s":12.8,"copy_fraction":null,"note":""},
        {"impl":"torch.argmax","workload":"greedy","dtype":"f32","batch":64,"vocab":128256,"median_us":46.0,"p10_us":45.0,"p90_us":47.0,"bytes":32833536,"gb_per_s":715.0,"copy_fraction":null,"note":""},
        {"impl":"torch.sort_topk_topp","workload":"topk50_topp09_t07","dtype":"f32","batch":64,"vocab":128256,"median_us":1160.0,"p10_us":1158.0,"p90_us":1164.0,"bytes":32833536,"gb_per_s":28.0,"copy_fraction":null,"note":""},
        {"impl":"torch.topk","workload":"topk128","dtype":"f32","batch":64,"vocab":128256,"median_us":168.0,"p10_us":167.0,"p90_us":170.0,"bytes":32833536,"gb_per_s":195.0,"copy_fraction":null,"note":""},
        {"case":"not a schema row","median_us":1.0}
      ]}"#;

    fn temp_dir(tag: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("xtask-plot-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn parses_merges_and_pairs() {
        let (sonic, skipped) = parse_doc(SONIC, "sonic.json").unwrap();
        assert_eq!(sonic.len(), 5);
        assert_eq!(skipped.len(), 1);
        assert!(skipped[0].contains("error: boom"), "{skipped:?}");
        assert_eq!(sonic[1].copy_fraction, Some(0.38));
        assert_eq!((sonic[1].batch, sonic[1].vocab, sonic[1].producer.as_str()), (64, 128256, "sonic-bench"));

        let (peers, skipped) = parse_doc(PEERS, "peers.json").unwrap();
        assert_eq!(peers.len(), 4);
        assert_eq!(skipped.len(), 1, "the row without impl/workload is skipped");
        assert_eq!(peers[0].copy_fraction, None);
        assert!(parse_doc(r#"{"device":"x"}"#, "other.json").is_err());

        // A second run of the same cell replaces the first.
        let mut again = sonic[0].clone();
        again.median_us = 8.0;
        again.source = "later.json".into();
        let (rows, replaced) = merge([sonic, peers, vec![again]].concat());
        assert_eq!(rows.len(), 9);
        assert_eq!(replaced.len(), 1);
        let greedy_1 = rows.iter().find(|r| r.is_sonic() && r.workload == "greedy" && r.batch == 1).unwrap();
        assert_eq!(greedy_1.median_us, 8.0);

        assert_eq!(speedups(&rows, "greedy", "torch.argmax"), vec![(128256, 1, 5.0), (128256, 64, 2.3)]);
        // Only batch 64 has both sides for the sampling pair.
        assert_eq!(speedups(&rows, "topk50_topp09_t07", "torch.sort_topk_topp"), vec![(128256, 64, 46.4)]);
        assert_eq!(speedups(&rows, "topk128", "torch.topk"), vec![(128256, 64, 10.0)]);

        // FlashInfer: the fastest top-k entry point per shape; other workloads do not count.
        let (fi, _) = parse_doc(FLASHINFER, "flashinfer.json").unwrap();
        let (rows, _) = merge([rows, fi].concat());
        assert_eq!(speedups(&rows, "topk128", "flashinfer.*"), vec![(128256, 64, 2.5)]);
        let table = topk_table(&rows).unwrap();
        assert!(table.contains("| f32 | 128256 | 64 | 16.8 | 168.0 | 10.00× | 42.0 (flashinfer.radix_topk_multi_cta) | 2.50× |"), "{table}");
    }

    #[test]
    fn renders_pngs_offline() {
        let dir = temp_dir("render");
        std::fs::write(dir.join("sonic-bench.json"), SONIC).unwrap();
        std::fs::write(dir.join("torch-peers.json"), PEERS).unwrap();
        std::fs::write(dir.join("flashinfer-peers.json"), FLASHINFER).unwrap();
        std::fs::write(dir.join("unrelated.json"), r#"{"hello": 1}"#).unwrap();
        let out = dir.join("plots");
        run(&["--in".into(), dir.display().to_string(), "--out".into(), out.display().to_string()]).unwrap();
        for file in ["latency-vs-batch-128256-f32.png", "speedup.png", "copy-fraction.png"] {
            let bytes = std::fs::read(out.join(file)).unwrap();
            assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "{file}");
            assert!(bytes.len() > 20_000, "{file} is only {} bytes", bytes.len());
        }
        let md = std::fs::read_to_string(out.join("plots.md")).unwrap();
        assert!(md.contains("![speedup.png](speedup.png)"), "{md}");
        assert!(md.contains("## Top-k alone"), "{md}");
        assert!(!out.join("latency-vs-batch-128256-bf16.png").exists(), "the bf16 row had no median");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn ticks() {
        assert_eq!(log_ticks(3.0, 60.0), vec![5.0, 10.0, 20.0, 50.0]);
        assert_eq!(num_label(2.5), "2.5");
        assert_eq!(num_label(1200.0), "1200");
    }
}
