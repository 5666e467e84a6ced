//! The parts of the `cohort` application that its GPU tests share: the text corpus for the
//! histogram workloads and CPU references.

pub mod corpus;
pub mod reference;
