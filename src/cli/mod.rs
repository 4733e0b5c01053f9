//! The subcommands of the `stackmask` binary.

pub mod bench;
pub mod check;
pub mod compile;
pub mod load;
pub mod maskbench;
pub mod noise;
pub mod sample;
pub mod stats;
pub mod stdout;
