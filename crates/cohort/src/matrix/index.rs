//! The index type of a matrix: `usize`, or `u32` for 32-bit index arithmetic.

/// The index type of a [`Matrix`](super::Matrix): `usize` (any size), or `u32` (CUDA C++'s
/// `unsigned`: index arithmetic in 32 bits, one instruction where `usize` takes two to four — for
/// matrices of at most `u32::MAX` elements, which [`Matrix::new`](super::Matrix::new) checks).
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
