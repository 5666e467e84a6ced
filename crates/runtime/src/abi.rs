//! Checking that a launcher and a PTX entry were built from the same `#[kernel]` declaration.
//!
//! `#[kernel]` writes an ABI record (`cohort::abi`) twice: into the PTX module, as the global
//! `__cohort_abi_<entry>` (the device side's view), and into the launcher, as `kernel::ABI` (the
//! host side's view). At `load()` the runtime compares the two, and both with the `.param` list
//! of the entry itself, and refuses the kernel at the first difference. This is what makes the
//! launcher's `SAFETY` comment ("the parameter array matches the entry") a checked fact rather
//! than an assumption: two declarations under different `#[cfg]`s, a module holding another
//! kernel of the same name, or a grid-sync kernel declared without `cooperative` on one side are
//! each an `Err` naming the kernel and the first mismatch.

use std::collections::HashMap;

use cohort::abi::{
    ABI_FLAG_CLUSTER, ABI_FLAG_COOPERATIVE, ABI_FLAG_DEPENDENT, ABI_FLAG_MULTI_GRID, ABI_HEADER_BYTES, ABI_MAGIC,
    ABI_PARAM_BYTES, ABI_SYMBOL_PREFIX, AbiKind,
};

/// What the PTX text says about one entry.
#[derive(Debug, Default, Clone)]
pub(crate) struct EntryInfo {
    /// Bytes of each `.param` of the entry, in order.
    pub params: Vec<u32>,
    /// The bytes of `__cohort_abi_<entry>`, if the module has one.
    pub record: Option<Vec<u8>>,
}

/// Every entry of a PTX module, by name.
pub(crate) type Index = HashMap<String, EntryInfo>;

/// Reads the entries' parameter lists and the ABI records out of PTX text (one pass).
pub(crate) fn index(ptx: &str) -> Index {
    let mut out: Index = HashMap::new();
    let mut lines = ptx.lines();
    while let Some(line) = lines.next() {
        let t = line.trim_start();
        if let Some(rest) = entry_name_start(t) {
            let (name, after) = match rest.find('(') {
                Some(p) => (rest[..p].trim(), &rest[p + 1..]),
                None => (rest.trim(), ""),
            };
            let mut params = Vec::new();
            // Parameters follow on the same line (empty lists: `name()`) or one per line.
            let mut pending = after.to_string();
            loop {
                let closed = pending.contains(')');
                for part in pending.split(',') {
                    if let Some(b) = param_bytes(part) {
                        params.push(b);
                    }
                }
                if closed {
                    break;
                }
                match lines.next() {
                    Some(l) => pending = l.to_string(),
                    None => break,
                }
            }
            out.entry(name.to_string()).or_default().params = params;
        } else if t.contains(ABI_SYMBOL_PREFIX)
            && t.contains(".global")
            && let Some((name, bytes)) = abi_global(t)
        {
            out.entry(name).or_default().record = Some(bytes);
        }
    }
    out
}

/// `NAME(...` after `.entry`, for lines that declare an entry.
fn entry_name_start(t: &str) -> Option<&str> {
    let t = t.strip_prefix(".visible ").or_else(|| t.strip_prefix(".weak ")).unwrap_or(t);
    t.strip_prefix(".entry ").map(str::trim_start)
}

/// Bytes of one `.param` declaration (`.param .u64 .ptr .align 1 k_param_0`,
/// `.param .align 4 .b8 k_param_1[12]`, …).
fn param_bytes(decl: &str) -> Option<u32> {
    let decl = decl.trim().trim_end_matches(')').trim();
    let rest = decl.strip_prefix(".param")?;
    let mut elem = None;
    let mut name = "";
    for tok in rest.split_whitespace() {
        match tok {
            ".b8" | ".u8" | ".s8" => elem = Some(1),
            ".b16" | ".u16" | ".s16" | ".f16" | ".bf16" => elem = Some(2),
            ".b32" | ".u32" | ".s32" | ".f32" => elem = Some(4),
            ".b64" | ".u64" | ".s64" | ".f64" => elem = Some(8),
            ".b128" => elem = Some(16),
            t if !t.starts_with('.') && !t.chars().all(|c| c.is_ascii_digit()) => name = t,
            _ => {}
        }
    }
    let elem = elem?;
    let count = match (name.find('['), name.find(']')) {
        (Some(a), Some(b)) if b > a => name[a + 1..b].parse::<u32>().ok()?,
        _ => 1,
    };
    Some(elem * count)
}

/// `(entry, bytes)` of a `.global .align 1 .b8 __cohort_abi_<entry>[N] = {…};` line.
fn abi_global(t: &str) -> Option<(String, Vec<u8>)> {
    let at = t.find(ABI_SYMBOL_PREFIX)?;
    let rest = &t[at + ABI_SYMBOL_PREFIX.len()..];
    let name_end = rest.find('[')?;
    let name = rest[..name_end].to_string();
    let len_end = rest[name_end..].find(']')? + name_end;
    let len: usize = rest[name_end + 1..len_end].trim().parse().ok()?;
    let open = rest.find('{')?;
    let close = rest.rfind('}')?;
    let mut bytes = rest[open + 1..close]
        .split(',')
        .map(|b| b.trim().parse::<u8>())
        .collect::<std::result::Result<Vec<u8>, _>>()
        .ok()?;
    // LLVM leaves trailing zero bytes out of the initializer; the declared length counts them.
    if bytes.len() > len {
        return None;
    }
    bytes.resize(len, 0);
    Some((name, bytes))
}

/// One parameter of a decoded record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct AbiParam {
    kind: Option<AbiKind>,
    raw_kind: u32,
    size: u32,
    align: u32,
}

impl AbiParam {
    fn describe(&self) -> String {
        match self.kind {
            Some(AbiKind::Value) => format!("a value of {} bytes (align {})", self.size, self.align),
            Some(AbiKind::Len) => "a slice length".to_string(),
            Some(AbiKind::MatrixRows) => format!(
                "the rows of a matrix with {}-bit offsets{}",
                8 * self.size,
                if self.align == 1 { " whose launches stay inside it (`Within`)" } else { "" }
            ),
            Some(k @ (AbiKind::SlicePtr | AbiKind::DisjointPtr)) => {
                format!("{} with {}-byte elements (align {})", k.describe(), self.size, self.align)
            }
            Some(k) => k.describe().to_string(),
            None => format!("an unknown kind {}", self.raw_kind),
        }
    }
}

/// A decoded record: flags and parameters.
struct Decoded {
    flags: u32,
    shape: [u32; 3],
    params: Vec<AbiParam>,
}

fn word(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn decode(b: &[u8]) -> Option<Decoded> {
    if b.get(..4)? != ABI_MAGIC {
        return None;
    }
    let version = word(b, 4)?;
    if version != cohort::abi::ABI_VERSION {
        return None;
    }
    let flags = word(b, 8)?;
    let n = word(b, 12)? as usize;
    let shape = [word(b, 16)?, word(b, 20)?, word(b, 24)?];
    if b.len() != ABI_HEADER_BYTES + ABI_PARAM_BYTES * n {
        return None;
    }
    let params = (0..n)
        .map(|i| {
            let at = ABI_HEADER_BYTES + ABI_PARAM_BYTES * i;
            let raw_kind = word(b, at)?;
            Some(AbiParam {
                kind: AbiKind::from_u32(raw_kind),
                raw_kind,
                size: word(b, at + 4)?,
                align: word(b, at + 8)?,
            })
        })
        .collect::<Option<Vec<_>>>()?;
    Some(Decoded { flags, shape, params })
}

/// The block shape a launcher's record requires (`None`: any), if the record is well formed.
pub(crate) fn required_block(host: &[u8]) -> Option<[u32; 3]> {
    decode(host).and_then(|d| (d.shape != [0; 3]).then_some(d.shape))
}

/// Whether a launcher's record is of a `#[kernel(dependent)]` declaration (its entry waits for
/// its programmatic prerequisites first), if the record is well formed.
pub(crate) fn dependent(host: &[u8]) -> bool {
    decode(host).is_some_and(|d| d.flags & ABI_FLAG_DEPENDENT != 0)
}

/// Whether the record is a `#[kernel(cluster)]` kernel's.
pub(crate) fn cluster(host: &[u8]) -> bool {
    decode(host).is_some_and(|d| d.flags & ABI_FLAG_CLUSTER != 0)
}

/// Compares the launcher's record `host` with what the module says of entry `name`; `Err`
/// holds the first difference, in words.
pub(crate) fn check(info: Option<&EntryInfo>, host: &[u8]) -> std::result::Result<(), String> {
    let Some(info) = info else {
        return Err("the module has no entry point of this name".into());
    };
    let host = decode(host).ok_or("the launcher's ABI record is malformed (a different Cohort version?)")?;
    let Some(rec) = &info.record else {
        return Err(format!(
            "the module's entry has no ABI record (`{ABI_SYMBOL_PREFIX}<entry>`): it was not built by this version of \
             `#[kernel]`, so nothing proves it takes what this launcher passes"
        ));
    };
    let dev = decode(rec).ok_or("the module's ABI record is malformed (built by a different Cohort version?)")?;
    let (hc, dc) = (host.flags & ABI_FLAG_COOPERATIVE != 0, dev.flags & ABI_FLAG_COOPERATIVE != 0);
    if hc != dc {
        return Err(if dc {
            "the device entry uses grid sync (`#[kernel(cooperative)]`) but this launcher was built from a declaration \
             without `cooperative`, so it would launch it non-cooperatively"
                .into()
        } else {
            "this launcher was built from a `#[kernel(cooperative)]` declaration but the device entry was not".into()
        });
    }
    let (hm, dm) = (host.flags & ABI_FLAG_MULTI_GRID != 0, dev.flags & ABI_FLAG_MULTI_GRID != 0);
    if hm != dm {
        return Err(if dm {
            "the device entry is a `#[kernel(multi_grid)]` kernel but this launcher was built from a declaration \
             without `multi_grid`"
                .into()
        } else {
            "this launcher was built from a `#[kernel(multi_grid)]` declaration but the device entry was not".into()
        });
    }
    let (hk, dk) = (host.flags & ABI_FLAG_CLUSTER != 0, dev.flags & ABI_FLAG_CLUSTER != 0);
    if hk != dk {
        return Err(if hk {
            "this launcher was built from a `#[kernel(cluster)]` declaration but the device entry was not: it would \
             launch in clusters an entry without the cluster protocol"
                .into()
        } else {
            "the device entry is a `#[kernel(cluster)]` kernel but this launcher was built from a declaration \
             without `cluster`"
                .into()
        });
    }
    let (hd, dd) = (host.flags & ABI_FLAG_DEPENDENT != 0, dev.flags & ABI_FLAG_DEPENDENT != 0);
    if hd != dd {
        return Err(if hd {
            "this launcher was built from a `#[kernel(dependent)]` declaration but the device entry was not: it would \
             launch programmatically an entry that does not wait for the kernel before it"
                .into()
        } else {
            "the device entry is a `#[kernel(dependent)]` kernel but this launcher was built from a declaration \
             without `dependent`"
                .into()
        });
    }
    if host.shape != dev.shape {
        let show = |s: [u32; 3]| {
            if s == [0; 3] { "any block shape".to_string() } else { format!("blocks of {}×{}×{}", s[0], s[1], s[2]) }
        };
        return Err(format!(
            "the device entry was built for {} (its `BlockShape` parameter), this launcher for {}",
            show(dev.shape),
            show(host.shape)
        ));
    }
    if host.params.len() != dev.params.len() {
        return Err(format!(
            "the device entry takes {} PTX parameters, this launcher passes {}",
            dev.params.len(),
            host.params.len()
        ));
    }
    for (i, (h, d)) in host.params.iter().zip(&dev.params).enumerate() {
        if h != d {
            return Err(format!(
                "PTX parameter {i}: the device entry expects {}, this launcher passes {}",
                d.describe(),
                h.describe()
            ));
        }
    }
    if info.params.len() != host.params.len() {
        return Err(format!(
            "the entry's PTX declares {} parameters, its ABI record {} (a zero-sized or otherwise dropped parameter?)",
            info.params.len(),
            host.params.len()
        ));
    }
    for (i, (bytes, h)) in info.params.iter().zip(&host.params).enumerate() {
        let want = h.kind.map_or(h.size, |k| k.ptx_bytes(h.size));
        if *bytes != want {
            return Err(format!("PTX parameter {i} is {bytes} bytes in the entry, but the launcher passes {want}"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use cohort::abi::{abi_len, abi_param, abi_record};

    const PTX: &str = "
.visible .global .align 1 .b8 __cohort_abi_k[64] = {67, 65, 66, 73, 3, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 4, 0, 0, 0, 3, 0, 0, 0, 8, 0, 0, 0, 8, 0, 0, 0, 2, 0, 0, 0, 8, 0, 0, 0, 8};
.visible .entry k(
	.param .u32 k_param_0,
	.param .u64 .ptr .align 1 k_param_1,
	.param .u64 k_param_2
)
{
}
.visible .entry empty()
{
}
.visible .entry agg(
	.param .align 4 .b8 agg_param_0[12]
)
";

    fn host_k() -> [u8; abi_len(3)] {
        abi_record(
            0,
            [0; 3],
            &[
                abi_param::<u32>(AbiKind::Value),
                abi_param::<u64>(AbiKind::DisjointPtr),
                abi_param::<usize>(AbiKind::Len),
            ],
        )
    }

    #[test]
    fn index_reads_entries_and_records() {
        let ix = index(PTX);
        assert_eq!(ix["k"].params, vec![4, 8, 8]);
        assert_eq!(ix["empty"].params, Vec::<u32>::new());
        assert_eq!(ix["agg"].params, vec![12]);
        assert_eq!(ix["k"].record.as_deref(), Some(&host_k()[..]));
    }

    #[test]
    fn matching_declarations_pass() {
        assert_eq!(check(index(PTX).get("k"), &host_k()), Ok(()));
    }

    #[test]
    fn mismatches_name_the_first_difference() {
        let ix = index(PTX);
        // (ptr, len) where the device takes a value: the (ptr, len)-as-integers hole.
        let slice: [u8; abi_len(3)] = abi_record(
            0,
            [0; 3],
            &[
                abi_param::<u32>(AbiKind::SlicePtr),
                abi_param::<u64>(AbiKind::DisjointPtr),
                abi_param::<usize>(AbiKind::Len),
            ],
        );
        let e = check(ix.get("k"), &slice).unwrap_err();
        assert!(e.contains("PTX parameter 0") && e.contains("a value of 4 bytes"), "{e}");
        // A wider element: the device would write past the end of the host's buffer.
        let wide: [u8; abi_len(3)] = abi_record(
            0,
            [0; 3],
            &[
                abi_param::<u32>(AbiKind::Value),
                abi_param::<u32>(AbiKind::DisjointPtr),
                abi_param::<usize>(AbiKind::Len),
            ],
        );
        let e = check(ix.get("k"), &wide).unwrap_err();
        assert!(e.contains("PTX parameter 1") && e.contains("8-byte elements"), "{e}");
        let coop: [u8; abi_len(3)] = abi_record(
            ABI_FLAG_COOPERATIVE,
            [0; 3],
            &[
                abi_param::<u32>(AbiKind::Value),
                abi_param::<u64>(AbiKind::DisjointPtr),
                abi_param::<usize>(AbiKind::Len),
            ],
        );
        assert!(check(ix.get("k"), &coop).unwrap_err().contains("cooperative"));
        // A launcher of a `dependent` declaration on an entry without the wait: it would launch
        // programmatically a kernel that reads its predecessor's output too early.
        let dependent: [u8; abi_len(3)] = abi_record(
            ABI_FLAG_DEPENDENT,
            [0; 3],
            &[
                abi_param::<u32>(AbiKind::Value),
                abi_param::<u64>(AbiKind::DisjointPtr),
                abi_param::<usize>(AbiKind::Len),
            ],
        );
        let e = check(ix.get("k"), &dependent).unwrap_err();
        assert!(e.contains("dependent") && e.contains("does not wait"), "{e}");
        assert!(super::dependent(&dependent) && !super::dependent(&host_k()));
        // Built for another block shape: the device side would assume bounds the launcher
        // does not check.
        let shaped: [u8; abi_len(3)] = abi_record(
            0,
            [32, 8, 1],
            &[
                abi_param::<u32>(AbiKind::Value),
                abi_param::<u64>(AbiKind::DisjointPtr),
                abi_param::<usize>(AbiKind::Len),
            ],
        );
        let e = check(ix.get("k"), &shaped).unwrap_err();
        assert!(e.contains("any block shape") && e.contains("blocks of 32×8×1"), "{e}");
        assert_eq!(required_block(&shaped), Some([32, 8, 1]));
        assert_eq!(required_block(&host_k()), None);
        let short: [u8; abi_len(1)] = abi_record(0, [0; 3], &[abi_param::<u32>(AbiKind::Value)]);
        assert!(check(ix.get("k"), &short).unwrap_err().contains("takes 3 PTX parameters, this launcher passes 1"));
        assert!(check(ix.get("empty"), &short).unwrap_err().contains("no ABI record"));
        assert!(check(ix.get("nope"), &short).unwrap_err().contains("no entry point"));
    }

    /// A matrix's offset type and `Within` are part of the record: a launcher that checks less
    /// than its device entry assumes is refused at load.
    #[test]
    fn matrix_index_and_within_are_recorded() {
        use cohort::abi::abi_matrix_rows;
        use cohort::matrix::{Cyclic, DisjointMatrix, Within};
        type Plain = DisjointMatrix<'static, f32, Cyclic, u32>;
        type Inside = DisjointMatrix<'static, f32, Within<Cyclic>, u32>;
        type Wide = DisjointMatrix<'static, f32, Within<Cyclic>, usize>;
        fn rec(rows: [u32; 3]) -> [u8; abi_len(3)] {
            abi_record(0, [32, 8, 1], &[abi_param::<f32>(AbiKind::MatrixPtr), rows, abi_param::<usize>(AbiKind::Len)])
        }
        let info = |rows| EntryInfo { params: vec![8, 8, 8], record: Some(rec(rows).to_vec()) };
        let (plain, inside, wide) =
            (abi_matrix_rows::<Plain>(), abi_matrix_rows::<Inside>(), abi_matrix_rows::<Wide>());
        assert_eq!(check(Some(&info(inside)), &rec(inside)), Ok(()));
        let e = check(Some(&info(inside)), &rec(plain)).unwrap_err();
        assert!(
            e.contains("PTX parameter 1") && e.contains("stay inside it (`Within`)") && e.contains("32-bit"),
            "{e}"
        );
        let e = check(Some(&info(wide)), &rec(inside)).unwrap_err();
        assert!(e.contains("64-bit offsets") && e.contains("32-bit offsets"), "{e}");
    }
}
