//! The Tensor Memory Accelerator's tiled copies (`cp.async.bulk.tensor`, sm_90) as the CPU
//! device runs them: a box of a tensor described by a [`TensorMapDesc`] (what the runtime writes
//! where a GPU has its 128-byte `CUtensorMap`), moved element by element between global memory
//! (host memory here) and a dense tile in shared memory.
//!
//! The GPU's rules, kept: the box starts at signed 32-bit coordinates (element indices, innermost
//! dimension first) and may lie partly or wholly outside the tensor; a load fills the elements
//! outside with zeros (or NaN, `oob_nan`), a store skips them. The tile is dense, dimension 0
//! fastest — then swizzled when the map says so (`swizzle`: 32, 64 or 128 bytes): the byte at
//! dense offset `o` of the tile lands at `o ^ (((o >> 7) & m) << 4)` (`m` = 1, 3, 7), the
//! 16-byte chunk bits XORed with the row bits, as the copy engine does for a tile whose address
//! is a multiple of the pattern's period (`cohort` requires 1024 bytes). The caller
//! (`cohort::raw`) completes the barrier's transaction count with the whole box's bytes, as the
//! hardware does (out-of-bounds elements count).

/// The most dimensions a tensor map has.
pub const TMA_MAX_RANK: usize = 5;

/// What `TensorMapDesc::magic` holds in a description the runtime wrote.
pub const TMA_DESC_MAGIC: u32 = 0x7e45_0a9c;

/// A tensor map as the CPU device reads it: 128 bytes, in the place of the GPU's opaque map.
#[repr(C, align(64))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TensorMapDesc {
    /// Address of element 0 (host memory on the CPU device).
    pub base: u64,
    /// Elements per dimension, innermost first (`rank` used).
    pub dims: [u64; TMA_MAX_RANK],
    /// Bytes between consecutive indices of each dimension (`strides[0]` is the element size).
    pub strides: [u64; TMA_MAX_RANK],
    /// The box, elements per dimension.
    pub box_dims: [u32; TMA_MAX_RANK],
    /// Dimensions used.
    pub rank: u32,
    /// Bytes per element.
    pub elem: u32,
    /// Out-of-bounds elements of a load are NaN (else zero).
    pub oob_nan: u32,
    /// [`TMA_DESC_MAGIC`].
    pub magic: u32,
    /// The swizzle span in bytes: 0 (none), 32, 64 or 128 (`CU_TENSOR_MAP_SWIZZLE_*`).
    pub swizzle: u32,
}

/// Where the byte at dense offset `off` of a tile lands under swizzle `span` (0, 32, 64, 128
/// bytes): its 16-byte chunk bits (4..) XORed with the bits from 7 up (one, two or three bits).
#[must_use]
pub const fn swizzled_offset(off: usize, span: u32) -> usize {
    let mask = match span {
        32 => 1,
        64 => 3,
        128 => 7,
        _ => 0,
    };
    off ^ (((off >> 7) & mask) << 4)
}

const _: () = assert!(size_of::<TensorMapDesc>() == 128);

impl TensorMapDesc {
    /// Bytes of one box (what a copy completes on its barrier).
    #[must_use]
    pub fn box_bytes(&self) -> u64 {
        self.box_dims[..self.rank as usize].iter().map(|&b| u64::from(b)).product::<u64>() * u64::from(self.elem)
    }

    /// Calls `f(tile_offset, Some(global_address))` for each element of the box at `coords`
    /// (`None`: outside the tensor), in tile order.
    fn each(&self, coords: &[i32], mut f: impl FnMut(usize, Option<u64>)) {
        let rank = self.rank as usize;
        assert!(
            self.magic == TMA_DESC_MAGIC && (1..=TMA_MAX_RANK).contains(&rank) && coords.len() == rank,
            "cohort-cpu: not a tensor map description of rank {}",
            coords.len()
        );
        let total: u64 = self.box_dims[..rank].iter().map(|&b| u64::from(b)).product();
        let mut idx = [0u64; TMA_MAX_RANK];
        for n in 0..total {
            let mut addr = self.base;
            let mut inside = true;
            for d in 0..rank {
                let g = i64::from(coords[d]) + idx[d] as i64;
                if g < 0 || g as u64 >= self.dims[d] {
                    inside = false;
                } else {
                    addr = addr.wrapping_add(g as u64 * self.strides[d]);
                }
            }
            f(n as usize * self.elem as usize, inside.then_some(addr));
            for d in 0..rank {
                idx[d] += 1;
                if idx[d] < u64::from(self.box_dims[d]) {
                    break;
                }
                idx[d] = 0;
            }
        }
    }
}

/// `cp.async.bulk.tensor.Nd.shared::cluster.global.tile`: copies the box of `desc` at `coords`
/// into the dense tile at `dst`, filling the elements outside the tensor.
///
/// # Safety
/// `desc` must describe memory valid for reads (every in-bounds element), and `dst` must be
/// valid for writes of [`TensorMapDesc::box_bytes`] bytes.
pub unsafe fn tensor_load(desc: &TensorMapDesc, coords: &[i32], dst: *mut u8) {
    let elem = desc.elem as usize;
    // The canonical quiet NaN of the element's width (NaN fill is for floating-point maps only).
    let nan: u64 = match elem {
        2 => 0x7e00,
        4 => 0x7fc0_0000,
        8 => 0x7ff8_0000_0000_0000,
        _ => 0,
    };
    let fill = if desc.oob_nan != 0 { nan.to_le_bytes() } else { [0; 8] };
    desc.each(coords, |off, src| {
        // An element (at most 8 bytes, at a multiple of its size) never straddles a 16-byte
        // chunk, and the swizzle permutes chunks within the tile's bytes.
        let off = swizzled_offset(off, desc.swizzle);
        // SAFETY: the caller's contract: `off + elem` is inside the tile (a permutation of its
        // chunks when swizzled, for a tile of whole 1024-byte periods or less within one), and
        // `src` an element of the tensor.
        unsafe {
            match src {
                Some(a) => core::ptr::copy_nonoverlapping(a as usize as *const u8, dst.add(off), elem),
                None => core::ptr::copy_nonoverlapping(fill.as_ptr(), dst.add(off), elem.min(8)),
            }
        }
    });
}

/// `cp.async.bulk.tensor.Nd.global.shared::cta.tile.bulk_group`: writes the dense tile at `src`
/// into the box of `desc` at `coords`, skipping the elements outside the tensor.
///
/// # Safety
/// `desc` must describe memory valid for writes (every in-bounds element) that nothing else
/// accesses meanwhile, and `src` must be valid for reads of [`TensorMapDesc::box_bytes`] bytes.
pub unsafe fn tensor_store(desc: &TensorMapDesc, coords: &[i32], src: *const u8) {
    let elem = desc.elem as usize;
    desc.each(coords, |off, dst| {
        let off = swizzled_offset(off, desc.swizzle);
        if let Some(a) = dst {
            // SAFETY: the caller's contract.
            unsafe { core::ptr::copy_nonoverlapping(src.add(off), a as usize as *mut u8, elem) }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn desc2(base: u64, cols: u64, rows: u64, b: [u32; 2]) -> TensorMapDesc {
        TensorMapDesc {
            base,
            dims: [cols, rows, 1, 1, 1],
            strides: [4, cols * 4, 0, 0, 0],
            box_dims: [b[0], b[1], 1, 1, 1],
            rank: 2,
            elem: 4,
            oob_nan: 0,
            magic: TMA_DESC_MAGIC,
            swizzle: 0,
        }
    }

    #[test]
    fn tma_load_clips_and_fills() {
        let (cols, rows) = (5u64, 3u64);
        let m: Vec<f32> = (0..cols * rows).map(|i| i as f32 + 1.0).collect();
        let d = desc2(m.as_ptr() as u64, cols, rows, [4, 2]);
        for (cx, cy) in [(0, 0), (3, 2), (-2, -1), (4, 1), (100, 0), (-4, -2)] {
            let mut tile = [f32::MAX; 8];
            // SAFETY: the description is of `m`; the tile holds the box.
            unsafe { tensor_load(&d, &[cx, cy], tile.as_mut_ptr().cast()) };
            for (k, v) in tile.iter().enumerate() {
                let (x, y) = (cx as i64 + (k % 4) as i64, cy as i64 + (k / 4) as i64);
                let want = if (0..cols as i64).contains(&x) && (0..rows as i64).contains(&y) {
                    m[(y * cols as i64 + x) as usize]
                } else {
                    0.0
                };
                assert_eq!(*v, want, "box at ({cx}, {cy}), element {k}");
            }
        }
        let mut nan = d;
        nan.oob_nan = 1;
        let mut tile = [0f32; 8];
        // SAFETY: as above.
        unsafe { tensor_load(&nan, &[4, 0], tile.as_mut_ptr().cast()) };
        assert_eq!(tile[0], 5.0);
        assert!(tile[1].is_nan() && tile[5].is_nan());
    }

    #[test]
    fn tma_store_skips_outside() {
        let (cols, rows) = (5u64, 3u64);
        let mut m = vec![0f32; 15];
        let d = desc2(m.as_mut_ptr() as u64, cols, rows, [4, 2]);
        let tile: Vec<f32> = (1..=8).map(|i| i as f32).collect();
        // SAFETY: the description is of `m`, which nothing else touches; the tile holds the box.
        unsafe { tensor_store(&d, &[3, 2], tile.as_ptr().cast()) };
        let mut want = vec![0f32; 15];
        want[2 * 5 + 3] = 1.0;
        want[2 * 5 + 4] = 2.0;
        assert_eq!(m, want);
    }

    /// A 128-byte-swizzled load of a 16 × 64 box of 16-bit elements (128-byte rows): element
    /// (r, c) lands in 16-byte chunk `(c / 8) ^ (r % 8)` of row r, and a store reads it back
    /// from there (every element distinct, so a wrong permutation cannot pass).
    #[test]
    fn tma_swizzled_load_and_store_permute_chunks() {
        let (cols, rows) = (64u64, 16u64);
        let m: Vec<u16> = (0..cols * rows).map(|i| i as u16 + 1).collect();
        let mut d = desc2(m.as_ptr() as u64, cols, rows, [64, 16]);
        (d.elem, d.strides[0], d.strides[1]) = (2, 2, cols * 2);
        for (span, mask) in [(128u32, 7usize), (64, 3), (32, 1)] {
            d.swizzle = span;
            let mut tile = vec![0u16; 64 * 16];
            // SAFETY: the description is of `m`; the tile holds the box.
            unsafe { tensor_load(&d, &[0, 0], tile.as_mut_ptr().cast()) };
            for r in 0..16usize {
                for c in 0..64usize {
                    let o = r * 128 + c * 2;
                    let at = (o ^ (((o >> 7) & mask) << 4)) / 2;
                    assert_eq!(tile[at], m[r * 64 + c], "swizzle {span}: ({r}, {c})");
                }
            }
            let mut back = vec![0u16; (cols * rows) as usize];
            let mut s = d;
            s.base = back.as_mut_ptr() as u64;
            // SAFETY: the description is of `back`, which nothing else touches.
            unsafe { tensor_store(&s, &[0, 0], tile.as_ptr().cast()) };
            assert_eq!(back, m, "swizzle {span}: a store unswizzles");
        }
    }
}
