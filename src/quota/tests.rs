//! White-box tests of the quotas: properties that need the packed state layouts, which are
//! internal to the crate.
