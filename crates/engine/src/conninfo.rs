//! Connection settings beyond the URL, found where each engine's own
//! client finds them, so that a password need not be in a URL (which any
//! user sees in `/proc/PID/cmdline`).
//!
//! - PostgreSQL, as libpq: what the URL leaves out comes from the service
//!   named by `?service=` or `PGSERVICE` (`PGSERVICEFILE` or
//!   `~/.pg_service.conf`, then `PGSYSCONFDIR/pg_service.conf`), then
//!   from `PGHOST`, `PGPORT`, `PGDATABASE`, `PGUSER`, `PGPASSWORD`,
//!   `PGAPPNAME`, `PGOPTIONS`, `PGCONNECT_TIMEOUT`; a password still
//!   missing comes from the password file (`?passfile=`, `PGPASSFILE` or
//!   `~/.pgpass`, ignored when group or others may read it, as libpq
//!   does).
//! - MariaDB, as its client library: what the URL leaves out comes from
//!   the `[client]`, `[client-server]` and `[client-mariadb]` groups of
//!   the option files (`/etc/my.cnf`, `/etc/mysql/my.cnf`,
//!   `$MARIADB_HOME/my.cnf` or `$MYSQL_HOME/my.cnf`, `~/.my.cnf`, with
//!   `!include` and `!includedir`), then a password from `MYSQL_PWD`.
//!   The option files' `socket` is used only when the URL names no host.
//!
//! Hand-written: no crate reads pg_service.conf, .pgpass or MariaDB's
//! option files.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::conn::redact;

/// Where settings come from: the environment and the home directory
/// (given, so that tests need not change the process's).
pub(crate) struct Sources<'a> {
    pub env: &'a dyn Fn(&str) -> Option<String>,
    pub home: Option<PathBuf>,
    /// MariaDB's system-wide option files (`/etc/my.cnf`, ...).
    pub system_files: Vec<PathBuf>,
}

fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

fn process_sources() -> Sources<'static> {
    Sources {
        env: &process_env,
        home: process_env("HOME").map(PathBuf::from),
        system_files: vec!["/etc/my.cnf".into(), "/etc/mysql/my.cnf".into()],
    }
}

/// A PostgreSQL connection configuration for `url`, completed as libpq
/// completes it.
pub fn postgres(url: &str) -> Result<tokio_postgres::Config, String> {
    postgres_from(url, &process_sources())
}

/// Splits libpq parameters tokio-postgres does not know (`service`,
/// `passfile`) off a URL's query string.
fn split_params(url: &str) -> (String, HashMap<String, String>) {
    let mut own = HashMap::new();
    let Some((base, query)) = url.split_once('?') else {
        return (url.to_string(), own);
    };
    let mut kept = Vec::new();
    for pair in query.split('&') {
        match pair.split_once('=') {
            Some((k @ ("service" | "passfile"), v)) => {
                own.insert(k.to_string(), percent_decode(v));
            }
            _ => kept.push(pair),
        }
    }
    if kept.is_empty() {
        (base.to_string(), own)
    } else {
        (format!("{base}?{}", kept.join("&")), own)
    }
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            if let Ok(v) = u8::from_str_radix(&s[i + 1..i + 3], 16) {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The parameters of service `name` in a pg_service.conf, if it is there.
fn read_service(path: &Path, name: &str) -> Option<HashMap<String, String>> {
    let text = std::fs::read_to_string(path).ok()?;
    let mut found: Option<HashMap<String, String>> = None;
    let mut inside = false;
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(section) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            if found.is_some() && inside {
                break;
            }
            inside = section == name;
            if inside {
                found = Some(HashMap::new());
            }
            continue;
        }
        if inside {
            if let (Some(map), Some((k, v))) = (found.as_mut(), line.split_once('=')) {
                map.insert(k.trim().to_string(), v.trim().to_string());
            }
        }
    }
    found
}

/// One `.pgpass` field matched against a value (`*` matches anything).
fn pgpass_fields(line: &str) -> Vec<String> {
    let mut fields = vec![String::new()];
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let Some(n) = chars.next() {
                    fields.last_mut().unwrap().push(n);
                }
            }
            ':' if fields.len() < 5 => fields.push(String::new()),
            c => fields.last_mut().unwrap().push(c),
        }
    }
    fields
}

/// The password for (host, port, db, user) in a password file, as libpq
/// looks it up: the first matching line wins; a file that group or
/// others may read is ignored.
fn read_pgpass(path: &Path, host: &str, port: &str, db: &str, user: &str) -> Option<String> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(path).ok()?;
    if !meta.is_file() || meta.permissions().mode() & 0o077 != 0 {
        return None;
    }
    let text = std::fs::read_to_string(path).ok()?;
    for line in text.lines() {
        if line.trim_start().starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let f = pgpass_fields(line);
        if f.len() != 5 {
            continue;
        }
        let ok = |pat: &str, v: &str| pat == "*" || pat == v;
        if ok(&f[0], host) && ok(&f[1], port) && ok(&f[2], db) && ok(&f[3], user) {
            return Some(f[4].clone());
        }
    }
    None
}

/// The OS user's name, libpq's default user.
pub(crate) fn os_user(env: &dyn Fn(&str) -> Option<String>) -> Option<String> {
    env("USER").or_else(|| env("LOGNAME")).or_else(|| {
        // SAFETY: getpwuid returns a pointer into static storage or null;
        // it is read at once, on this thread.
        unsafe {
            let pw = libc::getpwuid(libc::geteuid());
            if pw.is_null() {
                return None;
            }
            let name = std::ffi::CStr::from_ptr((*pw).pw_name);
            Some(name.to_string_lossy().into_owned())
        }
    })
}

pub(crate) fn postgres_from(
    url: &str,
    src: &Sources<'_>,
) -> Result<tokio_postgres::Config, String> {
    let env = src.env;
    let (base, own) = split_params(url);
    let mut cfg: tokio_postgres::Config = base
        .parse()
        .map_err(|e| format!("invalid connection string: {}", crate::conn::innermost(&e)))?;
    // The service: what the URL left out, before the environment.
    let mut service: HashMap<String, String> = HashMap::new();
    if let Some(name) = own.get("service").cloned().or_else(|| env("PGSERVICE")) {
        let user_file = env("PGSERVICEFILE")
            .map(PathBuf::from)
            .or_else(|| src.home.as_ref().map(|h| h.join(".pg_service.conf")));
        let system_file =
            PathBuf::from(env("PGSYSCONFDIR").unwrap_or_else(|| "/etc/postgresql-common".into()))
                .join("pg_service.conf");
        service = user_file
            .and_then(|f| read_service(&f, &name))
            .or_else(|| read_service(&system_file, &name))
            .ok_or_else(|| format!("definition of service \"{name}\" not found"))?;
    }
    let get = |key: &str, var: &str| service.get(key).cloned().or_else(|| env(var));
    if cfg.get_hosts().is_empty() {
        let hosts = get("host", "PGHOST").unwrap_or_else(|| "/var/run/postgresql".into());
        for h in hosts.split(',') {
            if h.starts_with('/') {
                cfg.host_path(h);
            } else {
                cfg.host(h);
            }
        }
    }
    if cfg.get_ports().is_empty() {
        if let Some(ports) = get("port", "PGPORT") {
            for p in ports.split(',') {
                let p = p
                    .trim()
                    .parse::<u16>()
                    .map_err(|_| format!("invalid port `{p}` (from PGPORT or the service)"))?;
                cfg.port(p);
            }
        }
    }
    if cfg.get_user().is_none() {
        if let Some(u) = get("user", "PGUSER").or_else(|| os_user(env)) {
            cfg.user(&u);
        }
    }
    if cfg.get_dbname().is_none() {
        if let Some(d) = get("dbname", "PGDATABASE") {
            cfg.dbname(&d);
        }
    }
    if cfg.get_application_name().is_none() {
        if let Some(a) = get("application_name", "PGAPPNAME") {
            cfg.application_name(&a);
        }
    }
    if cfg.get_options().is_none() {
        if let Some(o) = get("options", "PGOPTIONS") {
            cfg.options(&o);
        }
    }
    if cfg.get_connect_timeout().is_none() {
        if let Some(t) = get("connect_timeout", "PGCONNECT_TIMEOUT").and_then(|t| t.parse().ok()) {
            cfg.connect_timeout(std::time::Duration::from_secs(t));
        }
    }
    if cfg.get_password().is_none() {
        if let Some(p) = get("password", "PGPASSWORD") {
            cfg.password(p);
        }
    }
    if cfg.get_password().is_none() {
        let file = own
            .get("passfile")
            .or(service.get("passfile"))
            .cloned()
            .or_else(|| env("PGPASSFILE"))
            .map(PathBuf::from)
            .or_else(|| src.home.as_ref().map(|h| h.join(".pgpass")));
        if let Some(file) = file {
            let host = match cfg.get_hosts().first() {
                Some(tokio_postgres::config::Host::Tcp(h)) => h.clone(),
                // A socket directory matches "localhost", as in libpq.
                _ => "localhost".to_string(),
            };
            let port = cfg.get_ports().first().copied().unwrap_or(5432).to_string();
            let user = cfg.get_user().unwrap_or("").to_string();
            let db = cfg.get_dbname().unwrap_or(&user).to_string();
            if let Some(p) = read_pgpass(&file, &host, &port, &db, &user) {
                cfg.password(p);
            }
        }
    }
    Ok(cfg)
}

/// MariaDB connection options for `url`, completed as the MariaDB client
/// library completes them.
pub fn mariadb(url: &str) -> Result<mysql_async::Opts, String> {
    mariadb_from(url, &process_sources())
}

/// The settings of the client groups of MariaDB's option files, later
/// files overriding earlier ones.
fn mariadb_options(src: &Sources<'_>) -> HashMap<String, String> {
    let mut files: Vec<PathBuf> = src.system_files.clone();
    if let Some(dir) = (src.env)("MARIADB_HOME").or_else(|| (src.env)("MYSQL_HOME")) {
        files.push(PathBuf::from(dir).join("my.cnf"));
    }
    if let Some(h) = &src.home {
        files.push(h.join(".my.cnf"));
    }
    let mut out = HashMap::new();
    for f in files {
        read_option_file(&f, &mut out, 0);
    }
    out
}

/// Reads one option file into `out` (the client groups only), following
/// `!include` and `!includedir` (files ending in .cnf, in name order).
fn read_option_file(path: &Path, out: &mut HashMap<String, String>, depth: usize) {
    if depth > 10 {
        return;
    }
    let Ok(text) = std::fs::read_to_string(path) else {
        return;
    };
    let mut ours = false;
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(f) = line.strip_prefix("!includedir") {
            if let Ok(rd) = std::fs::read_dir(f.trim()) {
                let mut names: Vec<PathBuf> = rd
                    .filter_map(|e| e.ok().map(|e| e.path()))
                    .filter(|p| p.extension().is_some_and(|x| x == "cnf"))
                    .collect();
                names.sort();
                for n in names {
                    read_option_file(&n, out, depth + 1);
                }
            }
            continue;
        }
        if let Some(f) = line.strip_prefix("!include") {
            read_option_file(Path::new(f.trim()), out, depth + 1);
            continue;
        }
        if let Some(group) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            ours = matches!(
                group.trim().to_ascii_lowercase().as_str(),
                "client" | "client-server" | "client-mariadb"
            );
            continue;
        }
        if !ours {
            continue;
        }
        let (k, v) = line.split_once('=').unwrap_or((line, ""));
        let key = k.trim().replace('-', "_").to_ascii_lowercase();
        let mut v = v.trim();
        // A comment after the value, unless quoted.
        if !v.starts_with(['"', '\'']) {
            v = v.split(" #").next().unwrap_or(v).trim();
        }
        let v = unquote(v);
        if key == "password" && v.is_empty() {
            // A bare `password` asks for it on a terminal: not here.
            continue;
        }
        out.insert(key, v);
    }
}

/// An option value without its quotes, escapes read.
fn unquote(v: &str) -> String {
    let q = v.chars().next();
    let inner = match q {
        Some(c @ ('"' | '\'')) if v.len() >= 2 && v.ends_with(c) => &v[1..v.len() - 1],
        _ => return v.to_string(),
    };
    let mut out = String::new();
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some('n') => out.push('\n'),
                Some('t') => out.push('\t'),
                Some('s') => out.push(' '),
                Some(o) => out.push(o),
                None => {}
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Whether a MariaDB URL names a host (`mysql://u@host:1/db` does,
/// `mysql:///db` does not).
fn url_has_host(url: &str) -> bool {
    let Some(rest) = url.split_once("//").map(|(_, r)| r) else {
        return false;
    };
    let auth = rest.split(['/', '?']).next().unwrap_or("");
    let host = auth.rsplit_once('@').map_or(auth, |(_, h)| h);
    !host.split(':').next().unwrap_or("").is_empty()
}

pub(crate) fn mariadb_from(url: &str, src: &Sources<'_>) -> Result<mysql_async::Opts, String> {
    let mut url_m = match url.strip_prefix("mariadb:") {
        Some(rest) => format!("mysql:{rest}"),
        None => url.to_string(),
    };
    let has_host = url_has_host(&url_m);
    if !has_host {
        // The URL parser wants a host: one is put in, replaced below.
        url_m = url_m.replacen(":///", "://localhost/", 1);
        if let Some((scheme, rest)) = url_m.split_once("://") {
            if rest.starts_with('@')
                || rest
                    .split(['/', '?'])
                    .next()
                    .is_some_and(|a| a.ends_with('@'))
            {
                url_m = format!("{scheme}://{}", rest.replacen('@', "@localhost", 1));
            }
        }
    }
    let opts = mysql_async::Opts::from_url(&url_m).map_err(|_| {
        format!(
            "cannot read the MariaDB URL `{}`: expected mysql://user[:password]@host[:port]/database",
            redact(url)
        )
    })?;
    let file = mariadb_options(src);
    let mut b = mysql_async::OptsBuilder::from_opts(opts.clone());
    // A URL that names a TCP host is reached over TCP, as the MariaDB
    // client library does; mysql_async would otherwise look up the
    // server's socket and reconnect through it (its `prefer_socket`),
    // bypassing whatever is on the TCP path (a proxy, the network whose
    // latency is measured). `?prefer_socket=true` still asks for it.
    if has_host && !url_m.contains("prefer_socket=") {
        b = b.prefer_socket(false);
    }
    if opts.user().is_none() {
        if let Some(u) = file.get("user").cloned().or_else(|| os_user(src.env)) {
            b = b.user(Some(u));
        }
    }
    if opts.pass().is_none() {
        if let Some(p) = file
            .get("password")
            .cloned()
            .or_else(|| (src.env)("MYSQL_PWD"))
        {
            b = b.pass(Some(p));
        }
    }
    if opts.db_name().is_none() {
        if let Some(d) = file.get("database") {
            b = b.db_name(Some(d.clone()));
        }
    }
    if !has_host {
        let host = file
            .get("host")
            .cloned()
            .or_else(|| (src.env)("MYSQL_HOST"))
            .unwrap_or_else(|| "localhost".into());
        let port = file
            .get("port")
            .cloned()
            .or_else(|| (src.env)("MYSQL_TCP_PORT"))
            .and_then(|p| p.parse::<u16>().ok());
        if let Some(p) = port {
            b = b.tcp_port(p);
        }
        let socket = file
            .get("socket")
            .cloned()
            .or_else(|| (src.env)("MYSQL_UNIX_PORT"));
        if host == "localhost" {
            b = b.socket(socket);
        }
        b = b.ip_or_hostname(host);
    }
    Ok(b.into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn sources<'a>(env: &'a dyn Fn(&str) -> Option<String>, home: &Path) -> Sources<'a> {
        Sources {
            env,
            home: Some(home.to_path_buf()),
            system_files: vec![],
        }
    }

    #[test]
    fn libpq_order_url_then_service_then_environment_then_password_file() {
        let home = tempfile::tempdir().unwrap();
        std::fs::write(
            home.path().join(".pg_service.conf"),
            "# mine\n[lab]\nhost=10.9.9.9\nport=6543\ndbname=svcdb\n[other]\nuser=nobody\n",
        )
        .unwrap();
        let pass = home.path().join(".pgpass");
        std::fs::write(
            &pass,
            "# comment\nother:*:*:*:no\n10.9.9.9:6543:svcdb:alice:pa\\:ss\n*:*:*:*:fallback\n",
        )
        .unwrap();
        std::fs::set_permissions(&pass, std::fs::Permissions::from_mode(0o600)).unwrap();
        let env = |k: &str| match k {
            "PGSERVICE" => Some("lab".to_string()),
            "PGHOST" => Some("envhost".to_string()),
            "PGUSER" => Some("alice".to_string()),
            _ => None,
        };
        let c = postgres_from("postgres://", &sources(&env, home.path())).unwrap();
        assert_eq!(
            c.get_hosts(),
            &[tokio_postgres::config::Host::Tcp("10.9.9.9".into())]
        );
        assert_eq!(c.get_ports(), &[6543]);
        assert_eq!(c.get_dbname(), Some("svcdb"));
        assert_eq!(c.get_user(), Some("alice"));
        assert_eq!(c.get_password(), Some(&b"pa:ss"[..]));
        // The URL wins; PGPASSWORD comes before the file.
        let env2 = |k: &str| match k {
            "PGPASSWORD" => Some("fromenv".to_string()),
            _ => env(k),
        };
        let c = postgres_from("postgres://bob@h:1/d", &sources(&env2, home.path())).unwrap();
        assert_eq!(c.get_user(), Some("bob"));
        assert_eq!(c.get_password(), Some(&b"fromenv"[..]));
        // A password file others may read is ignored.
        std::fs::set_permissions(&pass, std::fs::Permissions::from_mode(0o644)).unwrap();
        let c = postgres_from("postgres://bob@h:1/d", &sources(&env, home.path())).unwrap();
        assert_eq!(c.get_password(), None);
        // An unknown service is an error, as in libpq.
        let e =
            postgres_from("postgres://h/d?service=nope", &sources(&env, home.path())).unwrap_err();
        assert!(e.contains("\"nope\" not found"), "{e}");
    }

    #[test]
    fn a_mariadb_url_with_a_host_stays_on_tcp() {
        let home = tempfile::tempdir().unwrap();
        let env = |_: &str| None;
        let src = sources(&env, home.path());
        let o = mariadb_from("mysql://root@127.0.0.1:3306/t", &src).unwrap();
        assert!(
            !o.prefer_socket(),
            "a TCP URL is not swapped for the socket"
        );
        let o = mariadb_from("mysql://root@127.0.0.1:3306/t?prefer_socket=true", &src).unwrap();
        assert!(o.prefer_socket(), "unless the URL asks for it");
    }

    #[test]
    fn mariadb_option_files_and_mysql_pwd() {
        let home = tempfile::tempdir().unwrap();
        let inc = home.path().join("conf.d");
        std::fs::create_dir(&inc).unwrap();
        std::fs::write(inc.join("a.cnf"), "[client-mariadb]\nuser = fromfile\n").unwrap();
        std::fs::write(
            home.path().join(".my.cnf"),
            format!(
                "[mysqld]\npassword=server\n[client]\npassword = \"se cr\\\"et\"\nsocket=/nowhere.sock\n!includedir {}\n",
                inc.display()
            ),
        )
        .unwrap();
        let none = |_: &str| None;
        let o = mariadb_from("mysql://127.0.0.1:3307/t", &sources(&none, home.path())).unwrap();
        assert_eq!(o.pass(), Some("se cr\"et"));
        assert_eq!(o.user(), Some("fromfile"));
        assert_eq!(o.socket(), None, "a host in the URL: no socket");
        assert_eq!(o.tcp_port(), 3307);
        let o = mariadb_from("mysql://u:url@h/t", &sources(&none, home.path())).unwrap();
        assert_eq!((o.user(), o.pass()), (Some("u"), Some("url")));
        let empty = tempfile::tempdir().unwrap();
        let env = |k: &str| (k == "MYSQL_PWD").then(|| "envpw".to_string());
        let o = mariadb_from("mysql://u@h/t", &sources(&env, empty.path())).unwrap();
        assert_eq!(o.pass(), Some("envpw"));
        let o = mariadb_from("mysql:///t", &sources(&none, home.path())).unwrap();
        assert_eq!(o.socket(), Some("/nowhere.sock"));
    }
}
