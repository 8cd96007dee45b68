//! Session 63: the host loop of `GpuSampler::read_outputs` before (`old`: a new `RowOutput`
//! vector a read, each row's top log-probabilities pushed into a new `Vec`, the emitted token
//! counted into a `HashMap` a request, the exact-pass hint in a `HashSet`) and after (`new`:
//! entries and their vectors reused, no host count, the hint by slot), restated on synthetic
//! rows and timed on the CPU (median of 200). A copy of the loops, not the library's code.
use std::collections::{HashMap, HashSet};
use std::time::Instant;
#[derive(Clone, Debug, PartialEq)]
pub struct RowOutput { pub token: i32, pub status: u32, pub logprob: Option<f32>, pub top_logprobs: Vec<(u32, f32)> }
struct State { counts: HashMap<u32, u32>, step: u64 }
const STRIDE: usize = 20;
fn old(uploaded: &[(u64, bool, u32)], tokens: &[u32], status: &[u32], lps: &[f32], tt: &[i32], tl: &[f32], flags: &[u32], table: &mut HashMap<u64, State>, undecided: &mut HashSet<u64>) -> Vec<RowOutput> {
    let mut out = Vec::with_capacity(uploaded.len());
    for (i, &(request, want_lp, top)) in uploaded.iter().enumerate() {
        let ok = status[i] == 0;
        let mut row = RowOutput { token: tokens[i] as i32, status: status[i], logprob: None, top_logprobs: Vec::new() };
        if ok {
            if want_lp { row.logprob = Some(lps[i]); }
            for j in 0..top as usize { let t = tt[i * STRIDE + j]; if t >= 0 { row.top_logprobs.push((t as u32, tl[i * STRIDE + j])); } }
        }
        if let Some(state) = table.get_mut(&request) {
            state.step += 1;
            if let Ok(t) = u32::try_from(row.token) { let c = state.counts.entry(t).or_insert(0); *c = c.saturating_add(1); }
        }
        match flags.get(i) { Some(&f) if f != 0 => { undecided.insert(request); } Some(_) => { undecided.remove(&request); } None => {} }
        out.push(row);
    }
    out
}
// `uploaded`'s first field is the row's slot here.
fn new(uploaded: &[(u64, bool, u32)], tokens: &[u32], status: &[u32], lps: &[f32], tt: &[i32], tl: &[f32], flags: &[u32], undecided: &mut [bool], out: &mut Vec<RowOutput>) {
    out.truncate(uploaded.len());
    for (i, (&(_, want_logprob, top), (&token, &status))) in uploaded.iter().zip(tokens.iter().zip(status)).enumerate() {
        let ok = status == 0;
        let logprob = if ok && want_logprob { lps.get(i).copied() } else { None };
        let top = if ok { (top as usize).min(STRIDE) } else { 0 };
        let span = i * STRIDE..i * STRIDE + top;
        let a = tt.get(span.clone()).unwrap_or(&[]); let b = tl.get(span).unwrap_or(&[]);
        let entries = a.iter().zip(b).filter(|&(&t, _)| t >= 0).map(|(&t, &lp)| (t as u32, lp));
        let token = token as i32;
        match out.get_mut(i) {
            Some(row) => { (row.token, row.status, row.logprob) = (token, status, logprob); row.top_logprobs.clear(); row.top_logprobs.extend(entries); }
            None => { let mut v = Vec::with_capacity(top); v.extend(entries); out.push(RowOutput { token, status, logprob, top_logprobs: v }); }
        }
    }
    for (&(slot, _, _), &flag) in uploaded.iter().zip(flags) { if let Some(u) = undecided.get_mut(slot as usize) { *u = flag != 0; } }
}
fn main() {
    let mut x: u64 = 0x9e3779b97f4a7c15;
    let mut r = || { x ^= x << 13; x ^= x >> 7; x ^= x << 17; x };
    for &(n, top_all) in &[(1usize, true), (256, true), (1024, true), (1024, false)] {
        // hetero-like: every row asks logprobs and up to 20 tops when top_all, else tokens only
        let uploaded: Vec<(u64, bool, u32)> = (0..n).map(|i| (i as u64 * 7919 + 1, top_all, if top_all { 20 } else { 0 })).collect();
        let tokens: Vec<u32> = (0..n).map(|_| (r() % 128256) as u32).collect();
        let status = vec![0u32; n];
        let lps: Vec<f32> = (0..n).map(|_| -1.0).collect();
        let tt: Vec<i32> = (0..n * STRIDE).map(|_| (r() % 128256) as i32).collect();
        let tl: Vec<f32> = (0..n * STRIDE).map(|_| -2.0).collect();
        let flags: Vec<u32> = (0..n).map(|_| (r() % 2) as u32).collect();
        let mut table: HashMap<u64, State> = uploaded.iter().map(|u| (u.0, State { counts: HashMap::new(), step: 0 })).collect();
        let mut und = HashSet::new();
        // The new loop's rows by slot (`slots[i] = i`), and its hint by slot.
        let by_slot: Vec<(u64, bool, u32)> = uploaded.iter().enumerate().map(|(i, &(_, lp, top))| (i as u64, lp, top)).collect();
        let mut und_slots = vec![false; n];
        let reps = 200;
        let mut old_t = Vec::new(); let mut new_t = Vec::new();
        let mut keep = Vec::new();
        for _ in 0..reps {
            let t = Instant::now(); let o = old(&uploaded, &tokens, &status, &lps, &tt, &tl, &flags, &mut table, &mut und); std::hint::black_box(&o); drop(o); old_t.push(t.elapsed().as_secs_f64() * 1e6);
            let t = Instant::now(); new(&by_slot, &tokens, &status, &lps, &tt, &tl, &flags, &mut und_slots, &mut keep); std::hint::black_box(&keep); new_t.push(t.elapsed().as_secs_f64() * 1e6);
        }
        old_t.sort_by(|a, b| a.partial_cmp(b).unwrap()); new_t.sort_by(|a, b| a.partial_cmp(b).unwrap());
        println!("n={n} top={top_all}: old {:.2} µs, new (reused) {:.2} µs", old_t[reps / 2], new_t[reps / 2]);
    }
}
