//! Writes the demo input `examples/logits-small.npy`: 4 rows × 32000 f16, LLM-like
//! (N(0, 2) noise plus ~20 boosted tokens per row), from a fixed seed so it is reproducible.
//!
//! `cargo run -p sampler-host --example gen_logits -- examples/logits-small.npy`

use half::f16;
use rand_xoshiro::rand_core::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

const ROWS: usize = 4;
const VOCAB: usize = 32_000;

fn uniform(rng: &mut Xoshiro256PlusPlus) -> f64 {
    ((rng.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
}

fn main() -> std::io::Result<()> {
    let path = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "examples/logits-small.npy".to_string());
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(0x50_1C_5A_3D);
    let mut data = Vec::with_capacity(ROWS * VOCAB);
    for _ in 0..ROWS {
        let mut row: Vec<f64> = (0..VOCAB)
            .map(|_| {
                // Box-Muller, sigma 2.
                let (u1, u2) = (uniform(&mut rng), uniform(&mut rng));
                2.0 * (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
            })
            .collect();
        for j in 0..20 {
            let t = (rng.next_u64() % VOCAB as u64) as usize;
            row[t] += 12.0 - 0.4 * j as f64;
        }
        data.extend(row.into_iter().map(|v| f16::from_f64(v).to_bits()));
    }
    let mut header =
        format!("{{'descr': '<f2', 'fortran_order': False, 'shape': ({ROWS}, {VOCAB}), }}");
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut out = Vec::with_capacity(10 + header.len() + data.len() * 2);
    out.extend_from_slice(b"\x93NUMPY\x01\x00");
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    for v in data {
        out.extend_from_slice(&v.to_le_bytes());
    }
    std::fs::write(&path, out)?;
    println!("wrote {path}: {ROWS} × {VOCAB} f16");
    Ok(())
}
