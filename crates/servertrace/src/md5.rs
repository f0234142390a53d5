//! MD5 (RFC 1321), for Oracle's sqlid of a statement text.
//!
//! Hand-written because the preload library has no dependencies (it is
//! compiled by rustc alone, see the crate's doc); a test holds it to the
//! `md5` crate's digest through `tracelab_trace::sqlid`.

/// One round's step: `a = b + ((a + f(b, c, d) + m + k) <<< s)`.
macro_rules! step {
    ($f:expr, $a:ident, $b:ident, $c:ident, $d:ident, $m:expr, $k:expr, $s:expr) => {
        $a = $b.wrapping_add(
            $a.wrapping_add($f($b, $c, $d))
                .wrapping_add($m)
                .wrapping_add($k)
                .rotate_left($s),
        );
    };
}

/// The compression function, its 64 steps written out with their
/// constants (RFC 1321 §3.4; the sines are floor(abs(sin(i + 1)) * 2^32)):
/// a loop that chose the function, word and shift at each step took three
/// times the instructions, and a simple-protocol workload hashes every
/// statement it runs.
fn block(st: &mut [u32; 4], chunk: &[u8; 64]) {
    let mut m = [0u32; 16];
    for (w, b) in m.iter_mut().zip(chunk.chunks_exact(4)) {
        *w = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    }
    let f = |x: u32, y: u32, z: u32| (x & y) | (!x & z);
    let g = |x: u32, y: u32, z: u32| (x & z) | (y & !z);
    let h = |x: u32, y: u32, z: u32| x ^ y ^ z;
    let i = |x: u32, y: u32, z: u32| y ^ (x | !z);
    let [mut a, mut b, mut c, mut d] = *st;

    step!(f, a, b, c, d, m[0], 0xd76aa478, 7);
    step!(f, d, a, b, c, m[1], 0xe8c7b756, 12);
    step!(f, c, d, a, b, m[2], 0x242070db, 17);
    step!(f, b, c, d, a, m[3], 0xc1bdceee, 22);
    step!(f, a, b, c, d, m[4], 0xf57c0faf, 7);
    step!(f, d, a, b, c, m[5], 0x4787c62a, 12);
    step!(f, c, d, a, b, m[6], 0xa8304613, 17);
    step!(f, b, c, d, a, m[7], 0xfd469501, 22);
    step!(f, a, b, c, d, m[8], 0x698098d8, 7);
    step!(f, d, a, b, c, m[9], 0x8b44f7af, 12);
    step!(f, c, d, a, b, m[10], 0xffff5bb1, 17);
    step!(f, b, c, d, a, m[11], 0x895cd7be, 22);
    step!(f, a, b, c, d, m[12], 0x6b901122, 7);
    step!(f, d, a, b, c, m[13], 0xfd987193, 12);
    step!(f, c, d, a, b, m[14], 0xa679438e, 17);
    step!(f, b, c, d, a, m[15], 0x49b40821, 22);

    step!(g, a, b, c, d, m[1], 0xf61e2562, 5);
    step!(g, d, a, b, c, m[6], 0xc040b340, 9);
    step!(g, c, d, a, b, m[11], 0x265e5a51, 14);
    step!(g, b, c, d, a, m[0], 0xe9b6c7aa, 20);
    step!(g, a, b, c, d, m[5], 0xd62f105d, 5);
    step!(g, d, a, b, c, m[10], 0x02441453, 9);
    step!(g, c, d, a, b, m[15], 0xd8a1e681, 14);
    step!(g, b, c, d, a, m[4], 0xe7d3fbc8, 20);
    step!(g, a, b, c, d, m[9], 0x21e1cde6, 5);
    step!(g, d, a, b, c, m[14], 0xc33707d6, 9);
    step!(g, c, d, a, b, m[3], 0xf4d50d87, 14);
    step!(g, b, c, d, a, m[8], 0x455a14ed, 20);
    step!(g, a, b, c, d, m[13], 0xa9e3e905, 5);
    step!(g, d, a, b, c, m[2], 0xfcefa3f8, 9);
    step!(g, c, d, a, b, m[7], 0x676f02d9, 14);
    step!(g, b, c, d, a, m[12], 0x8d2a4c8a, 20);

    step!(h, a, b, c, d, m[5], 0xfffa3942, 4);
    step!(h, d, a, b, c, m[8], 0x8771f681, 11);
    step!(h, c, d, a, b, m[11], 0x6d9d6122, 16);
    step!(h, b, c, d, a, m[14], 0xfde5380c, 23);
    step!(h, a, b, c, d, m[1], 0xa4beea44, 4);
    step!(h, d, a, b, c, m[4], 0x4bdecfa9, 11);
    step!(h, c, d, a, b, m[7], 0xf6bb4b60, 16);
    step!(h, b, c, d, a, m[10], 0xbebfbc70, 23);
    step!(h, a, b, c, d, m[13], 0x289b7ec6, 4);
    step!(h, d, a, b, c, m[0], 0xeaa127fa, 11);
    step!(h, c, d, a, b, m[3], 0xd4ef3085, 16);
    step!(h, b, c, d, a, m[6], 0x04881d05, 23);
    step!(h, a, b, c, d, m[9], 0xd9d4d039, 4);
    step!(h, d, a, b, c, m[12], 0xe6db99e5, 11);
    step!(h, c, d, a, b, m[15], 0x1fa27cf8, 16);
    step!(h, b, c, d, a, m[2], 0xc4ac5665, 23);

    step!(i, a, b, c, d, m[0], 0xf4292244, 6);
    step!(i, d, a, b, c, m[7], 0x432aff97, 10);
    step!(i, c, d, a, b, m[14], 0xab9423a7, 15);
    step!(i, b, c, d, a, m[5], 0xfc93a039, 21);
    step!(i, a, b, c, d, m[12], 0x655b59c3, 6);
    step!(i, d, a, b, c, m[3], 0x8f0ccc92, 10);
    step!(i, c, d, a, b, m[10], 0xffeff47d, 15);
    step!(i, b, c, d, a, m[1], 0x85845dd1, 21);
    step!(i, a, b, c, d, m[8], 0x6fa87e4f, 6);
    step!(i, d, a, b, c, m[15], 0xfe2ce6e0, 10);
    step!(i, c, d, a, b, m[6], 0xa3014314, 15);
    step!(i, b, c, d, a, m[13], 0x4e0811a1, 21);
    step!(i, a, b, c, d, m[4], 0xf7537e82, 6);
    step!(i, d, a, b, c, m[11], 0xbd3af235, 10);
    step!(i, c, d, a, b, m[2], 0x2ad7d2bb, 15);
    step!(i, b, c, d, a, m[9], 0xeb86d391, 21);

    st[0] = st[0].wrapping_add(a);
    st[1] = st[1].wrapping_add(b);
    st[2] = st[2].wrapping_add(c);
    st[3] = st[3].wrapping_add(d);
}

/// The MD5 digest of `data` followed by the bytes of `suffix` (so that a
/// text and its NUL are hashed without copying the text).
fn digest_parts(data: &[u8], suffix: &[u8]) -> [u8; 16] {
    let mut st = [0x67452301u32, 0xefcdab89, 0x98badcfe, 0x10325476];
    let (blocks, rest) = data.as_chunks::<64>();
    for c in blocks {
        block(&mut st, c);
    }
    let len = data.len() + suffix.len();
    let mut tail = [0u8; 192];
    tail[..rest.len()].copy_from_slice(rest);
    tail[rest.len()..rest.len() + suffix.len()].copy_from_slice(suffix);
    let used = rest.len() + suffix.len();
    tail[used] = 0x80;
    let n = (used + 8) / 64 * 64 + 64;
    tail[n - 8..n].copy_from_slice(&((len as u64).wrapping_mul(8)).to_le_bytes());
    for c in tail[..n].as_chunks::<64>().0 {
        block(&mut st, c);
    }
    let mut out = [0u8; 16];
    for (i, w) in st.iter().enumerate() {
        out[4 * i..4 * i + 4].copy_from_slice(&w.to_le_bytes());
    }
    out
}

/// The MD5 digest of `data`.
#[cfg(test)]
fn digest(data: &[u8]) -> [u8; 16] {
    digest_parts(data, &[])
}

/// Oracle's SQL_ID of a statement text and its hash value (`hv=`): the
/// last 8 bytes of the MD5 of the text and a NUL, read as two
/// little-endian 32-bit words, in base 32 with Oracle's alphabet; the same
/// rule as tracelab's other traces, so that the ids join.
pub fn sqlid(sql: &str) -> (String, u32) {
    const ALPHABET: &[u8; 32] = b"0123456789abcdfghjkmnpqrstuvwxyz";
    let d = digest_parts(sql.as_bytes(), &[0]);
    let hi = u32::from_le_bytes([d[8], d[9], d[10], d[11]]);
    let lo = u32::from_le_bytes([d[12], d[13], d[14], d[15]]);
    let mut n = ((hi as u64) << 32) | lo as u64;
    let mut id = String::with_capacity(13);
    let mut digits = [b'0'; 13];
    for slot in digits.iter_mut().rev() {
        *slot = ALPHABET[(n % 32) as usize];
        n /= 32;
    }
    id.extend(digits.iter().map(|&b| b as char));
    (id, lo)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(d: [u8; 16]) -> String {
        d.iter().map(|b| format!("{b:02x}")).collect()
    }

    #[test]
    fn rfc_1321_vectors() {
        assert_eq!(hex(digest(b"")), "d41d8cd98f00b204e9800998ecf8427e");
        assert_eq!(hex(digest(b"abc")), "900150983cd24fb0d6963f7d28e17f72");
        assert_eq!(
            hex(digest(
                b"12345678901234567890123456789012345678901234567890123456789012345678901234567890"
            )),
            "57edf4a22be3c955ac49da2e2107b67a"
        );
    }

    #[test]
    fn sqlid_agrees_with_tracelabs_other_traces() {
        for sql in [
            "select 1",
            "",
            "SELECT abalance FROM pgbench_accounts WHERE aid = $1",
            &"x".repeat(55),
            &"y".repeat(56),
            &"z".repeat(200),
            &"w".repeat(63),
            &"v".repeat(64),
            &"u".repeat(119),
            &"t".repeat(120),
        ] {
            assert_eq!(sqlid(sql), tracelab_trace::sqlid(sql), "{sql}");
        }
    }
}
