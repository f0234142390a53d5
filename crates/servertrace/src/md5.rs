//! MD5 (RFC 1321), for Oracle's sqlid of a statement text.
//!
//! Hand-written because the preload library has no dependencies (it is
//! compiled by rustc alone, see the crate's doc); a test holds it to the
//! `md5` crate's digest through `tracelab_trace::sqlid`.

const S: [u32; 64] = [
    7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 5, 9, 14, 20, 5, 9, 14, 20, 5, 9,
    14, 20, 5, 9, 14, 20, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 6, 10, 15,
    21, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21,
];

/// floor(abs(sin(i + 1)) * 2^32), as RFC 1321 tabulates them.
const K: [u32; 64] = [
    0xd76aa478, 0xe8c7b756, 0x242070db, 0xc1bdceee, 0xf57c0faf, 0x4787c62a, 0xa8304613, 0xfd469501,
    0x698098d8, 0x8b44f7af, 0xffff5bb1, 0x895cd7be, 0x6b901122, 0xfd987193, 0xa679438e, 0x49b40821,
    0xf61e2562, 0xc040b340, 0x265e5a51, 0xe9b6c7aa, 0xd62f105d, 0x02441453, 0xd8a1e681, 0xe7d3fbc8,
    0x21e1cde6, 0xc33707d6, 0xf4d50d87, 0x455a14ed, 0xa9e3e905, 0xfcefa3f8, 0x676f02d9, 0x8d2a4c8a,
    0xfffa3942, 0x8771f681, 0x6d9d6122, 0xfde5380c, 0xa4beea44, 0x4bdecfa9, 0xf6bb4b60, 0xbebfbc70,
    0x289b7ec6, 0xeaa127fa, 0xd4ef3085, 0x04881d05, 0xd9d4d039, 0xe6db99e5, 0x1fa27cf8, 0xc4ac5665,
    0xf4292244, 0x432aff97, 0xab9423a7, 0xfc93a039, 0x655b59c3, 0x8f0ccc92, 0xffeff47d, 0x85845dd1,
    0x6fa87e4f, 0xfe2ce6e0, 0xa3014314, 0x4e0811a1, 0xf7537e82, 0xbd3af235, 0x2ad7d2bb, 0xeb86d391,
];

fn block(st: &mut [u32; 4], chunk: &[u8]) {
    let mut m = [0u32; 16];
    for (i, w) in m.iter_mut().enumerate() {
        *w = u32::from_le_bytes([
            chunk[4 * i],
            chunk[4 * i + 1],
            chunk[4 * i + 2],
            chunk[4 * i + 3],
        ]);
    }
    let [mut a, mut b, mut c, mut d] = *st;
    for i in 0..64 {
        let (f, g) = match i / 16 {
            0 => ((b & c) | (!b & d), i),
            1 => ((d & b) | (!d & c), (5 * i + 1) % 16),
            2 => (b ^ c ^ d, (3 * i + 5) % 16),
            _ => (c ^ (b | !d), (7 * i) % 16),
        };
        let f = f.wrapping_add(a).wrapping_add(K[i]).wrapping_add(m[g]);
        a = d;
        d = c;
        c = b;
        b = b.wrapping_add(f.rotate_left(S[i]));
    }
    st[0] = st[0].wrapping_add(a);
    st[1] = st[1].wrapping_add(b);
    st[2] = st[2].wrapping_add(c);
    st[3] = st[3].wrapping_add(d);
}

/// The MD5 digest of `data`.
pub fn digest(data: &[u8]) -> [u8; 16] {
    let mut st = [0x67452301u32, 0xefcdab89, 0x98badcfe, 0x10325476];
    let mut chunks = data.chunks_exact(64);
    for c in &mut chunks {
        block(&mut st, c);
    }
    let rest = chunks.remainder();
    let mut tail = [0u8; 128];
    tail[..rest.len()].copy_from_slice(rest);
    tail[rest.len()] = 0x80;
    let n = if rest.len() < 56 { 64 } else { 128 };
    tail[n - 8..n].copy_from_slice(&((data.len() as u64).wrapping_mul(8)).to_le_bytes());
    for c in tail[..n].chunks_exact(64) {
        block(&mut st, c);
    }
    let mut out = [0u8; 16];
    for (i, w) in st.iter().enumerate() {
        out[4 * i..4 * i + 4].copy_from_slice(&w.to_le_bytes());
    }
    out
}

/// Oracle's SQL_ID of a statement text and its hash value (`hv=`): the
/// last 8 bytes of the MD5 of the text and a NUL, read as two
/// little-endian 32-bit words, in base 32 with Oracle's alphabet; the same
/// rule as tracelab's other traces, so that the ids join.
pub fn sqlid(sql: &str) -> (String, u32) {
    const ALPHABET: &[u8; 32] = b"0123456789abcdfghjkmnpqrstuvwxyz";
    let mut text = Vec::with_capacity(sql.len() + 1);
    text.extend_from_slice(sql.as_bytes());
    text.push(0);
    let d = digest(&text);
    let hi = u32::from_le_bytes([d[8], d[9], d[10], d[11]]);
    let lo = u32::from_le_bytes([d[12], d[13], d[14], d[15]]);
    let mut n = ((hi as u64) << 32) | lo as u64;
    let mut id = [b'0'; 13];
    for slot in id.iter_mut().rev() {
        *slot = ALPHABET[(n % 32) as usize];
        n /= 32;
    }
    (String::from_utf8_lossy(&id).into_owned(), lo)
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
        ] {
            assert_eq!(sqlid(sql), tracelab_trace::sqlid(sql), "{sql}");
        }
    }
}
