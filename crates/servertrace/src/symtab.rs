//! The functions an object does not export, named from its ELF symbol
//! table (`.symtab`): InnoDB's mutexes and rw-locks sleep in futex(2)
//! from functions that `mariadbd` keeps to itself
//! (`ssux_lock_impl<true>::wr_wait`, `srw_mutex_impl<true>::wait`), which
//! `dladdr` cannot name. MariaDB's own release builds keep their symbol
//! table; distributions strip it into a separate debug file, found by the
//! object's build id under `/usr/lib/debug/.build-id/` when its package
//! (`mariadb-server-core-dbgsym` on Debian) is installed.
//!
//! Why by hand: the ELF crates (object, goblin) would be the first
//! dependencies of a library loaded into the server; what is needed here
//! is the section headers, one symbol table and its strings.
//!
//! Read once per object, at the first wait whose caller no exported
//! symbol covers, and kept: for MariaDB 11.4.5's `mariadbd` the symbol
//! table's strings (2.1 MB) and its ~28,000 functions' spans (0.7 MB).

use std::fs::File;
use std::os::unix::fs::FileExt;

/// An object's functions: (start, end, name's offset in `names`), sorted.
pub struct Functions {
    spans: Vec<(u64, u64, u32)>,
    names: Vec<u8>,
    /// What is added to a symbol's value for its address in the process
    /// (the load base of a position-independent object, 0 otherwise).
    base: u64,
}

const SHT_SYMTAB: u32 = 2;
const SHT_NOTE: u32 = 7;
const STT_FUNC: u8 = 2;
const ET_DYN: u16 = 3;
const NT_GNU_BUILD_ID: u32 = 3;

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// `len` bytes of `f` at `off`, at most 64 MiB (a symbol table's strings
/// of a large server are a few MiB).
fn read(f: &File, off: u64, len: u64) -> Option<Vec<u8>> {
    if len > 64 << 20 {
        return None;
    }
    let mut b = vec![0; len as usize];
    f.read_exact_at(&mut b, off).ok()?;
    Some(b)
}

/// A section header's type, offset, size and link.
struct Section {
    kind: u32,
    off: u64,
    size: u64,
    link: u32,
}

/// The object's type (`e_type`) and its section headers.
fn sections(f: &File) -> Option<(u16, Vec<Section>)> {
    let h = read(f, 0, 64)?;
    // ELF64, little-endian.
    if h.get(..4)? != b"\x7fELF" || h[4] != 2 || h[5] != 1 {
        return None;
    }
    let kind = u16_at(&h, 16)?;
    let (shoff, shentsize, shnum) = (u64_at(&h, 40)?, u16_at(&h, 58)?, u16_at(&h, 60)?);
    if shentsize < 64 {
        return None;
    }
    let t = read(f, shoff, shentsize as u64 * shnum as u64)?;
    let all = (0..shnum as usize)
        .map(|i| {
            let s = i * shentsize as usize;
            Some(Section {
                kind: u32_at(&t, s + 4)?,
                off: u64_at(&t, s + 24)?,
                size: u64_at(&t, s + 32)?,
                link: u32_at(&t, s + 40)?,
            })
        })
        .collect::<Option<Vec<_>>>()?;
    Some((kind, all))
}

/// The GNU build id of the object in `f`, as hex.
fn build_id(f: &File, secs: &[Section]) -> Option<String> {
    for s in secs.iter().filter(|s| s.kind == SHT_NOTE) {
        let n = read(f, s.off, s.size)?;
        let mut at = 0;
        while at + 12 <= n.len() {
            let (namesz, descsz, kind) =
                (u32_at(&n, at)?, u32_at(&n, at + 4)?, u32_at(&n, at + 8)?);
            let name = at + 12;
            let desc = name + (namesz as usize).div_ceil(4) * 4;
            if kind == NT_GNU_BUILD_ID && n.get(name..name + 3) == Some(b"GNU") {
                let id = n.get(desc..desc + descsz as usize)?;
                return Some(id.iter().map(|b| format!("{b:02x}")).collect());
            }
            at = desc + (descsz as usize).div_ceil(4) * 4;
        }
    }
    None
}

impl Functions {
    /// The functions of the object at `path` loaded at `base`, from its
    /// own symbol table or its debug file's; `None` where neither has one.
    pub fn of(path: &str, base: u64) -> Option<Functions> {
        let f = File::open(path).ok()?;
        let (kind, secs) = sections(&f)?;
        let base = if kind == ET_DYN { base } else { 0 };
        if let Some(fs) = Functions::from(&f, &secs, base) {
            return Some(fs);
        }
        let id = build_id(&f, &secs)?;
        let debug = format!("/usr/lib/debug/.build-id/{}/{}.debug", &id[..2], &id[2..]);
        let d = File::open(debug).ok()?;
        let (_, dsecs) = sections(&d)?;
        Functions::from(&d, &dsecs, base)
    }

    fn from(f: &File, secs: &[Section], base: u64) -> Option<Functions> {
        let symtab = secs.iter().find(|s| s.kind == SHT_SYMTAB)?;
        let strtab = secs.get(symtab.link as usize)?;
        let syms = read(f, symtab.off, symtab.size)?;
        let names = read(f, strtab.off, strtab.size)?;
        let mut spans: Vec<(u64, u64, u32)> = syms
            .chunks_exact(24)
            .filter_map(|s| {
                let (name, info) = (u32_at(s, 0)?, s[4]);
                let (value, size) = (u64_at(s, 8)?, u64_at(s, 16)?);
                (info & 0xf == STT_FUNC && size > 0 && value > 0).then_some((
                    value,
                    value + size,
                    name,
                ))
            })
            .collect();
        spans.sort_unstable();
        Some(Functions { spans, names, base })
    }

    /// The (mangled) name of the function whose code holds `addr`.
    pub fn at(&self, addr: u64) -> Option<&str> {
        let v = addr.checked_sub(self.base)?;
        let i = self.spans.partition_point(|s| s.0 <= v).checked_sub(1)?;
        let (_, end, name) = self.spans[i];
        if v >= end {
            return None;
        }
        let s = self.names.get(name as usize..)?;
        let s = &s[..s.iter().position(|&b| b == 0)?];
        std::str::from_utf8(s).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Not exported: only the test binary's symbol table names it.
    #[inline(never)]
    fn a_function_of_its_own(x: u64) -> u64 {
        std::hint::black_box(x.wrapping_mul(31).rotate_left(7))
    }

    #[test]
    fn a_function_the_object_keeps_to_itself_is_named() {
        let exe = std::fs::read_link("/proc/self/exe").unwrap();
        // The test binary's load base: the first mapping of its file.
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
        let base = maps
            .lines()
            .find(|l| l.ends_with(exe.to_str().unwrap()))
            .and_then(|l| l.split('-').next())
            .map(|a| u64::from_str_radix(a, 16).unwrap())
            .unwrap();
        let fs = Functions::of(exe.to_str().unwrap(), base).expect("a symbol table");
        let at = a_function_of_its_own as *const () as u64;
        assert_eq!(a_function_of_its_own(1), a_function_of_its_own(1));
        let name = fs.at(at + 1).expect("named");
        assert!(name.contains("a_function_of_its_own"), "{name}");
        assert_eq!(fs.at(8), None);
    }

    #[test]
    fn what_is_not_elf_has_no_functions() {
        assert!(Functions::of("/proc/self/status", 0).is_none());
        assert!(Functions::of("/nonexistent", 0).is_none());
    }
}
