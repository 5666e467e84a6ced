//! Host tests of the read views and the index types.

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
    ((0..rows as i128).contains(&r) && (0..cols as i128).contains(&c)).then(|| data[(r * cols as i128 + c) as usize])
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
