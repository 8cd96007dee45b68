//! Placeholder: filled in by the semantics/reference work (issue 3).
