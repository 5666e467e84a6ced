//! The element types NCCL reduces ([`NcclType`]) and its reduction operators ([`ReduceOp`]).

use std::ffi::c_int;

use cohort::DeviceCopy;

mod sealed {
    pub trait Sealed {}
}

/// An element type NCCL reduces: `i8`, `u8`, `i32`, `u32`, `i64`, `u64`, `f32`, `f64`.
pub trait NcclType: DeviceCopy + sealed::Sealed {
    /// The `ncclDataType_t`.
    #[doc(hidden)]
    const DTYPE: c_int;
}

macro_rules! nccl_type {
    ($($t:ty = $d:literal),*) => {$(
        impl sealed::Sealed for $t {}
        impl NcclType for $t {
            const DTYPE: c_int = $d;
        }
    )*};
}
nccl_type!(i8 = 0, u8 = 1, i32 = 2, u32 = 3, i64 = 4, u64 = 5, f32 = 7, f64 = 8);

/// A reduction operator (`ncclRedOp_t`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReduceOp {
    /// `ncclSum`.
    Sum,
    /// `ncclProd`.
    Prod,
    /// `ncclMax`.
    Max,
    /// `ncclMin`.
    Min,
    /// `ncclAvg`: the sum divided by the number of ranks (for integers, NCCL's integer
    /// division).
    Avg,
}

impl ReduceOp {
    /// The operator NCCL is given for a communicator of `ranks` ranks: the average over one
    /// rank is its sum, and NCCL 2.28.3's `ncclAvg` on a one-rank communicator left the
    /// elements past the last multiple of 32 (f32) or 16 (f64) unwritten (measured on an H200,
    /// 100 003 and 65 537 elements), so one rank reduces with `ncclSum`.
    pub(super) fn for_ranks(self, ranks: usize) -> c_int {
        match self {
            ReduceOp::Avg if ranks == 1 => ReduceOp::Sum.raw(),
            op => op.raw(),
        }
    }

    pub(super) fn raw(self) -> c_int {
        match self {
            ReduceOp::Sum => 0,
            ReduceOp::Prod => 1,
            ReduceOp::Max => 2,
            ReduceOp::Min => 3,
            ReduceOp::Avg => 4,
        }
    }
}
