//! Composite limits (`nanolimit::composite`), one module:
//!
//! | module | what a user relies on |
//! |---|---|
//! | `composite` | a composite of keyed, direct and striped members decides as a sequential model of its members (every decision, remaining and binding member); a denial or an error changes no member; threads on a frozen clock never over-admit, and window refunds are exact |
//!
//! The module's proptest regressions are in `tests/proptest-regressions/composite.txt`, where
//! proptest looks for them for a module of a binary whose root is a `main.rs`.

mod composite;
