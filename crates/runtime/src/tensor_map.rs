//! Tensor maps for the Tensor Memory Accelerator (TMA, sm_90): the host-side description of a
//! tiled view of a device buffer that `cuTensorMapEncodeTiled` encodes, with **every field
//! checked against the driver's documented rules before the call**, each failure an `Err` that
//! names the field and the rule; and one rule of Cohort's own: the map must not reach past its
//! buffer.
//!
//! | CUDA C++ | Cohort |
//! |---|---|
//! | `cuTensorMapEncodeTiled(&map, dtype, rank, ptr, dims, strides, box, elemStrides, interleave, swizzle, l2, oob)` | `TensorMapSpec::new(dims, box_dims).strides(..).swizzle(..)….check::<T>(buffer_bytes, address)` |
//! | `CU_TENSOR_MAP_SWIZZLE_{NONE,32B,64B,128B}` | [`Swizzle`] |
//! | `CU_TENSOR_MAP_INTERLEAVE_{NONE,16B,32B}` | [`Interleave`] (only `None` is supported yet: the others are refused) |
//! | `CU_TENSOR_MAP_L2_PROMOTION_*` | [`L2Promotion`] |
//! | `CU_TENSOR_MAP_FLOAT_OOB_FILL_{NONE,NAN_REQUEST_ZERO_FMA}` | [`OobFill`] (`Nan` only for floating-point elements) |
//!
//! Dimensions are innermost first, as the driver takes them: for a row-major `rows × cols`
//! matrix, `dims = [cols, rows]` and `strides = [cols * size_of::<T>()]` (bytes; the innermost
//! stride is the element size and is not given).
//!
//! **Maps as kernel parameters.** [`TensorMap<T, RANK>`] (loads) borrows its buffer shared and
//! [`TensorMapMut<T, RANK>`] (stores) exclusively, for as long as the map lives: a map of a freed
//! buffer, or of one something else writes meanwhile, does not compile. Each holds the encoded
//! 128-byte map in a 256-byte device allocation of its own (its header after the map: the box and
//! the number of boxes per dimension, what the device reads), made once by
//! [`new`](TensorMap::new); on the CPU device the 128 bytes are a plain
//! [`TensorMapDesc`](cohort_cpu::TensorMapDesc) the CPU model interprets. Passed to a launch
//! (`&map`, `&mut map_mut`) it is the kernel's `cohort::tma::TensorMap<T, RANK>` /
//! `TensorMapMut<T, RANK>` parameter (another element type or rank does not compile), and the
//! launch's operands are the buffer (read, or written for a store map) and the map's allocation
//! (read: it outlives the launch), exactly as if the buffer were passed itself. The device side
//! and its safety argument are in `cohort::tma`.
//!
//! On top of [`TensorMapSpec::check`] a map refuses what the device side does not support or
//! rely on: a GPU below compute capability 9.0 (where the copies would trap), swizzled store maps,
//! element strides other than 1, dimensions past 2^31 elements (coordinates are signed 32-bit),
//! and for a store map strides that let two boxes overlap (each dimension's stride at least the
//! bytes of the dimensions inside it).
//!
//! **Swizzled loads.** A load map with a [`Swizzle`] records its span in the header; the device
//! loads its boxes only into `cohort::wgmma::Tile`s of the same swizzle type, whose box must be
//! the tile (checked at the call), and a plain shared slice refuses it. The box's inner row
//! (`boxDim[0]` × element size) must not exceed the span (the driver's rule, checked here).

use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

use cohort::tma::{HEADER_OFFSET, MAP_BYTES, TensorElement, TensorMapHeader};

use crate::arg::{ArgContext, KernelArg, UseSink};
use crate::backend::TiledMap;
use crate::device::Gpu;
use crate::error::{Error, Result};
use crate::memory::DeviceBuffer;
use crate::track::{Alloc, Use};

/// The most dimensions a tensor map has.
pub const MAX_RANK: usize = 5;

/// How the copy engine swizzles a tile's 16-byte chunks in shared memory (`CUtensorMapSwizzle`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Swizzle {
    /// Rows land as they are.
    #[default]
    None,
    /// Within each 256 bytes, chunk `c` of row `r` lands at `c ^ (r % 2)`; rows of at most 32 bytes.
    B32,
    /// Within each 512 bytes, rows of at most 64 bytes.
    B64,
    /// Within each 1024 bytes, rows of at most 128 bytes.
    B128,
}

impl Swizzle {
    /// The longest inner box row (bytes) the mode allows; `None` for no swizzle.
    #[must_use]
    pub const fn span(self) -> Option<u64> {
        match self {
            Swizzle::None => None,
            Swizzle::B32 => Some(32),
            Swizzle::B64 => Some(64),
            Swizzle::B128 => Some(128),
        }
    }
}

/// `CUtensorMapInterleave`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Interleave {
    /// Plain layouts.
    #[default]
    None,
    /// 16-byte interleaved (NC/8HWC8-style) layouts.
    B16,
    /// 32-byte interleaved layouts.
    B32,
}

/// `CUtensorMapL2promotion`: how much the copy engine prefetches into L2 around each access.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum L2Promotion {
    /// No promotion.
    #[default]
    None,
    /// 64 bytes.
    B64,
    /// 128 bytes.
    B128,
    /// 256 bytes.
    B256,
}

/// `CUtensorMapFloatOOBfill`: what a load puts in the elements of a box outside the tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum OobFill {
    /// Zeros.
    #[default]
    Zero,
    /// NaN (`NAN_REQUEST_ZERO_FMA`): floating-point elements only.
    Nan,
}

/// A tensor map's fields, before encoding: dimensions, byte strides, box, element strides and
/// the modes. Build with [`new`](Self::new) and the setters, then [`check`](Self::check).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TensorMapSpec<const RANK: usize> {
    /// Elements per dimension, innermost first (`globalDim`).
    pub dims: [u64; RANK],
    /// Bytes between consecutive indices of dimensions 1.. (`globalStrides`; `RANK - 1` used).
    pub strides: [u64; RANK],
    /// The box (tile) a copy moves, elements per dimension (`boxDim`).
    pub box_dims: [u32; RANK],
    /// Take every `n`-th element per dimension (`elementStrides`).
    pub element_strides: [u32; RANK],
    /// `interleave`.
    pub interleave: Interleave,
    /// `swizzle`.
    pub swizzle: Swizzle,
    /// `l2Promotion`.
    pub l2_promotion: L2Promotion,
    /// `oobFill`.
    pub oob_fill: OobFill,
}

/// A field of a tensor map that breaks a rule: which field (and dimension), which rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TensorMapError {
    /// The field, as `cuTensorMapEncodeTiled` names it (`boxDim[1]`, `globalStrides[0]`, …).
    pub field: String,
    /// The rule it breaks, with the value.
    pub rule: String,
}

impl fmt::Display for TensorMapError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "tensor map field `{}`: {}", self.field, self.rule)
    }
}

impl std::error::Error for TensorMapError {}

fn err<T>(field: impl Into<String>, rule: impl Into<String>) -> Result<T, TensorMapError> {
    Err(TensorMapError { field: field.into(), rule: rule.into() })
}

impl<const RANK: usize> TensorMapSpec<RANK> {
    /// A map of a dense tensor of `dims` (innermost first; strides those of the dense layout,
    /// set for the element type by [`check`](Self::check) unless given) moved in boxes of
    /// `box_dims`, element strides 1, no interleave, no swizzle, no L2 promotion, zero fill.
    #[must_use]
    pub fn new(dims: [u64; RANK], box_dims: [u32; RANK]) -> Self {
        Self {
            dims,
            strides: [0; RANK],
            box_dims,
            element_strides: [1; RANK],
            interleave: Interleave::None,
            swizzle: Swizzle::None,
            l2_promotion: L2Promotion::None,
            oob_fill: OobFill::Zero,
        }
    }

    /// Byte strides of dimensions 1.. (`strides[i - 1]` for dimension `i`).
    #[must_use]
    pub fn strides(mut self, strides: &[u64]) -> Self {
        for (i, s) in strides.iter().enumerate().take(RANK.saturating_sub(1)) {
            self.strides[i] = *s;
        }
        self
    }

    /// Element strides per dimension.
    #[must_use]
    pub fn element_strides(mut self, e: [u32; RANK]) -> Self {
        self.element_strides = e;
        self
    }

    /// The interleave mode.
    #[must_use]
    pub fn interleave(mut self, i: Interleave) -> Self {
        self.interleave = i;
        self
    }

    /// The swizzle mode.
    #[must_use]
    pub fn swizzle(mut self, s: Swizzle) -> Self {
        self.swizzle = s;
        self
    }

    /// The L2 promotion.
    #[must_use]
    pub fn l2_promotion(mut self, l: L2Promotion) -> Self {
        self.l2_promotion = l;
        self
    }

    /// The out-of-bounds fill.
    #[must_use]
    pub fn oob_fill(mut self, o: OobFill) -> Self {
        self.oob_fill = o;
        self
    }

    /// The strides in bytes, with the dense ones filled in where none were given.
    fn byte_strides(&self, elem: u64) -> [u64; RANK] {
        let mut s = [0u64; RANK];
        let mut dense = elem;
        for i in 1..RANK {
            dense = dense.saturating_mul(self.dims[i - 1]);
            s[i - 1] = if self.strides[i - 1] == 0 { dense } else { self.strides[i - 1] };
            dense = s[i - 1];
        }
        s
    }

    /// The number of elements of a box (what a tile that receives it must hold).
    #[must_use]
    pub fn box_elements(&self) -> u64 {
        self.box_dims.iter().map(|&b| u64::from(b)).product()
    }

    /// Checks every field for elements of `elem_size` bytes (`float`: a floating-point type)
    /// against `cuTensorMapEncodeTiled`'s rules and against a buffer of `buffer_bytes` bytes at
    /// device address `address`: the first field that breaks a rule is the `Err`.
    ///
    /// # Errors
    /// A [`TensorMapError`] naming the field and the rule.
    pub fn check(&self, elem_size: u64, float: bool, buffer_bytes: u64, address: u64) -> Result<(), TensorMapError> {
        if RANK == 0 || RANK > MAX_RANK {
            return err("tensorRank", format!("must be in 1..={MAX_RANK} (is {RANK})"));
        }
        if !matches!(elem_size, 1 | 2 | 4 | 8) {
            return err(
                "tensorDataType",
                format!("elements of {elem_size} bytes have no tensor map data type (1, 2, 4 or 8)"),
            );
        }
        if self.interleave != Interleave::None {
            if RANK < 3 {
                return err("tensorRank", format!("an interleaved map needs rank 3 or more (is {RANK})"));
            }
            return err("interleave", "interleaved layouts are not supported by Cohort yet (use Interleave::None)");
        }
        if !address.is_multiple_of(16) {
            return err("globalAddress", format!("must be 16-byte aligned (is {address:#x})"));
        }
        for (i, &d) in self.dims.iter().enumerate() {
            if d == 0 || d > 1 << 32 {
                return err(format!("globalDim[{i}]"), format!("must be in 1..=2^32 (is {d})"));
            }
        }
        let strides = self.byte_strides(elem_size);
        for (i, &s) in strides.iter().enumerate().take(RANK - 1) {
            if !s.is_multiple_of(16) {
                return err(format!("globalStrides[{i}]"), format!("must be a multiple of 16 bytes (is {s})"));
            }
            if s >= 1 << 40 {
                return err(format!("globalStrides[{i}]"), format!("must be below 2^40 bytes (is {s})"));
            }
        }
        for (i, &b) in self.box_dims.iter().enumerate() {
            if b == 0 || b > 256 {
                return err(format!("boxDim[{i}]"), format!("must be in 1..=256 (is {b})"));
            }
        }
        let inner = u64::from(self.box_dims[0]) * elem_size;
        if !inner.is_multiple_of(16) {
            return err("boxDim[0]", format!("boxDim[0] × element size must be a multiple of 16 bytes (is {inner})"));
        }
        for (i, &e) in self.element_strides.iter().enumerate() {
            if e == 0 || e > 8 {
                return err(format!("elementStrides[{i}]"), format!("must be in 1..=8 (is {e})"));
            }
        }
        if let Some(span) = self.swizzle.span()
            && inner > span
        {
            return err(
                "swizzle",
                format!(
                    "the inner box row (boxDim[0] × element size = {inner} bytes) must not exceed the swizzle span ({span} bytes)"
                ),
            );
        }
        if self.oob_fill == OobFill::Nan && !float {
            return err("oobFill", "NaN fill needs floating-point elements");
        }
        // Cohort's rule: the last element the map can address lies inside the buffer.
        let mut last = elem_size;
        for i in 0..RANK {
            let step = if i == 0 { elem_size } else { strides[i - 1] };
            last = (self.dims[i] - 1).checked_mul(step).and_then(|o| last.checked_add(o)).unwrap_or(u64::MAX);
        }
        if last > buffer_bytes {
            return err(
                "globalDim",
                format!("the map reaches {last} bytes into its buffer, which has {buffer_bytes}: it would overrun it"),
            );
        }
        Ok(())
    }
}

/// The map's bytes for the device: the encoded map (or the CPU description) and the header.
fn encode<T: TensorElement, const RANK: usize>(
    spec: &TensorMapSpec<RANK>,
    buffer: &DeviceBuffer<T>,
    store: bool,
) -> Result<DeviceBuffer<u8>> {
    let (alloc, ptr) = buffer.alloc_and_ptr();
    let elem = size_of::<T>() as u64;
    let refuse =
        |e: TensorMapError| Error::Argument(format!("{}: {e}", if store { "TensorMapMut" } else { "TensorMap" }));
    spec.check(elem, T::FLOAT, buffer.num_bytes() as u64, ptr).map_err(refuse)?;
    let rule = |field: String, rule: String| refuse(TensorMapError { field, rule });
    if spec.swizzle != Swizzle::None && store {
        return Err(rule(
            "swizzle".into(),
            "a store map's box is read from a plain tile: swizzled store maps are not supported by Cohort yet".into(),
        ));
    }
    for (i, &e) in spec.element_strides.iter().enumerate() {
        if e != 1 {
            return Err(rule(
                format!("elementStrides[{i}]"),
                format!("element strides other than 1 are not supported by Cohort yet (is {e})"),
            ));
        }
    }
    for (i, &d) in spec.dims.iter().enumerate() {
        if d > 1 << 31 {
            return Err(rule(
                format!("globalDim[{i}]"),
                format!("must be at most 2^31 (TMA coordinates are signed 32-bit; is {d})"),
            ));
        }
    }
    let strides = spec.byte_strides(elem);
    if store {
        // Nested, non-overlapping dimensions: then distinct elements are distinct bytes, and
        // the boxes of different blocks (disjoint index ranges) never share one.
        let mut extent = elem * spec.dims[0];
        for i in 1..RANK {
            let s = strides[i - 1];
            if s < extent {
                return Err(rule(
                    format!("globalStrides[{}]", i - 1),
                    format!(
                        "a store map's dimension {i} must not overlap the ones inside it: its stride ({s} bytes) is \
                         below their {extent} bytes, so two blocks' boxes could write the same element"
                    ),
                ));
            }
            extent = s * spec.dims[i];
        }
    }
    let swizzle = spec.swizzle.span().unwrap_or(0) as u32;
    let mut header =
        TensorMapHeader { box_dims: [1; cohort::tma::MAX_RANK], boxes: [1; cohort::tma::MAX_RANK], swizzle };
    for d in 0..RANK {
        header.box_dims[d] = spec.box_dims[d];
        header.boxes[d] = spec.dims[d].div_ceil(u64::from(spec.box_dims[d])) as u32;
    }
    let gpu = Gpu::with_inner(alloc.gpu.clone())?;
    // The device side traps below sm_90 (no tensor copies there): refuse the map instead.
    let (major, minor) = gpu.info().compute_capability;
    if !alloc.gpu.backend.has_tma(major * 10 + minor) {
        return Err(Error::Argument(format!(
            "{}: tensor maps need a GPU of compute capability 9.0 or later (TMA); this one is {major}.{minor}",
            if store { "TensorMapMut" } else { "TensorMap" }
        )));
    }
    let mut map = TiledMap {
        base: ptr,
        rank: RANK as u32,
        elem_bytes: elem,
        data_type: T::DATA_TYPE,
        dims: [1; 5],
        strides: [0; 5],
        box_dims: [1; 5],
        element_strides: [1; 5],
        l2_promotion: match spec.l2_promotion {
            L2Promotion::None => 0,
            L2Promotion::B64 => 64,
            L2Promotion::B128 => 128,
            L2Promotion::B256 => 256,
        },
        oob_nan: spec.oob_fill == OobFill::Nan,
        swizzle,
    };
    map.dims[..RANK].copy_from_slice(&spec.dims);
    map.strides[..RANK].copy_from_slice(&strides);
    map.box_dims[..RANK].copy_from_slice(&spec.box_dims);
    map.element_strides[..RANK].copy_from_slice(&spec.element_strides);
    let mut bytes = [0u8; MAP_BYTES];
    let encoded = alloc.gpu.backend.encode_tiled_map(&map).map_err(|fault| match fault {
        crate::backend::Fault::Driver(code) => {
            Error::Argument(format!("cuTensorMapEncodeTiled refused a map that passed Cohort's checks: {:?}", code.0))
        }
        fault => fault.into_error("encoding a tensor map".into()),
    })?;
    bytes[..128].copy_from_slice(&encoded);
    // SAFETY: `TensorMapHeader` is 44 bytes of `u32`s.
    let head: [u8; size_of::<TensorMapHeader>()] = unsafe { std::mem::transmute(header) };
    bytes[HEADER_OFFSET..HEADER_OFFSET + head.len()].copy_from_slice(&head);
    DeviceBuffer::from_slice(&gpu, &bytes)
}

/// A tensor map for loads (`cohort::tma::TensorMap<T, RANK>` kernel parameters, passed as
/// `&map`): borrows its buffer shared while it lives.
pub struct TensorMap<'a, T: TensorElement, const RANK: usize> {
    data: &'a Arc<Alloc>,
    map: DeviceBuffer<u8>,
    range: std::ops::Range<usize>,
    spec: TensorMapSpec<RANK>,
    _t: PhantomData<&'a [T]>,
}

/// A tensor map for stores (`cohort::tma::TensorMapMut<T, RANK>` kernel parameters, passed as
/// `&mut map`): borrows its buffer exclusively while it lives.
pub struct TensorMapMut<'a, T: TensorElement, const RANK: usize> {
    data: &'a Arc<Alloc>,
    map: DeviceBuffer<u8>,
    range: std::ops::Range<usize>,
    spec: TensorMapSpec<RANK>,
    _t: PhantomData<&'a mut [T]>,
}

impl<'a, T: TensorElement, const RANK: usize> TensorMap<'a, T, RANK> {
    /// Encodes `spec` over `buffer` (its element 0 is the tensor's).
    ///
    /// # Errors
    /// [`Error::Argument`] naming the field and the rule it breaks (`cuTensorMapEncodeTiled`'s,
    /// the buffer's bounds, or what Cohort does not support: see the module docs); a failed
    /// allocation or copy of the map.
    pub fn new(buffer: &'a DeviceBuffer<T>, spec: TensorMapSpec<RANK>) -> Result<Self> {
        let map = encode(&spec, buffer, false)?;
        Ok(Self { data: buffer.alloc_and_ptr().0, map, range: range_of(buffer), spec, _t: PhantomData })
    }
    /// The map's fields.
    #[must_use]
    pub fn spec(&self) -> &TensorMapSpec<RANK> {
        &self.spec
    }
}

impl<'a, T: TensorElement, const RANK: usize> TensorMapMut<'a, T, RANK> {
    /// Encodes `spec` over `buffer` for stores.
    ///
    /// # Errors
    /// As [`TensorMap::new`], and strides that let boxes overlap.
    pub fn new(buffer: &'a mut DeviceBuffer<T>, spec: TensorMapSpec<RANK>) -> Result<Self> {
        let map = encode(&spec, buffer, true)?;
        let range = range_of(buffer);
        Ok(Self { data: buffer.alloc_and_ptr().0, map, range, spec, _t: PhantomData })
    }
    /// The map's fields.
    #[must_use]
    pub fn spec(&self) -> &TensorMapSpec<RANK> {
        &self.spec
    }
}

impl<T: TensorElement, const RANK: usize> fmt::Debug for TensorMap<'_, T, RANK> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TensorMap<{}, {RANK}>({:?})", std::any::type_name::<T>(), self.spec)
    }
}

impl<T: TensorElement, const RANK: usize> fmt::Debug for TensorMapMut<'_, T, RANK> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TensorMapMut<{}, {RANK}>({:?})", std::any::type_name::<T>(), self.spec)
    }
}

/// The bytes of `buffer` in its allocation (the tensor lies inside them, checked).
fn range_of<T: TensorElement>(buffer: &DeviceBuffer<T>) -> std::ops::Range<usize> {
    let (alloc, ptr) = buffer.alloc_and_ptr();
    let start = (ptr - alloc.ptr) as usize;
    start..start + buffer.num_bytes()
}

// SAFETY: the part is the map allocation this value owns (alive while the borrow of `self`
// lasts), encoded for `T` and `RANK` over a buffer this value borrows shared; the uses name the
// buffer (read) and the map (read).
unsafe impl<'p, T: TensorElement, const RANK: usize> KernelArg<cohort::tma::TensorMap<'p, T, RANK>>
    for &TensorMap<'_, T, RANK>
{
    type Parts = (u64,);
    #[inline(always)]
    fn parts(&self, _: &ArgContext<'_>) -> Result<(u64,)> {
        Ok((self.map.alloc_and_ptr().1,))
    }
    #[inline(always)]
    fn uses<'s>(&'s self, _: &ArgContext<'_>, out: &mut impl UseSink<'s>) {
        out.push(Use::new(self.data, self.range.clone(), false));
        out.push(Use::new(self.map.alloc_and_ptr().0, 0..MAP_BYTES, false));
    }
}

// SAFETY: as for `TensorMap`, the buffer borrowed exclusively and named as written.
unsafe impl<'p, T: TensorElement, const RANK: usize> KernelArg<cohort::tma::TensorMapMut<'p, T, RANK>>
    for &mut TensorMapMut<'_, T, RANK>
{
    type Parts = (u64,);
    #[inline(always)]
    fn parts(&self, _: &ArgContext<'_>) -> Result<(u64,)> {
        Ok((self.map.alloc_and_ptr().1,))
    }
    #[inline(always)]
    fn uses<'s>(&'s self, _: &ArgContext<'_>, out: &mut impl UseSink<'s>) {
        out.push(Use::new(self.data, self.range.clone(), true));
        out.push(Use::new(self.map.alloc_and_ptr().0, 0..MAP_BYTES, false));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A valid 2-D map of a 100 × 64 `f32` matrix in 32 × 32 boxes; each test breaks one rule.
    fn ok2() -> TensorMapSpec<2> {
        TensorMapSpec::new([64, 100], [32, 32])
    }
    const BYTES: u64 = 100 * 64 * 4;

    fn field(r: Result<(), TensorMapError>) -> String {
        r.expect_err("should be refused").field
    }

    #[test]
    fn tensor_map_valid_maps_pass() {
        assert_eq!(ok2().check(4, true, BYTES, 0x1000), Ok(()));
        let m5 = TensorMapSpec::new([16, 3, 4, 5, 6], [16, 1, 2, 5, 3]);
        assert_eq!(m5.check(1, false, 16 * 3 * 4 * 5 * 6, 0), Ok(()));
        assert_eq!(TensorMapSpec::new([1000], [256]).check(4, true, 4000, 256), Ok(()));
        assert_eq!(ok2().swizzle(Swizzle::B128).check(4, true, BYTES, 0), Ok(()));
        assert_eq!(TensorMapSpec::new([64, 100], [16, 8]).swizzle(Swizzle::B64).check(4, true, BYTES, 0), Ok(()));
    }

    #[test]
    fn tensor_map_rank_zero() {
        assert_eq!(field(TensorMapSpec::<0>::new([], []).check(4, true, 16, 0)), "tensorRank");
    }

    #[test]
    fn tensor_map_rank_six() {
        assert_eq!(field(TensorMapSpec::<6>::new([1; 6], [16, 1, 1, 1, 1, 1]).check(1, false, 16, 0)), "tensorRank");
    }

    #[test]
    fn tensor_map_element_size() {
        assert_eq!(field(ok2().check(3, false, BYTES, 0)), "tensorDataType");
    }

    #[test]
    fn tensor_map_interleave_needs_rank_3() {
        assert_eq!(field(ok2().interleave(Interleave::B16).check(4, true, BYTES, 0)), "tensorRank");
    }

    #[test]
    fn tensor_map_interleave_unsupported() {
        let m = TensorMapSpec::new([8, 8, 8], [8, 8, 8]).interleave(Interleave::B32);
        assert_eq!(field(m.check(4, true, 8 * 8 * 8 * 4, 0)), "interleave");
    }

    #[test]
    fn tensor_map_address_alignment() {
        assert_eq!(field(ok2().check(4, true, BYTES, 0x1008)), "globalAddress");
    }

    #[test]
    fn tensor_map_dim_zero() {
        assert_eq!(field(TensorMapSpec::new([64, 0], [32, 32]).check(4, true, BYTES, 0)), "globalDim[1]");
    }

    #[test]
    fn tensor_map_dim_too_large() {
        assert_eq!(field(TensorMapSpec::new([(1 << 32) + 1], [16]).check(1, false, u64::MAX, 0)), "globalDim[0]");
    }

    #[test]
    fn tensor_map_stride_multiple_of_16() {
        // 7 f32 per row: a dense stride of 28 bytes.
        assert_eq!(field(TensorMapSpec::new([7, 4], [4, 4]).check(4, true, 112, 0)), "globalStrides[0]");
        assert_eq!(field(ok2().strides(&[260]).check(4, true, BYTES * 2, 0)), "globalStrides[0]");
    }

    #[test]
    fn tensor_map_stride_below_2_pow_40() {
        assert_eq!(field(ok2().strides(&[1 << 40]).check(4, true, u64::MAX, 0)), "globalStrides[0]");
    }

    #[test]
    fn tensor_map_box_zero() {
        assert_eq!(field(TensorMapSpec::new([64, 100], [32, 0]).check(4, true, BYTES, 0)), "boxDim[1]");
    }

    #[test]
    fn tensor_map_box_over_256() {
        assert_eq!(field(TensorMapSpec::new([64, 1000], [32, 257]).check(4, true, 64 * 1000 * 4, 0)), "boxDim[1]");
    }

    #[test]
    fn tensor_map_inner_box_multiple_of_16_bytes() {
        assert_eq!(field(TensorMapSpec::new([64, 100], [3, 32]).check(4, true, BYTES, 0)), "boxDim[0]");
    }

    #[test]
    fn tensor_map_element_strides_range() {
        assert_eq!(field(ok2().element_strides([1, 0]).check(4, true, BYTES, 0)), "elementStrides[1]");
        assert_eq!(field(ok2().element_strides([9, 1]).check(4, true, BYTES, 0)), "elementStrides[0]");
    }

    #[test]
    fn tensor_map_swizzle_span() {
        // 32 f32 = 128 bytes per box row: over the 64-byte span.
        assert_eq!(field(ok2().swizzle(Swizzle::B64).check(4, true, BYTES, 0)), "swizzle");
        assert_eq!(field(ok2().swizzle(Swizzle::B32).check(4, true, BYTES, 0)), "swizzle");
        assert_eq!(ok2().swizzle(Swizzle::B128).check(4, true, BYTES, 0), Ok(()));
    }

    #[test]
    fn tensor_map_nan_fill_needs_floats() {
        assert_eq!(field(ok2().oob_fill(OobFill::Nan).check(4, false, BYTES, 0)), "oobFill");
        assert_eq!(ok2().oob_fill(OobFill::Nan).check(4, true, BYTES, 0), Ok(()));
    }

    #[test]
    fn tensor_map_overruns_its_buffer() {
        assert_eq!(field(ok2().check(4, true, BYTES - 4, 0)), "globalDim");
        // A stride larger than the dense one reaches further.
        assert_eq!(field(ok2().strides(&[512]).check(4, true, BYTES, 0)), "globalDim");
        assert_eq!(ok2().strides(&[512]).check(4, true, 99 * 512 + 256, 0), Ok(()));
    }
}
