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
        let npy = npyz::NpyFile::new(bytes).map_err(io)?;
        if npy.order() != npyz::Order::C {
            return Err("npy: Fortran-order arrays are not supported".to_string());
        }
        let shape: Vec<usize> = npy.shape().iter().map(|&d| d as usize).collect();
        let (rows, vocab) = shape_2d(&shape)?;
        let data = match npy.try_data::<f32>() {
            Ok(r) => OwnedLogits::F32(r.collect::<std::result::Result<_, _>>().map_err(io)?),
            Err(npy) => match npy.try_data::<f16>() {
                Ok(r) => OwnedLogits::F16(r.collect::<std::result::Result<_, _>>().map_err(io)?),
                Err(npy) => return Err(format!("npy: dtype {:?} is not f32 or f16", npy.dtype())),
            },
        };
        Ok(Self { data, rows, vocab })
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

    /// Row `row` (taken modulo `rows`) widened exactly to f32, into `out`.
    pub fn row_f32(&self, row: usize, out: &mut Vec<f32>) {
        out.clear();
        if self.rows == 0 {
            return;
        }
        let range = (row % self.rows) * self.vocab..(row % self.rows + 1) * self.vocab;
        match &self.data {
            OwnedLogits::F32(d) => out.extend_from_slice(&d[range]),
            OwnedLogits::Bf16(d) => out.extend(d[range].iter().map(|v| v.to_f32())),
            OwnedLogits::F16(d) => out.extend(d[range].iter().map(|v| v.to_f32())),
        }
    }
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
        let mut header = format!("{{'descr': '<f4', 'fortran_order': False, 'shape': {shape}, }}");
        while (10 + header.len() + 1) % 64 != 0 {
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
}
