//! Host views of a batch of logits: f32, bf16 or f16, `rows × vocab` with a row stride.
//!
//! bf16 and f16 are widened to f32 exactly, by the same `sampler_kernels::logit` functions
//! the GPU uses, so both sides start from the same f32 values.

use half::{bf16, f16};
use sampler_kernels::logit::{widen_bf16, widen_f16};

use crate::error::{Error, Field, Result};

/// Element type of a logits buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogitsDtype {
    F32,
    Bf16,
    F16,
}

/// Borrowed logits data of one of the supported types.
#[derive(Clone, Copy, Debug)]
pub enum LogitsData<'a> {
    F32(&'a [f32]),
    Bf16(&'a [bf16]),
    F16(&'a [f16]),
}

impl LogitsData<'_> {
    pub fn len(&self) -> usize {
        match self {
            LogitsData::F32(d) => d.len(),
            LogitsData::Bf16(d) => d.len(),
            LogitsData::F16(d) => d.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn dtype(&self) -> LogitsDtype {
        match self {
            LogitsData::F32(_) => LogitsDtype::F32,
            LogitsData::Bf16(_) => LogitsDtype::Bf16,
            LogitsData::F16(_) => LogitsDtype::F16,
        }
    }
}

/// A validated `rows × vocab` view; row `i` starts at element `i * row_stride`.
#[derive(Clone, Copy, Debug)]
pub struct HostLogits<'a> {
    data: LogitsData<'a>,
    rows: usize,
    vocab: usize,
    row_stride: usize,
}

/// Elements that `rows` rows of `row_len`, `row_stride` apart, span (the last ends at
/// `(rows − 1) · row_stride + row_len`; 0 for no rows), or `None` when that overflows. Every view
/// of strided rows is checked with it (host and device logits, draft probabilities, device
/// bitmasks): a wrapped product would pass a length test and let a copy or a kernel read past
/// the buffer.
pub(crate) fn strided_span(rows: usize, row_len: usize, row_stride: usize) -> Option<usize> {
    match rows.checked_sub(1) {
        None => Some(0),
        Some(last) => last.checked_mul(row_stride)?.checked_add(row_len),
    }
}

fn bad(reason: String) -> Error {
    Error::InvalidSetting {
        request: None,
        field: Field::Logits,
        reason,
    }
}

impl<'a> HostLogits<'a> {
    /// Checks `vocab > 0`, `vocab < 2^31`, `row_stride >= vocab` and that the data covers
    /// `(rows - 1) * row_stride + vocab` elements.
    pub fn new(data: LogitsData<'a>, rows: usize, vocab: usize, row_stride: usize) -> Result<Self> {
        if vocab == 0 || vocab > i32::MAX as usize {
            return Err(bad(format!("vocab {vocab} is not in 1..2^31")));
        }
        if row_stride < vocab {
            return Err(bad(format!(
                "row stride {row_stride} is smaller than the vocab {vocab}"
            )));
        }
        let need = strided_span(rows, vocab, row_stride)
            .ok_or_else(|| bad(format!("{rows} rows of stride {row_stride} overflow")))?;
        if data.len() < need {
            return Err(bad(format!(
                "{} elements given, {rows} rows × {vocab} need {need}",
                data.len()
            )));
        }
        Ok(Self {
            data,
            rows,
            vocab,
            row_stride,
        })
    }

    /// Dense f32 rows (`row_stride == vocab`).
    pub fn f32(data: &'a [f32], rows: usize, vocab: usize) -> Result<Self> {
        Self::new(LogitsData::F32(data), rows, vocab, vocab)
    }

    /// Dense bf16 rows.
    pub fn bf16(data: &'a [bf16], rows: usize, vocab: usize) -> Result<Self> {
        Self::new(LogitsData::Bf16(data), rows, vocab, vocab)
    }

    /// Dense f16 rows.
    pub fn f16(data: &'a [f16], rows: usize, vocab: usize) -> Result<Self> {
        Self::new(LogitsData::F16(data), rows, vocab, vocab)
    }

    pub fn rows(&self) -> usize {
        self.rows
    }
    pub fn vocab(&self) -> usize {
        self.vocab
    }
    pub fn row_stride(&self) -> usize {
        self.row_stride
    }
    pub fn dtype(&self) -> LogitsDtype {
        self.data.dtype()
    }
    pub fn data(&self) -> LogitsData<'a> {
        self.data
    }

    /// Logit of `token` in `row`, widened to f32; `None` out of range.
    pub fn get(&self, row: usize, token: usize) -> Option<f32> {
        if row >= self.rows || token >= self.vocab {
            return None;
        }
        let i = row * self.row_stride + token;
        match self.data {
            LogitsData::F32(d) => d.get(i).copied(),
            LogitsData::Bf16(d) => d.get(i).map(|v| widen_bf16(v.to_bits())),
            LogitsData::F16(d) => d.get(i).map(|v| widen_f16(v.to_bits())),
        }
    }

    /// Row `row` widened to f32 into `out` (cleared first); empty for an out-of-range row.
    pub fn row_f32(&self, row: usize, out: &mut Vec<f32>) {
        out.clear();
        if row >= self.rows {
            return;
        }
        let start = row * self.row_stride;
        let end = start + self.vocab;
        match self.data {
            LogitsData::F32(d) => out.extend_from_slice(d.get(start..end).unwrap_or(&[])),
            LogitsData::Bf16(d) => out.extend(
                d.get(start..end)
                    .unwrap_or(&[])
                    .iter()
                    .map(|v| widen_bf16(v.to_bits())),
            ),
            LogitsData::F16(d) => out.extend(
                d.get(start..end)
                    .unwrap_or(&[])
                    .iter()
                    .map(|v| widen_f16(v.to_bits())),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::strided_span;

    #[test]
    fn strided_span_ends_at_the_last_row_and_refuses_overflow() {
        assert_eq!(strided_span(0, 5, 7), Some(0));
        assert_eq!(strided_span(1, 5, usize::MAX), Some(5));
        assert_eq!(strided_span(3, 5, 7), Some(19));
        assert_eq!(strided_span(3, 5, usize::MAX / 2 + 1), None);
        assert_eq!(strided_span(2, usize::MAX, usize::MAX), None);
        assert_eq!(strided_span(2, 1, usize::MAX - 1), Some(usize::MAX));
    }
}
