//! Writing: [`DisjointMatrix`], a kernel output whose threads write only their own
//! [`ThreadTile`]s (by its [`Layout`] and the kernel's [`BlockShape`]).

use core::marker::PhantomData;

use super::{Cyclic, Layout, MatrixIndex, Split};
use crate::raw;
use crate::shape::BlockShape;

/// A `rows × cols` row-major kernel output in device memory, divided among threads by layout
/// `L`: a thread writes only through its [`ThreadTile`] ([`tile`](Self::tile)).
///
/// As a `#[kernel]` parameter it is passed from the host as a `MatrixMut` (a mutably borrowed
/// buffer with its shape, `buffer.as_matrix_mut(rows, cols)?`); the kernel ABI is a pointer, the
/// rows and the columns. The kernel must also take a [`BlockShape`] (the layout depends on it).
///
/// `I` is the type of element offsets: `usize`, or `u32` for CUDA C++'s 32-bit `row * cols +
/// col` (one multiply-add where `usize` takes three or four instructions). A `u32` matrix has
/// at most `u32::MAX` elements: the launcher refuses a larger one (an `Err` naming the kernel,
/// the parameter and the shape), so no offset can wrap.
#[derive(Debug)]
pub struct DisjointMatrix<'a, T, L: Layout = Cyclic, I: MatrixIndex = usize> {
    ptr: *mut T,
    rows: I,
    cols: I,
    _life: PhantomData<(&'a mut [T], L)>,
}

impl<'a, T, L: Layout, I: MatrixIndex> DisjointMatrix<'a, T, L, I> {
    /// Wraps device memory.
    ///
    /// # Safety
    /// `ptr` must be valid for reads and writes of `rows * cols` elements of `T` for `'a` (any
    /// pointer, null included, when that is 0: nothing is then written), `rows * cols` not
    /// overflowing `I`; nothing else may access that memory meanwhile except other threads of the
    /// same launch through a `DisjointMatrix` made from the same `ptr`, `rows`, `cols`, `L` and
    /// `I`. If `L` is [`Within`](super::Within), the launch's grid is 1-D or 2-D (`gridDim.z == 1`)
    /// and every thread's elements lie inside the matrix
    /// ([`abi::matrix_launch_fits`](crate::abi::matrix_launch_fits) holds for it).
    #[inline(always)]
    #[must_use]
    pub const unsafe fn from_raw_parts(ptr: *mut T, rows: I, cols: I) -> Self {
        Self { ptr, rows, cols, _life: PhantomData }
    }

    /// Rows.
    #[inline(always)]
    #[must_use]
    pub const fn rows(&self) -> I {
        self.rows
    }

    /// Columns (and the row stride).
    #[inline(always)]
    #[must_use]
    pub const fn cols(&self) -> I {
        self.cols
    }

    /// The elements this thread writes: its part of its block's tile.
    ///
    /// The block's tile position is `(blockIdx.y + gridDim.y * blockIdx.z, blockIdx.x)` (exchanged
    /// by [`TransposedTiles`](super::TransposedTiles)); blocks past the matrix get tiles whose
    /// elements are all outside, and write nothing.
    #[inline(always)]
    #[must_use]
    pub fn tile<const X: u32, const Y: u32, const Z: u32>(
        &mut self,
        shape: &BlockShape<X, Y, Z>,
    ) -> ThreadTile<'_, T, L, I> {
        const {
            assert!(
                Z == 1,
                "matrix layouts are for 2-D blocks: threads that differ only in z would write the same elements"
            );
            // With X, Y <= 1024 (`BlockShape`) this keeps every row and column a layout computes
            // (tile position < 2^32 times a tile edge < 2^31, plus less than 2^31) below 2^63:
            // no `usize` arithmetic below wraps, so distinct threads keep distinct elements.
            assert!(
                L::KR <= 1 << 20 && L::KC <= 1 << 20,
                "a thread writes at most 2^20 × 2^20 elements of a matrix layout"
            );
            // A layout of warps (`MmaWarps`) needs whole warps, in whole rows of `WARPS_N`.
            assert!(
                L::WARPS_N == 0 || ((X * Y) as usize).is_multiple_of(32 * L::WARPS_N),
                "MmaWarps: the block's threads must be a multiple of 32 × WN (whole warps, whole rows of warps)"
            );
            assert!(L::RUN >= 1 && L::KC % L::RUN == 0, "a layout's columns come in whole runs");
        };
        let (tx, ty) = (shape.x() as usize, shape.y() as usize);
        // gridDim.y <= 65535 and blockIdx < gridDim: `tr` < 2^32, computed in 32 bits. Under
        // `Within`, gridDim.z == 1 (checked at launch): blockIdx.z is 0.
        let tr = if L::WITHIN { raw::ctaid_y() } else { raw::ctaid_y() + raw::nctaid_y() * raw::ctaid_z() } as usize;
        let tc = raw::ctaid_x() as usize;
        let [r0, dr, c0, dc] = L::place(tx, ty, X as usize, Y as usize, tr, tc);
        // The thread's last row and column (KR, KC >= 1 is not required: then nothing is
        // written). Under `Within` the launcher checked them for the grid's far corner
        // (`abi::matrix_launch_fits`), and `place` is non-decreasing: every thread's lie inside.
        let full = L::WITHIN
            || (L::KR > 0
                && L::KC > 0
                && r0 + dr * (L::KR - 1) < self.rows.to_usize()
                && c0 + dc * ((L::KC - 1) / L::RUN) + (L::KC - 1) % L::RUN < self.cols.to_usize());
        ThreadTile { ptr: self.ptr, rows: self.rows, cols: self.cols, r0, dr, c0, dc, full, _life: PhantomData }
    }
}

/// The elements of a [`DisjointMatrix`] one thread writes: `KR × KC` of them (`L::KR`,
/// `L::KC`), element `(k, l)` at row [`row(k)`](Self::row), column [`col(l)`](Self::col).
#[derive(Debug)]
pub struct ThreadTile<'m, T, L: Layout, I: MatrixIndex = usize> {
    ptr: *mut T,
    rows: I,
    cols: I,
    r0: usize,
    dr: usize,
    c0: usize,
    dc: usize,
    full: bool,
    _life: PhantomData<(&'m mut [T], L)>,
}

impl<T, L: Layout, I: MatrixIndex> ThreadTile<'_, T, L, I> {
    /// The matrix row of this thread's elements `(k, _)`.
    #[inline(always)]
    #[must_use]
    pub const fn row(&self, k: usize) -> usize {
        self.r0 + self.dr * k
    }

    /// The matrix column of this thread's elements `(_, l)`: `c0 + dc * l` (columns in runs
    /// of the layout's `RUN` adjacent ones: `c0 + dc * (l / RUN) + l % RUN`).
    #[inline(always)]
    #[must_use]
    pub const fn col(&self, l: usize) -> usize {
        self.c0 + self.dc * (l / L::RUN) + l % L::RUN
    }

    /// Whether every element of this thread's tile lies inside the matrix (computed once).
    #[inline(always)]
    #[must_use]
    pub const fn is_full(&self) -> bool {
        self.full
    }

    /// The offset of element `(r, c)` if it lies inside the matrix (taken as so in a full tile,
    /// whose elements all do): `r * cols + c`, computed in `I` (it is less than `rows * cols`,
    /// which fits `I`).
    #[inline(always)]
    fn offset(&self, r: usize, c: usize) -> Option<usize> {
        if self.full || ((r < self.rows.to_usize()) & (c < self.cols.to_usize())) {
            Some(I::truncate(r).mul_add_wrapping(self.cols, I::truncate(c)).to_usize())
        } else {
            None
        }
    }

    /// This thread's element `(k, l)`, or `None` if it lies outside the matrix.
    ///
    /// # Panics
    /// If `k >= L::KR` or `l >= L::KC` (constants: LLVM removes the check for loop counters it
    /// can bound).
    #[inline(always)]
    #[must_use]
    #[track_caller]
    pub fn get_mut(&mut self, k: usize, l: usize) -> Option<&mut T> {
        assert!(k < L::KR && l < L::KC, "thread tile index out of bounds");
        let at = self.offset(self.row(k), self.col(l))?;
        // SAFETY: (r, c) is inside the matrix, so `at` = r * cols + c < rows * cols (no
        // overflow in `I`: `from_raw_parts`); the layout gives (r, c) to this thread alone
        // (module docs), and the `&mut self` borrow keeps this thread from holding two
        // references to it.
        Some(unsafe { &mut *self.ptr.add(at) })
    }

    /// Writes `value` to this thread's element `(k, l)`; `false` (nothing written) if it lies
    /// outside the matrix. In a full tile ([`is_full`](Self::is_full), checked once) the write
    /// has no check but the constant one on `(k, l)`.
    ///
    /// # Panics
    /// As [`get_mut`](Self::get_mut).
    #[inline(always)]
    #[track_caller]
    pub fn set(&mut self, k: usize, l: usize, value: T) -> bool {
        assert!(k < L::KR && l < L::KC, "thread tile index out of bounds");
        match self.offset(self.row(k), self.col(l)) {
            Some(at) => {
                // SAFETY: as in `get_mut`: inside the matrix, and this thread's alone.
                unsafe { self.ptr.add(at).write(value) };
                true
            }
            None => false,
        }
    }
}

impl<'m, T, L: Layout, I: MatrixIndex> ThreadTile<'m, T, L, I> {
    /// This thread's tile as a [`FullTile`] (writes without checks) if it lies wholly inside the
    /// matrix, else itself: see [`split!`](crate::split).
    #[inline(always)]
    #[must_use]
    pub fn split(self) -> Split<FullTile<'m, T, L, I>, Self> {
        match (self.full, self.offset(self.r0, self.c0)) {
            (true, Some(at)) => {
                // SAFETY: full: (r0, c0) is inside the matrix, so `at` is in bounds.
                let ptr = unsafe { self.ptr.add(at) };
                // Wrapping in `I`: the offsets made from these (`FullTile::offset`) are
                // differences of in-bounds offsets, so they come out exact.
                let row_step = I::truncate(self.dr).mul_add_wrapping(self.cols, I::ZERO);
                Split::Full(FullTile { ptr, row_step, dc: I::truncate(self.dc), _life: PhantomData })
            }
            _ => Split::Edge(self),
        }
    }
}

impl<T: Copy, L: Layout, I: MatrixIndex> ThreadTile<'_, T, L, I> {
    /// Writes `v` to this thread's elements `(k, W·j) .. (k, W·j + W)` — run `j` of row `k`, `W`
    /// being the layout's run of adjacent columns (`L::RUN`: the two columns of an accumulator
    /// fragment under [`MmaWarps`](super::MmaWarps)) — each if it lies inside the matrix;
    /// `false` if any was outside. The checked form of [`RunTile::set_run`], so that one body
    /// serves both.
    ///
    /// # Panics
    /// If `k >= L::KR` or `W·j >= L::KC`; compile error if `W` is not `L::RUN`.
    #[inline(always)]
    #[track_caller]
    pub fn set_run<const W: usize>(&mut self, k: usize, j: usize, v: [T; W]) -> bool {
        const { assert!(W == L::RUN, "set_run: W must be the layout's run of columns") };
        let mut all = true;
        for (i, x) in v.into_iter().enumerate() {
            all &= self.set(k, W * j + i, x);
        }
        all
    }
}

impl<'m, T, L: Layout, I: MatrixIndex> ThreadTile<'m, T, L, I> {
    /// This thread's tile as a [`RunTile`] — a run of `L::RUN` adjacent columns written with one
    /// vector store (`st.global.v2.f32` for an accumulator's pair), no checks — if it lies
    /// wholly inside the matrix and every run of it starts at a multiple of the run's size in
    /// bytes (8 or 16); else itself (checked writes, [`set_run`](Self::set_run) element by
    /// element). Checked once, here.
    #[inline(always)]
    #[must_use]
    pub fn split_runs(self) -> Split<RunTile<'m, T, L, I>, Self> {
        let bytes = L::RUN * size_of::<T>();
        if (bytes == 8 || bytes == 16)
            && self.full
            && let Some(at) = self.offset(self.r0, self.c0)
        {
            // SAFETY: full: (r0, c0) is inside the matrix, so `at` is in bounds.
            let ptr = unsafe { self.ptr.add(at) };
            // Every run starts at the tile's first element plus whole rows (`dr · cols`
            // elements) and whole steps (`dc`): aligned when these three are.
            let aligned = (ptr as usize).is_multiple_of(bytes)
                && (self.cols.to_usize() * size_of::<T>()).is_multiple_of(bytes)
                && (self.dc * size_of::<T>()).is_multiple_of(bytes);
            if aligned {
                let row_step = I::truncate(self.dr).mul_add_wrapping(self.cols, I::ZERO);
                return Split::Full(RunTile { ptr, row_step, dc: I::truncate(self.dc), _life: PhantomData });
            }
        }
        Split::Edge(self)
    }
}

/// A thread's tile inside its matrix whose column runs are aligned for one vector store each
/// ([`ThreadTile::split_runs`]): [`set_run`](Self::set_run) writes a run with one instruction
/// and no check (but the constant one on `(k, j)`).
#[derive(Debug)]
pub struct RunTile<'m, T, L: Layout, I: MatrixIndex = usize> {
    /// This thread's element (0, 0).
    ptr: *mut T,
    /// Elements from one of its rows to the next (`dr * cols`).
    row_step: I,
    dc: I,
    _life: PhantomData<(&'m mut [T], L)>,
}

/// 8 bytes as one aligned value: one 8-byte store.
#[repr(C, align(8))]
#[derive(Clone, Copy)]
struct Aligned8([u8; 8]);

/// 16 bytes as one aligned value: one 16-byte store.
#[repr(C, align(16))]
#[derive(Clone, Copy)]
struct Aligned16([u8; 16]);

impl<T: crate::DeviceCopy, L: Layout, I: MatrixIndex> RunTile<'_, T, L, I> {
    /// Writes `v` to this thread's elements `(k, W·j) .. (k, W·j + W)` (run `j` of row `k`) with
    /// one aligned store; always `true` (the signature matches [`ThreadTile::set_run`]).
    ///
    /// # Panics
    /// If `k >= L::KR` or `W·j >= L::KC`; compile error if `W` is not `L::RUN`.
    #[inline(always)]
    #[track_caller]
    pub fn set_run<const W: usize>(&mut self, k: usize, j: usize, v: [T; W]) -> bool {
        const { assert!(W == L::RUN, "set_run: W must be the layout's run of columns") };
        crate::assert_no_padding::<T>();
        assert!(k < L::KR && W * j < L::KC, "thread tile index out of bounds");
        // As `FullTile::offset`, for element (k, W·j): k rows and j steps from (0, 0).
        let at = I::truncate(k)
            .mul_add_wrapping(self.row_step, I::ZERO)
            .add_wrapping(I::truncate(j).mul_add_wrapping(self.dc, I::ZERO))
            .to_usize();
        // SAFETY: the whole tile lies inside the matrix and is this thread's alone (how
        // `split_runs` made this, and the layout), so its elements (k, W·j + i), i < W, are;
        // they are adjacent (a run), their first aligned to their size, 8 or 16 bytes (checked
        // by `split_runs` for every run); `v`'s bytes are its `W` values, all initialized
        // (`DeviceCopy` without padding, asserted above).
        unsafe {
            let p = self.ptr.add(at);
            // Assignments through the pointers (no `Drop` to run): a debug build checks their
            // alignment, as the GPU does (a misaligned address is a fault there).
            match W * size_of::<T>() {
                8 => *p.cast::<Aligned8>() = core::mem::transmute_copy(&v),
                16 => *p.cast::<Aligned16>() = core::mem::transmute_copy(&v),
                _ => unreachable!("split_runs makes a RunTile only for runs of 8 or 16 bytes"),
            }
        }
        true
    }
}

/// A thread's tile known to lie inside its matrix: writes without checks (but the constant one
/// on `(k, l)`).
#[derive(Debug)]
pub struct FullTile<'m, T, L: Layout, I: MatrixIndex = usize> {
    /// This thread's element (0, 0).
    ptr: *mut T,
    /// Elements from one of its rows to the next (`dr * cols`).
    row_step: I,
    dc: I,
    _life: PhantomData<(&'m mut [T], L)>,
}

impl<T, L: Layout, I: MatrixIndex> FullTile<'_, T, L, I> {
    /// The offset of element `(k, l)` from element `(0, 0)`: `row(k) * cols + col(l)` minus
    /// `row(0) * cols + col(0)`, both offsets inside the matrix, so the difference computed in
    /// `I` (wrapping) is exact.
    #[inline(always)]
    fn offset(&self, k: usize, l: usize) -> usize {
        I::truncate(k)
            .mul_add_wrapping(self.row_step, I::ZERO)
            .add_wrapping(I::truncate(l / L::RUN).mul_add_wrapping(self.dc, I::truncate(l % L::RUN)))
            .to_usize()
    }

    /// This thread's element `(k, l)`.
    ///
    /// # Panics
    /// If `k >= L::KR` or `l >= L::KC`.
    #[inline(always)]
    #[must_use]
    #[track_caller]
    pub fn get_mut(&mut self, k: usize, l: usize) -> Option<&mut T> {
        assert!(k < L::KR && l < L::KC, "thread tile index out of bounds");
        // SAFETY: the whole tile lies inside the matrix (how `split` made this) and is this
        // thread's alone (the layout); `&mut self` keeps one reference at a time.
        Some(unsafe { &mut *self.ptr.add(self.offset(k, l)) })
    }

    /// Writes this thread's element `(k, l)`; always `true` (the signature matches
    /// [`ThreadTile::set`], so one [`split!`](crate::split) body serves both).
    ///
    /// # Panics
    /// If `k >= L::KR` or `l >= L::KC`.
    #[inline(always)]
    #[track_caller]
    pub fn set(&mut self, k: usize, l: usize, value: T) -> bool {
        assert!(k < L::KR && l < L::KC, "thread tile index out of bounds");
        // SAFETY: as in `get_mut`.
        unsafe { self.ptr.add(self.offset(k, l)).write(value) };
        true
    }
}
