//! Tests of the fragments' places against the output layouts of `crate::matrix`.

extern crate std;

/// `MmaWarps` gives each element of every block's tile to exactly one thread, and a thread's
/// element `(k, l)` is where `FragC` places element `2·(k % 2) + l % 2` of its accumulator for
/// tile `(k / 2, l / 2)` of its warp.
#[test]
fn mma_warps_is_one_to_one_onto_the_tiles_and_matches_frag_c() {
    use super::FragC;
    use crate::matrix::{Layout, MmaWarps};
    fn each<const MI: usize, const NI: usize, const WN: usize>(x: usize, y: usize) {
        type L<const MI: usize, const NI: usize, const WN: usize> = MmaWarps<MI, NI, WN>;
        let warps = x * y / 32;
        let (th, tw) = (warps / WN * 16 * MI, WN * 8 * NI);
        let (gy, gx) = (2, 3);
        let mut seen = std::vec![0u32; gy * th * gx * tw];
        for tr in 0..gy {
            for tc in 0..gx {
                for ty in 0..y {
                    for tx in 0..x {
                        let [r0, dr, c0, dc] = L::<MI, NI, WN>::place(tx, ty, x, y, tr, tc);
                        let t = ty * x + tx;
                        let (lane, w) = (t % 32, t / 32);
                        for k in 0..L::<MI, NI, WN>::KR {
                            for l in 0..L::<MI, NI, WN>::KC {
                                let run = L::<MI, NI, WN>::RUN;
                                let (r, c) = (r0 + dr * k, c0 + dc * (l / run) + l % run);
                                assert!(r < gy * th && c < gx * tw, "({r}, {c}) outside");
                                seen[r * gx * tw + c] += 1;
                                // Where FragC puts it, in the warp's tile of the block's tile.
                                let (fr, fc) = FragC::<f32>::element_coords(lane as u32, 2 * (k % 2) + l % 2);
                                let want_r = tr * th + (w / WN) * 16 * MI + 16 * (k / 2) + fr;
                                let want_c = tc * tw + (w % WN) * 8 * NI + 8 * (l / 2) + fc;
                                assert_eq!((r, c), (want_r, want_c), "thread {t}, element ({k}, {l})");
                            }
                        }
                    }
                }
            }
        }
        assert!(seen.iter().all(|&n| n == 1), "MmaWarps<{MI}, {NI}, {WN}>, block {x} × {y}: not one-to-one onto");
    }
    each::<1, 1, 1>(32, 1);
    each::<4, 4, 4>(256, 1);
    each::<4, 4, 4>(32, 8);
    each::<2, 4, 2>(128, 1);
    each::<1, 2, 1>(64, 2);
    each::<4, 8, 2>(256, 1);
}
