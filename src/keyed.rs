//! keyed (todo)
