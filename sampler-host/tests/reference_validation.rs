//! Every invalid setting and input yields its typed error naming the right field, and a
//! failed call changes nothing.

mod common;

use sampler_host::backend::{Backend, Batch, BatchRow};
use sampler_host::logits::{HostLogits, LogitsData};
use sampler_host::reference::CpuReference;
use sampler_host::settings::SamplingParams;
use sampler_host::{Error, Field};

fn field_of(r: sampler_host::Result<()>) -> Option<Field> {
    match r {
        Err(Error::InvalidSetting { field, .. }) => Some(field),
        _ => None,
    }
}

#[test]
fn invalid_settings_name_their_field() {
    let v = 1000;
    let d = SamplingParams::default;
    let cases: Vec<(SamplingParams, Field)> = vec![
        (d().with_temperature(-0.1), Field::Temperature),
        (d().with_temperature(f32::NAN), Field::Temperature),
        (d().with_temperature(f32::INFINITY), Field::Temperature),
        (d().with_top_p(0.0), Field::TopP),
        (d().with_top_p(1.0001), Field::TopP),
        (d().with_top_p(f32::NAN), Field::TopP),
        (d().with_top_p(-0.5), Field::TopP),
        (d().with_min_p(-0.01), Field::MinP),
        (d().with_min_p(1.5), Field::MinP),
        (d().with_min_p(f32::NAN), Field::MinP),
        (d().with_penalties(0.0, 0.0, 0.0), Field::RepetitionPenalty),
        (d().with_penalties(-1.0, 0.0, 0.0), Field::RepetitionPenalty),
        (
            d().with_penalties(f32::NAN, 0.0, 0.0),
            Field::RepetitionPenalty,
        ),
        (
            d().with_penalties(f32::INFINITY, 0.0, 0.0),
            Field::RepetitionPenalty,
        ),
        (
            d().with_penalties(1.0, f32::NAN, 0.0),
            Field::FrequencyPenalty,
        ),
        (
            d().with_penalties(1.0, 0.0, f32::NEG_INFINITY),
            Field::PresencePenalty,
        ),
        (d().with_logit_bias(vec![(1000, 1.0)]), Field::LogitBias),
        (d().with_logit_bias(vec![(3, f32::NAN)]), Field::LogitBias),
        (
            d().with_logit_bias(vec![(3, 1.0), (4, 1.0), (3, 2.0)]),
            Field::LogitBias,
        ),
        (d().with_logprobs(21), Field::TopLogprobs),
    ];
    for (p, want) in cases {
        assert_eq!(field_of(p.validate(v, Some(9))), Some(want), "{p:?}");
        let mut b = CpuReference::new(v, 4).expect("backend");
        assert_eq!(field_of(b.add_request(9, p.clone(), &[])), Some(want));
        assert!(matches!(
            b.request_step(9),
            Err(Error::UnknownRequest { request: 9 })
        ));
        b.add_request(9, d(), &[]).expect("valid add");
        assert_eq!(field_of(b.update_request(9, p)), Some(want));
    }
    // Boundaries that are valid.
    for p in [
        d().with_top_p(1.0),
        d().with_min_p(0.0),
        d().with_min_p(1.0),
        d().with_temperature(0.0),
        d().with_top_k(u32::MAX),
        d().with_logprobs(20),
        d().with_penalties(1e-3, -5.0, -5.0),
    ] {
        p.validate(v, None).expect("valid");
    }
    let mut b = CpuReference::new(v, 4).expect("backend");
    assert_eq!(
        field_of(b.add_request(1, d(), &[5, 1000])),
        Some(Field::PromptTokens)
    );
    b.add_request(1, d(), &[5]).expect("add");
    assert_eq!(
        field_of(b.reset_request(1, &[999, 1001])),
        Some(Field::PromptTokens)
    );
    assert!(matches!(
        b.add_request(1, d(), &[]),
        Err(Error::DuplicateRequest { request: 1 })
    ));
    assert!(matches!(
        b.drop_request(2),
        Err(Error::UnknownRequest { request: 2 })
    ));
    assert!(matches!(
        b.reset_request(2, &[]),
        Err(Error::UnknownRequest { request: 2 })
    ));
    b.drop_request(1).expect("drop");
    assert!(matches!(
        b.drop_request(1),
        Err(Error::UnknownRequest { request: 1 })
    ));
}

#[test]
fn invalid_batches_are_rejected_without_side_effects() {
    let mut rng = common::rng("invalid_batches_are_rejected_without_side_effects");
    let v = 70; // not a multiple of 32: 3 mask words
    let data: Vec<f32> = (0..4 * v).map(|_| rng.normal(1.0)).collect();
    let mut b = CpuReference::new(v, 3).expect("backend");
    for r in 0..4 {
        b.add_request(r, SamplingParams::random(1.0, r), &[])
            .expect("add");
    }
    let logits = |rows: usize| HostLogits::f32(&data, rows, v).expect("logits");
    let short = vec![-1i32; 2];
    let ok_mask = vec![-1i32; 3];
    let bad: Vec<(Batch<'_>, &str)> = vec![
        (
            Batch {
                logits: logits(4),
                rows: (0..4).map(BatchRow::new).collect(),
            },
            "capacity",
        ),
        (
            Batch {
                logits: logits(2),
                rows: vec![BatchRow::new(0)],
            },
            "rows",
        ),
        (
            Batch {
                logits: logits(1),
                rows: vec![BatchRow::new(42)],
            },
            "unknown",
        ),
        (
            Batch {
                logits: logits(2),
                rows: vec![BatchRow::new(0), BatchRow::new(0)],
            },
            "duplicate",
        ),
        (
            Batch {
                logits: logits(2),
                rows: vec![
                    BatchRow::with_bitmask(0, &ok_mask),
                    BatchRow::with_bitmask(1, &short),
                ],
            },
            "mask",
        ),
        (
            Batch {
                logits: HostLogits::f32(&data, 1, v - 1).expect("logits"),
                rows: vec![BatchRow::new(0)],
            },
            "vocab",
        ),
    ];
    for (batch, what) in &bad {
        let e = b.sample(batch).expect_err(what);
        match (*what, e) {
            (
                "capacity",
                Error::CapacityExceeded {
                    requested: 4,
                    capacity: 3,
                    ..
                },
            ) => {}
            (
                "rows",
                Error::InvalidSetting {
                    field: Field::Logits,
                    ..
                },
            ) => {}
            ("unknown", Error::UnknownRequest { request: 42 }) => {}
            ("duplicate", Error::DuplicateRequest { request: 0 }) => {}
            (
                "mask",
                Error::InvalidSetting {
                    field: Field::Bitmask,
                    request: Some(1),
                    ..
                },
            ) => {}
            (
                "vocab",
                Error::InvalidSetting {
                    field: Field::Logits,
                    ..
                },
            ) => {}
            (w, e) => panic!("{w}: unexpected {e}"),
        }
    }
    for r in 0..4 {
        assert_eq!(
            b.request_step(r).expect("step"),
            0,
            "a failed batch advanced request {r}"
        );
    }
    // Logits views reject inconsistent shapes.
    assert!(HostLogits::new(LogitsData::F32(&data), 4, v, v - 1).is_err());
    assert!(HostLogits::new(LogitsData::F32(&data), 5, v, v).is_err());
    assert!(HostLogits::new(LogitsData::F32(&data), 2, 0, v).is_err());
    assert!(HostLogits::new(LogitsData::F32(&data), 2, v, usize::MAX).is_err());
    assert!(HostLogits::new(LogitsData::F32(&data), 3, v, v + 5).is_ok());
    assert!(CpuReference::new(0, 1).is_err());
}
