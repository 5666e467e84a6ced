//! Row-major matrices: a read view with branch-free checked reads and once-checked windows,
//! and [`DisjointMatrix`], a kernel output whose threads write the tiles a [`Layout`] gives them.
//!
//! | CUDA C++ | Cohort |
//! |---|---|
//! | `(r < rows && c < cols) ? a[r * cols + c] : 0` | [`Matrix::load_or`]`(r, c, 0)` (a clamped address and a select: no branch) |
//! | `unsigned` index arithmetic | `Matrix<T, u32>` ([`MatrixIndex`]; `new` checks that every offset fits) |
//! | `const float* a, int rows, int cols` kernel parameters | an `a: Matrix<T, I>` kernel parameter (the host passes `buffer.as_matrix(rows, cols)?`; shape checked on the host, none in the kernel) |
//! | a stencil's neighbours `gx > 0 ? u[i - 1] : 0`, `u[i + n]` | [`Matrix::point`]`(r, c)`, then [`Point::load_or`]`(dr, dc, 0)`: addresses relative to the centre's, as C++'s |
//! | a block's tile `a[(r0 + i) * cols + c0 + j]` | [`Matrix::window`]`::<R, C>(r0, c0)` (checked once), then [`Window::load_or`]`(i, j, 0)`: unchecked inside, checked at the edge |
//! | a GEMM's k-loop over A's row strip / B's column strip, `for (t = 0; t < k; t += C)` | [`Matrix::row_strip`]`::<R, C>(r0)` / [`Matrix::col_strip`]`::<R, C>(c0)`: iterators of windows, checked once per block ([`Strip::split`]), not once per step |
//! | `out[row * cols + col] = v` (the thread's own element of a 2-D grid) | `DisjointMatrix<T, Cyclic>`: `out.tile(&shape).set(0, 0, v)` |
//! | `unsigned` output offsets | `DisjointMatrix<T, L, u32>` (a matrix of more than `u32::MAX` elements is refused at launch: an `Err`) |
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

use crate::raw;
use crate::shape::BlockShape;

// --- Reading ------------------------------------------------------------------------------

/// The index type of a [`Matrix`]: `usize` (any size), or `u32` (CUDA C++'s `unsigned`: index
/// arithmetic in 32 bits, one instruction where `usize` takes two to four — for matrices of at
/// most `u32::MAX` elements, which [`Matrix::new`] checks).
pub trait MatrixIndex: Copy + Ord + core::fmt::Debug + index_sealed::Sealed + 'static {
    /// 0.
    const ZERO: Self;
    /// The value as a `usize` (lossless).
    fn to_usize(self) -> usize;
    /// `v` if it fits.
    fn from_usize(v: usize) -> Option<Self>;
    /// `v` cut to this type (for values already known to fit).
    fn truncate(v: usize) -> Self;
    /// Wrapping `self * o + p`.
    fn mul_add_wrapping(self, o: Self, p: Self) -> Self;
    /// Wrapping `self + o`.
    fn add_wrapping(self, o: Self) -> Self;
    /// `self - o` (callers ensure `o <= self`).
    fn sub(self, o: Self) -> Self;
    /// `self * o` if it fits.
    fn checked_mul(self, o: Self) -> Option<Self>;
    /// `self + d` if it fits.
    fn checked_add_signed(self, d: isize) -> Option<Self>;
    /// `rows` and `cols` as `Self` if every offset below `rows * cols` fits `Self` (callers
    /// guarantee that `rows * cols` fits `usize`: for `usize` there is nothing to check).
    #[doc(hidden)]
    fn shape(rows: usize, cols: usize) -> Option<(Self, Self)>;
}

mod index_sealed {
    pub trait Sealed {}
    impl Sealed for u32 {}
    impl Sealed for usize {}
}

macro_rules! matrix_index {
    ($($t:ty),*) => {$(
        impl MatrixIndex for $t {
            const ZERO: Self = 0;
            #[inline(always)]
            fn to_usize(self) -> usize {
                self as usize
            }
            #[inline(always)]
            fn from_usize(v: usize) -> Option<Self> {
                <$t>::try_from(v).ok()
            }
            #[inline(always)]
            fn truncate(v: usize) -> Self {
                v as $t
            }
            #[inline(always)]
            fn mul_add_wrapping(self, o: Self, p: Self) -> Self {
                self.wrapping_mul(o).wrapping_add(p)
            }
            #[inline(always)]
            fn add_wrapping(self, o: Self) -> Self {
                self.wrapping_add(o)
            }
            #[inline(always)]
            fn sub(self, o: Self) -> Self {
                self - o
            }
            #[inline(always)]
            fn checked_mul(self, o: Self) -> Option<Self> {
                self.checked_mul(o)
            }
            #[inline(always)]
            fn checked_add_signed(self, d: isize) -> Option<Self> {
                // In `Self`'s own width (32-bit compares for `u32`); a `d` too large for it
                // leaves any value outside.
                self.checked_add_signed(d.try_into().ok()?)
            }
            #[inline(always)]
            fn shape(rows: usize, cols: usize) -> Option<(Self, Self)> {
                if <$t>::BITS >= usize::BITS {
                    // Lossless, and `rows * cols` fits `usize` (the caller's contract).
                    return Some((rows as $t, cols as $t));
                }
                let (r, c) = (<$t>::try_from(rows).ok()?, <$t>::try_from(cols).ok()?);
                r.checked_mul(c)?;
                Some((r, c))
            }
        }
    )*};
}
matrix_index!(u32, usize);

/// A read-only `rows × cols` row-major view of a slice (row `r` starts at `r * cols`), indexed
/// by `I` (`usize`, or `u32` for 32-bit index arithmetic as CUDA C++ does with `unsigned`).
#[derive(Debug)]
pub struct Matrix<'a, T, I: MatrixIndex = usize> {
    data: &'a [T],
    rows: I,
    cols: I,
}

impl<T, I: MatrixIndex> Clone for Matrix<'_, T, I> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T, I: MatrixIndex> Copy for Matrix<'_, T, I> {}

impl<'a, T, I: MatrixIndex> Matrix<'a, T, I> {
    /// Views `data` as `rows × cols`; `None` if it has fewer than `rows * cols` elements, none
    /// at all (so that [`load_or`](Self::load_or) always has an element to read), or more than
    /// `I` can count (so that no offset inside overflows `I`).
    #[inline(always)]
    #[must_use]
    pub fn new(data: &'a [T], rows: I, cols: I) -> Option<Self> {
        // The product in `I` itself: for `u32`, one 32-bit multiply and its high half.
        match rows.checked_mul(cols) {
            Some(n) if n.to_usize() <= data.len() && !data.is_empty() => Some(Self { data, rows, cols }),
            _ => None,
        }
    }

    /// Views `data` as `rows × cols` without checks (what a kernel's `Matrix` parameter is
    /// rebuilt with: the host launcher checked the shape).
    ///
    /// # Safety
    /// `data` holds at least `rows * cols` elements and at least one, and `rows * cols` fits
    /// `I`.
    #[inline(always)]
    #[must_use]
    pub const unsafe fn from_raw_parts(data: &'a [T], rows: I, cols: I) -> Self {
        Self { data, rows, cols }
    }

    /// Rows.
    #[inline(always)]
    #[must_use]
    pub fn rows(&self) -> I {
        self.rows
    }

    /// Columns (and the row stride).
    #[inline(always)]
    #[must_use]
    pub fn cols(&self) -> I {
        self.cols
    }

    /// Element `(r, c)`, or `None` outside the matrix.
    #[inline(always)]
    #[must_use]
    pub fn get(&self, r: I, c: I) -> Option<&'a T> {
        if r < self.rows && c < self.cols {
            // SAFETY: r * cols + c < rows * cols <= len, computed without overflow (rows * cols
            // fits `I`, checked by `new`).
            Some(unsafe { self.data.get_unchecked(r.mul_add_wrapping(self.cols, c).to_usize()) })
        } else {
            None
        }
    }

    /// Element `(r, c)`, or `default` outside the matrix, without a branch: the load always
    /// happens, at a clamped address (element 0) when `(r, c)` is outside, and a select picks the
    /// result — so the loads of a tile issue back to back, as unchecked C++ loads do.
    #[inline(always)]
    #[must_use]
    pub fn load_or(&self, r: I, c: I, default: T) -> T
    where
        T: Copy,
    {
        let inside = (r < self.rows) & (c < self.cols);
        let i = if inside { r.mul_add_wrapping(self.cols, c) } else { I::ZERO };
        // SAFETY: `i < rows * cols <= len` when inside (no overflow: `new`), else 0 < len
        // (`new` refuses empty data).
        let v = unsafe { *self.data.get_unchecked(i.to_usize()) };
        if inside { v } else { default }
    }

    /// The `R × C` window whose top-left element is `(r0, c0)`: the part of the matrix one
    /// block reads. Whether it lies wholly inside the matrix is checked here, once;
    /// [`Window::split`] (or [`split!`](crate::split)) then gives a [`FullWindow`] that reads
    /// without checks, and a window at the edge reads through [`load_or`](Self::load_or).
    /// `r0` and `c0` may be "negative" (wrapped): a halo above or left of the matrix.
    #[inline(always)]
    #[must_use]
    pub fn window<const R: usize, const C: usize>(&self, r0: I, c0: I) -> Window<'a, T, R, C, I> {
        let full = R > 0 && C > 0 && span_fits(r0, self.rows, R) && span_fits(c0, self.cols, C);
        Window { m: *self, r0, c0, full }
    }

    /// Rows `r0 .. r0 + R` as a strip of `R × C` windows, walked left to right: the windows
    /// at `(r0, 0)`, `(r0, C)`, `(r0, 2C)`, … up to the last column (`⌈cols / C⌉` of them) —
    /// the tiles of `A` a GEMM block reads, one per step of its k-loop. The strip is checked
    /// once ([`Strip::split`]): when it lies inside the matrix and `C` divides `cols`, every
    /// window of it is full, and the k-loop runs with no check at all.
    #[inline(always)]
    #[must_use]
    pub fn row_strip<const R: usize, const C: usize>(&self, r0: I) -> Strip<'a, T, R, C, I> {
        let (steps, exact) = steps(self.cols.to_usize(), C);
        let full = R > 0 && span_fits(r0, self.rows, R) && exact;
        Strip { m: *self, r0, c0: I::ZERO, across: true, next: 0, steps, full }
    }

    /// Columns `c0 .. c0 + C` as a strip of `R × C` windows, walked top to bottom: the windows
    /// at `(0, c0)`, `(R, c0)`, `(2R, c0)`, … (`⌈rows / R⌉` of them) — the tiles of `B` a GEMM
    /// block reads, one per step of its k-loop. See [`row_strip`](Self::row_strip).
    #[inline(always)]
    #[must_use]
    pub fn col_strip<const R: usize, const C: usize>(&self, c0: I) -> Strip<'a, T, R, C, I> {
        let (steps, exact) = steps(self.rows.to_usize(), R);
        let full = C > 0 && span_fits(c0, self.cols, C) && exact;
        Strip { m: *self, r0: I::ZERO, c0, across: false, next: 0, steps, full }
    }

    /// Element `(r, c)` as the centre of a stencil, whose neighbours are read by offset:
    /// [`Point::load_or`]`(dr, dc, default)` reads `(r + dr, c + dc)`. Their addresses are
    /// the centre's plus a constant (`dr * cols + dc` elements), as C++'s `u[i - 1]`,
    /// `u[i + n]`: the compiler folds a row neighbour into the load's immediate offset instead
    /// of computing each address afresh. `(r, c)` may lie outside the matrix (then so may its
    /// neighbours; each read is checked).
    #[inline(always)]
    #[must_use]
    pub fn point(&self, r: I, c: I) -> Point<'a, T, I> {
        // Wrapping: exact for `u32` indices (below 2^64); for `usize`, equal to `r * cols + c`
        // modulo 2^usize::BITS, which is all `Point::address` needs.
        let at = r.to_usize().wrapping_mul(self.cols.to_usize()).wrapping_add(c.to_usize());
        Point { m: *self, r, c, at: self.data.as_ptr().wrapping_add(at) }
    }
}

/// A stencil's centre in a [`Matrix`] ([`Matrix::point`]): reads its neighbours by offset.
#[derive(Debug)]
pub struct Point<'a, T, I: MatrixIndex = usize> {
    m: Matrix<'a, T, I>,
    r: I,
    c: I,
    /// The address of element `r * cols + c` (wrapping in `usize`): where the neighbours'
    /// addresses are counted from. It may lie outside the data; it is never read itself.
    at: *const T,
}

impl<T, I: MatrixIndex> Clone for Point<'_, T, I> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T, I: MatrixIndex> Copy for Point<'_, T, I> {}

impl<'a, T, I: MatrixIndex> Point<'a, T, I> {
    /// The address of `(r + dr, c + dc)` if it lies inside the matrix.
    #[inline(always)]
    fn address(&self, dr: isize, dc: isize) -> Option<*const T> {
        let rr = self.r.checked_add_signed(dr)?;
        let cc = self.c.checked_add_signed(dc)?;
        if rr < self.m.rows && cc < self.m.cols {
            // Wrapping address arithmetic is exact modulo 2^usize::BITS: this address is
            // congruent to `data + (r * cols + c) + (dr * cols + dc)` elements =
            // `data + ((r + dr) * cols + (c + dc))` = `data + (rr * cols + cc)` (`rr` and `cc`
            // are exact: the adds above did not overflow). That element lies inside the matrix,
            // below `rows * cols <= len`, so its address is a real address inside the data,
            // and the two are equal.
            let step = dr.wrapping_mul(self.m.cols.to_usize() as isize).wrapping_add(dc);
            Some(self.at.wrapping_offset(step))
        } else {
            None
        }
    }

    /// The neighbour `(r + dr, c + dc)`, or `None` outside the matrix.
    #[inline(always)]
    #[must_use]
    pub fn get(&self, dr: isize, dc: isize) -> Option<&'a T> {
        let p = self.address(dr, dc)?;
        // SAFETY: `p` is the address of an element inside the matrix (`address`), one of the
        // `rows * cols <= len` elements `data` borrows for `'a`.
        Some(unsafe { &*p })
    }

    /// The neighbour `(r + dr, c + dc)`, or `default` outside the matrix: a branch around the
    /// load, as C++'s `gx > 0 ? u[i - 1] : 0` (where [`Matrix::load_or`] selects, branch-free,
    /// after a load from a clamped address).
    #[inline(always)]
    #[must_use]
    pub fn load_or(&self, dr: isize, dc: isize, default: T) -> T
    where
        T: Copy,
    {
        // Not through `get`: an `Option<&T>` is matched by comparing the address with null,
        // which LLVM does not always see through.
        match self.address(dr, dc) {
            // SAFETY: as in `get`.
            Some(p) => unsafe { *p },
            None => default,
        }
    }
}

/// Whether `want` elements from `start` lie inside `0 .. len` (no overflow: `len - start`).
#[inline(always)]
fn span_fits<I: MatrixIndex>(start: I, len: I, want: usize) -> bool {
    match I::from_usize(want) {
        Some(w) => start <= len && w <= len.sub(start),
        None => false,
    }
}

/// `⌈len / step⌉`, and whether `step` divides `len` (`(0, false)` for a zero `step`).
#[inline(always)]
const fn steps(len: usize, step: usize) -> (usize, bool) {
    if step == 0 { (0, false) } else { (len.div_ceil(step), len.is_multiple_of(step)) }
}

/// A row or column strip of `R × C` windows of a [`Matrix`] ([`Matrix::row_strip`],
/// [`Matrix::col_strip`]): an iterator of [`Window`]s, each checked; [`split`](Self::split)
/// it to read a strip that lies wholly inside the matrix with no check.
#[derive(Debug)]
pub struct Strip<'a, T, const R: usize, const C: usize, I: MatrixIndex = usize> {
    m: Matrix<'a, T, I>,
    r0: I,
    c0: I,
    /// Walked along a row (left to right), else down a column.
    across: bool,
    next: usize,
    steps: usize,
    /// Every window lies inside the matrix.
    full: bool,
}

impl<T, const R: usize, const C: usize, I: MatrixIndex> Clone for Strip<'_, T, R, C, I> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T, const R: usize, const C: usize, I: MatrixIndex> Copy for Strip<'_, T, R, C, I> {}

impl<'a, T, const R: usize, const C: usize, I: MatrixIndex> Strip<'a, T, R, C, I> {
    /// Whether every window of the strip lies inside the matrix.
    #[inline(always)]
    #[must_use]
    pub const fn is_full(&self) -> bool {
        self.full
    }

    /// The strip as a [`FullStrip`] (windows read without checks) if every window of it lies
    /// inside the matrix, else itself. A GEMM checks both of its strips together, with
    /// [`split!`](crate::split)'s two-view form.
    #[inline(always)]
    #[must_use]
    pub fn split(self) -> Split<FullStrip<'a, T, R, C, I>, Self> {
        if self.full {
            // The first corner's offset and the step between corners, in `I`: C columns along
            // a row, R rows down a column (R * cols <= rows * cols, which fits `I`, since the
            // full strip's windows lie inside the matrix; wrapping only when there is no
            // window at all).
            let stride =
                if self.across { I::truncate(C) } else { I::truncate(R).mul_add_wrapping(self.m.cols, I::ZERO) };
            // The corner of the next window (the first, unless some were taken already):
            // wrapping arithmetic in `I` whose true value, an offset inside the matrix, fits.
            let base = self
                .r0
                .mul_add_wrapping(self.m.cols, self.c0)
                .add_wrapping(I::truncate(self.next).mul_add_wrapping(stride, I::ZERO));
            Split::Full(FullStrip {
                data: self.m.data.as_ptr(),
                base,
                stride,
                cols: self.m.cols,
                left: self.steps - self.next,
                _life: PhantomData,
            })
        } else {
            Split::Edge(self)
        }
    }
}

impl<'a, T, const R: usize, const C: usize, I: MatrixIndex> Iterator for Strip<'a, T, R, C, I> {
    type Item = Window<'a, T, R, C, I>;

    /// The next window, checked as [`Matrix::window`] checks it.
    #[inline(always)]
    fn next(&mut self) -> Option<Self::Item> {
        if self.next >= self.steps {
            return None;
        }
        // `next * C < cols` (or `next * R < rows`): fits `I`.
        let (r, c) =
            if self.across { (self.r0, I::truncate(self.next * C)) } else { (I::truncate(self.next * R), self.c0) };
        self.next += 1;
        Some(self.m.window::<R, C>(r, c))
    }

    #[inline(always)]
    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.steps - self.next;
        (n, Some(n))
    }
}

impl<T, const R: usize, const C: usize, I: MatrixIndex> ExactSizeIterator for Strip<'_, T, R, C, I> {}

/// A strip whose every window lies inside its matrix ([`Strip::split`]): an iterator of
/// [`FullWindow`]s, one add per step (C++'s pointer increment), no check.
#[derive(Debug)]
pub struct FullStrip<'a, T, const R: usize, const C: usize, I: MatrixIndex = usize> {
    data: *const T,
    /// The offset of the next window's corner.
    base: I,
    /// From one window's corner to the next.
    stride: I,
    cols: I,
    /// Windows not yet yielded.
    left: usize,
    _life: PhantomData<&'a [T]>,
}

impl<'a, T, const R: usize, const C: usize, I: MatrixIndex> Iterator for FullStrip<'a, T, R, C, I> {
    type Item = FullWindow<'a, T, R, C, I>;

    #[inline(always)]
    fn next(&mut self) -> Option<Self::Item> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        // Every window of the strip lies inside the matrix (how `split` made this), so this
        // one does: its reads need no check.
        let w = FullWindow { data: self.data, base: self.base, cols: self.cols, _life: PhantomData };
        // Wrapping: after the last window the offset may pass the matrix; it is never used.
        self.base = self.base.add_wrapping(self.stride);
        Some(w)
    }

    #[inline(always)]
    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl<T, const R: usize, const C: usize, I: MatrixIndex> ExactSizeIterator for FullStrip<'_, T, R, C, I> {}

/// An `R × C` window of a [`Matrix`] at `(r0, c0)` (made by [`Matrix::window`]).
#[derive(Debug)]
pub struct Window<'a, T, const R: usize, const C: usize, I: MatrixIndex = usize> {
    m: Matrix<'a, T, I>,
    r0: I,
    c0: I,
    full: bool,
}

impl<T, const R: usize, const C: usize, I: MatrixIndex> Clone for Window<'_, T, R, C, I> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T, const R: usize, const C: usize, I: MatrixIndex> Copy for Window<'_, T, R, C, I> {}

impl<'a, T, const R: usize, const C: usize, I: MatrixIndex> Window<'a, T, R, C, I> {
    /// Whether the whole window lies inside the matrix.
    #[inline(always)]
    #[must_use]
    pub const fn is_full(&self) -> bool {
        self.full
    }

    /// Element `(i, j)` of the window (matrix element `(r0 + i, c0 + j)`), or `None` outside
    /// the matrix.
    ///
    /// # Panics
    /// If `i >= R` or `j >= C`.
    #[inline(always)]
    #[must_use]
    #[track_caller]
    pub fn get(&self, i: usize, j: usize) -> Option<&'a T> {
        assert!(i < R && j < C, "matrix window index out of bounds");
        self.m.get(self.r0.add_wrapping(I::truncate(i)), self.c0.add_wrapping(I::truncate(j)))
    }

    /// Element `(i, j)` of the window, or `default` outside the matrix ([`Matrix::load_or`]:
    /// for the check-free read of a full window, [`split`](Self::split) it).
    ///
    /// # Panics
    /// If `i >= R` or `j >= C` (constants: the check folds away for indices LLVM can bound).
    #[inline(always)]
    #[must_use]
    #[track_caller]
    pub fn load_or(&self, i: usize, j: usize, default: T) -> T
    where
        T: Copy,
    {
        assert!(i < R && j < C, "matrix window index out of bounds");
        // Wrapping: a window may start before the matrix (a halo at row -1); such elements are
        // far outside, and read as `default`. (`i < R` fits `I`: `R` is small or the window
        // is not full and every element goes through the checks.)
        self.m.load_or(self.r0.add_wrapping(I::truncate(i)), self.c0.add_wrapping(I::truncate(j)), default)
    }

    /// The window as a [`FullWindow`] (no checks) if it lies wholly inside the matrix, else
    /// itself: see [`split!`](crate::split) for code that handles both with one body.
    #[inline(always)]
    #[must_use]
    pub fn split(self) -> Split<FullWindow<'a, T, R, C, I>, Self> {
        if self.full {
            // The corner's offset, kept in `I`: each element's is then one more add in `I`
            // and a single widening (C++'s `a[base + i * cols + j]`), not 64-bit arithmetic.
            let base = self.r0.mul_add_wrapping(self.m.cols, self.c0);
            Split::Full(FullWindow { data: self.m.data.as_ptr(), base, cols: self.m.cols, _life: PhantomData })
        } else {
            Split::Edge(self)
        }
    }
}

/// An `R × C` window known to lie inside its matrix: reads without checks (but the constant
/// one on `(i, j)`, which LLVM removes for indices it can bound).
#[derive(Debug)]
pub struct FullWindow<'a, T, const R: usize, const C: usize, I: MatrixIndex = usize> {
    /// The matrix's first element.
    data: *const T,
    /// The offset of the window's corner `(r0, c0)`.
    base: I,
    cols: I,
    _life: PhantomData<&'a [T]>,
}

impl<T, const R: usize, const C: usize, I: MatrixIndex> Clone for FullWindow<'_, T, R, C, I> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T, const R: usize, const C: usize, I: MatrixIndex> Copy for FullWindow<'_, T, R, C, I> {}

impl<'a, T, const R: usize, const C: usize, I: MatrixIndex> FullWindow<'a, T, R, C, I> {
    /// The address of window element `(i, j)`: the offset `base + i * cols` of its row's first
    /// element, in `I` (for `i < R` that of matrix element `(r0 + i, c0)`, inside the matrix:
    /// less than its element count, which fits `I`, so nothing wraps), then `j` more.
    ///
    /// The element's address is made in two steps, the row's first element (`base + i * cols`,
    /// in `I`) and then `j` more: one row's elements then share one address computation, with
    /// constant columns folded into the load (C++'s `p[-1]`, `p[1]`).
    #[inline(always)]
    fn element(&self, i: usize, j: usize) -> *const T {
        let row = self.base.add_wrapping(I::truncate(i).mul_add_wrapping(self.cols, I::ZERO)).to_usize();
        // SAFETY: for `i < R`, `j < C` (the callers' checks) both offsets are of elements
        // (r0 + i, c0) and (r0 + i, c0 + j) of the window, inside the matrix's slice.
        unsafe { self.data.add(row).add(j) }
    }

    /// Element `(i, j)` of the window.
    ///
    /// # Panics
    /// If `i >= R` or `j >= C`.
    #[inline(always)]
    #[must_use]
    #[track_caller]
    pub fn get(&self, i: usize, j: usize) -> Option<&'a T> {
        assert!(i < R && j < C, "matrix window index out of bounds");
        // SAFETY: the window lies inside the matrix (how `split` made this) and (i, j) inside
        // the window, so the offset is of an element of the matrix's slice.
        Some(unsafe { &*self.element(i, j) })
    }

    /// Element `(i, j)` of the window (`_default` is never needed: the signature matches
    /// [`Window::load_or`], so one [`split!`](crate::split) body serves both).
    ///
    /// # Panics
    /// If `i >= R` or `j >= C`.
    #[inline(always)]
    #[must_use]
    #[track_caller]
    pub fn load_or(&self, i: usize, j: usize, _default: T) -> T
    where
        T: Copy,
    {
        assert!(i < R && j < C, "matrix window index out of bounds");
        // SAFETY: as in `get`.
        unsafe { *self.element(i, j) }
    }
}

/// Either the fast, check-free form of a view (`Full`) or the checked one (`Edge`): what
/// [`Window::split`] and [`ThreadTile::split`] return.
#[derive(Debug)]
pub enum Split<F, E> {
    /// Wholly inside the matrix.
    Full(F),
    /// At its edge: every access checked.
    Edge(E),
}

/// Runs one body on the check-free form of a view when it lies wholly inside its matrix, and on
/// the checked form at the edge: the check is made once (per block or thread), and the common
/// path is compiled without any. The body is expanded twice, once for each form (both have the
/// same methods: `load_or`/`get` for windows, `set`/`get_mut` for thread tiles).
///
/// ```
/// # use cohort::prelude::*;
/// # fn f(a: Matrix<'_, f32>, tile: SharedArray<[f32; 33], 32>, x: usize, y: usize, by: usize, bx: usize) {
/// cohort::split!(a.window::<32, 32>(by * 32, bx * 32), |w| {
///     for j in 0..4 {
///         tile.store_at(y + 8 * j, x, w.load_or(y + 8 * j, x, 0.0));
///     }
/// });
/// # }
/// ```
///
/// Two views (windows or [`Strip`]s, which are `Copy`) are split together: the body gets both
/// check-free forms when both lie inside their matrices, else both checked forms — a GEMM's
/// k-loop over A's row strip and B's column strip, checked once per block:
///
/// ```
/// # use cohort::prelude::*;
/// # fn f(a: Matrix<'_, f32, u32>, b: Matrix<'_, f32, u32>, m0: u32, n0: u32, x: usize, y: usize) {
/// let mut acc = 0.0;
/// cohort::split!(a.row_strip::<32, 32>(m0), b.col_strip::<32, 32>(n0), |ra, cb| {
///     for (wa, wb) in ra.zip(cb) {
///         // one step of the k-loop: wa is A's 32 × 32 tile at (m0, t), wb B's at (t, n0)
///         acc += wa.load_or(y, x, 0.0) * wb.load_or(y, x, 0.0);
///     }
/// });
/// # }
/// ```
#[macro_export]
macro_rules! split {
    ($view:expr, |$p:pat_param| $body:expr) => {
        match ($view).split() {
            $crate::matrix::Split::Full($p) => $body,
            $crate::matrix::Split::Edge($p) => $body,
        }
    };
    ($first:expr, $second:expr, |$p:pat_param, $q:pat_param| $body:expr) => {{
        let (first, second) = ($first, $second);
        match (first.split(), second.split()) {
            ($crate::matrix::Split::Full($p), $crate::matrix::Split::Full($q)) => $body,
            _ => {
                let ($p, $q) = (first, second);
                $body
            }
        }
    }};
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
    ///
    /// Non-decreasing in each of `tx`, `ty`, `tr`, `tc` (the launch check of [`Within`] takes
    /// the thread and block at the far corner for the last row and column written).
    #[doc(hidden)]
    fn place(tx: usize, ty: usize, x: usize, y: usize, tr: usize, tc: usize) -> [usize; 4];
    /// Whether the layout is [`Within`] (possibly under [`Transposed`] or [`TransposedTiles`]):
    /// its launches are checked to stay inside the matrix.
    #[doc(hidden)]
    const WITHIN: bool = false;
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

/// Layout `L`, for launches whose every thread writes inside the matrix: a 1-D or 2-D grid
/// (`gridDim.z == 1`) that does not overhang it, as CUDA C++ kernels without a bounds check
/// assume (`out[gy * n + gx] = …` for a grid of exactly `n / 32 × n / 8` blocks).
///
/// The host launcher checks it before launching — the last row and column the grid's far
/// corner writes lie inside the matrix — and refuses any other launch with an `Err` naming the
/// kernel, the parameter, the matrix and the grid. In exchange [`DisjointMatrix::tile`]
/// computes no bound and [`ThreadTile::set`] checks nothing: a thread's offset is one
/// multiply-add, and its tile is always [full](ThreadTile::is_full).
///
/// ```
/// use cohort::prelude::*;
///
/// // One element per thread; launched with exactly `cols / 32 × rows / 8` blocks of 32 × 8.
/// #[kernel]
/// pub fn scale(shape: BlockShape<32, 8>, a: Matrix<f32, u32>, mut out: DisjointMatrix<f32, Within<Cyclic>, u32>) {
///     let mut t = out.tile(&shape);
///     let (r, c) = (t.row(0) as u32, t.col(0) as u32);
///     t.set(0, 0, 2.0 * a.load_or(r, c, 0.0));
/// }
/// ```
#[derive(Debug)]
pub struct Within<L>(PhantomData<L>);

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
    impl<L: super::Layout> Sealed for super::Within<L> {}
}

// Proof sketch of disjointness, layout by layout (block tile position `(tr, tc)` is one-to-one
// in the block index, see `DisjointMatrix::tile`):
// - `Cyclic`: row = tr·(Y·KR) + ty + Y·k with ty < Y, k < KR is one-to-one onto
//   tr·(Y·KR) + [0, Y·KR); columns likewise; so (tr, tc, tx, ty, k, l) ↦ (row, col) is one-to-one.
// - `Blocked`: row = tr·(Y·KR) + ty·KR + k, the same argument.
// - `Transposed<L>`: swapping the two coordinates of a one-to-one map keeps it one-to-one.
// - `TransposedTiles<L>`: `L` applied to the swapped tile position, itself one-to-one.
// - `Within<L>`: `L`'s map, with the tile position `(blockIdx.y, blockIdx.x)` (`gridDim.z == 1`,
//   checked at launch, so the general position is that), one-to-one as `L`'s.
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
    const WITHIN: bool = L::WITHIN;
    #[inline(always)]
    fn place(tx: usize, ty: usize, x: usize, y: usize, tr: usize, tc: usize) -> [usize; 4] {
        let [r0, dr, c0, dc] = L::place(tx, ty, x, y, tr, tc);
        [c0, dc, r0, dr]
    }
}

impl<L: Layout> Layout for TransposedTiles<L> {
    const KR: usize = L::KR;
    const KC: usize = L::KC;
    const WITHIN: bool = L::WITHIN;
    #[inline(always)]
    fn place(tx: usize, ty: usize, x: usize, y: usize, tr: usize, tc: usize) -> [usize; 4] {
        L::place(tx, ty, x, y, tc, tr)
    }
}

impl<L: Layout> Layout for Within<L> {
    const KR: usize = L::KR;
    const KC: usize = L::KC;
    const WITHIN: bool = true;
    #[inline(always)]
    fn place(tx: usize, ty: usize, x: usize, y: usize, tr: usize, tc: usize) -> [usize; 4] {
        L::place(tx, ty, x, y, tr, tc)
    }
}

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
    /// `ptr` must be valid for reads and writes of `rows * cols` elements of `T` for `'a`
    /// (any pointer, null included, when that is 0: nothing is then written), `rows * cols` not
    /// overflowing `I`; nothing else may access that memory meanwhile except other threads of
    /// the same launch through a `DisjointMatrix` made from the same `ptr`, `rows`, `cols`, `L`
    /// and `I`. If `L` is [`Within`], the launch's grid is 1-D or 2-D (`gridDim.z == 1`) and
    /// every thread's elements lie inside the matrix
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
    /// The block's tile position is `(blockIdx.y + gridDim.y * blockIdx.z, blockIdx.x)`
    /// (exchanged by [`TransposedTiles`]); blocks past the matrix get tiles whose elements are
    /// all outside, and write nothing.
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
                && c0 + dc * (L::KC - 1) < self.cols.to_usize());
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
            .add_wrapping(I::truncate(l).mul_add_wrapping(self.dc, I::ZERO))
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

#[cfg(test)]
mod tests {
    use super::{Matrix, MatrixIndex};

    #[test]
    fn u32_shapes_fit_or_are_refused() {
        // Every offset below rows * cols must fit u32: 2^16 × 2^16 = 2^32 does not.
        assert_eq!(u32::shape(1 << 16, (1 << 16) - 1), Some((1 << 16, (1 << 16) - 1)));
        assert_eq!(u32::shape(1 << 16, 1 << 16), None);
        assert_eq!(u32::shape(u32::MAX as usize, 1), Some((u32::MAX, 1)));
        assert_eq!(u32::shape(u32::MAX as usize, 2), None);
        // A side past u32::MAX is refused even with no element at all.
        assert_eq!(u32::shape(1 << 32, 0), None);
        assert_eq!(u32::shape(0, 1 << 32), None);
        assert_eq!(u32::shape(0, 0), Some((0, 0)));
        // usize offsets: the caller guarantees rows * cols fits usize.
        assert_eq!(usize::shape(1 << 40, 1 << 20), Some((1 << 40, 1 << 20)));
        // What a host launcher can check, by parameter type: `abi`'s tests.
    }

    /// Every element of every window of a strip, read through its checked form and (when full)
    /// its check-free form, against the matrix read directly.
    fn check_strip<const R: usize, const C: usize>(m: Matrix<'_, i32, u32>, across: bool, at: u32) -> (usize, bool) {
        let strip = if across { m.row_strip::<R, C>(at) } else { m.col_strip::<R, C>(at) };
        let want = |s: usize, i: usize, j: usize| {
            let (r, c) = if across { (at as usize + i, s * C + j) } else { (s * R + i, at as usize + j) };
            m.get(r as u32, c as u32).copied().unwrap_or(-1)
        };
        let mut n = 0;
        for (s, w) in strip.enumerate() {
            for (i, j) in (0..R).flat_map(|i| (0..C).map(move |j| (i, j))) {
                assert_eq!(w.load_or(i, j, -1), want(s, i, j), "edge form, window {s}, ({i}, {j})");
            }
            n += 1;
        }
        assert_eq!(strip.len(), n);
        if let super::Split::Full(f) = strip.split() {
            assert_eq!(f.len(), n);
            for (s, w) in f.enumerate() {
                for (i, j) in (0..R).flat_map(|i| (0..C).map(move |j| (i, j))) {
                    assert_eq!(w.load_or(i, j, -1), want(s, i, j), "full form, window {s}, ({i}, {j})");
                }
            }
        }
        (n, strip.is_full())
    }

    #[test]
    fn strips_walk_the_windows_and_are_full_only_inside() {
        let data: [i32; 48] = core::array::from_fn(|i| i as i32);
        let m = Matrix::new(&data[..], 6u32, 8u32).unwrap();
        // Rows 2..4 across 8 columns in steps of 4: two full windows.
        assert_eq!(check_strip::<2, 4>(m, true, 2), (2, true));
        // Steps of 3 don't divide 8: three windows, the last one past the edge.
        assert_eq!(check_strip::<2, 3>(m, true, 2), (3, false));
        // Rows 5..7 run past the bottom.
        assert_eq!(check_strip::<2, 4>(m, true, 5), (2, false));
        // A start past the matrix (a wrapped "negative" one too).
        assert_eq!(check_strip::<2, 4>(m, true, 7), (2, false));
        assert_eq!(check_strip::<2, 4>(m, true, u32::MAX), (2, false));
        // Columns 4..8 down 6 rows in steps of 3 (full), of 4 (not: 6 % 4 != 0).
        assert_eq!(check_strip::<3, 4>(m, false, 4), (2, true));
        assert_eq!(check_strip::<4, 4>(m, false, 4), (2, false));
        assert_eq!(check_strip::<3, 4>(m, false, 5), (2, false));
        // Zero-sized windows are never full.
        assert!(!check_strip::<0, 4>(m, true, 0).1);
        // Splitting after taking a window starts at the next one.
        let mut s = m.row_strip::<2, 4>(2);
        let _ = s.next();
        let super::Split::Full(mut f) = s.split() else { panic!("inside") };
        assert_eq!(f.len(), 1);
        assert_eq!(f.next().unwrap().load_or(0, 0, -1), 2 * 8 + 4);
        assert!(f.next().is_none());
    }

    /// What a point's neighbour must be: the element at the exact (unwrapped) coordinates.
    fn neighbour(data: &[i32], rows: usize, cols: usize, r: i128, c: i128) -> Option<i32> {
        ((0..rows as i128).contains(&r) && (0..cols as i128).contains(&c))
            .then(|| data[(r * cols as i128 + c) as usize])
    }

    #[test]
    fn points_read_their_neighbours_and_nothing_outside() {
        let data: [i32; 35] = core::array::from_fn(|i| 100 + i as i32);
        let (rows, cols) = (5usize, 7usize);
        let offsets = [-3isize, -2, -1, 0, 1, 2, 3, isize::MIN, isize::MAX, 1 << 32, -(1 << 32)];
        // u32: points inside, next to the edges, far outside and at u32::MAX, where `r + 1`
        // would wrap to row 0 (inside) if the add were not checked.
        let m32 = Matrix::new(&data[..], rows as u32, cols as u32).unwrap();
        let near = [0u32, 1, 4, 5, 6, 7, 8, u32::MAX, u32::MAX - 1, u32::MAX - 2];
        for (&r, &c) in near.iter().flat_map(|r| near.iter().map(move |c| (r, c))) {
            let p = m32.point(r, c);
            for (&dr, &dc) in offsets.iter().flat_map(|dr| offsets.iter().map(move |dc| (dr, dc))) {
                let want = neighbour(&data, rows, cols, r as i128 + dr as i128, c as i128 + dc as i128);
                assert_eq!(p.get(dr, dc).copied(), want, "u32 point ({r}, {c}) + ({dr}, {dc})");
                assert_eq!(p.load_or(dr, dc, -1), want.unwrap_or(-1));
            }
        }
        // usize: the same, plus points whose offset `r * cols + c` wraps usize, from which a
        // large negative step comes back inside.
        let m = Matrix::new(&data[..], rows, cols).unwrap();
        let near = [0usize, 1, 4, 5, 6, 7, 8, usize::MAX, usize::MAX - 1, 1 << 62, 1 << 63];
        for (&r, &c) in near.iter().flat_map(|r| near.iter().map(move |c| (r, c))) {
            let p = m.point(r, c);
            for (&dr, &dc) in offsets.iter().flat_map(|dr| offsets.iter().map(move |dc| (dr, dc))) {
                let want = neighbour(&data, rows, cols, r as i128 + dr as i128, c as i128 + dc as i128);
                assert_eq!(p.get(dr, dc).copied(), want, "usize point ({r}, {c}) + ({dr}, {dc})");
            }
        }
        let far = m.point(1 << 62, 3);
        assert_eq!(far.get(1 - (1 << 62), 2).copied(), Some(data[7 + 5]));
        assert_eq!(far.get(-(1 << 62), 0).copied(), Some(data[3]));
        assert_eq!(far.get(-(1 << 62) - 1, 0), None);
    }

    #[test]
    fn u32_matrix_new_checks_the_product_in_u32() {
        let data = [1.0f32; 12];
        assert!(Matrix::new(&data[..], 3u32, 4u32).is_some());
        assert!(Matrix::new(&data[..], 4u32, 4u32).is_none());
        // 2^16 × 2^16 wraps to 0 in u32: refused, not taken for an empty matrix.
        assert!(Matrix::new(&data[..], 1u32 << 16, 1u32 << 16).is_none());
        assert!(Matrix::new(&data[..0], 0u32, 0u32).is_none());
        let m = Matrix::new(&data[..], 3u32, 4u32).unwrap();
        assert_eq!(m.load_or(2, 3, -1.0), 1.0);
        assert_eq!(m.load_or(3, 0, -1.0), -1.0);
        assert_eq!(m.load_or(0, 4, -1.0), -1.0);
        assert_eq!(m.load_or(u32::MAX, u32::MAX, -1.0), -1.0);
    }
}
