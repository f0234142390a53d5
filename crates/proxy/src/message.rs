//! The few protocol messages the proxy reads (for tracing, for cancel
//! routing) and the one it writes (an ErrorResponse when the server cannot
//! be reached). Decoders take a body that may be truncated and return
//! `None` rather than fail: tracing is best effort, forwarding is not
//! affected.

/// Startup-packet request codes (the int32 after the length).
pub const CANCEL_REQUEST: u32 = 80_877_102;
pub const SSL_REQUEST: u32 = 80_877_103;
pub const GSSENC_REQUEST: u32 = 80_877_104;
/// PostgreSQL's own limit on a startup packet (`MAX_STARTUP_PACKET_LENGTH`).
pub const MAX_STARTUP: u32 = 10_000;

/// Reads a NUL-terminated string at `*pos`.
fn cstr<'a>(b: &'a [u8], pos: &mut usize) -> Option<&'a [u8]> {
    let rest = b.get(*pos..)?;
    let end = rest.iter().position(|&c| c == 0)?;
    *pos += end + 1;
    Some(&rest[..end])
}

/// As `cstr`, but a string cut short by the capture limit (no NUL
/// before the end of the body) is taken as far as it goes: a statement
/// over the limit is traced with its text cut, never dropped.
fn cstr_or_rest<'a>(b: &'a [u8], pos: &mut usize) -> Option<&'a [u8]> {
    cstr(b, pos).or_else(|| {
        let rest = b.get(*pos..)?;
        *pos = b.len();
        Some(rest)
    })
}

/// How much of a bind value cut by the capture limit the trace shows.
const CUT_VALUE_SHOWN: usize = 1000;

fn i16_at(b: &[u8], pos: &mut usize) -> Option<i16> {
    let v = b.get(*pos..*pos + 2)?;
    *pos += 2;
    Some(i16::from_be_bytes([v[0], v[1]]))
}

fn i32_at(b: &[u8], pos: &mut usize) -> Option<i32> {
    let v = b.get(*pos..*pos + 4)?;
    *pos += 4;
    Some(i32::from_be_bytes([v[0], v[1], v[2], v[3]]))
}

fn text(b: &[u8]) -> String {
    wire_text(b).into_owned()
}

/// Bytes from the wire as text, U+FFFD for what is not UTF-8: borrowed
/// when they are UTF-8 (always, in practice). `from_utf8` checks ASCII a
/// word at a time where `from_utf8_lossy` goes byte by byte (~150
/// instructions a bind value in the server tracer, counted).
pub fn wire_text(b: &[u8]) -> std::borrow::Cow<'_, str> {
    // ASCII, the usual case (names, tags, most values), is checked a
    // word at a time without from_utf8's set-up: a third of its
    // instructions on the short texts of a round trip.
    if b.is_ascii() {
        // SAFETY: ASCII is UTF-8.
        return std::borrow::Cow::Borrowed(unsafe { std::str::from_utf8_unchecked(b) });
    }
    match std::str::from_utf8(b) {
        Ok(s) => std::borrow::Cow::Borrowed(s),
        Err(_) => String::from_utf8_lossy(b),
    }
}

/// A client message the tracer follows. PasswordMessage (and the SASL
/// messages that share its type byte) is never decoded: it is not here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientMsg {
    Query(String),
    Parse {
        name: String,
        sql: String,
    },
    Bind {
        portal: String,
        stmt: String,
        values: Vec<Option<String>>,
    },
    Describe,
    Execute {
        portal: String,
    },
    Close {
        statement: bool,
        name: String,
    },
    Sync,
    FunctionCall,
}

/// The client message types whose bodies the tracer needs.
pub fn client_traced(t: u8) -> bool {
    matches!(t, b'Q' | b'P' | b'B' | b'D' | b'E' | b'C' | b'S' | b'F')
}

/// Appends `b` as text, with U+FFFD for what is not UTF-8.
fn push_text(out: &mut String, b: &[u8]) {
    out.push_str(&wire_text(b));
}

/// Appends a bind value as the trace shows it: text-format values as they
/// are; binary ones as hex (up to 64 bytes) or their length.
fn push_value(out: &mut String, v: &[u8], binary: bool) {
    if !binary {
        return push_text(out, v);
    }
    if v.len() <= 64 {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        out.push_str("0x");
        for &b in v {
            out.push(HEX[(b >> 4) as usize] as char);
            out.push(HEX[(b & 15) as usize] as char);
        }
    } else {
        out.push_str(&format!("<binary, {} bytes>", v.len()));
    }
}

/// The values of a Bind body after the portal and statement names
/// (`params`), each as the trace shows it (`None`: NULL), handed to
/// `each` borrowed (from the body, or from `scratch` for a value that had
/// to be made): the server tracer writes them out without a String per
/// value, the proxy collects them. A body cut by the capture limit keeps
/// the call: the value that was cut shows its start and its length, the
/// ones after it say they were not captured.
pub fn each_bind_value(params: &[u8], scratch: &mut String, mut each: impl FnMut(Option<&str>)) {
    let b = params;
    let mut p = 0;
    let Some(nfmt) = i16_at(b, &mut p) else {
        return;
    };
    let fmts_at = p;
    if b.len() < p + 2 * nfmt.max(0) as usize {
        return;
    }
    p += 2 * nfmt.max(0) as usize;
    let binary_at = |i: usize| -> bool {
        let f = match nfmt {
            n if n <= 0 => return false,
            1 => 0,
            n if (i as i16) < n => i,
            _ => return false,
        };
        b[fmts_at + 2 * f..fmts_at + 2 * f + 2] == [0, 1]
    };
    let Some(n) = i16_at(b, &mut p) else {
        return;
    };
    let mut cut = false;
    for i in 0..n.max(0) as usize {
        scratch.clear();
        if cut {
            each(Some("(not captured)"));
            continue;
        }
        let binary = binary_at(i);
        let Some(len) = i32_at(b, &mut p) else {
            cut = true;
            each(Some("(not captured)"));
            continue;
        };
        if len < 0 {
            each(None);
            continue;
        }
        match b.get(p..p + len as usize) {
            Some(v) => {
                p += len as usize;
                if !binary {
                    // Text as it is (borrowed when UTF-8, the usual case).
                    each(Some(&wire_text(v)));
                    continue;
                }
                push_value(scratch, v, true);
            }
            None => {
                cut = true;
                let have = &b[p.min(b.len())..];
                let shown = &have[..have.len().min(CUT_VALUE_SHOWN)];
                if binary {
                    push_value(scratch, &shown[..shown.len().min(64)], true);
                } else {
                    push_text(scratch, shown);
                }
                scratch.push_str(&format!("... ({len} bytes, cut)"));
            }
        }
        each(Some(scratch));
    }
}

/// The values of a Bind, as Strings (see `each_bind_value`).
fn bind_values(params: &[u8]) -> Vec<Option<String>> {
    let mut values = Vec::new();
    let mut scratch = String::new();
    each_bind_value(params, &mut scratch, |v| values.push(v.map(str::to_owned)));
    values
}

/// A client message the tracer follows, borrowed from its body: the
/// server tracer reads each round trip's messages without copying them
/// into Strings (`ClientMsg` is the owned form).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientRef<'a> {
    Query(&'a [u8]),
    Parse {
        name: &'a [u8],
        sql: &'a [u8],
    },
    /// `params`: the body after the two names (see `each_bind_value`).
    Bind {
        portal: &'a [u8],
        stmt: &'a [u8],
        params: &'a [u8],
    },
    Describe,
    Execute {
        portal: &'a [u8],
    },
    Close {
        statement: bool,
        name: &'a [u8],
    },
    Sync,
    FunctionCall,
}

/// Decodes a client message the tracer follows, borrowing from `b`.
pub fn decode_client_ref(t: u8, b: &[u8]) -> Option<ClientRef<'_>> {
    let mut p = 0;
    Some(match t {
        b'Q' => ClientRef::Query(cstr_or_rest(b, &mut p)?),
        b'P' => {
            let name = cstr(b, &mut p)?;
            let sql = cstr_or_rest(b, &mut p)?;
            ClientRef::Parse { name, sql }
        }
        b'B' => {
            let portal = cstr(b, &mut p)?;
            let stmt = cstr(b, &mut p)?;
            ClientRef::Bind {
                portal,
                stmt,
                params: &b[p..],
            }
        }
        b'D' => ClientRef::Describe,
        b'E' => ClientRef::Execute {
            portal: cstr(b, &mut p)?,
        },
        b'C' => {
            let kind = *b.first()?;
            p = 1;
            ClientRef::Close {
                statement: kind == b'S',
                name: cstr(b, &mut p)?,
            }
        }
        b'S' => ClientRef::Sync,
        b'F' => ClientRef::FunctionCall,
        _ => return None,
    })
}

/// Decodes a client message the tracer follows; `binds` false skips the
/// values of Bind (`--no-binds`).
pub fn decode_client(t: u8, b: &[u8], binds: bool) -> Option<ClientMsg> {
    Some(match decode_client_ref(t, b)? {
        ClientRef::Query(sql) => ClientMsg::Query(text(sql)),
        ClientRef::Parse { name, sql } => ClientMsg::Parse {
            name: text(name),
            sql: text(sql),
        },
        ClientRef::Bind {
            portal,
            stmt,
            params,
        } => ClientMsg::Bind {
            portal: text(portal),
            stmt: text(stmt),
            values: if binds {
                bind_values(params)
            } else {
                Vec::new()
            },
        },
        ClientRef::Describe => ClientMsg::Describe,
        ClientRef::Execute { portal } => ClientMsg::Execute {
            portal: text(portal),
        },
        ClientRef::Close { statement, name } => ClientMsg::Close {
            statement,
            name: text(name),
        },
        ClientRef::Sync => ClientMsg::Sync,
        ClientRef::FunctionCall => ClientMsg::FunctionCall,
    })
}

/// The server message types whose bodies the tracer needs.
pub fn server_traced(t: u8) -> bool {
    matches!(t, b'C' | b'E' | b'Z' | b'K')
}

/// CommandComplete's tag (ASCII: borrowed, not copied).
pub fn command_tag(b: &[u8]) -> std::borrow::Cow<'_, str> {
    let mut p = 0;
    wire_text(cstr(b, &mut p).unwrap_or_default())
}

/// ErrorResponse's SQLSTATE (field `C`) and severity (field `V`, else `S`).
pub fn error_fields(b: &[u8]) -> (String, String) {
    let (mut code, mut sev, mut sev_v) = (String::new(), String::new(), String::new());
    let mut p = 0;
    while let Some(&f) = b.get(p) {
        if f == 0 {
            break;
        }
        p += 1;
        let Some(v) = cstr(b, &mut p) else { break };
        match f {
            b'C' => code = text(v),
            b'S' => sev = text(v),
            b'V' => sev_v = text(v),
            _ => {}
        }
    }
    (code, if sev_v.is_empty() { sev } else { sev_v })
}

/// BackendKeyData: (process id, secret key).
pub fn backend_key(b: &[u8]) -> Option<(i32, i32)> {
    let mut p = 0;
    Some((i32_at(b, &mut p)?, i32_at(b, &mut p)?))
}

/// A CancelRequest packet's (process id, secret key).
pub fn cancel_key(packet: &[u8]) -> Option<(i32, i32)> {
    let mut p = 8;
    Some((i32_at(packet, &mut p)?, i32_at(packet, &mut p)?))
}

/// An ErrorResponse of severity FATAL, from the proxy itself.
pub fn error_response(sqlstate: &str, message: &str) -> Vec<u8> {
    let mut body = Vec::new();
    for (f, v) in [
        (b'S', "FATAL"),
        (b'V', "FATAL"),
        (b'C', sqlstate),
        (b'M', message),
    ] {
        body.push(f);
        body.extend_from_slice(v.replace('\0', " ").as_bytes());
        body.push(0);
    }
    body.push(0);
    let mut m = Vec::with_capacity(body.len() + 5);
    m.push(b'E');
    m.extend_from_slice(&((body.len() + 4) as u32).to_be_bytes());
    m.extend_from_slice(&body);
    m
}

/// Oracle's command type of a statement (`oct=` on PARSING IN CURSOR),
/// from its first keyword.
pub fn oct(sql: &str) -> u32 {
    // The first word, compared without a lowered copy (the server tracer
    // classifies every statement of a simple-protocol workload).
    let rest = sql.trim_start_matches(|c: char| c.is_whitespace() || c == '(');
    let end = rest
        .bytes()
        .position(|c| !c.is_ascii_alphabetic())
        .unwrap_or(rest.len());
    let word = &rest.as_bytes()[..end];
    let is = |w: &str| word.eq_ignore_ascii_case(w.as_bytes());
    if ["select", "with", "values", "table", "show"]
        .into_iter()
        .any(is)
    {
        3
    } else if is("insert") || is("copy") {
        2
    } else if is("update") {
        6
    } else if is("delete") {
        7
    } else if is("commit") || is("end") {
        44
    } else if is("rollback") || is("abort") {
        45
    } else if is("do") || is("call") {
        47
    } else if is("create") {
        1
    } else {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn oct_by_the_first_word() {
        for (sql, want) in [
            ("select 1", 3),
            ("  (SELECT 1) union (select 2)", 3),
            ("\n\tWith x as (select 1) select * from x", 3),
            ("Insert into t values (1)", 2),
            ("COPY t FROM STDIN", 2),
            ("update t set a = 1", 6),
            ("DELETE FROM t", 7),
            ("END", 44),
            ("commit;", 44),
            ("rollback", 45),
            ("call p(1)", 47),
            ("DO $$ begin end $$", 47),
            ("create table t (a int)", 1),
            ("selectx", 0),
            ("vacuum t", 0),
            ("", 0),
        ] {
            assert_eq!(oct(sql), want, "{sql:?}");
        }
    }

    #[test]
    fn bind_with_text_binary_and_null() {
        let mut b = Vec::new();
        b.extend_from_slice(b"p1\0s1\0");
        b.extend_from_slice(&2i16.to_be_bytes());
        b.extend_from_slice(&0i16.to_be_bytes());
        b.extend_from_slice(&1i16.to_be_bytes());
        b.extend_from_slice(&3i16.to_be_bytes());
        b.extend_from_slice(&2i32.to_be_bytes());
        b.extend_from_slice(b"42");
        b.extend_from_slice(&4i32.to_be_bytes());
        b.extend_from_slice(&[0, 0, 1, 0]);
        b.extend_from_slice(&(-1i32).to_be_bytes());
        b.extend_from_slice(&0i16.to_be_bytes());
        assert_eq!(
            decode_client(b'B', &b, true),
            Some(ClientMsg::Bind {
                portal: "p1".into(),
                stmt: "s1".into(),
                values: vec![Some("42".into()), Some("0x00000100".into()), None]
            })
        );
        // Cut by the capture limit: the call stays, the values say so.
        assert_eq!(
            decode_client(b'B', &b[..19], true),
            Some(ClientMsg::Bind {
                portal: "p1".into(),
                stmt: "s1".into(),
                values: vec![
                    Some("4... (2 bytes, cut)".into()),
                    Some("(not captured)".into()),
                    Some("(not captured)".into())
                ]
            })
        );
        // Not even the names: no message, no panic.
        assert_eq!(decode_client(b'B', &b[..2], true), None);
        // A query cut short keeps what was captured.
        assert_eq!(
            decode_client(b'Q', b"select 1 /* long", true),
            Some(ClientMsg::Query("select 1 /* long".into()))
        );
    }

    #[test]
    fn error_response_round_trips() {
        let m = error_response("08006", "upstream down");
        assert_eq!(m[0], b'E');
        assert_eq!(
            u32::from_be_bytes([m[1], m[2], m[3], m[4]]) as usize,
            m.len() - 1
        );
        assert_eq!(
            error_fields(&m[5..]),
            ("08006".to_string(), "FATAL".to_string())
        );
    }
}
