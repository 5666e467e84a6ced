//! Row-major matrices: a read view with branch-free checked reads and once-checked windows,
//! and [`DisjointMatrix`], a kernel output whose threads write the tiles a [`Layout`] gives them.
//!
//! | CUDA C++ | Cohort |
//! |---|---|
//! | `(r < rows && c < cols) ? a[r * cols + c] : 0` | [`Matrix::load_or`]`(r, c, 0)` (a clamped address and a select: no branch) |
//! | `a[(r0 + i) * cols + c0 + j]` in a tile known to be inside | [`Matrix::window`]`::<R, C>(r0, c0)` (one check) then [`Window::get`]`(i, j)` |
//! | `out[row * cols + col] = v` (the thread's own element of a 2-D grid) | `DisjointMatrix<T, Cyclic>`: `out.tile(&shape).set(0, 0, v)` |
//! | `out[col * rows + row] = v` (transposed position) | `DisjointMatrix<T, Transposed<Cyclic>>` |
//! | a block's tile of C, `TM × TN` per thread | `DisjointMatrix<T, Blocked<TM, TN>>` |
//! | a block's tile written at the transposed tile position | `DisjointMatrix<T, TransposedTiles<…>>` |
//!
//! **Why writes are safe.** A [`DisjointMatrix`] kernel parameter carries its `rows` and `cols`
//! from the host (the launch passes them, so every thread sees the same), its [`Layout`] is
//! part of its type (so every thread uses the same), and the block shape comes from the kernel's
//! [`BlockShape`] (checked at launch). A layout maps (block, thread, `k`, `l`) one-to-one onto
//! (row, column): distinct threads never get the same element, and elements outside
//! `rows × cols` are not written.

use core::marker::PhantomData;
use core::ptr::NonNull;

use crate::raw;
use crate::shape::BlockShape;

// --- Reading ------------------------------------------------------------------------------

/// A read-only `rows × cols` row-major view of a slice (row `r` starts at `r * cols`).
#[derive(Debug)]
pub struct Matrix<'a, T> {
    data: &'a [T],
    rows: usize,
    cols: usize,
}

impl<T> Clone for Matrix<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for Matrix<'_, T> {}

impl<'a, T> Matrix<'a, T> {
    /// Views `data` as `rows × cols`; `None` if it has fewer than `rows * cols` elements, or
    /// none at all (so that [`load_or`](Self::load_or) always has an element to read).
    #[inline(always)]
    #[must_use]
    pub fn new(data: &'a [T], rows: usize, cols: usize) -> Option<Self> {
        match rows.checked_mul(cols) {
            Some(n) if n <= data.len() && !data.is_empty() => Some(Self { data, rows, cols }),
            _ => None,
        }
    }

    /// Rows.
    #[inline(always)]
    #[must_use]
    pub const fn rows(&self) -> usize {
        self.rows
    }

    /// Columns (and the row stride).
    #[inline(always)]
    #[must_use]
    pub const fn cols(&self) -> usize {
        self.cols
    }

    /// Element `(r, c)`, or `None` outside the matrix.
    #[inline(always)]
    #[must_use]
    pub fn get(&self, r: usize, c: usize) -> Option<&'a T> {
        if r < self.rows && c < self.cols {
            // SAFETY: r * cols + c < rows * cols <= len.
            Some(unsafe { self.data.get_unchecked(r * self.cols + c) })
        } else {
            None
        }
    }

    /// Element `(r, c)`, or `default` outside the matrix, without a branch: the load always
    /// happens, at a clamped address (element 0) when `(r, c)` is outside, and a select picks the
    /// result — so the loads of a tile issue back to back, as unchecked C++ loads do.
    #[inline(always)]
    #[must_use]
    pub fn load_or(&self, r: usize, c: usize, default: T) -> T
    where
        T: Copy,
    {
        let inside = (r < self.rows) & (c < self.cols);
        let i = if inside { r * self.cols + c } else { 0 };
        // SAFETY: `i < rows * cols <= len` when inside, else 0 < len (`new` refuses empty data).
        let v = unsafe { *self.data.get_unchecked(i) };
        if inside { v } else { default }
    }

    /// The `R × C` window whose top-left element is `(r0, c0)`, if it lies wholly inside the
    /// matrix: one check here, none in [`Window::get`] for indices LLVM can bound.
    #[inline(always)]
    #[must_use]
    pub fn window<const R: usize, const C: usize>(&self, r0: usize, c0: usize) -> Option<Window<'a, T, R, C>> {
        let rows_ok = r0 <= self.rows && R <= self.rows - r0;
        let cols_ok = c0 <= self.cols && C <= self.cols - c0;
        if rows_ok && cols_ok && R > 0 && C > 0 {
            // SAFETY: (r0, c0) is inside (R, C >= 1), so the offset is in bounds.
            let ptr = unsafe { self.data.as_ptr().add(r0 * self.cols + c0) };
            Some(Window { ptr, cols: self.cols, _life: PhantomData })
        } else {
            None
        }
    }
}

/// An `R × C` window of a [`Matrix`], known to lie inside it.
#[derive(Debug)]
pub struct Window<'a, T, const R: usize, const C: usize> {
    ptr: *const T,
    cols: usize,
    _life: PhantomData<&'a [T]>,
}

impl<T, const R: usize, const C: usize> Clone for Window<'_, T, R, C> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T, const R: usize, const C: usize> Copy for Window<'_, T, R, C> {}

impl<'a, T, const R: usize, const C: usize> Window<'a, T, R, C> {
    /// Element `(i, j)` of the window.
    ///
    /// # Panics
    /// If `i >= R` or `j >= C` — a comparison with constants, which LLVM removes wherever the
    /// indices are known to be in range (a [`BlockShape`] index, an unrolled loop counter).
    #[inline(always)]
    #[must_use]
    #[track_caller]
    pub fn get(&self, i: usize, j: usize) -> T
    where
        T: Copy,
    {
        assert!(i < R && j < C, "matrix window index out of bounds");
        // SAFETY: the window lies inside the matrix (checked by `Matrix::window`) and (i, j)
        // inside the window, so the element is inside the borrowed slice.
        unsafe { *self.ptr.add(i * self.cols + j) }
    }
}

// --- Writing ------------------------------------------------------------------------------

/// How a [`DisjointMatrix`] is divided among threads: which elements each thread of each block
/// writes. Sealed: the disjointness of writes rests on each layout being one-to-one.
pub trait Layout: sealed::Sealed + 'static {
    /// Elements a thread writes along rows (`k` in [`ThreadTile::set`]).
    const KR: usize;
    /// Elements a thread writes along columns (`l`).
    const KC: usize;
    /// Where thread `(tx, ty)` of a block of `x × y` threads whose tile is at tile position
    /// `(tr, tc)` writes: `[r0, dr, c0, dc]`, its element `(k, l)` being
    /// `(r0 + dr * k, c0 + dc * l)`.
    #[doc(hidden)]
    fn place(tx: usize, ty: usize, x: usize, y: usize, tr: usize, tc: usize) -> [usize; 4];
}

/// Each thread writes `KR × KC` elements spread over its block's tile of `(Y·KR) × (X·KC)`:
/// thread `(x, y)` writes rows `y, y + Y, …` and columns `x, x + X, …` of it (consecutive
/// threads write consecutive columns: coalesced). `Cyclic` (`1 × 1`) is one element per thread:
/// row `blockIdx.y * Y + y`, column `blockIdx.x * X + x`.
#[derive(Debug)]
pub enum Cyclic<const KR: usize = 1, const KC: usize = 1> {}

/// Each thread writes a contiguous `KR × KC` micro-tile of its block's `(Y·KR) × (X·KC)`
/// tile: rows `y·KR ..`, columns `x·KC ..` (a register-blocked GEMM's tile of C).
#[derive(Debug)]
pub enum Blocked<const KR: usize, const KC: usize> {}

/// Layout `L` with rows and columns exchanged: where `L` writes `(r, c)`, this writes `(c, r)`
/// (a naive transpose's output).
#[derive(Debug)]
pub struct Transposed<L>(PhantomData<L>);

/// Layout `L` with the *block* coordinates exchanged: block `(bx, by)` writes the tile at tile
/// row `bx`, tile column `by` (a tiled transpose's output; threads keep `L`'s arrangement).
#[derive(Debug)]
pub struct TransposedTiles<L>(PhantomData<L>);

mod sealed {
    pub trait Sealed {}
    impl<const KR: usize, const KC: usize> Sealed for super::Cyclic<KR, KC> {}
    impl<const KR: usize, const KC: usize> Sealed for super::Blocked<KR, KC> {}
    impl<L: super::Layout> Sealed for super::Transposed<L> {}
    impl<L: super::Layout> Sealed for super::TransposedTiles<L> {}
}

// Proof sketch of disjointness, layout by layout (block tile position `(tr, tc)` is one-to-one
// in the block index, see `DisjointMatrix::tile`):
// - `Cyclic`: row = tr·(Y·KR) + ty + Y·k with ty < Y, k < KR is one-to-one onto
//   tr·(Y·KR) + [0, Y·KR); columns likewise; so (tr, tc, tx, ty, k, l) ↦ (row, col) is one-to-one.
// - `Blocked`: row = tr·(Y·KR) + ty·KR + k, the same argument.
// - `Transposed<L>`: swapping the two coordinates of a one-to-one map keeps it one-to-one.
// - `TransposedTiles<L>`: `L` applied to the swapped tile position, itself one-to-one.
impl<const KR: usize, const KC: usize> Layout for Cyclic<KR, KC> {
    const KR: usize = KR;
    const KC: usize = KC;
    #[inline(always)]
    fn place(tx: usize, ty: usize, x: usize, y: usize, tr: usize, tc: usize) -> [usize; 4] {
        [tr * (y * KR) + ty, y, tc * (x * KC) + tx, x]
    }
}

impl<const KR: usize, const KC: usize> Layout for Blocked<KR, KC> {
    const KR: usize = KR;
    const KC: usize = KC;
    #[inline(always)]
    fn place(tx: usize, ty: usize, x: usize, y: usize, tr: usize, tc: usize) -> [usize; 4] {
        [tr * (y * KR) + ty * KR, 1, tc * (x * KC) + tx * KC, 1]
    }
}

impl<L: Layout> Layout for Transposed<L> {
    const KR: usize = L::KC;
    const KC: usize = L::KR;
    #[inline(always)]
    fn place(tx: usize, ty: usize, x: usize, y: usize, tr: usize, tc: usize) -> [usize; 4] {
        let [r0, dr, c0, dc] = L::place(tx, ty, x, y, tr, tc);
        [c0, dc, r0, dr]
    }
}

impl<L: Layout> Layout for TransposedTiles<L> {
    const KR: usize = L::KR;
    const KC: usize = L::KC;
    #[inline(always)]
    fn place(tx: usize, ty: usize, x: usize, y: usize, tr: usize, tc: usize) -> [usize; 4] {
        L::place(tx, ty, x, y, tc, tr)
    }
}

/// A `rows × cols` row-major kernel output in device memory, divided among threads by layout
/// `L`: a thread writes only through its [`ThreadTile`] ([`tile`](Self::tile)).
///
/// As a `#[kernel]` parameter it is passed from the host as a `MatrixMut` (a mutably borrowed
/// buffer with its shape, `buffer.as_matrix_mut(rows, cols)?`); the kernel ABI is a pointer, the
/// rows and the columns. The kernel must also take a [`BlockShape`] (the layout depends on it).
#[derive(Debug)]
pub struct DisjointMatrix<'a, T, L: Layout = Cyclic> {
    ptr: NonNull<T>,
    rows: usize,
    cols: usize,
    _life: PhantomData<(&'a mut [T], L)>,
}

impl<'a, T, L: Layout> DisjointMatrix<'a, T, L> {
    /// Wraps device memory.
    ///
    /// # Safety
    /// `ptr` must be non-null and valid for reads and writes of `rows * cols` elements of `T`
    /// for `'a` (`rows * cols` not overflowing); nothing else may access that memory meanwhile
    /// except other threads of the same launch through a `DisjointMatrix` made from the same
    /// `ptr`, `rows`, `cols` and `L`.
    #[inline(always)]
    #[must_use]
    pub unsafe fn from_raw_parts(ptr: *mut T, rows: usize, cols: usize) -> Self {
        // SAFETY: non-null by the caller's contract.
        Self { ptr: unsafe { NonNull::new_unchecked(ptr) }, rows, cols, _life: PhantomData }
    }

    /// Rows.
    #[inline(always)]
    #[must_use]
    pub const fn rows(&self) -> usize {
        self.rows
    }

    /// Columns (and the row stride).
    #[inline(always)]
    #[must_use]
    pub const fn cols(&self) -> usize {
        self.cols
    }

    /// The elements this thread writes: its part of its block's tile.
    ///
    /// The block's tile position is `(blockIdx.y + gridDim.y * blockIdx.z, blockIdx.x)`
    /// (exchanged by [`TransposedTiles`]); blocks past the matrix get tiles whose elements are
    /// all outside, and write nothing.
    #[inline(always)]
    #[must_use]
    pub fn tile<const X: u32, const Y: u32, const Z: u32>(&mut self, shape: &BlockShape<X, Y, Z>) -> ThreadTile<'_, T, L> {
        const { assert!(Z == 1, "matrix layouts are for 2-D blocks: threads that differ only in z would write the same elements") };
        let (tx, ty) = (shape.x() as usize, shape.y() as usize);
        let tr = raw::ctaid_y() as usize + raw::nctaid_y() as usize * raw::ctaid_z() as usize;
        let tc = raw::ctaid_x() as usize;
        let [r0, dr, c0, dc] = L::place(tx, ty, X as usize, Y as usize, tr, tc);
        // The thread's last row and column (KR, KC >= 1 is not required: then nothing is written).
        let full = L::KR > 0
            && L::KC > 0
            && r0 + dr * (L::KR - 1) < self.rows
            && c0 + dc * (L::KC - 1) < self.cols;
        ThreadTile { ptr: self.ptr, rows: self.rows, cols: self.cols, r0, dr, c0, dc, full, _life: PhantomData }
    }
}

/// The elements of a [`DisjointMatrix`] one thread writes: `KR × KC` of them (`L::KR`,
/// `L::KC`), element `(k, l)` at row [`row(k)`](Self::row), column [`col(l)`](Self::col).
#[derive(Debug)]
pub struct ThreadTile<'m, T, L: Layout> {
    ptr: NonNull<T>,
    rows: usize,
    cols: usize,
    r0: usize,
    dr: usize,
    c0: usize,
    dc: usize,
    full: bool,
    _life: PhantomData<(&'m mut [T], L)>,
}

impl<T, L: Layout> ThreadTile<'_, T, L> {
    /// The matrix row of this thread's elements `(k, _)`.
    #[inline(always)]
    #[must_use]
    pub const fn row(&self, k: usize) -> usize {
        self.r0 + self.dr * k
    }

    /// The matrix column of this thread's elements `(_, l)`.
    #[inline(always)]
    #[must_use]
    pub const fn col(&self, l: usize) -> usize {
        self.c0 + self.dc * l
    }

    /// Whether every element of this thread's tile lies inside the matrix (computed once).
    #[inline(always)]
    #[must_use]
    pub const fn is_full(&self) -> bool {
        self.full
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
        let (r, c) = (self.row(k), self.col(l));
        if self.full || ((r < self.rows) & (c < self.cols)) {
            // SAFETY: (r, c) is inside the matrix, so r * cols + c < rows * cols; the layout
            // gives (r, c) to this thread alone (module docs), and the `&mut self` borrow keeps
            // this thread from holding two references to it.
            Some(unsafe { &mut *self.ptr.as_ptr().add(r * self.cols + c) })
        } else {
            None
        }
    }

    /// Writes `value` to this thread's element `(k, l)`; `false` (nothing written) if it lies
    /// outside the matrix.
    ///
    /// # Panics
    /// As [`get_mut`](Self::get_mut).
    #[inline(always)]
    #[track_caller]
    pub fn set(&mut self, k: usize, l: usize, value: T) -> bool {
        match self.get_mut(k, l) {
            Some(slot) => {
                *slot = value;
                true
            }
            None => false,
        }
    }
}
