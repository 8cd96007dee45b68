//! The checks behind the cargo-fuzz targets in `fuzz_targets/` (issue 7: bad input never
//! panics, and whatever comes out stays inside docs/SEMANTICS.md).
//!
//! Each public function takes the fuzzer's raw bytes, decodes them with
//! `arbitrary::Unstructured` (running out of bytes just yields zeros), and panics only when a
//! check fails. Floats come from a table of special values or from raw bits, so NaN, ±inf,
//! ±0, denormals and huge values all appear.

use arbitrary::{Result, Unstructured};
use half::{bf16, f16};

use sampler_host::backend::{Backend, Batch, BatchRow, RowOutput};
use sampler_host::logits::{HostLogits, LogitsData};
use sampler_host::logits_file::{LogitsFile, OwnedLogits};
use sampler_host::reference::{greedy_choice, kept_set, process_row, CpuReference};
use sampler_host::settings::{validate_prompt, SamplingParams, MAX_TOP_LOGPROBS};
use sampler_host::state::RequestState;
use sampler_host::verify::{
    kept_weight, DraftDist, Verifier, VerifyBatch, VerifyOutput, VerifyRequest, MAX_DRAFTS,
};
use sampler_host::{Error, Field};
use sampler_kernels::decide::{min_p_threshold, settings_valid};
use sampler_kernels::keys::{
    canonical, from_ordered_bits, key_index, key_value, ordered_bits, sort8_desc, sort_key,
};
use sampler_kernels::logit::{bitmask_allows, bitmask_words, widen_bf16, widen_f16};
use sampler_kernels::status::{NO_TOKEN, STATUS_NO_VALID_TOKEN, STATUS_OK};
use sampler_kernels::verify::residual_weight;

/// Values the decoder picks on purpose: specials and the edges of every setting's range.
const SPECIAL: [f32; 28] = [
    f32::NAN,
    f32::from_bits(0xffc0_0001), // negative NaN with a payload
    f32::INFINITY,
    f32::NEG_INFINITY,
    0.0,
    -0.0,
    1.0,
    -1.0,
    0.5,
    0.9,
    2.0,
    1e-3,
    1e-7,
    1e-30,
    f32::MIN_POSITIVE,
    f32::from_bits(1), // smallest denormal
    -f32::from_bits(1),
    f32::MAX,
    f32::MIN,
    1.000_000_1,  // just above 1
    0.999_999_94, // just below 1
    1e30,
    -1e30,
    88.0,
    -88.0,
    36.5,
    -1.5,
    3.0,
];

/// A float: half the time from [`SPECIAL`], otherwise raw bits.
fn float(u: &mut Unstructured<'_>) -> Result<f32> {
    let sel: u8 = u.arbitrary()?;
    if sel < 128 {
        Ok(SPECIAL[sel as usize % SPECIAL.len()])
    } else {
        Ok(f32::from_bits(u.arbitrary()?))
    }
}

/// A count: mostly small, sometimes any `u32`.
fn count(u: &mut Unstructured<'_>) -> Result<u32> {
    if u.ratio(3u8, 4u8)? {
        u.int_in_range(0..=40)
    } else {
        u.arbitrary()
    }
}

/// A token id: mostly near the vocabulary (just inside or just outside), sometimes any `u32`.
fn token_id(u: &mut Unstructured<'_>, vocab: usize) -> Result<u32> {
    if u.ratio(7u8, 8u8)? {
        let hi = u32::try_from(vocab).unwrap_or(u32::MAX).saturating_add(1);
        u.int_in_range(0..=hi)
    } else {
        u.arbitrary()
    }
}

fn token_ids(u: &mut Unstructured<'_>, vocab: usize, most: usize) -> Result<Vec<u32>> {
    let n = u.int_in_range(0..=most)?;
    (0..n).map(|_| token_id(u, vocab)).collect()
}

/// Settings with every field from the input; usually some are invalid.
fn params(u: &mut Unstructured<'_>, vocab: usize) -> Result<SamplingParams> {
    let n_bias = u.int_in_range(0..=6usize)?;
    let mut logit_bias = Vec::with_capacity(n_bias);
    for _ in 0..n_bias {
        logit_bias.push((token_id(u, vocab)?, float(u)?));
    }
    Ok(SamplingParams {
        temperature: float(u)?,
        top_k: count(u)?,
        top_p: float(u)?,
        min_p: float(u)?,
        repetition_penalty: float(u)?,
        frequency_penalty: float(u)?,
        presence_penalty: float(u)?,
        logit_bias,
        seed: u.arbitrary()?,
        logprobs: u.arbitrary()?,
        top_logprobs: count(u)?,
    })
}

/// The fields of `p` that break docs/SEMANTICS.md §8, restated here independently of
/// `SamplingParams::validate`.
fn violated(p: &SamplingParams, vocab: usize) -> Vec<Field> {
    let mut bad = Vec::new();
    let t = p.temperature;
    if !(t.is_finite() && t >= 0.0) {
        bad.push(Field::Temperature);
    }
    if !(p.top_p > 0.0 && p.top_p <= 1.0) {
        bad.push(Field::TopP);
    }
    if !(p.min_p >= 0.0 && p.min_p <= 1.0) {
        bad.push(Field::MinP);
    }
    let r = p.repetition_penalty;
    if !(r.is_finite() && r > 0.0) {
        bad.push(Field::RepetitionPenalty);
    }
    if !p.frequency_penalty.is_finite() {
        bad.push(Field::FrequencyPenalty);
    }
    if !p.presence_penalty.is_finite() {
        bad.push(Field::PresencePenalty);
    }
    if p.top_logprobs > MAX_TOP_LOGPROBS {
        bad.push(Field::TopLogprobs);
    }
    let bias_bad = p.logit_bias.iter().enumerate().any(|(i, &(id, v))| {
        id as usize >= vocab || !v.is_finite() || p.logit_bias[..i].iter().any(|&(o, _)| o == id)
    });
    if bias_bad {
        bad.push(Field::LogitBias);
    }
    bad
}

fn field_of<T>(r: &sampler_host::Result<T>) -> Option<Field> {
    match r {
        Err(Error::InvalidSetting { field, .. }) => Some(*field),
        _ => None,
    }
}

/// `SamplingParams::validate`, `validate_prompt` and the CPU backend's request management
/// never panic; Ok exactly when every value is inside its documented range; an error names a
/// field that is actually wrong and leaves the backend's state as it was. The device-side
/// check (`decide::settings_valid`) agrees with the host on the six float settings.
pub fn settings_validation(data: &[u8]) {
    let _ = settings_validation_inner(&mut Unstructured::new(data));
}

fn settings_validation_inner(u: &mut Unstructured<'_>) -> Result<()> {
    let vocab = if u.ratio(1u8, 8u8)? {
        u.arbitrary::<u32>()? as usize
    } else {
        u.int_in_range(0..=4096usize)?
    };
    let p = params(u, vocab)?;
    let prompt = token_ids(u, vocab, 12)?;
    let bad = violated(&p, vocab);

    let r = p.validate(vocab, Some(7));
    match &r {
        Ok(()) => {
            assert!(
                bad.is_empty(),
                "validate accepted {p:?} for vocab {vocab}; wrong: {bad:?}"
            );
            // The documented ranges, spelled out once more.
            assert!(p.temperature.is_finite() && p.temperature >= 0.0);
            assert!(p.top_p > 0.0 && p.top_p <= 1.0);
            assert!((0.0..=1.0).contains(&p.min_p));
            assert!(p.repetition_penalty.is_finite() && p.repetition_penalty > 0.0);
            assert!(p.frequency_penalty.is_finite() && p.presence_penalty.is_finite());
            assert!(p.top_logprobs <= MAX_TOP_LOGPROBS);
            for &(id, v) in &p.logit_bias {
                assert!((id as usize) < vocab && v.is_finite());
            }
        }
        Err(Error::InvalidSetting {
            request,
            field,
            reason,
        }) => {
            assert_eq!(*request, Some(7));
            assert!(
                bad.contains(field),
                "validate blamed {field} for {p:?}; wrong: {bad:?}"
            );
            assert!(!reason.is_empty());
        }
        Err(e) => panic!("validate returned a non-setting error: {e}"),
    }
    let float_fields = [
        Field::Temperature,
        Field::TopP,
        Field::MinP,
        Field::RepetitionPenalty,
        Field::FrequencyPenalty,
        Field::PresencePenalty,
    ];
    let device_ok = settings_valid(
        p.temperature,
        p.top_p,
        p.min_p,
        p.repetition_penalty,
        p.frequency_penalty,
        p.presence_penalty,
    );
    assert_eq!(
        device_ok,
        !bad.iter().any(|f| float_fields.contains(f)),
        "host and device disagree on {p:?}"
    );

    let pr = validate_prompt(&prompt, vocab, Some(7));
    let prompt_bad = prompt.iter().any(|&t| t as usize >= vocab);
    assert_eq!(pr.is_err(), prompt_bad, "prompt {prompt:?}, vocab {vocab}");
    if prompt_bad {
        assert_eq!(field_of(&pr), Some(Field::PromptTokens));
    }

    // Through a backend: the same verdicts, and a failed call changes nothing.
    let Ok(mut be) = CpuReference::new(vocab, 4) else {
        assert!(
            vocab == 0 || vocab > 1 << 20,
            "CpuReference refused vocab {vocab}"
        );
        return Ok(());
    };
    let added = be.add_request(7, p.clone(), &prompt);
    assert_eq!(added.is_ok(), r.is_ok() && pr.is_ok());
    if added.is_err() {
        assert!(matches!(
            be.request_step(7),
            Err(Error::UnknownRequest { request: 7 })
        ));
        be.add_request(7, SamplingParams::default(), &[])
            .expect("default settings are valid");
    }
    let before: RequestState = be.table().get(7).cloned().expect("request 7 is registered");
    let p2 = params(u, vocab)?;
    let updated = be.update_request(7, p2.clone());
    assert_eq!(updated.is_ok(), violated(&p2, vocab).is_empty(), "{p2:?}");
    if updated.is_err() {
        assert_eq!(
            be.table().get(7),
            Some(&before),
            "a failed update changed the request"
        );
    }
    let before = be.table().get(7).cloned();
    let prompt2 = token_ids(u, vocab, 12)?;
    let reset = be.reset_request(7, &prompt2);
    assert_eq!(reset.is_err(), prompt2.iter().any(|&t| t as usize >= vocab));
    if reset.is_err() {
        assert_eq!(field_of(&reset), Some(Field::PromptTokens));
        assert_eq!(
            be.table().get(7).cloned(),
            before,
            "a failed reset changed the request"
        );
    }
    Ok(())
}

/// A logits buffer of one dtype, `rows × stride` elements.
enum Buffer {
    F32(Vec<f32>),
    Bf16(Vec<bf16>),
    F16(Vec<f16>),
}

impl Buffer {
    /// `rows` rows of [`row_bits`] in dtype `dtype` (0 f32, 1 bf16, else f16), each padded to
    /// `stride` with the dtype's `+inf`: a sampler that read past the vocab would pick it.
    fn fill(
        u: &mut Unstructured<'_>,
        rows: usize,
        vocab: usize,
        stride: usize,
        dtype: u8,
    ) -> Result<Self> {
        let pad = stride - vocab;
        let mut buffer = match dtype {
            0 => Buffer::F32(Vec::with_capacity(rows * stride)),
            1 => Buffer::Bf16(Vec::with_capacity(rows * stride)),
            _ => Buffer::F16(Vec::with_capacity(rows * stride)),
        };
        for _ in 0..rows {
            let bits = row_bits(u, vocab)?;
            match &mut buffer {
                Buffer::F32(d) => {
                    d.extend(bits.iter().map(|&b| f32::from_bits(b)));
                    d.extend(std::iter::repeat_n(f32::INFINITY, pad));
                }
                Buffer::Bf16(d) => {
                    d.extend(bits.iter().map(|&b| bf16::from_bits((b >> 16) as u16)));
                    d.extend(std::iter::repeat_n(bf16::INFINITY, pad));
                }
                Buffer::F16(d) => {
                    d.extend(bits.iter().map(|&b| {
                        let v = f32::from_bits(b);
                        // Raw-bit rows keep raw 16-bit patterns; others round like a model would.
                        if v.is_nan() || v.is_infinite() {
                            f16::from_bits(b as u16)
                        } else {
                            f16::from_f32(v)
                        }
                    }));
                    d.extend(std::iter::repeat_n(f16::INFINITY, pad));
                }
            }
        }
        Ok(buffer)
    }

    fn view(&self, first_row: usize, rows: usize, vocab: usize, stride: usize) -> HostLogits<'_> {
        let start = first_row * stride;
        let data = match self {
            Buffer::F32(d) => LogitsData::F32(&d[start..]),
            Buffer::Bf16(d) => LogitsData::Bf16(&d[start..]),
            Buffer::F16(d) => LogitsData::F16(&d[start..]),
        };
        HostLogits::new(data, rows, vocab, stride).expect("the buffer holds every row")
    }

    /// Row `row` widened to f32 with the `half` crate, independently of the sampler's widening.
    fn row(&self, row: usize, vocab: usize, stride: usize) -> Vec<f32> {
        let r = row * stride..row * stride + vocab;
        match self {
            Buffer::F32(d) => d[r].to_vec(),
            Buffer::Bf16(d) => d[r].iter().map(|v| v.to_f32()).collect(),
            Buffer::F16(d) => d[r].iter().map(|v| v.to_f32()).collect(),
        }
    }
}

/// SplitMix64: fills long rows from a few input bytes.
struct Mix(u64);

impl Mix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// Raw bits of one row: a fill pattern from a stream seeded by the input, then specials placed
/// by the input. Bits are f32 bits; for 16-bit dtypes the low or high half is used.
fn row_bits(u: &mut Unstructured<'_>, vocab: usize) -> Result<Vec<u32>> {
    let mode = u.int_in_range(0..=4u8)?;
    let mut mix = Mix(u.arbitrary()?);
    let constant = float(u)?.to_bits();
    let mut bits: Vec<u32> = (0..vocab)
        .map(|_| {
            let r = mix.next();
            match mode {
                0 => constant,                                     // one tie over the whole row
                1 => ((r % 9) as f32 - 4.0).to_bits(),             // few distinct values, many ties
                2 => r as u32,                                     // any bit pattern
                3 => ((r % 4000) as f32 / 100.0 - 20.0).to_bits(), // LLM-like spread
                _ => (((r >> 32) as u32 as f32) * 1e-6).to_bits(), // large, close values
            }
        })
        .collect();
    let placed = u.int_in_range(0..=8usize)?;
    for _ in 0..placed {
        let at = u.int_in_range(0..=vocab - 1)?;
        bits[at] = float(u)?.to_bits();
    }
    Ok(bits)
}

/// One row's bitmask: none, all allowed, none allowed, or random words, with 0–2 extra words
/// (ignored by the contract), garbage in the bits past the vocab included.
fn row_mask(u: &mut Unstructured<'_>, vocab: usize) -> Result<Option<Vec<i32>>> {
    let words = bitmask_words(vocab as u32) as usize + u.int_in_range(0..=2usize)?;
    let mut mix = Mix(u.arbitrary()?);
    Ok(match u.int_in_range(0..=4u8)? {
        0 | 1 => None,
        2 => Some(vec![-1; words]),
        3 => Some(vec![0; words]),
        _ => {
            let dense: bool = u.arbitrary()?;
            Some(
                (0..words)
                    .map(|_| {
                        let r = mix.next();
                        // Sparse masks leave few tokens, which is where rows run dry.
                        (if dense {
                            r | (r >> 32)
                        } else {
                            r & (r >> 32) & (r >> 16)
                        }) as i32
                    })
                    .collect(),
            )
        }
    })
}

/// Checks one output against the kept set computed independently from the processed row.
fn check_row(raw: &[f32], state: &RequestState, mask: Option<&[i32]>, out: &RowOutput) {
    let p = &state.params;
    let x = process_row(raw, state, mask);
    assert_eq!(x.len(), raw.len());
    assert!(x.iter().all(|v| !v.is_nan()), "the prologue left a NaN");
    let expected = if p.is_greedy() {
        greedy_choice(&x)
    } else {
        let kept = kept_set(&x, p);
        if kept.tokens.is_empty() {
            None
        } else {
            assert_eq!(kept.tokens.len(), kept.weights.len());
            assert_eq!(kept.total, kept.weights.iter().sum::<u128>());
            assert!(kept.total > 0, "a non-empty kept set without mass");
            assert_eq!(
                Some(kept.tokens[0]),
                greedy_choice(&x),
                "the top token was not kept"
            );
            let keys: Vec<u64> = kept
                .tokens
                .iter()
                .map(|&t| sort_key(x[t as usize], t))
                .collect();
            assert!(
                keys.windows(2).all(|w| w[0] > w[1]),
                "kept set out of order"
            );
            if p.top_k > 0 {
                assert!(kept.tokens.len() <= p.top_k as usize);
            }
            let max = x[kept.tokens[0] as usize];
            let thr = min_p_threshold(max, p.min_p);
            assert!(
                kept.tokens.iter().all(|&t| x[t as usize] >= thr),
                "min-p let a token through"
            );
            if out.status == STATUS_OK {
                let t = u32::try_from(out.token).expect("an OK row has a token");
                let at = kept.tokens.iter().position(|&k| k == t);
                let at = at.unwrap_or_else(|| panic!("token {t} is not in the kept set {kept:?}"));
                assert!(kept.weights[at] > 0, "token {t} has zero weight");
            }
            Some(out.token.max(0) as u32)
        }
    };
    match expected {
        Some(t) => {
            assert_eq!(out.status, STATUS_OK, "expected a token, got {out:?}");
            assert_eq!(out.token, t as i32);
            let i = t as usize;
            assert!(i < raw.len() && x[i] > f32::NEG_INFINITY && !raw[i].is_nan());
            if let Some(m) = mask {
                assert!(bitmask_allows(m[i >> 5], t), "token {t} is masked out");
            }
            match out.logprob {
                Some(lp) => assert!(p.logprobs && lp <= 0.0, "logprob {lp}"),
                None => assert!(!p.logprobs),
            }
            let live = x.iter().filter(|&&v| v > f32::NEG_INFINITY).count();
            assert_eq!(out.top_logprobs.len(), (p.top_logprobs as usize).min(live));
            let keys: Vec<u64> = out
                .top_logprobs
                .iter()
                .map(|&(t, lp)| {
                    assert!(!lp.is_nan() && lp <= 0.0, "top logprob {lp}");
                    sort_key(x[t as usize], t)
                })
                .collect();
            assert!(
                keys.windows(2).all(|w| w[0] > w[1]),
                "top logprobs out of order"
            );
        }
        None => {
            assert_eq!(out.token, NO_TOKEN);
            // The CPU validates on the host, so it never reports invalid settings.
            assert_eq!(out.status, STATUS_NO_VALID_TOKEN);
            assert!(out.logprob.is_none() && out.top_logprobs.is_empty());
        }
    }
}

/// `CpuReference::sample` on arbitrary small rows (vocab 1..=512, any f32/bf16/f16 bits, any
/// stride padding, optional bitmasks) with arbitrary valid settings, for a few steps, never
/// panics; each output is a token of the kept set (greedy: the greedy choice) or -1 with
/// `NoValidToken`; a row's output does not depend on the rest of the batch; steps advance by
/// one; a too-short bitmask is refused without any state change.
pub fn reference_rows(data: &[u8]) {
    let _ = reference_rows_inner(&mut Unstructured::new(data));
}

/// `bad` is refused with a bitmask error naming row `r`'s request (request `r`), and no
/// request's state changes.
fn refused_naming_row(be: &mut CpuReference, bad: &Batch<'_>, r: usize) {
    let before = be.table().clone();
    let e = be.sample(bad);
    assert!(
        matches!(e, Err(Error::InvalidSetting { field: Field::Bitmask, request: Some(q), .. }) if q == r as u64),
        "{e:?}"
    );
    for q in 0..bad.rows.len() as u64 {
        assert_eq!(
            be.table().get(q),
            before.get(q),
            "a refused batch changed request {q}"
        );
    }
}

fn reference_rows_inner(u: &mut Unstructured<'_>) -> Result<()> {
    let vocab = u.int_in_range(1..=512usize)?;
    let rows = u.int_in_range(1..=4usize)?;
    let steps = u.int_in_range(1..=3u32)?;
    let dtype = u.int_in_range(0..=2u8)?;
    let stride = vocab + u.int_in_range(0..=3usize)?;
    let mut be = CpuReference::new(vocab, rows).expect("vocab 1..=512 is supported");
    for r in 0..rows as u64 {
        let mut p = params(u, vocab)?;
        // Invalid settings are settings_validation's job; here they become a plain random row.
        if p.validate(vocab, None).is_err() {
            p = SamplingParams::random(1.0, p.seed);
        }
        let prompt: Vec<u32> = token_ids(u, vocab, 12)?
            .into_iter()
            .filter(|&t| (t as usize) < vocab)
            .collect();
        be.add_request(r, p, &prompt).expect("validated settings");
    }
    for step in 0..steps {
        let buffer = Buffer::fill(u, rows, vocab, stride, dtype)?;
        // Exact widening: the sampler's bit tricks equal the half crate's conversions.
        match &buffer {
            Buffer::F32(_) => {}
            Buffer::Bf16(d) => {
                for v in d {
                    let (a, b) = (widen_bf16(v.to_bits()), v.to_f32());
                    assert!(
                        a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()),
                        "bf16 {v:?}"
                    );
                }
            }
            Buffer::F16(d) => {
                for v in d {
                    let (a, b) = (widen_f16(v.to_bits()), v.to_f32());
                    assert!(
                        a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()),
                        "f16 {v:?}"
                    );
                }
            }
        }
        let masks: Vec<Option<Vec<i32>>> = (0..rows)
            .map(|_| row_mask(u, vocab))
            .collect::<Result<_>>()?;
        let batch_rows: Vec<BatchRow<'_>> = (0..rows)
            .map(|r| BatchRow {
                request: r as u64,
                bitmask: masks[r].as_deref(),
                device_bitmask: false,
            })
            .collect();

        // A mask one word short is refused, naming the row, and nothing changes.
        if let Some(r) = (0..rows).find(|&r| masks[r].is_some()) {
            if u.ratio(1u8, 4u8)? {
                let words = bitmask_words(vocab as u32) as usize;
                let short = &masks[r].as_deref().unwrap_or(&[])[..words - 1];
                let mut bad_rows = batch_rows.clone();
                bad_rows[r].bitmask = Some(short);
                let bad = Batch {
                    logits: buffer.view(0, rows, vocab, stride),
                    rows: bad_rows,
                };
                refused_naming_row(&mut be, &bad, r);
            }
        }

        // So is a row whose mask is on the device: `sample` takes host rows only.
        if rows > 0 && u.ratio(1u8, 8u8)? {
            let r = u.choose_index(rows)?;
            let mut bad_rows = batch_rows.clone();
            bad_rows[r].device_bitmask = true;
            let bad = Batch {
                logits: buffer.view(0, rows, vocab, stride),
                rows: bad_rows,
            };
            refused_naming_row(&mut be, &bad, r);
        }

        let before = be.clone();
        let batch = Batch {
            logits: buffer.view(0, rows, vocab, stride),
            rows: batch_rows.clone(),
        };
        let outs = be.sample(&batch).expect("a valid batch");
        assert_eq!(outs.len(), rows);
        for (r, out) in outs.iter().enumerate() {
            let id = r as u64;
            let state = before.table().get(id).expect("registered");
            assert_eq!(state.step, u64::from(step));
            check_row(
                &buffer.row(r, vocab, stride),
                state,
                masks[r].as_deref(),
                out,
            );
            assert_eq!(
                be.request_step(id).expect("registered"),
                u64::from(step) + 1
            );
            // The same row alone in a batch gives the same output (docs/SEMANTICS.md §4).
            let mut alone = before.clone();
            let single = Batch {
                logits: buffer.view(r, 1, vocab, stride),
                rows: vec![batch_rows[r]],
            };
            let solo = alone.sample(&single).expect("a valid batch of one");
            assert_eq!(solo.len(), 1);
            assert_eq!(solo[0].token, out.token, "row {r} depends on its batch");
            assert_eq!(solo[0].status, out.status);
        }
    }
    Ok(())
}

/// Packed sort keys: for any f32 bits and index, `sort_key` → `key_value`/`key_index`
/// round-trips (value canonicalised: `-0.0` → `+0.0`), and comparing keys equals comparing
/// (value desc, index asc) directly; `sort8_desc` equals a std sort of the same 8 keys.
///
/// NaN is not a valid input to `sort_key`: its bits would order above `+inf` (or below
/// `-inf`). The prologue maps NaN to `-inf` before any key is made (docs/SEMANTICS.md §2,
/// steps 1 and 7), so this target does the same.
pub fn keys_and_sort(data: &[u8]) {
    let _ = keys_and_sort_inner(&mut Unstructured::new(data));
}

fn keys_and_sort_inner(u: &mut Unstructured<'_>) -> Result<()> {
    let n = u.int_in_range(2..=16usize)?;
    let mut items = Vec::with_capacity(n);
    for _ in 0..n {
        let x = float(u)?;
        let v = if x.is_nan() { f32::NEG_INFINITY } else { x };
        // Small indices make ties between equal values likely.
        let i: u32 = if u.arbitrary()? {
            u.int_in_range(0..=8)?
        } else {
            u.arbitrary()?
        };
        items.push((v, i));
    }
    let keys: Vec<u64> = items.iter().map(|&(v, i)| sort_key(v, i)).collect();
    for (&(v, i), &k) in items.iter().zip(&keys) {
        assert_eq!(key_index(k), i);
        assert_eq!(
            key_value(k).to_bits(),
            canonical(v).to_bits(),
            "value of {v:?}"
        );
        assert_eq!(
            from_ordered_bits(ordered_bits(v)).to_bits(),
            canonical(v).to_bits()
        );
    }
    for (a, &ka) in items.iter().zip(&keys) {
        for (b, &kb) in items.iter().zip(&keys) {
            // Larger key = earlier: larger value, then lower index. -0.0 == +0.0 as floats.
            let direct = a.0.partial_cmp(&b.0).expect("no NaN").then(b.1.cmp(&a.1));
            assert_eq!(ka.cmp(&kb), direct, "{a:?} vs {b:?}");
        }
    }
    // sort8_desc on the first 8 keys (padded with raw keys), and on 8 raw u64 keys.
    let mut eight = [0u64; 8];
    for (slot, k) in eight
        .iter_mut()
        .zip(keys.iter().copied().chain(std::iter::repeat(0)))
    {
        *slot = k;
    }
    for k in eight.iter_mut().skip(n) {
        *k = u.arbitrary()?;
    }
    let raw: [u64; 8] = u.arbitrary()?;
    for input in [eight, raw] {
        let mut want = input;
        want.sort_unstable_by(|a, b| b.cmp(a));
        assert_eq!(sort8_desc(input), want, "{input:?}");
    }
    Ok(())
}

/// What a verification batch breaks, restated from docs/SEMANTICS.md §10 independently of
/// `validate_verify_batch`: one entry per rule broken, in no particular order.
#[derive(Debug, PartialEq)]
enum Broken {
    Capacity(&'static str),
    Unknown(u64),
    Duplicate(u64),
    Setting(Option<u64>, Field),
}

impl Broken {
    fn of(e: &Error) -> Option<Self> {
        match e {
            Error::CapacityExceeded { what, .. } => Some(Broken::Capacity(what)),
            Error::UnknownRequest { request } => Some(Broken::Unknown(*request)),
            Error::DuplicateRequest { request } => Some(Broken::Duplicate(*request)),
            Error::InvalidSetting { request, field, .. } => Some(Broken::Setting(*request, *field)),
            _ => None,
        }
    }
}

/// One request of a fuzzed verification call, owning what `VerifyRequest` borrows.
struct FuzzRequest {
    id: u64,
    drafts: Vec<u32>,
    probs: Option<Vec<f32>>,
    mask: Option<Vec<i32>>,
}

/// A draft-probability row: normalised random mass, one-hot at the draft, most mass on the
/// draft, or mass too small to count; sometimes one entry from [`float`] (often invalid).
fn draft_probs_row(u: &mut Unstructured<'_>, vocab: usize, draft: u32) -> Result<Vec<f32>> {
    let mut mix = Mix(u.arbitrary()?);
    let at = (draft as usize).min(vocab - 1);
    let mut row = match u.int_in_range(0..=3u8)? {
        0 | 1 => {
            let raw: Vec<f32> = (0..vocab).map(|_| (mix.next() >> 44) as f32).collect();
            let sum: f32 = raw.iter().sum();
            raw.iter()
                .map(|&v| if sum > 0.0 { (v / sum).min(1.0) } else { 0.0 })
                .collect()
        }
        2 => {
            let mut row = vec![0.0f32; vocab];
            row[at] = 1.0;
            row
        }
        _ => vec![1e-30f32; vocab],
    };
    if u.ratio(1u8, 2u8)? {
        // Most of the mass on the draft, so that q-rows are accepted and rejected alike.
        row[at] = row[at].max(0.75);
    }
    if u.ratio(1u8, 8u8)? {
        let i = u.int_in_range(0..=vocab - 1)?;
        row[i] = float(u)?;
    }
    Ok(row)
}

/// The rules of one call that `batch` breaks (docs/SEMANTICS.md §10; settings validated when
/// the requests were added).
fn verify_broken(
    requests: &[FuzzRequest],
    registered: u64,
    max_batch: usize,
    vocab: usize,
    view_vocab: usize,
    view_rows: usize,
) -> Vec<Broken> {
    let mut broken = Vec::new();
    if requests.len() > max_batch {
        broken.push(Broken::Capacity("verify requests"));
    }
    if view_vocab != vocab {
        broken.push(Broken::Setting(None, Field::Logits));
    }
    let words = bitmask_words(vocab as u32) as usize;
    let tiny = 1.0f32 / 9_223_372_036_854_775_808.0; // 2^-63: less counts as no mass
    for (i, r) in requests.iter().enumerate() {
        let id = Some(r.id);
        let n = r.drafts.len();
        if r.id >= registered {
            broken.push(Broken::Unknown(r.id));
        }
        if requests[..i].iter().any(|o| o.id == r.id) {
            broken.push(Broken::Duplicate(r.id));
        }
        if n > MAX_DRAFTS {
            broken.push(Broken::Capacity("draft tokens"));
        }
        if r.drafts.iter().any(|&t| t as usize >= vocab) {
            broken.push(Broken::Setting(id, Field::DraftTokens));
        }
        if let Some(q) = &r.probs {
            let bad_len = q.len() != n * vocab;
            let bad_value = q.iter().any(|v| !(*v >= 0.0 && *v <= 1.0));
            let massless = q
                .chunks(vocab)
                .any(|row| row.iter().all(|&v| v.is_nan() || v < tiny));
            if bad_len || bad_value || massless {
                broken.push(Broken::Setting(id, Field::DraftTokens));
            }
        }
        if r.mask.as_ref().is_some_and(|m| m.len() < (n + 1) * words) {
            broken.push(Broken::Setting(id, Field::Bitmask));
        }
    }
    let rows: usize = requests.iter().map(|r| r.drafts.len() + 1).sum();
    if view_rows != rows {
        broken.push(Broken::Setting(None, Field::Logits));
    }
    broken
}

/// Checks one request's verification output against its rows, processed independently with
/// the chain's counts: the accepted drafts are a prefix, every emitted token is valid at its
/// position (greedy: the argmax; random: kept, and a residual token has residual weight unless
/// the residual is empty), a stop has a row with no valid token, padding is -1, and the
/// log-probabilities cover exactly the emitted tokens.
fn check_verify_output(
    rows: &[Vec<f32>],
    r: &FuzzRequest,
    state: &RequestState,
    out: &VerifyOutput,
) {
    let p = &state.params;
    let n = r.drafts.len();
    let vocab = rows.first().map_or(0, Vec::len);
    let words = bitmask_words(vocab as u32) as usize;
    assert_eq!(out.tokens.len(), n + 1, "{out:?}");
    assert!(out.accepted <= n);
    let emitted = out.emitted();
    assert!(
        out.tokens[emitted.len()..].iter().all(|&t| t == NO_TOKEN),
        "{out:?}"
    );
    match out.status {
        STATUS_OK => assert_eq!(emitted.len(), out.accepted + 1, "{out:?}"),
        STATUS_NO_VALID_TOKEN => assert_eq!(emitted.len(), out.accepted, "{out:?}"),
        s => panic!("status {s} from the CPU reference"),
    }
    let mut chain = state.clone();
    let stopped = out.status == STATUS_NO_VALID_TOKEN;
    for j in 0..emitted.len() + usize::from(stopped) {
        let mask = r.mask.as_deref().map(|m| &m[j * words..(j + 1) * words]);
        let x = process_row(&rows[j], &chain, mask);
        let Some(&t) = emitted.get(j) else {
            // The chain stopped here: this row has no valid token.
            if p.is_greedy() {
                assert_eq!(
                    greedy_choice(&x),
                    None,
                    "stopped at {j} with a greedy token"
                );
            } else {
                assert!(
                    kept_set(&x, p).tokens.is_empty(),
                    "stopped at {j} with tokens kept"
                );
            }
            break;
        };
        let t = u32::try_from(t).expect("emitted tokens are not negative");
        assert!(
            (t as usize) < vocab && x[t as usize] > f32::NEG_INFINITY,
            "token {t} at {j}"
        );
        if let Some(m) = mask {
            assert!(
                bitmask_allows(m[t as usize >> 5], t),
                "token {t} at {j} is masked out"
            );
        }
        if j < out.accepted {
            assert_eq!(t, r.drafts[j], "accepted tokens are the drafts");
        }
        if p.is_greedy() {
            assert_eq!(Some(t), greedy_choice(&x), "greedy position {j}");
            if j == out.accepted && j < n {
                assert_ne!(t, r.drafts[j], "a greedy mismatch emitted the draft");
            }
        } else {
            let kept = kept_set(&x, p);
            let weight = kept_weight(&kept, t);
            assert!(weight > 0, "token {t} at {j} is not kept: {kept:?}");
            if j == out.accepted && j < n {
                // A rejection: the token has residual weight, or the residual is empty.
                let q = match &r.probs {
                    None => DraftDist::OneHot(r.drafts[j]),
                    Some(all) => DraftDist::from_probs(&all[j * vocab..(j + 1) * vocab]),
                };
                let residual =
                    |tok: u32, w: u128| residual_weight(w, kept.total, q.units(tok), q.total());
                let empty = kept
                    .tokens
                    .iter()
                    .zip(&kept.weights)
                    .all(|(&k, &w)| residual(k, w).is_zero());
                assert!(
                    empty || !residual(t, weight).is_zero(),
                    "residual token {t} at {j} has no residual weight"
                );
            }
        }
        if j < n && j < out.accepted {
            let c = chain.output_counts.entry(t).or_insert(0);
            *c = c.saturating_add(1);
        }
    }
    let lp_rows = if p.logprobs { emitted.len() } else { 0 };
    assert_eq!(out.logprobs.len(), lp_rows);
    assert!(
        out.logprobs.iter().all(|&lp| !lp.is_nan() && lp <= 0.0),
        "{:?}",
        out.logprobs
    );
    let top_rows = if p.top_logprobs > 0 { emitted.len() } else { 0 };
    assert_eq!(out.top_logprobs.len(), top_rows);
    for list in &out.top_logprobs {
        assert!(list.len() <= p.top_logprobs as usize);
        assert!(list
            .iter()
            .all(|&(t, lp)| (t as usize) < vocab && !lp.is_nan() && lp <= 0.0));
    }
}

/// `CpuReference::verify` on arbitrary small verification calls (vocab 1..=200, any f32/bf16/
/// f16 bits, strides, bitmasks; drafts in and out of the vocab; draft probabilities valid,
/// invalid or massless; unknown and duplicate requests; too many requests, drafts or rows)
/// never panics. It refuses a call exactly when the call breaks a rule, naming a rule it
/// breaks, and then changes no request. Otherwise each output passes `check_verify_output`,
/// does not depend on the rest of the batch, equals `sample` for a request without drafts, and
/// the request's step advances by one with its emitted tokens counted.
pub fn verify_batches(data: &[u8]) {
    let _ = verify_batches_inner(&mut Unstructured::new(data));
}

fn verify_batches_inner(u: &mut Unstructured<'_>) -> Result<()> {
    let vocab = u.int_in_range(1..=200usize)?;
    let registered = u.int_in_range(1..=4u64)?;
    let max_batch = registered as usize;
    let dtype = u.int_in_range(0..=2u8)?;
    let stride = vocab + u.int_in_range(0..=2usize)?;
    let mut be = CpuReference::new(vocab, max_batch).expect("vocab 1..=200 is supported");
    for id in 0..registered {
        let mut p = params(u, vocab)?;
        if p.validate(vocab, None).is_err() {
            p = if u.arbitrary()? {
                SamplingParams::greedy()
            } else {
                SamplingParams::random(1.0, p.seed)
            };
        }
        let prompt: Vec<u32> = token_ids(u, vocab, 8)?
            .into_iter()
            .filter(|&t| (t as usize) < vocab)
            .collect();
        be.add_request(id, p, &prompt).expect("validated settings");
    }
    for _call in 0..u.int_in_range(1..=2u8)? {
        // The requests: ids in turn from a random start, now and then an unknown or repeated one.
        let count = u.int_in_range(0..=max_batch + 1)?;
        let start: u64 = u.int_in_range(0..=registered - 1)?;
        let mut requests = Vec::with_capacity(count);
        for i in 0..count as u64 {
            let id = match u.int_in_range(0..=15u8)? {
                0 => registered,
                1 => start,
                _ => (start + i) % registered,
            };
            let n = if u.ratio(1u8, 40u8)? {
                MAX_DRAFTS + 1
            } else {
                u.int_in_range(0..=5usize)?
            };
            requests.push(FuzzRequest {
                id,
                drafts: vec![0; n],
                probs: None,
                mask: None,
            });
        }
        let rows: usize = requests.iter().map(|r| r.drafts.len() + 1).sum();
        // One row more than the call needs, so that a view with a wrong row count still fits.
        let buffer = Buffer::fill(u, rows + 1, vocab, stride, dtype)?;
        let raw_rows: Vec<Vec<f32>> = (0..=rows).map(|r| buffer.row(r, vocab, stride)).collect();
        // Drafts: often each row's raw argmax (so chains get past their first draft), else any id.
        let mut first = 0usize;
        for r in requests.iter_mut() {
            let n = r.drafts.len();
            for j in 0..n {
                r.drafts[j] = if u.arbitrary()? {
                    let row = &raw_rows[first + j];
                    greedy_choice(
                        &row.iter()
                            .map(|&v| if v.is_nan() { f32::NEG_INFINITY } else { v })
                            .collect::<Vec<_>>(),
                    )
                    .unwrap_or(0)
                } else {
                    token_id(u, vocab)?
                };
            }
            if n <= MAX_DRAFTS && u.ratio(1u8, 3u8)? {
                let mut q = Vec::with_capacity(n * vocab);
                for &d in &r.drafts {
                    q.extend(draft_probs_row(u, vocab, d)?);
                }
                if u.ratio(1u8, 16u8)? {
                    if q.is_empty() || u.arbitrary()? {
                        q.push(0.5);
                    } else {
                        q.pop();
                    }
                }
                r.probs = Some(q);
            }
            if n <= MAX_DRAFTS {
                let mut mask = Vec::new();
                let mut any = false;
                for _ in 0..=n {
                    let m = row_mask(u, vocab)?;
                    any |= m.is_some();
                    let words = bitmask_words(vocab as u32) as usize;
                    let m = m.unwrap_or_else(|| vec![-1; words]);
                    mask.extend_from_slice(&m[..words]);
                }
                if any {
                    if u.ratio(1u8, 16u8)? {
                        mask.pop();
                    }
                    r.mask = Some(mask);
                }
            }
            first += n + 1;
        }
        let view_rows = match u.int_in_range(0..=23u8)? {
            0 => rows + 1,
            1 => rows.saturating_sub(1),
            _ => rows,
        };
        let view_vocab = if vocab > 1 && u.ratio(1u8, 24u8)? {
            vocab - 1
        } else {
            vocab
        };
        let broken = verify_broken(
            &requests, registered, max_batch, vocab, view_vocab, view_rows,
        );

        let batch = VerifyBatch {
            logits: buffer.view(0, view_rows, view_vocab, stride),
            requests: requests
                .iter()
                .map(|r| VerifyRequest {
                    request: r.id,
                    drafts: &r.drafts,
                    draft_probs: r.probs.as_deref(),
                    bitmask: r.mask.as_deref(),
                })
                .collect(),
        };
        let before = be.clone();
        let result = be.verify(&batch);
        let outs = match result {
            Err(e) => {
                let named = Broken::of(&e);
                assert!(
                    named.as_ref().is_some_and(|b| broken.contains(b)),
                    "verify refused with {e:?}; the call breaks {broken:?}"
                );
                for id in 0..registered {
                    assert_eq!(
                        be.table().get(id),
                        before.table().get(id),
                        "a refused call changed {id}"
                    );
                }
                continue;
            }
            Ok(outs) => {
                assert!(
                    broken.is_empty(),
                    "verify accepted a call that breaks {broken:?}"
                );
                outs
            }
        };
        assert_eq!(outs.len(), requests.len());
        let mut first = 0usize;
        for (i, (r, out)) in requests.iter().zip(&outs).enumerate() {
            let n = r.drafts.len();
            let state = before
                .table()
                .get(r.id)
                .expect("a verified request is registered");
            check_verify_output(&raw_rows[first..first + n + 1], r, state, out);
            // The same request alone gives the same output (docs/SEMANTICS.md §4).
            let mut alone = before.clone();
            let solo = alone
                .verify(&VerifyBatch {
                    logits: buffer.view(first, n + 1, vocab, stride),
                    requests: vec![batch.requests[i]],
                })
                .expect("a valid request alone");
            assert_eq!(
                solo.as_slice(),
                std::slice::from_ref(out),
                "request {i} depends on its batch"
            );
            if n == 0 {
                // Without drafts, verification is one plain sample (docs/SEMANTICS.md §10).
                let mut plain = before.clone();
                let row = plain
                    .sample(&Batch {
                        logits: buffer.view(first, 1, vocab, stride),
                        rows: vec![BatchRow {
                            request: r.id,
                            bitmask: r.mask.as_deref(),
                            device_bitmask: false,
                        }],
                    })
                    .expect("a valid row");
                assert_eq!(
                    row[0].token, out.tokens[0],
                    "request {i}: verify without drafts is not sample"
                );
                assert_eq!(row[0].status, out.status);
                assert_eq!(row[0].logprob, out.logprobs.first().copied());
                assert_eq!(
                    row[0].top_logprobs,
                    out.top_logprobs.first().cloned().unwrap_or_default()
                );
            }
            // State: one step, the emitted tokens counted (rejected drafts leave no trace).
            let after = be.table().get(r.id).expect("still registered");
            assert_eq!(after.step, state.step.wrapping_add(1));
            let mut counts = state.output_counts.clone();
            for &t in out.emitted() {
                *counts.entry(t as u32).or_insert(0) += 1;
            }
            assert_eq!(after.output_counts, counts, "request {i}'s counts");
            first += n + 1;
        }
        for id in (0..registered).filter(|id| requests.iter().all(|r| r.id != *id)) {
            assert_eq!(
                be.table().get(id),
                before.table().get(id),
                "request {id} was not in the call"
            );
        }
    }
    Ok(())
}

/// A dimension for a fuzzed array header: small, zero, or near an overflow.
fn dimension(u: &mut Unstructured<'_>) -> Result<u64> {
    Ok(match u.int_in_range(0..=7u8)? {
        0 => 0,
        1..=3 => u.int_in_range(1..=6)?,
        4 => 1 << 32,
        5 => u64::MAX,
        6 => 1 << 62,
        _ => u.arbitrary()?,
    })
}

/// An `.npy` container around a fuzzed header dict (descr, order, shape, sometimes a stray
/// key or text) and a payload of any length.
fn npy_bytes(u: &mut Unstructured<'_>) -> Result<Vec<u8>> {
    const DESCR: [&str; 7] = [
        "'<f4'",
        "'<f2'",
        "'>f4'",
        "'|u1'",
        "'<f8'",
        "[('shape', '<f4')]",
        "'<f4",
    ];
    let descr = DESCR[u.int_in_range(0..=DESCR.len() - 1)?];
    let dims: Vec<String> = (0..u.int_in_range(0..=3usize)?)
        .map(|_| dimension(u).map(|d| d.to_string()))
        .collect::<Result<_>>()?;
    let shape = match u.int_in_range(0..=5u8)? {
        0 => format!("[{}]", dims.join(", ")),
        1 => format!("({}", dims.join(", ")),
        _ if dims.len() == 1 => format!("({},)", dims[0]),
        _ => format!("({})", dims.join(", ")),
    };
    let key = if u.arbitrary()? {
        "'shape'"
    } else {
        "\"shape\""
    };
    let fortran = if u.ratio(1u8, 8u8)? { "True" } else { "False" };
    let mut header = format!("{{'descr': {descr}, 'fortran_order': {fortran}, {key}: {shape}, }}");
    if u.ratio(1u8, 8u8)? {
        let extra: String = u.arbitrary()?;
        // The header is ASCII so far, so every index is a char boundary.
        header.insert_str(u.int_in_range(0..=header.len())?, &extra);
    }
    header.push('\n');
    let version: u8 = if u.ratio(7u8, 8u8)? {
        u.int_in_range(1..=3)?
    } else {
        u.arbitrary()?
    };
    let mut out = b"\x93NUMPY".to_vec();
    out.extend_from_slice(&[version, 0]);
    if version == 1 {
        out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    } else {
        out.extend_from_slice(&(header.len() as u32).to_le_bytes());
    }
    out.extend_from_slice(header.as_bytes());
    let payload = u.int_in_range(0..=96usize)?;
    let mut mix = Mix(u.arbitrary()?);
    out.extend((0..payload).map(|_| mix.next() as u8));
    if u.ratio(1u8, 8u8)? {
        out.truncate(u.int_in_range(0..=out.len())?);
    }
    Ok(out)
}

/// A `.safetensors` container around a fuzzed one- or two-tensor header and payload.
fn safetensors_bytes(u: &mut Unstructured<'_>) -> Result<Vec<u8>> {
    const DTYPE: [&str; 5] = ["F32", "BF16", "F16", "U8", "F64"];
    let mut entries = Vec::new();
    for name in ["x", "y"].iter().take(u.int_in_range(1..=2usize)?) {
        let dtype = DTYPE[u.int_in_range(0..=DTYPE.len() - 1)?];
        let dims: Vec<String> = (0..u.int_in_range(0..=3usize)?)
            .map(|_| dimension(u).map(|d| d.to_string()))
            .collect::<Result<_>>()?;
        let (a, b): (u64, u64) = (u.int_in_range(0..=8)?, u.int_in_range(0..=96)?);
        entries.push(format!(
            "\"{name}\":{{\"dtype\":\"{dtype}\",\"shape\":[{}],\"data_offsets\":[{a},{b}]}}",
            dims.join(",")
        ));
    }
    let header = format!("{{{}}}", entries.join(","));
    let mut out = (header.len() as u64).to_le_bytes().to_vec();
    out.extend_from_slice(header.as_bytes());
    let payload = u.int_in_range(0..=96usize)?;
    let mut mix = Mix(u.arbitrary()?);
    out.extend((0..payload).map(|_| mix.next() as u8));
    Ok(out)
}

/// `LogitsFile::from_npy` and `from_safetensors` on any bytes, and on well-formed containers
/// around fuzzed headers (shapes whose product overflows, dtypes not taken, cut files), never
/// panic; an array they return holds exactly `rows × vocab` values, `row_f32` gives `vocab` of
/// them for any row (none when `rows` is 0), and `host` accepts it exactly when the vocab is
/// in `1..2^31`.
pub fn logits_files(data: &[u8]) {
    let _ = logits_files_inner(&mut Unstructured::new(data));
}

fn logits_files_inner(u: &mut Unstructured<'_>) -> Result<()> {
    let bytes = match u.int_in_range(0..=3u8)? {
        0 => u.arbitrary::<Vec<u8>>()?,
        1 | 2 => npy_bytes(u)?,
        _ => safetensors_bytes(u)?,
    };
    let name = if u.arbitrary()? { Some("y") } else { None };
    for file in [
        LogitsFile::from_npy(&bytes),
        LogitsFile::from_safetensors(&bytes, name),
    ] {
        let Ok(file) = file else { continue };
        let held = match &file.data {
            OwnedLogits::F32(d) => d.len(),
            OwnedLogits::Bf16(d) => d.len(),
            OwnedLogits::F16(d) => d.len(),
        };
        assert_eq!(
            Some(held),
            file.rows.checked_mul(file.vocab),
            "{} × {}",
            file.rows,
            file.vocab
        );
        let mut row = Vec::new();
        file.row_f32(u.arbitrary()?, &mut row);
        assert_eq!(row.len(), if file.rows == 0 { 0 } else { file.vocab });
        let usable = file.vocab > 0 && file.vocab <= i32::MAX as usize;
        assert_eq!(
            file.host().is_ok(),
            usable,
            "{} × {}",
            file.rows,
            file.vocab
        );
    }
    Ok(())
}
