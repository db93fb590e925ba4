//! Helpers for the keyed-table tests, generic over the key mode.
