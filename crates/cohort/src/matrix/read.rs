//! Reading: [`Matrix`] (branch-free checked reads), a stencil's [`Point`], once-checked
//! [`Window`]s and the [`Strip`]s of them a GEMM's k-loop walks, with their check-free forms.

use core::marker::PhantomData;

use super::{MatrixIndex, Split};

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

impl<T, const R: usize, const C: usize, I: MatrixIndex> FullStrip<'_, T, R, C, I> {
    /// The next window's first element, the step from one window's first element to the next
    /// (in elements), the matrix's row length, and the windows left.
    #[inline(always)]
    pub(crate) fn span(&self) -> (*const T, usize, usize, usize) {
        // With windows left, `base` is the offset of the next one's corner, inside the matrix's
        // slice; with none, the address is only computed (`wrapping_add`), never read.
        let first = self.data.wrapping_add(self.base.to_usize());
        (first, self.stride.to_usize(), self.cols.to_usize(), self.left)
    }
}

impl<'a, T, const R: usize, const C: usize, I: MatrixIndex> FullStrip<'a, T, R, C, I> {
    /// The windows left, as an `I`: lossless, for there are at most as many as the matrix has
    /// columns (a row strip: windows `C >= 1` wide) or rows (a column strip), which are `I`s.
    #[inline(always)]
    pub(crate) fn len_index(&self) -> I {
        I::truncate(self.left)
    }

    /// Window `k` counted from the next one (what `nth(k)` would yield), without advancing, as
    /// the next window and the offset from it to window `k` (`k · stride` elements); `None` if
    /// `k` is not below [`len_index`](Self::len_index). One comparison and one multiply in
    /// `I`: a k-loop's "tile `k + STAGES - 1`, if any" without a 64-bit counter per strip, and
    /// whose chunk addresses are a loop-invariant pointer plus one scaled offset (`IMAD.WIDE`).
    #[inline(always)]
    pub(crate) fn peek(&self, k: I) -> Option<(FullWindow<'a, T, R, C, I>, usize)> {
        if k >= self.len_index() {
            return None;
        }
        // k < left: windows 0 and k are the strip's, inside the matrix (how `split` made
        // this); window k's corner offset `base + k · stride` is inside the matrix, so `k ·
        // stride` fits `I` and the wrapping multiply is exact.
        let next = FullWindow { data: self.data, base: self.base, cols: self.cols, _life: PhantomData };
        Some((next, k.mul_add_wrapping(self.stride, I::ZERO).to_usize()))
    }
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
    /// The matrix's row length (its columns), in elements.
    #[inline(always)]
    pub(crate) fn row_len(&self) -> usize {
        self.cols.to_usize()
    }

    /// The address of window element `(i, j)`: the offset `base + i * cols` of its row's first
    /// element, in `I` (for `i < R` that of matrix element `(r0 + i, c0)`, inside the matrix:
    /// less than its element count, which fits `I`, so nothing wraps), then `j` more.
    ///
    /// The element's address is made in two steps, the row's first element (`base + i * cols`,
    /// in `I`) and then `j` more: one row's elements then share one address computation, with
    /// constant columns folded into the load (C++'s `p[-1]`, `p[1]`).
    #[inline(always)]
    pub(crate) fn element(&self, i: usize, j: usize) -> *const T {
        let row = self.base.add_wrapping(I::truncate(i).mul_add_wrapping(self.cols, I::ZERO)).to_usize();
        // SAFETY: for `i < R`, `j < C` (the callers' checks) both offsets are of elements
        // (r0 + i, c0) and (r0 + i, c0 + j) of the window, inside the matrix's slice.
        unsafe { self.data.add(row).add(j) }
    }

    /// The address of window element `(i, j)` with its whole offset `base + i * cols + j`
    /// made in `I` (inside the matrix for `i < R`, `j < C`: nothing wraps) and then scaled
    /// once: `IMAD.WIDE` of a 32-bit index, where [`element`](Self::element) adds a 64-bit
    /// column (for columns only known at run time, such as a thread's chunk of a row).
    #[inline(always)]
    pub(crate) fn element_flat(&self, i: usize, j: usize) -> *const T {
        let at = self.base.add_wrapping(I::truncate(i).mul_add_wrapping(self.cols, I::truncate(j))).to_usize();
        // SAFETY: for `i < R`, `j < C` (the callers' checks) the offset is of element
        // (r0 + i, c0 + j) of the window, inside the matrix's slice.
        unsafe { self.data.add(at) }
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
