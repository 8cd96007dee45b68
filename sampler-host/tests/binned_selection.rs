//! The bin selection that the GPU's exact pass (`exact_bins`, `exact_finish`) and verification
//! (`spec.rs`: `choose_bins`, `select_binned`) run, as a sequential model on the host, against
//! the reference's `kept_set`. The device code decides with the same shared functions
//! (`fixed::exact_bin`, `frac_weight`, `BAND_SCALE`, `decide`), so this checks the argument
//! they rest on: the boundary bins hold every key that top-k and top-p can stop at, and
//! deciding on those keys alone, with the masses of the bins before them, gives the
//! reference's kept mass and kept tokens (tokens that weigh nothing aside: they are never
//! drawn and never tip top-p, and the device may keep more of them).

mod common;

use sampler_host::reference::kept_set;
use sampler_host::settings::SamplingParams;
use sampler_kernels::abi::MERGE_CAPACITY;
use sampler_kernels::decide::{min_p_floor, top_p_disabled, top_p_reached, top_p_units};
use sampler_kernels::fixed::{bands_usable, exact_bin, frac_weight, soft_ceil, weight, BAND_SCALE, EXACT_SUB_BINS, EXACT_ZERO_BIN};
use sampler_kernels::keys::{key_index, key_value, sort_key};

const NONE: u32 = u32::MAX;

/// What the model decided for a row.
enum Binned {
    /// The kept floor (a key) and the kept mass.
    Kept(u64, u128),
    /// Not for the bins (infinite row, unusable bands, or boundary bins over the list): the
    /// device takes a radix selection instead.
    Elsewhere,
}

fn bin_of(key: u64, mc: f32) -> u32 {
    let v = key_value(key);
    exact_bin(v, soft_ceil(v), mc)
}

/// The device's steps one after another: the histogram of keys ≥ the min-p floor, the
/// boundaries (`exact::bin_boundaries`), the gather of the boundary bins (at most
/// `MERGE_CAPACITY` keys), then top-k and top-p on the sorted gathered keys.
fn binned(x: &[f32], p: &SamplingParams) -> Binned {
    let max = x.iter().copied().fold(f32::NEG_INFINITY, |a, b| if b > a { b } else { a });
    if !max.is_finite() {
        return Binned::Elsewhere;
    }
    let mc = soft_ceil(max);
    if !bands_usable(mc) {
        return Binned::Elsewhere;
    }
    let keys: Vec<u64> = x
        .iter()
        .enumerate()
        .filter(|(_, &v)| v > f32::NEG_INFINITY)
        .map(|(i, &v)| sort_key(v, i as u32))
        .collect();
    let max_key = keys.iter().copied().max().unwrap_or(0);
    let floor = min_p_floor(max_key, p.min_p);
    let bins = (EXACT_ZERO_BIN + 1) as usize;
    let (mut counts, mut sums) = (vec![0u32; bins], vec![0u64; bins]);
    for &k in keys.iter().filter(|&&k| k >= floor) {
        let v = key_value(k);
        let c = soft_ceil(v);
        let b = exact_bin(v, c, mc) as usize;
        counts[b] += 1;
        if b < EXACT_ZERO_BIN as usize {
            sums[b] += frac_weight(v - c) as u64;
        }
    }
    let mass = |b: usize| if b < EXACT_ZERO_BIN as usize { sums[b] as u128 * BAND_SCALE[b / EXACT_SUB_BINS as usize] as u128 } else { 0 };
    let n_m: u32 = counts.iter().sum();
    let z_m: u128 = (0..bins).map(mass).sum();
    let k1 = if p.top_k == 0 || p.top_k > n_m { n_m } else { p.top_k };

    // Top-k: the bin where the running count reaches k1 (the zero bin changes nothing).
    let (mut bin_k, mut count_before_k, mut mass_before_k) = (NONE, 0u32, z_m);
    if k1 < n_m {
        let (mut run_c, mut run_m) = (0u32, 0u128);
        for (b, &n) in counts.iter().enumerate() {
            if run_c < k1 && k1 <= run_c + n && b < EXACT_ZERO_BIN as usize {
                (bin_k, count_before_k, mass_before_k) = (b as u32, run_c, run_m);
            }
            run_c += n;
            run_m += mass(b);
        }
    }
    // Top-p: the first bin reaching p·Z1 for the least and the largest Z1 bin_k allows.
    let top_p = !top_p_disabled(p.top_p);
    let (z1_lo, z1_hi) = if bin_k != NONE { (mass_before_k, mass_before_k + mass(bin_k as usize)) } else { (z_m, z_m) };
    let (mut lo, mut hi, mut mass_before_p) = (NONE, NONE, 0u128);
    if top_p {
        let p24 = top_p_units(p.top_p);
        let mut run = 0u128;
        for b in 0..bins {
            if lo == NONE && top_p_reached(run + mass(b), z1_lo, p24) {
                (lo, mass_before_p) = (b as u32, run);
            }
            if hi == NONE && top_p_reached(run + mass(b), z1_hi, p24) {
                hi = b as u32;
            }
            run += mass(b);
        }
    }
    let in_boundary = |b: u32| b == bin_k || (lo <= b && b <= hi);
    let gather: u32 = (0..bins as u32).filter(|&b| in_boundary(b)).map(|b| counts[b as usize]).sum();
    if gather > MERGE_CAPACITY || (top_p && lo == NONE) {
        return Binned::Elsewhere;
    }
    let mut list: Vec<u64> = keys.iter().copied().filter(|&k| k >= floor && in_boundary(bin_of(k, mc))).collect();
    list.sort_unstable_by(|a, b| b.cmp(a));
    let w = |k: u64| weight(key_value(k), mc);

    let (floor1, z1) = if bin_k != NONE {
        let earlier = list.iter().filter(|&&k| bin_of(k, mc) < bin_k).count();
        let floor1 = list[earlier + (k1 - count_before_k) as usize - 1];
        let part: u128 = list.iter().filter(|&&k| bin_of(k, mc) == bin_k && k >= floor1).map(|&k| w(k)).sum();
        (floor1, mass_before_k + part)
    } else {
        (floor, z_m)
    };
    if !top_p {
        return Binned::Kept(floor1, z1);
    }
    let p24 = top_p_units(p.top_p);
    let mut cum = mass_before_p;
    for &k in list.iter().filter(|&&k| bin_of(k, mc) >= lo && k >= floor1) {
        let wk = w(k);
        cum += wk;
        if wk > 0 && top_p_reached(cum, z1, p24) {
            return Binned::Kept(k, cum);
        }
    }
    panic!("the boundary bins guarantee a key that reaches p·Z1");
}

fn settings(rng: &mut common::TestRng) -> SamplingParams {
    let mut p = SamplingParams::random(0.3 + 1.2 * rng.unit() as f32, rng.u64());
    match rng.below(4) {
        0 => {}
        1 => p.top_k = 1 + rng.below(128) as u32,
        2 => p.top_k = 129 + rng.below(4000) as u32,
        _ => p.top_k = 1 + rng.below(40_000) as u32,
    }
    if rng.below(5) < 3 {
        p.top_p = 0.5 + 0.499 * rng.unit() as f32;
    }
    if rng.below(3) == 0 {
        p.min_p = 0.001 + 0.2 * rng.unit() as f32;
    }
    if p.top_k == 0 && top_p_disabled(p.top_p) {
        p.top_k = 50;
    }
    p
}

/// Processed rows of several shapes, tempered: LLM-like, flat, ties on a coarse grid (many
/// equal values across bins' edges), and a few far outliers.
fn row(rng: &mut common::TestRng, vocab: usize, t: f32) -> Vec<f32> {
    let mut x = match rng.below(4) {
        0 => rng.llm_row(vocab),
        1 => (0..vocab).map(|_| rng.normal(0.5)).collect(),
        2 => (0..vocab).map(|_| (rng.normal(2.0) * 8.0).round() / 8.0).collect(),
        _ => {
            let mut r: Vec<f32> = (0..vocab).map(|_| rng.normal(1.0)).collect();
            for _ in 0..5 {
                let i = rng.token(vocab) as usize;
                r[i] = 40.0 + 20.0 * rng.unit() as f32;
            }
            r
        }
    };
    for v in &mut x {
        *v *= 1.0 / t;
    }
    x
}

#[test]
fn bin_selection_gives_the_reference_kept_mass_and_tokens() {
    let mut rng = common::rng("bin_selection_gives_the_reference_kept_mass_and_tokens");
    let (mut binned_rows, mut elsewhere) = (0, 0);
    for (vocab, rows) in [(50_257usize, 60), (151_936, 30), (4_099, 200)] {
        for _ in 0..rows {
            let p = settings(&mut rng);
            let x = row(&mut rng, vocab, p.temperature);
            let kept = kept_set(&x, &p);
            match binned(&x, &p) {
                Binned::Elsewhere => elsewhere += 1,
                Binned::Kept(floor, z) => {
                    binned_rows += 1;
                    assert_eq!(z, kept.total, "kept mass, V={vocab} {p:?}");
                    // The same weighed tokens (the device may keep more that weigh nothing).
                    let max = x.iter().copied().fold(f32::NEG_INFINITY, f32::max);
                    let mc = soft_ceil(max);
                    let mut device: Vec<u32> = x
                        .iter()
                        .enumerate()
                        .filter(|(_, &v)| v > f32::NEG_INFINITY)
                        .map(|(i, &v)| sort_key(v, i as u32))
                        .filter(|&k| k >= floor && weight(key_value(k), mc) > 0)
                        .map(key_index)
                        .collect();
                    let mut reference: Vec<u32> =
                        kept.tokens.iter().zip(&kept.weights).filter(|(_, &w)| w > 0).map(|(&t, _)| t).collect();
                    device.sort_unstable();
                    reference.sort_unstable();
                    assert_eq!(device, reference, "kept tokens, V={vocab} {p:?}");
                }
            }
        }
    }
    // The bins take most rows (the tie-heavy ones overflow the list more often); if they
    // stopped taking them, this test would check nothing.
    eprintln!("binned {binned_rows}, elsewhere {elsewhere}");
    assert!(binned_rows >= 2 * (binned_rows + elsewhere) / 3, "binned {binned_rows}, elsewhere {elsewhere}");
}
