//! Device `printf` (Programming Guide §"Formatted Output").
//!
//! [`printf!`](crate::printf) takes a C format string and arguments, exactly like CUDA's
//! `printf`, and calls the driver's `vprintf`. Output appears on the host's stdout when the
//! host next synchronizes with the device (at most the printf FIFO size, 1 MiB by default, per
//! launch). On the CPU device, each call's text is kept, whole, with the rest of its host
//! launch's (child grids included) and written in one piece when the launch returns;
//! nothing is dropped. `cohort_runtime::capture_stdout` captures either.
//!
//! | Rust argument | C promotion | conversions |
//! |---|---|---|
//! | `i8`, `i16`, `i32`, `bool` | `int` | `%d %i %c` |
//! | `u8`, `u16`, `u32`, `char` | `unsigned int` | `%u %x %X %o %c` |
//! | `i64`, `isize` | `long long` | `%lld %ld` |
//! | `u64`, `usize` | `unsigned long long` | `%llu %lu %llx` |
//! | `f32`, `f64` | `double` | `%f %e %g %a` |
//! | `*const T`, `*mut T` | pointer | `%p` |
//! | `&CStr` | `const char*` | `%s` |
//!
//! The number of conversions in the format string is checked against the number of arguments,
//! and each argument's type against its conversion (the table above), at compile time: `%s`
//! takes only a `&CStr` (`vprintf` reads through it), `%n` is refused. A kernel that calls `printf!` keeps its arguments in local memory for the
//! call, as CUDA C++ does.

/// A value `printf!` can pass: written into the argument buffer in its C-promoted form.
pub trait PrintfArg: Copy {
    /// Size (and alignment) of the promoted value in the buffer: 4 or 8.
    const SIZE: usize;
    /// Which conversions take it (one of the `class` constants).
    const CLASS: u8;
    /// The promoted value's bytes.
    fn promoted(self) -> u64;
}

macro_rules! printf_arg {
    ($($t:ty => $size:literal, $class:ident, |$v:ident| $e:expr;)*) => {$(
        impl Takes<{ class::$class }> for $t {}
        impl PrintfArg for $t {
            const SIZE: usize = $size;
            const CLASS: u8 = class::$class;
            #[inline(always)]
            fn promoted(self) -> u64 {
                let $v = self;
                $e
            }
        }
    )*};
}

printf_arg! {
    i8 => 4, INT, |v| v as i32 as u32 as u64;
    i16 => 4, INT, |v| v as i32 as u32 as u64;
    i32 => 4, INT, |v| v as u32 as u64;
    u8 => 4, INT, |v| v as u64;
    u16 => 4, INT, |v| v as u64;
    u32 => 4, INT, |v| v as u64;
    bool => 4, INT, |v| v as u64;
    char => 4, INT, |v| v as u64;
    i64 => 8, LONG, |v| v as u64;
    isize => 8, LONG, |v| v as u64;
    u64 => 8, LONG, |v| v;
    usize => 8, LONG, |v| v as u64;
    f32 => 8, DOUBLE, |v| (v as f64).to_bits();
    f64 => 8, DOUBLE, |v| v.to_bits();
}

impl<T> Takes<{ class::POINTER }> for *const T {}
impl<T> Takes<{ class::POINTER }> for *mut T {}
impl Takes<{ class::STRING }> for &core::ffi::CStr {}
impl<T> PrintfArg for *const T {
    const SIZE: usize = 8;
    const CLASS: u8 = class::POINTER;
    #[inline(always)]
    fn promoted(self) -> u64 {
        self as usize as u64
    }
}
impl<T> PrintfArg for *mut T {
    const SIZE: usize = 8;
    const CLASS: u8 = class::POINTER;
    #[inline(always)]
    fn promoted(self) -> u64 {
        self as usize as u64
    }
}
impl PrintfArg for &core::ffi::CStr {
    const SIZE: usize = 8;
    const CLASS: u8 = class::STRING;
    #[inline(always)]
    fn promoted(self) -> u64 {
        self.as_ptr() as usize as u64
    }
}

/// The argument buffer `vprintf` reads: each value at its own alignment, as CUDA lays it out.
#[doc(hidden)]
#[repr(C, align(8))]
pub struct ArgBuffer<const N: usize> {
    bytes: [u8; N],
    len: usize,
}

impl<const N: usize> ArgBuffer<N> {
    #[inline(always)]
    #[must_use]
    pub const fn new() -> Self {
        Self { bytes: [0; N], len: 0 }
    }

    /// Appends one argument at its natural alignment.
    #[inline(always)]
    pub fn push<A: PrintfArg>(&mut self, arg: A) {
        let at = (self.len + A::SIZE - 1) & !(A::SIZE - 1);
        let v = arg.promoted();
        if A::SIZE == 4 {
            self.bytes[at..at + 4].copy_from_slice(&(v as u32).to_le_bytes());
        } else {
            self.bytes[at..at + 8].copy_from_slice(&v.to_le_bytes());
        }
        self.len = at + A::SIZE;
    }

    #[inline(always)]
    #[must_use]
    pub const fn as_ptr(&self) -> *const u8 {
        self.bytes.as_ptr()
    }
}

impl<const N: usize> Default for ArgBuffer<N> {
    fn default() -> Self {
        Self::new()
    }
}

/// The kinds of argument a conversion takes (`PrintfArg::CLASS`, [`arg_class`]).
#[doc(hidden)]
pub mod class {
    /// `%d %i %u %x %X %o %c` and a `*` width or precision: a 4-byte integer.
    pub const INT: u8 = 1;
    /// The same with `l`, `ll`, `j`, `z`, `t` or `q`: an 8-byte integer.
    pub const LONG: u8 = 2;
    /// `%f %e %g %a` (either case): a double.
    pub const DOUBLE: u8 = 3;
    /// `%p`: a pointer (printed, not read through).
    pub const POINTER: u8 = 4;
    /// `%s`: a NUL-terminated string (`&CStr`), which `vprintf` reads.
    pub const STRING: u8 = 5;
    /// A conversion `printf!` refuses (`%n`, which writes through its argument, or an unknown
    /// letter).
    pub const REFUSED: u8 = 0xff;
}

/// The class of the `index`-th argument the C format string `fmt` consumes (see [`class`]);
/// [`class::REFUSED`] past the end.
#[doc(hidden)]
#[must_use]
pub const fn arg_class(fmt: &str, index: usize) -> u8 {
    let b = fmt.as_bytes();
    let mut i = 0;
    let mut n = 0;
    while i < b.len() {
        if b[i] == b'%' {
            i += 1;
            if i < b.len() && b[i] == b'%' {
                i += 1;
                continue;
            }
            let mut long = false;
            while i < b.len() {
                let c = b[i];
                if c == b'*' {
                    if n == index {
                        return class::INT;
                    }
                    n += 1;
                } else if matches!(c, b'l' | b'L' | b'q' | b'j' | b'z' | b't') {
                    long = true;
                } else if c.is_ascii_alphabetic() && c != b'h' {
                    if n == index {
                        return match c {
                            b'd' | b'i' | b'u' | b'x' | b'X' | b'o' | b'c' => {
                                if long {
                                    class::LONG
                                } else {
                                    class::INT
                                }
                            }
                            b'f' | b'F' | b'e' | b'E' | b'g' | b'G' | b'a' | b'A' => class::DOUBLE,
                            b'p' => class::POINTER,
                            b's' => class::STRING,
                            _ => class::REFUSED,
                        };
                    }
                    n += 1;
                    break;
                }
                i += 1;
            }
        }
        i += 1;
    }
    class::REFUSED
}

/// The types a conversion of class `C` takes (see [`class`]): `printf!`'s per-argument type
/// check, at type-check time.
#[doc(hidden)]
#[diagnostic::on_unimplemented(
    message = "printf!: a `{Self}` does not match its conversion in the format string",
    label = "an argument of this `printf!` call",
    note = "4-byte integers (i8 to u32, bool, char) take %d %i %u %x %o %c; 8-byte integers take %ld %lld %lu %llu \
            %lx; f32 and f64 take %f %e %g %a; pointers take %p; only a `&CStr` takes %s (vprintf reads through it); \
            %n is refused"
)]
pub trait Takes<const C: u8>: PrintfArg {}

/// `a`, whose type must be what its conversion (of class `C`) takes.
#[doc(hidden)]
#[inline(always)]
#[must_use]
pub const fn typed<A: Takes<C>, const C: u8>(a: A) -> A {
    a
}

/// How many arguments a C format string consumes (`%%` consumes none, `*` width or precision
/// one each). Used by `printf!` to check its arguments at compile time.
#[doc(hidden)]
#[must_use]
pub const fn conversions(fmt: &str) -> usize {
    let b = fmt.as_bytes();
    let mut i = 0;
    let mut n = 0;
    while i < b.len() {
        if b[i] == b'%' {
            i += 1;
            if i < b.len() && b[i] == b'%' {
                i += 1;
                continue;
            }
            // flags, width, precision, length, then the conversion letter
            while i < b.len() {
                let c = b[i];
                if c == b'*' {
                    n += 1;
                } else if c.is_ascii_alphabetic() && !matches!(c, b'h' | b'l' | b'L' | b'q' | b'j' | b'z' | b't') {
                    n += 1;
                    break;
                }
                i += 1;
            }
        }
        i += 1;
    }
    n
}

/// Calls the driver's `vprintf` ([`raw::vprintf_raw`](crate::raw::vprintf_raw)).
#[doc(hidden)]
pub use crate::raw::vprintf_raw;

/// CUDA's device `printf`: a C format string and arguments (see [`crate::print`]).
///
/// ```no_run
/// # use cohort::printf;
/// let (x, y) = (3u32, 0.5f32);
/// printf!("x = %u, y = %f\n", x, y);
/// ```
///
/// Returns the number of arguments `vprintf` parsed, or a negative value on error.
#[macro_export]
macro_rules! printf {
    ($fmt:literal $(, $arg:expr)* $(,)?) => {{
        const __COHORT_NARGS: usize = 0 $(+ { let _ = stringify!($arg); 1 })*;
        const _: () = assert!(
            $crate::print::conversions($fmt) == __COHORT_NARGS,
            concat!("printf!: the number of conversions in ", stringify!($fmt), " differs from the number of arguments")
        );
        let mut __cohort_args = $crate::print::ArgBuffer::<{ 8 * __COHORT_NARGS + 8 }>::new();
        $crate::__printf_push!(__cohort_args, $fmt, 0usize; $($arg,)*);
        // SAFETY: the format is NUL-terminated, its conversions were counted against the
        // arguments above and each argument's type checked against its conversion (so `%s`
        // reads only a `&CStr`, and `%n` is refused), and the buffer lays the promoted
        // arguments out as vprintf expects.
        unsafe { $crate::print::vprintf_raw(concat!($fmt, "\0").as_ptr(), __cohort_args.as_ptr()) }
    }};
}

/// `printf!`'s argument pusher: each argument through [`typed`] with its conversion's class.
#[doc(hidden)]
#[macro_export]
macro_rules! __printf_push {
    ($buf:ident, $fmt:literal, $i:expr; ) => {};
    ($buf:ident, $fmt:literal, $i:expr; $a:expr, $($rest:expr,)*) => {
        $buf.push($crate::print::typed::<_, { $crate::print::arg_class($fmt, $i) }>($a));
        $crate::__printf_push!($buf, $fmt, $i + 1; $($rest,)*);
    };
}
