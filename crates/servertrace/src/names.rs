//! The wait event the backend has set, and PostgreSQL's own name for it
//! (`Type:Event`), read through the symbols the server exports:
//! `my_wait_event_info`, `pgstat_get_wait_event_type`,
//! `pgstat_get_wait_event`.

use std::ffi::{c_char, CStr};

use crate::{dlsym, RTLD_DEFAULT};

/// What the server exports for its wait events.
struct Pg {
    /// `uint32 *my_wait_event_info`: the address of the pointer.
    info: *const *const u32,
    event_type: unsafe extern "C" fn(u32) -> *const c_char,
    event: unsafe extern "C" fn(u32) -> *const c_char,
}

/// The server's wait-event symbols and the names looked up so far.
pub struct WaitNames {
    pg: Option<Pg>,
    /// The names seen, by their `wait_event_info`.
    list: Vec<(u32, Box<str>)>,
    /// The last name looked up: its `wait_event_info` and index (a
    /// backend waits for the same few events over and over).
    last: Option<(u32, usize)>,
    /// `Client:ClientRead`'s `wait_event_info`, once seen (0 before).
    client_read: u32,
}

impl WaitNames {
    /// Before the server's symbols are looked up (a static's value).
    pub const fn none() -> WaitNames {
        WaitNames {
            pg: None,
            list: Vec::new(),
            last: None,
            client_read: 0,
        }
    }

    /// Names known in advance, with no server (for tests).
    #[cfg(test)]
    pub fn known(list: &[(u32, &str)]) -> WaitNames {
        WaitNames {
            list: list.iter().map(|&(i, n)| (i, n.into())).collect(),
            ..WaitNames::none()
        }
    }

    /// Looks the server's symbols up; false if this process is no
    /// PostgreSQL server (they are missing).
    pub fn look_up(&mut self) -> bool {
        // SAFETY: the symbols are looked up by name; their types are those
        // of PostgreSQL 14-18 (`uint32 *my_wait_event_info`, `const char
        // *pgstat_get_wait_event(uint32)`).
        self.pg = unsafe {
            let info = dlsym(RTLD_DEFAULT, c"my_wait_event_info".as_ptr());
            let t = dlsym(RTLD_DEFAULT, c"pgstat_get_wait_event_type".as_ptr());
            let e = dlsym(RTLD_DEFAULT, c"pgstat_get_wait_event".as_ptr());
            if info.is_null() || t.is_null() || e.is_null() {
                None
            } else {
                type Name = unsafe extern "C" fn(u32) -> *const c_char;
                Some(Pg {
                    info: info as *const *const u32,
                    event_type: std::mem::transmute::<*mut std::ffi::c_void, Name>(t),
                    event: std::mem::transmute::<*mut std::ffi::c_void, Name>(e),
                })
            }
        };
        self.pg.is_some()
    }

    /// The wait event the backend has set (0: none).
    #[inline]
    pub fn event(&self) -> u32 {
        match &self.pg {
            // SAFETY: the server's pointer to its wait-event word, valid
            // for the process's life (it points at a local word before
            // the backend has its PGPROC).
            Some(pg) => unsafe {
                let p = *pg.info;
                if p.is_null() {
                    0
                } else {
                    std::ptr::read_volatile(p)
                }
            },
            None => 0,
        }
    }

    /// `Type:Event`, PostgreSQL's own name for `info` ("" when there is
    /// no more room for names, or this is not a server).
    #[inline]
    pub fn name(&mut self, info: u32) -> &str {
        let at = match self.last {
            Some((i, at)) if i == info => Some(at),
            _ => self.index_of(info),
        };
        at.map_or("", |i| &self.list[i].1)
    }

    /// The index of `info`'s name in `list`, looked up and kept the
    /// first time.
    fn index_of(&mut self, info: u32) -> Option<usize> {
        if let Some(i) = self.list.iter().position(|(i, _)| *i == info) {
            self.last = Some((info, i));
            return Some(i);
        }
        let pg = self.pg.as_ref()?;
        // SAFETY: the server's functions; they return static strings.
        let text = |p: *const c_char| unsafe {
            if p.is_null() {
                "???".to_string()
            } else {
                CStr::from_ptr(p).to_string_lossy().into_owned()
            }
        };
        let n = format!(
            "{}:{}",
            text(unsafe { (pg.event_type)(info) }),
            text(unsafe { (pg.event)(info) })
        );
        if self.list.len() >= 512 {
            return None;
        }
        if n == "Client:ClientRead" {
            self.client_read = info;
        }
        self.list.push((info, n.into()));
        self.last = Some((info, self.list.len() - 1));
        Some(self.list.len() - 1)
    }

    /// Whether `info` is `Client:ClientRead`, the wait for the client's
    /// next message (its name looked up, and kept, as `name` does).
    #[inline]
    pub fn is_client_read(&mut self, info: u32) -> bool {
        if self.client_read != 0 {
            return info == self.client_read;
        }
        self.name(info) == "Client:ClientRead"
    }
}
