//! Logits arrays read from disk (`.npy`, `.safetensors`): what the `sonic-sample` demo samples
//! and what the benchmark's real-model option (`sonic-bench --logits`) replays.
//!
//! An array is one row of `vocab` values or `rows × vocab`, row-major, of f32, bf16 or f16
//! (`.npy` has no bf16). Values are kept in the file's type; [`LogitsFile::host`] lends them to
//! a backend and [`LogitsFile::row_f32`] widens one row exactly.

use half::{bf16, f16};

use crate::error::{Error, Result};
use crate::logits::{HostLogits, LogitsData};

/// The values of a logits array, in the file's element type.
#[derive(Clone, Debug, PartialEq)]
pub enum OwnedLogits {
    F32(Vec<f32>),
    Bf16(Vec<bf16>),
    F16(Vec<f16>),
}

/// A logits array read from disk.
#[derive(Clone, Debug, PartialEq)]
pub struct LogitsFile {
    pub data: OwnedLogits,
    pub rows: usize,
    pub vocab: usize,
}

impl LogitsFile {
    /// Reads `path` (`.npy` or `.safetensors`; `tensor` picks one of several safetensors).
    pub fn read(path: &str, tensor: Option<&str>) -> Result<Self> {
        let fail = |detail: String| Error::Input { path: path.to_string(), detail };
        let bytes = std::fs::read(path).map_err(|e| fail(e.to_string()))?;
        if path.ends_with(".npy") {
            Self::from_npy(&bytes).map_err(fail)
        } else if path.ends_with(".safetensors") {
            Self::from_safetensors(&bytes, tensor).map_err(fail)
        } else {
            Err(fail("expected a .npy or .safetensors file".to_string()))
        }
    }

    /// Parses a C-order `.npy` array of f32 or f16.
    pub fn from_npy(bytes: &[u8]) -> std::result::Result<Self, String> {
        let io = |e: std::io::Error| format!("npy: {e}");
        npy_shape_fits(bytes)?;
        let npy = npyz::NpyFile::new(bytes).map_err(io)?;
        if npy.order() != npyz::Order::C {
            return Err("npy: Fortran-order arrays are not supported".to_string());
        }
        let shape: Vec<usize> = npy.shape().iter().map(|&d| d as usize).collect();
        let (rows, vocab) = shape_2d(&shape)?;
        // npyz reads exactly the shape's product; checked again so that `row_f32` may trust it.
        let count = rows.checked_mul(vocab).ok_or_else(|| format!("npy: shape {shape:?} overflows"))?;
        let data = match npy.try_data::<f32>() {
            Ok(r) => OwnedLogits::F32(r.collect::<std::result::Result<_, _>>().map_err(io)?),
            Err(npy) => match npy.try_data::<f16>() {
                Ok(r) => OwnedLogits::F16(r.collect::<std::result::Result<_, _>>().map_err(io)?),
                Err(npy) => return Err(format!("npy: dtype {:?} is not f32 or f16", npy.dtype())),
            },
        };
        let file = Self { data, rows, vocab };
        if file.len() != count {
            return Err(format!("npy: {} values read for shape {shape:?}", file.len()));
        }
        Ok(file)
    }

    /// Values held, whatever the shape says.
    fn len(&self) -> usize {
        match &self.data {
            OwnedLogits::F32(d) => d.len(),
            OwnedLogits::Bf16(d) => d.len(),
            OwnedLogits::F16(d) => d.len(),
        }
    }

    /// Parses a `.safetensors` file holding one F32, BF16 or F16 tensor (or `name` of several).
    pub fn from_safetensors(bytes: &[u8], name: Option<&str>) -> std::result::Result<Self, String> {
        use safetensors::{Dtype, SafeTensors};
        let st = SafeTensors::deserialize(bytes).map_err(|e| format!("safetensors: {e}"))?;
        let name = match name {
            Some(n) => n.to_string(),
            None => match st.names().as_slice() {
                [one] => one.to_string(),
                names => return Err(format!("safetensors: pick one tensor with --tensor, from {names:?}")),
            },
        };
        let t = st.tensor(&name).map_err(|e| format!("safetensors: {e}"))?;
        let (rows, vocab) = shape_2d(t.shape())?;
        let b = t.data();
        let data = match t.dtype() {
            Dtype::F32 => OwnedLogits::F32(b.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()),
            Dtype::BF16 => OwnedLogits::Bf16(b.chunks_exact(2).map(|c| bf16::from_bits(u16::from_le_bytes([c[0], c[1]]))).collect()),
            Dtype::F16 => OwnedLogits::F16(b.chunks_exact(2).map(|c| f16::from_bits(u16::from_le_bytes([c[0], c[1]]))).collect()),
            d => return Err(format!("safetensors: dtype {d:?} is not F32, BF16 or F16")),
        };
        Ok(Self { data, rows, vocab })
    }

    /// The array as backend input (rows packed, stride = vocab).
    pub fn host(&self) -> Result<HostLogits<'_>> {
        let data = match &self.data {
            OwnedLogits::F32(d) => LogitsData::F32(d),
            OwnedLogits::Bf16(d) => LogitsData::Bf16(d),
            OwnedLogits::F16(d) => LogitsData::F16(d),
        };
        HostLogits::new(data, self.rows, self.vocab, self.vocab)
    }

    /// Row `row` (taken modulo `rows`) widened exactly to f32, into `out`; empty when `rows`
    /// is 0 or the fields (public, so a caller may set them) name a row the data lacks.
    pub fn row_f32(&self, row: usize, out: &mut Vec<f32>) {
        out.clear();
        let Some(r) = row.checked_rem(self.rows) else {
            return;
        };
        let start = r.saturating_mul(self.vocab);
        let range = start..start.saturating_add(self.vocab);
        match &self.data {
            OwnedLogits::F32(d) => out.extend_from_slice(d.get(range).unwrap_or(&[])),
            OwnedLogits::Bf16(d) => out.extend(d.get(range).unwrap_or(&[]).iter().map(|v| v.to_f32())),
            OwnedLogits::F16(d) => out.extend(d.get(range).unwrap_or(&[]).iter().map(|v| v.to_f32())),
        }
    }
}

/// Refuses an `.npy` file whose header's shape promises more values than the file holds, before
/// npyz reads it: npyz multiplies the dimensions unchecked (a debug build panics where the
/// product overflows, a release build wraps it). The shape is taken from the header's text: the
/// one `'shape'` (or `"shape"`) key, a tuple of integers after it. numpy writes exactly that; a
/// header with no such key, or two (a structured dtype's field may be named so), is refused.
fn npy_shape_fits(bytes: &[u8]) -> std::result::Result<(), String> {
    let bad = |what: &str| Err(format!("npy: {what}"));
    if bytes.get(..6) != Some(b"\x93NUMPY".as_slice()) {
        return bad("no .npy magic string");
    }
    // Version 1 stores the header's length in 2 bytes, versions 2 and 3 in 4.
    let (len_bytes, start) = match bytes.get(6) {
        Some(1) => (2, 10),
        Some(2 | 3) => (4, 12),
        _ => return bad("unknown format version"),
    };
    let mut len = 0usize;
    for (i, &b) in bytes.get(8..8 + len_bytes).unwrap_or(&[]).iter().enumerate() {
        len |= (b as usize) << (8 * i);
    }
    let Some(header) = bytes.get(start..).and_then(|rest| rest.get(..len)) else {
        return bad("the header is cut short");
    };
    let text = String::from_utf8_lossy(header);
    // npyz parses the header as a Python literal with backtracking: a few hundred nested
    // brackets took it minutes (fuzzing found that). An array of f32 or f16 has a flat dict whose
    // only bracket is the shape's.
    let opening = text.chars().filter(|c| matches!(c, '{' | '[' | '(')).count();
    if opening > 2 {
        return bad("the header is not a flat dict with a shape tuple (an array of f32 or f16 has one)");
    }
    let keys: Vec<usize> = ["'shape'", "\"shape\""]
        .iter()
        .flat_map(|k| text.match_indices(k).map(|(at, _)| at + k.len()))
        .collect();
    let [after] = keys.as_slice() else {
        return bad("the header has no single 'shape' key");
    };
    let rest = text[*after..].trim_start();
    let Some(tuple) = rest.strip_prefix(':').map(str::trim_start).and_then(|r| r.strip_prefix('(')) else {
        return bad("the header's shape is not a tuple");
    };
    let Some(end) = tuple.find(')') else {
        return bad("the header's shape is not a tuple");
    };
    // npyz also multiplies runs of dimensions for its strides, from either end: none of those
    // products overflows when the product of the nonzero dimensions does not.
    let (mut nonzero, mut empty) = (1u64, false);
    for dim in tuple[..end].split(',').map(str::trim).filter(|d| !d.is_empty()) {
        let Ok(d) = dim.parse::<u64>() else {
            return bad("the header's shape is not a tuple of integers");
        };
        empty |= d == 0;
        nonzero = match nonzero.checked_mul(d.max(1)) {
            Some(c) => c,
            None => return bad("the header's shape overflows"),
        };
    }
    let count = if empty { 0 } else { nonzero };
    // f16, the narrowest accepted type, takes 2 bytes a value.
    let data_bytes = (bytes.len() - start - len) as u64;
    if count.saturating_mul(2) > data_bytes {
        return Err(format!("npy: the header's shape holds {count} values, the file only {data_bytes} bytes of data"));
    }
    Ok(())
}

fn shape_2d(shape: &[usize]) -> std::result::Result<(usize, usize), String> {
    match shape {
        [v] => Ok((1, *v)),
        [r, v] => Ok((*r, *v)),
        _ => Err(format!("expected a 1-D or 2-D array, got shape {shape:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A minimal version-1.0 `.npy` file of little-endian f32.
    fn npy_f32(shape: &[usize], values: &[f32]) -> Vec<u8> {
        let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
        let shape = if dims.len() == 1 { format!("({},)", dims[0]) } else { format!("({})", dims.join(", ")) };
        npy_with_header(&format!("{{'descr': '<f4', 'fortran_order': False, 'shape': {shape}, }}"), values)
    }

    /// A version-1.0 `.npy` file with `header` as its dict, padded as numpy pads it.
    fn npy_with_header(header: &str, values: &[f32]) -> Vec<u8> {
        let mut header = header.to_string();
        while !(10 + header.len() + 1).is_multiple_of(64) {
            header.push(' ');
        }
        header.push('\n');
        let mut out = b"\x93NUMPY\x01\x00".to_vec();
        out.extend_from_slice(&(header.len() as u16).to_le_bytes());
        out.extend_from_slice(header.as_bytes());
        for v in values {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out
    }

    #[test]
    fn npy_rows_read_back_and_wrap() {
        let values: Vec<f32> = (0..3 * 5).map(|i| i as f32 * 0.5 - 3.0).collect();
        let file = LogitsFile::from_npy(&npy_f32(&[3, 5], &values)).expect("npy");
        assert_eq!((file.rows, file.vocab), (3, 5));
        let mut row = Vec::new();
        file.row_f32(4, &mut row); // row 4 of 3 is row 1
        assert_eq!(row, values[5..10].to_vec());
        let one = LogitsFile::from_npy(&npy_f32(&[5], &values[..5])).expect("1-D npy");
        assert_eq!((one.rows, one.vocab), (1, 5));
        assert!(LogitsFile::from_npy(&npy_f32(&[1, 1, 5], &values[..5])).is_err());
        assert!(LogitsFile::from_npy(b"not an npy file").is_err());
    }

    #[test]
    fn npy_shapes_the_file_cannot_hold_are_errors_not_panics() {
        let values = [0.5f32; 4];
        let dict = |shape: &str| format!("{{'descr': '<f4', 'fortran_order': False, 'shape': {shape}, }}");
        // Products that overflow u64 (npyz's unchecked product panicked in debug builds; in
        // release it wrapped to 0 and `row_f32` indexed past the data), or that need more data.
        for shape in ["(4294967296, 4294967296)", "(18446744073709551615, 2)", "(0, 4294967296, 4294967296)", "(1048576, 1048576)", "(3, 5)"] {
            let e = LogitsFile::from_npy(&npy_with_header(&dict(shape), &values)).expect_err(shape);
            assert!(e.starts_with("npy: "), "{shape}: {e}");
        }
        // Headers whose shape cannot be read for sure.
        for header in [
            "{'descr': '<f4', 'fortran_order': False, }".to_string(),
            "{'descr': [('shape', '<f4')], 'fortran_order': False, 'shape': (2,), }".to_string(),
            dict("[2, 2]"),
            dict("(2, x)"),
            format!("{}{}", "{".repeat(300), dict("(2,)")),
            "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': [(((1)))], }".to_string(),
        ] {
            assert!(LogitsFile::from_npy(&npy_with_header(&header, &values)).is_err(), "{header}");
        }
        // The same shapes as numpy writes them still read, double quotes and a 1-tuple included.
        let ok = LogitsFile::from_npy(&npy_with_header("{\"descr\": '<f4', 'fortran_order': False, \"shape\": (2, 2), }", &values))
            .expect("double-quoted keys");
        assert_eq!((ok.rows, ok.vocab), (2, 2));
        let ok = LogitsFile::from_npy(&npy_with_header(&dict("(4,)"), &values)).expect("a 1-tuple");
        assert_eq!((ok.rows, ok.vocab), (1, 4));
        // A cut header.
        let full = npy_f32(&[2, 2], &values);
        for cut in [3, 7, 9, 20] {
            assert!(LogitsFile::from_npy(&full[..cut]).is_err(), "cut at {cut}");
        }
    }

    #[test]
    fn row_f32_of_fields_that_disagree_with_the_data_is_empty() {
        let mut row = vec![1.0];
        let file = LogitsFile { data: OwnedLogits::F32(vec![0.25; 6]), rows: 4, vocab: 3 };
        file.row_f32(1, &mut row);
        assert_eq!(row, vec![0.25; 3]);
        file.row_f32(3, &mut row);
        assert!(row.is_empty(), "row 3 of a 2-row array");
        let wide = LogitsFile { data: OwnedLogits::Bf16(vec![]), rows: usize::MAX, vocab: usize::MAX };
        wide.row_f32(usize::MAX - 1, &mut row);
        assert!(row.is_empty());
        let none = LogitsFile { data: OwnedLogits::F16(vec![]), rows: 0, vocab: 5 };
        none.row_f32(0, &mut row);
        assert!(row.is_empty());
    }
}
