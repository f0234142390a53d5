//! Opening trace files: plain or compressed (recognised by content, not by
//! name), or standard input (`-`).

use std::fs::{File, OpenOptions};
use std::io::{self, BufReader, Read};
use std::os::fd::AsFd;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use nix::fcntl::{fcntl, FcntlArg, OFlag};
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};

use crate::gzip::GzipText;

/// Where a trace comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    Path(PathBuf),
    Stdin,
}

impl Source {
    /// `-` means standard input, anything else a path.
    pub fn from_arg(arg: &str) -> Source {
        if arg == "-" {
            Source::Stdin
        } else {
            Source::Path(PathBuf::from(arg))
        }
    }
}

/// Compression recognised from a file's first bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    None,
    Gzip,
    Bzip2,
    Xz,
    Zstd,
}

impl Compression {
    fn sniff(head: &[u8]) -> Compression {
        if head.starts_with(&[0x1f, 0x8b]) {
            Compression::Gzip
        } else if head.starts_with(b"BZh") && head.len() > 3 && head[3].is_ascii_digit() {
            Compression::Bzip2
        } else if head.starts_with(&[0xfd, b'7', b'z', b'X', b'Z', 0]) {
            Compression::Xz
        } else if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
            Compression::Zstd
        } else {
            Compression::None
        }
    }

    /// The file-name suffixes this compression is usually written with.
    fn suffixes(self) -> &'static [&'static str] {
        match self {
            Compression::None => &[],
            Compression::Gzip => &[".gz", ".gzip", ".z"],
            Compression::Bzip2 => &[".bz2", ".bzip2"],
            Compression::Xz => &[".xz", ".lzma"],
            Compression::Zstd => &[".zst", ".zstd"],
        }
    }
}

/// An opened trace: its names and a reader over the uncompressed text.
pub struct TraceFile {
    /// The file as the user named it (`-` for standard input): `$file`.
    pub name: String,
    /// The name Oracle gave the trace: the last path component with a
    /// compression suffix removed, so that `x.trc.gz` reads as `x.trc`
    /// (`$basename`), as mrskew would print for the uncompressed file.
    pub basename: String,
    pub compression: Compression,
    pub(crate) body: Body,
}

/// The uncompressed text: a plain regular file (which can be read in
/// pieces by several threads), or a stream.
pub(crate) enum Body {
    File {
        file: Arc<File>,
        len: u64,
        counter: Option<Arc<AtomicU64>>,
    },
    Stream(Box<dyn Read + Send>),
}

impl TraceFile {
    /// A trace from any reader of uncompressed text (tests, pipes of
    /// other subcommands).
    pub fn from_reader(name: &str, reader: impl Read + Send + 'static) -> TraceFile {
        TraceFile {
            name: name.to_string(),
            basename: oracle_basename(name, Compression::None),
            compression: Compression::None,
            body: Body::Stream(Box::new(reader)),
        }
    }
}

impl std::fmt::Debug for TraceFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TraceFile")
            .field("name", &self.name)
            .field("basename", &self.basename)
            .field("compression", &self.compression)
            .finish()
    }
}

/// Why a trace could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error("{name}: cannot open: {source}")]
    Io { name: String, source: io::Error },
    #[error("{name}: a FIFO with no writer (waited {} s for one): nothing to read", waited.as_secs())]
    NoWriter { name: String, waited: Duration },
}

/// How long a FIFO among the inputs may go without a writer before it is
/// skipped: long enough for a writer started by the same script, short
/// enough that a forgotten FIFO does not hold back the other files' report.
pub const FIFO_WAIT: Duration = Duration::from_secs(5);

/// Opens `p` for reading without blocking on a FIFO that has no writer
/// (a plain `open` waits for one forever): a FIFO is given [`FIFO_WAIT`]
/// for a writer to appear. Returns the file in blocking mode, and the
/// bytes read while waiting (to be read before the rest).
fn open_path(p: &Path, name: &str) -> Result<(File, Vec<u8>), OpenError> {
    let io = |source: io::Error| OpenError::Io {
        name: name.to_string(),
        source,
    };
    let mut f = OpenOptions::new()
        .read(true)
        .custom_flags(OFlag::O_NONBLOCK.bits())
        .open(p)
        .map_err(io)?;
    let mut first = Vec::new();
    if f.metadata().map_err(io)?.file_type().is_fifo() {
        first = wait_for_writer(&mut f, name)?;
    }
    let flags = fcntl(f.as_fd(), FcntlArg::F_GETFL).map_err(|e| io(e.into()))?;
    let blocking = OFlag::from_bits_truncate(flags) & !OFlag::O_NONBLOCK;
    fcntl(f.as_fd(), FcntlArg::F_SETFL(blocking)).map_err(|e| io(e.into()))?;
    Ok((f, first))
}

/// The raw bytes of the file at `path` (compressed or not), a FIFO
/// waited for as [`open`] waits for its writer: for a caller that copies a
/// pipe to read it more than once.
pub fn open_raw(path: &Path) -> Result<Box<dyn Read + Send>, OpenError> {
    let (f, first) = open_path(path, &path.display().to_string())?;
    Ok(Box::new(io::Cursor::new(first).chain(f)))
}

/// Reads a FIFO opened without blocking until a writer shows: a read
/// returns 0 while there is none, data or `EAGAIN` once there is one.
fn wait_for_writer(f: &mut File, name: &str) -> Result<Vec<u8>, OpenError> {
    let start = Instant::now();
    let mut buf = vec![0u8; 64 << 10];
    loop {
        match f.read(&mut buf) {
            Ok(0) => {
                let left = FIFO_WAIT.saturating_sub(start.elapsed());
                if left.is_zero() {
                    return Err(OpenError::NoWriter {
                        name: name.to_string(),
                        waited: FIFO_WAIT,
                    });
                }
                // Wakes early when a writer writes; a writer that has not
                // written yet is found by the next read. A writer that came
                // and went leaves POLLHUP set: then sleep, not spin.
                let ms = left.as_millis().min(100) as u16;
                let mut fds = [PollFd::new(f.as_fd(), PollFlags::POLLIN)];
                let woke = poll(&mut fds, PollTimeout::from(ms)).unwrap_or(0) > 0;
                if woke
                    && !fds[0]
                        .revents()
                        .is_some_and(|r| r.contains(PollFlags::POLLIN))
                {
                    std::thread::sleep(Duration::from_millis(u64::from(ms)));
                }
            }
            Ok(n) => {
                buf.truncate(n);
                return Ok(buf);
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(Vec::new()),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(source) => {
                return Err(OpenError::Io {
                    name: name.to_string(),
                    source,
                })
            }
        }
    }
}

/// Counts the raw (possibly compressed) bytes read, for progress bars.
struct Counted<R> {
    inner: R,
    counter: Arc<AtomicU64>,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.counter.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

/// Opens a trace and recognises its compression from its first bytes.
pub fn open(source: &Source) -> Result<TraceFile, OpenError> {
    open_counted(source, None)
}

/// Like [`open`], adding the raw bytes read to `counter` as reading goes.
pub fn open_counted(
    source: &Source,
    counter: Option<Arc<AtomicU64>>,
) -> Result<TraceFile, OpenError> {
    let (name, raw): (String, Box<dyn Read + Send>) = match source {
        Source::Stdin => ("-".to_string(), Box::new(io::stdin())),
        Source::Path(p) => {
            let name = p.display().to_string();
            let (f, first) = open_path(p, &name)?;
            if !first.is_empty() {
                let raw: Box<dyn Read + Send> = Box::new(io::Cursor::new(first).chain(f));
                return open_stream(name, raw, counter);
            }
            if let Some(len) = plain_len(&f) {
                let basename = oracle_basename(&name, Compression::None);
                return Ok(TraceFile {
                    name,
                    basename,
                    compression: Compression::None,
                    body: Body::File {
                        file: Arc::new(f),
                        len,
                        counter,
                    },
                });
            }
            (name, Box::new(f))
        }
    };
    open_stream(name, raw, counter)
}

/// A trace read as a stream (standard input, pipes, devices, compressed
/// files), its compression recognised from its first bytes.
fn open_stream(
    name: String,
    raw: Box<dyn Read + Send>,
    counter: Option<Arc<AtomicU64>>,
) -> Result<TraceFile, OpenError> {
    let raw: Box<dyn Read + Send> = match counter {
        Some(counter) => Box::new(Counted {
            inner: raw,
            counter,
        }),
        None => raw,
    };
    let mut raw = BufReader::with_capacity(256 * 1024, raw);
    let head = io::BufRead::fill_buf(&mut raw).map_err(|e| OpenError::Io {
        name: name.clone(),
        source: e,
    })?;
    let compression = Compression::sniff(head);
    let reader: Box<dyn Read + Send> = match compression {
        Compression::None => Box::new(raw),
        Compression::Gzip => Box::new(GzipText::new(raw)),
        Compression::Bzip2 => Box::new(bzip2::bufread::MultiBzDecoder::new(raw)),
        Compression::Xz => Box::new(xz2::bufread::XzDecoder::new_multi_decoder(raw)),
        Compression::Zstd => Box::new(zstd::stream::read::Decoder::with_buffer(raw).map_err(
            |e| OpenError::Io {
                name: name.clone(),
                source: e,
            },
        )?),
    };
    let basename = oracle_basename(&name, compression);
    Ok(TraceFile {
        name,
        basename,
        compression,
        body: Body::Stream(reader),
    })
}

/// The length of a regular, uncompressed file; `None` means "read it as a
/// stream" (pipes, devices, compressed files).
fn plain_len(f: &File) -> Option<u64> {
    use std::os::unix::fs::FileExt;
    let meta = f.metadata().ok()?;
    if !meta.is_file() {
        return None;
    }
    let mut head = [0u8; 8];
    let n = f.read_at(&mut head, 0).ok()?;
    (Compression::sniff(&head[..n]) == Compression::None).then_some(meta.len())
}

fn oracle_basename(name: &str, compression: Compression) -> String {
    let base = Path::new(name)
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| name.to_string());
    for suffix in compression.suffixes() {
        if base.len() > suffix.len() && base.to_ascii_lowercase().ends_with(suffix) {
            return base[..base.len() - suffix.len()].to_string();
        }
    }
    base
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn basename_drops_only_the_compression_suffix_of_the_content() {
        assert_eq!(oracle_basename("/a/b/x.trc.gz", Compression::Gzip), "x.trc");
        assert_eq!(oracle_basename("x.trc.gz", Compression::None), "x.trc.gz");
        assert_eq!(oracle_basename("x.trc.XZ", Compression::Xz), "x.trc");
        assert_eq!(oracle_basename("x.trc", Compression::Zstd), "x.trc");
        assert_eq!(oracle_basename("-", Compression::None), "-");
    }

    #[test]
    fn sniffs_magic_numbers() {
        assert_eq!(Compression::sniff(&[0x1f, 0x8b, 8]), Compression::Gzip);
        assert_eq!(Compression::sniff(b"BZh9"), Compression::Bzip2);
        assert_eq!(Compression::sniff(b"BZhx"), Compression::None);
        assert_eq!(Compression::sniff(b"Trace file"), Compression::None);
    }
}
