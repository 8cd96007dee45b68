//! Session 63: the per-row host work of `GpuSampler::upload_step` before (`old`: new vectors
//! and a `HashSet` for duplicates each upload, the exact-pass hint looked up in a `HashSet`)
//! and after (`new`: vectors reused, duplicates by slot marks, the hint by slot), restated on
//! synthetic requests and timed on the CPU (median of 300). A copy of the loops, not the
//! library's code; staging and copies are left out.
use std::collections::{HashMap, HashSet};
use std::time::Instant;
#[derive(Clone, Copy, Default)] #[repr(C)] struct RowSettings { t: f32, p: f32, m: f32, r: f32, f: f32, pr: f32, k: u32, slot: u32, bo: u32, bl: u32, flags: u32, pad: u32 }
#[derive(Clone)] struct Params { bias: Vec<(u32, f32)>, logprobs: bool, top: u32 }
struct State { params: Params, _counts: HashMap<u32, u32>, _prompt: Vec<u32> }
fn old(ids: &[u64], table: &HashMap<u64, State>, slots: &HashMap<u64, u32>, und: &HashSet<u64>) -> (Vec<RowSettings>, Vec<u32>, Vec<f32>, Vec<(u64, bool, u32)>, Vec<bool>) {
    let mut settings = Vec::with_capacity(ids.len()); let mut bt = Vec::new(); let mut bv = Vec::new();
    let mut seen = HashSet::with_capacity(ids.len()); let mut up = Vec::with_capacity(ids.len());
    for &id in ids {
        let st = table.get(&id).unwrap(); if !seen.insert(id) { panic!() }
        let p = &st.params;
        settings.push(RowSettings { slot: *slots.get(&id).unwrap(), bo: bt.len() as u32, bl: p.bias.len() as u32, flags: p.top, ..Default::default() });
        for &(t, v) in &p.bias { bt.push(t); bv.push(v); }
        up.push((id, p.logprobs, p.top));
    }
    let u: Vec<bool> = up.iter().map(|&(r, _, _)| und.contains(&r)).collect();
    (settings, bt, bv, up, u)
}
struct Prep { settings: Vec<RowSettings>, bt: Vec<u32>, bv: Vec<f32>, up: Vec<(u32, bool, u32)> }
fn new(ids: &[u64], table: &HashMap<u64, State>, slots: &HashMap<u64, u32>, marks: &mut Vec<u32>, upload: &mut u32, und: &[bool], pr: &mut Prep) -> Vec<bool> {
    pr.settings.clear(); pr.bt.clear(); pr.bv.clear(); pr.up.clear(); *upload += 1;
    for &id in ids {
        let st = table.get(&id).unwrap(); let slot = *slots.get(&id).unwrap();
        let m = &mut marks[slot as usize]; if *m == *upload { panic!() } *m = *upload;
        let p = &st.params;
        pr.settings.push(RowSettings { slot, bo: pr.bt.len() as u32, bl: p.bias.len() as u32, flags: p.top, ..Default::default() });
        for &(t, v) in &p.bias { pr.bt.push(t); pr.bv.push(v); }
        pr.up.push((slot, p.logprobs, p.top));
    }
    pr.up.iter().map(|u| und[u.0 as usize]).collect()
}
fn main() {
    for &n in &[1usize, 64, 256, 1024] {
        let ids: Vec<u64> = (0..n as u64).map(|i| i * 7919 + 3).collect();
        let table: HashMap<u64, State> = ids.iter().enumerate().map(|(i, &id)| (id, State { params: Params { bias: if i % 4 == 0 { vec![(1, 1.0), (5, 2.0)] } else { vec![] }, logprobs: i % 2 == 0, top: (i % 21) as u32 }, _counts: HashMap::new(), _prompt: vec![] })).collect();
        let slots: HashMap<u64, u32> = ids.iter().enumerate().map(|(i, &id)| (id, i as u32)).collect();
        let und_set: HashSet<u64> = ids.iter().step_by(3).copied().collect();
        let und_vec: Vec<bool> = (0..n).map(|i| i % 3 == 0).collect();
        let mut marks = vec![0u32; n]; let mut upload = 0u32;
        let mut pr = Prep { settings: vec![], bt: vec![], bv: vec![], up: vec![] };
        let (mut a, mut b) = (vec![], vec![]);
        for _ in 0..300 {
            let t = Instant::now(); let o = old(&ids, &table, &slots, &und_set); std::hint::black_box(&o); drop(o); a.push(t.elapsed().as_secs_f64() * 1e6);
            let t = Instant::now(); let o = new(&ids, &table, &slots, &mut marks, &mut upload, &und_vec, &mut pr); std::hint::black_box(&o); std::hint::black_box(&pr.settings); drop(o); b.push(t.elapsed().as_secs_f64() * 1e6);
        }
        a.sort_by(|x, y| x.partial_cmp(y).unwrap()); b.sort_by(|x, y| x.partial_cmp(y).unwrap());
        println!("n={n}: old {:.2} µs, new {:.2} µs", a[150], b[150]);
    }
}
