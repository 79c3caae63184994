//! Quiz content: the `quizd-content` package (the file format, its validation, the exchange
//! formats), re-exported so its paths read `crate::content::…` here, and the importer's store
//! that turns compiled files into immutable quiz versions.

pub use quizd_content::*;

pub mod store;
