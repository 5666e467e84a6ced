//! A persistent kernel's output tiles: [`TileGrid`] places the [`Tile`]s of
//! [`tiles`](super::tiles) on a grid of matrix tiles, and
//! [`DisjointMatrix::tile_at`] gives a thread its elements of one.

use super::Tile;
use crate::matrix::{DisjointMatrix, Layout, MatrixIndex, ThreadTile};
use crate::shape::BlockShape;

/// A `tiles_m × tiles_n` grid of output tiles (a matrix of block tiles) in the order persistent
/// GEMMs sweep it (CUTLASS's grouped raster, `GROUP_M`): groups of `group_m` tile rows, each
/// group swept column by column, so that the tiles in flight at once share A's rows and B's
/// columns in L2.
///
/// [`position`](Self::position) is one-to-one: distinct tile numbers get distinct positions —
/// numbers `0 .. count()` every position of the grid once, larger numbers positions past its
/// last row (or none) — so blocks that write the tiles of distinct [`Tile`]s write distinct
/// elements, whatever the three numbers are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TileGrid {
    tiles_m: u32,
    tiles_n: u32,
    group_m: u32,
}

impl TileGrid {
    /// `tiles_m` rows of `tiles_n` tiles, swept in groups of `group_m` rows (at least 1).
    #[inline(always)]
    #[must_use]
    pub const fn new(tiles_m: u32, tiles_n: u32, group_m: u32) -> Self {
        Self { tiles_m, tiles_n, group_m: if group_m == 0 { 1 } else { group_m } }
    }

    /// The number of tiles, `tiles_m · tiles_n`: what [`tiles`](super::tiles) should hand out.
    #[inline(always)]
    #[must_use]
    pub const fn count(&self) -> u64 {
        self.tiles_m as u64 * self.tiles_n as u64
    }

    /// The `(row, column)` of tile `tile` (in tiles), or `None` for a number whose position does
    /// not fit 32 bits (past the grid's rows: nothing of it is inside).
    #[inline(always)]
    #[must_use]
    pub fn position(&self, tile: &Tile) -> Option<(u32, u32)> {
        self.place(tile.id())
    }

    /// [`position`](Self::position) of a number. One-to-one: in group `g = id / (group_m ·
    /// tiles_n)`, the tile rows `first = g · group_m ..` (up to `group_m` of them, fewer in the
    /// last group) are disjoint from every other group's; inside a group `r = id mod (group_m ·
    /// tiles_n)` goes to `(first + r mod rows, r / rows)`, one-to-one in `r`. Numbers whose group
    /// starts past the grid use `rows = group_m` (still disjoint, rows `>= tiles_m`).
    #[inline(always)]
    fn place(&self, id: u64) -> Option<(u32, u32)> {
        let (tiles_m, tiles_n, group_m) = (u64::from(self.tiles_m), u64::from(self.tiles_n), u64::from(self.group_m));
        // tiles_n == 0: no tile is inside; every number goes past the rows, in order.
        let per_group = group_m * tiles_n;
        if per_group == 0 {
            return None;
        }
        let g = id / per_group;
        let first = g * group_m;
        let rows = if first < tiles_m { (tiles_m - first).min(group_m) } else { group_m };
        let r = id - g * per_group;
        let (row, col) = (first + r % rows, r / rows);
        Some((u32::try_from(row).ok()?, u32::try_from(col).ok()?))
    }
}

impl<T, L: Layout, I: MatrixIndex> DisjointMatrix<'_, T, L, I> {
    /// The elements this thread writes of the block tile of `tile` on `grid` (a persistent
    /// kernel's loop: `for t in block::tiles(grid.count()) { … c.tile_at(&shape, &t, &grid) … }`),
    /// as [`tile`](Self::tile) gives them for the block's own index. Tiles past the matrix write
    /// nothing.
    ///
    /// Why no two blocks write one element: a [`Tile`]'s number is held by one block of the launch
    /// at a time, and [`TileGrid::position`] is one-to-one; the bounds are computed here (even for
    /// a [`Within`](crate::matrix::Within) layout, whose launch check is for the block's own
    /// index only).
    #[inline(always)]
    #[must_use]
    pub fn tile_at<const X: u32, const Y: u32, const Z: u32>(
        &mut self,
        shape: &BlockShape<X, Y, Z>,
        tile: &Tile,
        grid: &TileGrid,
    ) -> ThreadTile<'_, T, L, I> {
        self.tile_placed(shape, grid.position(tile), false)
    }
}

#[cfg(test)]
mod tests {
    use super::TileGrid;

    #[test]
    fn positions_are_one_to_one_and_cover_the_grid() {
        for (m, n, g) in [(1, 1, 1), (7, 5, 3), (16, 4, 16), (5, 9, 16), (33, 2, 8), (4, 4, 1), (3, 0, 2)] {
            let grid = TileGrid::new(m, n, g);
            let mut seen = std::collections::HashSet::new();
            for id in 0..grid.count() + 3 * u64::from(g) * u64::from(n) + 7 {
                if let Some((r, c)) = grid.place(id) {
                    assert!(seen.insert((r, c)), "{m}x{n} group {g}: ({r}, {c}) twice, at {id}");
                    let inside = r < m && c < n;
                    assert_eq!(inside, id < grid.count(), "{m}x{n} group {g}: tile {id} at ({r}, {c})");
                }
            }
        }
        assert_eq!(TileGrid::new(2, 3, 0), TileGrid::new(2, 3, 1));
        assert_eq!(TileGrid::new(u32::MAX, 1, 1).place(u64::MAX), None);
    }
}
