//! Team stores on PostgreSQL (SPEC §22): the database behind the core's `Remote` seam.
//!
//! The database holds the history (`stardust_transactions`, with each transaction's new
//! contents in `stardust_contents`), the documents as of the head (`stardust_documents`) and
//! the head seq (`stardust_head`, one row). A commit is one call of `stardust_commit`, a
//! function the migration creates, prepared once per connection: it moves the head from
//! `seq - 1` to `seq` or does nothing and answers the head, so exactly one of two cores
//! committing at once wins, and the transaction, its contents, the documents and the NOTIFY
//! that wakes the other cores are one database transaction (a NOTIFY is sent at commit or
//! never). NOTIFY carries no data: cores read what changed with `since`.
//!
//! Connections: one for commands and one that LISTENs, each re-made on the next use after
//! it broke. Every failure to reach the database is `unavailable`, never a half-done commit.

mod schema;
pub mod scratch;

use std::collections::HashMap;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use postgres::fallible_iterator::FallibleIterator;
use postgres::types::ToSql;
use postgres::{Client, Config, NoTls, Row, Statement};
use stardust_core::store::remote::{Appended, Remote, Shipped};
use stardust_core::store::{StoreError, StoreResult, Transaction};

pub use schema::{Migrated, SCHEMA, migrate, migrate_to};

/// The channel commits are announced on.
const CHANNEL: &str = "stardust";

/// A team store's database, as one core uses it.
pub struct Postgres {
    config: Config,
    /// The URL without any password, for messages.
    shown: String,
    commands: Mutex<Option<Session>>,
    listener: Mutex<Option<Client>>,
    /// The server process of the command connection: its own commits' NOTIFYs wake nobody.
    commands_pid: AtomicI32,
}

impl std::fmt::Debug for Postgres {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Postgres").field("url", &self.shown).finish_non_exhaustive()
    }
}

/// The command connection and the statements prepared on it: each is parsed and planned
/// once per connection, so a call is one round trip (a statement sent as text is two: parse
/// and describe, then bind and execute).
struct Session {
    client: Client,
    statements: HashMap<&'static str, Statement>,
}

impl Session {
    /// Run `sql`, prepared on this connection the first time.
    fn query(
        &mut self,
        sql: &'static str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<Row>, postgres::Error> {
        let statement = match self.statements.get(sql) {
            Some(statement) => statement.clone(),
            None => {
                let statement = self.client.prepare(sql)?;
                self.statements.insert(sql, statement.clone());
                statement
            }
        };
        self.client.query(&statement, params)
    }

    /// [`Session::query`] for a statement that answers exactly one row.
    fn query_one(
        &mut self,
        sql: &'static str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Row, Failure> {
        let mut rows = self.query(sql, params)?;
        match rows.len() {
            1 => Ok(rows.remove(0)),
            n => Err(Failure::Store(StoreError::Io {
                context: format!("the database answered {n} rows to `{sql}`"),
                source: std::io::Error::other("one row was expected"),
            })),
        }
    }
}

/// The core's connector (`stardust_core::store::remote::install`): connect to the database
/// at `url` and check that it holds a team store of a schema this binary knows.
pub fn connect(url: &str) -> StoreResult<Arc<dyn Remote>> {
    let db = Postgres::new(url)?;
    db.with(|session| schema::check(&mut session.client, &db.shown))?;
    Ok(Arc::new(db))
}

impl Postgres {
    pub fn new(url: &str) -> StoreResult<Postgres> {
        Ok(Postgres {
            config: config(url)?,
            shown: shown(url),
            commands: Mutex::new(None),
            listener: Mutex::new(None),
            commands_pid: AtomicI32::new(0),
        })
    }

    /// Run `f` on the command connection, connecting first if there is none; a connection
    /// that broke is dropped, so the next call connects again.
    fn with<T>(&self, f: impl FnOnce(&mut Session) -> Result<T, Failure>) -> StoreResult<T> {
        let mut slot = self.commands.lock().unwrap_or_else(|p| p.into_inner());
        if slot.as_ref().is_none_or(|s| s.client.is_closed()) {
            let mut client = self.open()?;
            let pid: i32 = client
                .query_one("SELECT pg_backend_pid()", &[])
                .map_err(|e| self.error("cannot start a session on the database", &e))?
                .get(0);
            self.commands_pid.store(pid, Ordering::Relaxed);
            *slot = Some(Session { client, statements: HashMap::new() });
        }
        let session = slot.as_mut().expect("connected above");
        match f(session) {
            Ok(value) => Ok(value),
            Err(Failure::Store(err)) => Err(err),
            Err(Failure::Db(err)) => {
                // A statement prepared before the schema changed under it fails from then on:
                // prepare again on the next call.
                session.statements.clear();
                let unreachable = is_unreachable(&err);
                if unreachable || session.client.is_closed() {
                    *slot = None;
                }
                Err(self.error("the database failed", &err))
            }
        }
    }

    /// Connect. Every failure to, whatever the server said (down, refusing connections,
    /// unknown database or user), is `unavailable`: nothing could be done there.
    fn open(&self) -> StoreResult<Client> {
        self.config.connect(NoTls).map_err(|e| StoreError::Unavailable {
            what: format!("cannot connect to the database {}: {}", self.shown, describe(&e)),
        })
    }

    fn error(&self, what: &str, err: &postgres::Error) -> StoreError {
        if is_unreachable(err) {
            StoreError::Unavailable { what: format!("{what} {}: {}", self.shown, describe(err)) }
        } else {
            StoreError::Io {
                context: format!("{what} {}", self.shown),
                source: std::io::Error::other(describe(err)),
            }
        }
    }
}

/// A failure inside a database call: the database's own, or one of ours.
pub(crate) enum Failure {
    Db(postgres::Error),
    Store(StoreError),
}

impl From<postgres::Error> for Failure {
    fn from(err: postgres::Error) -> Failure {
        Failure::Db(err)
    }
}

impl Remote for Postgres {
    fn head(&self) -> StoreResult<u64> {
        self.with(|session| {
            let row = session.query_one("SELECT seq FROM stardust_head WHERE id = 1", &[])?;
            Ok(row.get::<_, i64>(0) as u64)
        })
    }

    fn since(&self, seq: u64, limit: usize) -> StoreResult<Vec<Shipped>> {
        self.with(|session| {
            let rows = session.query(
                "SELECT t.record::text, \
                        (SELECT array_agg(c.content ORDER BY c.ord) FROM stardust_contents c \
                          WHERE c.seq = t.seq) \
                   FROM stardust_transactions t WHERE t.seq > $1 ORDER BY t.seq LIMIT $2",
                &[&(seq as i64), &(limit as i64)],
            )?;
            rows.into_iter()
                .map(|row| {
                    let record: String = row.get(0);
                    let transaction: Transaction = serde_json::from_str(&record).map_err(|e| {
                        Failure::Store(StoreError::Io {
                            context: "the database holds a transaction this stardust cannot read"
                                .to_owned(),
                            source: std::io::Error::other(e),
                        })
                    })?;
                    let contents: Option<Vec<Vec<u8>>> = row.get(1);
                    Ok(Shipped { transaction, contents: contents.unwrap_or_default() })
                })
                .collect()
        })
    }

    fn append(&self, transaction: &Transaction, contents: &[&[u8]]) -> StoreResult<Appended> {
        let record = serde_json::to_string(transaction).expect("a transaction serializes");
        let mut paths: Vec<&str> = Vec::new();
        let mut versions: Vec<String> = Vec::new();
        let mut deleted: Vec<&str> = Vec::new();
        for doc in &transaction.documents {
            match doc.after {
                Some(version) => {
                    paths.push(&doc.path);
                    versions.push(version.to_string());
                }
                None => deleted.push(&doc.path),
            }
        }
        let seq = transaction.seq as i64;
        self.with(|session| {
            let row = session.query_one(
                "SELECT committed, head FROM stardust_commit($1, $2::text::jsonb, $3, $4, $5, $6)",
                &[&seq, &record, &paths, &contents, &versions, &deleted],
            )?;
            let (committed, head): (bool, i64) = (row.get(0), row.get(1));
            Ok(if committed { Appended::Committed } else { Appended::Behind { head: head as u64 } })
        })
    }

    fn reserve(&self) -> StoreResult<()> {
        self.with(|session| {
            session.query("SELECT pg_advisory_lock(7401196323)", &[])?;
            Ok(())
        })
    }

    fn release(&self) {
        // A connection that broke released it with its session.
        let released = self.with(|session| {
            session.query("SELECT pg_advisory_unlock(7401196323)", &[])?;
            Ok(())
        });
        if let Err(err) = released {
            tracing::debug!("cannot release the head: {err}");
        }
    }

    fn wait(&self, timeout: Duration) -> bool {
        let mut slot = self.listener.lock().unwrap_or_else(|p| p.into_inner());
        if slot.as_ref().is_none_or(Client::is_closed) {
            match self.open().and_then(|mut client| {
                client
                    .batch_execute(&format!("LISTEN {CHANNEL}"))
                    .map_err(|e| self.error("cannot listen for commits on", &e))?;
                Ok(client)
            }) {
                Ok(client) => *slot = Some(client),
                Err(err) => {
                    tracing::debug!("{err}");
                    drop(slot);
                    std::thread::sleep(timeout);
                    return false;
                }
            }
        }
        let client = slot.as_mut().expect("listening above");
        let woken = {
            // This core's own commits are already here: only another's wakes it.
            let own = self.commands_pid.load(Ordering::Relaxed);
            let mut notifications = client.notifications();
            let deadline = std::time::Instant::now() + timeout;
            let mut woken = Ok(false);
            while let Some(left) = deadline.checked_duration_since(std::time::Instant::now()) {
                match notifications.timeout_iter(left).next() {
                    Ok(Some(n)) if n.process_id() == own => continue,
                    Ok(Some(_)) => woken = Ok(true),
                    Err(err) => woken = Err(describe(&err)),
                    Ok(None) => {}
                }
                break;
            }
            // Several commits may have woken us: one read takes them all in.
            while let Ok(Some(_)) = notifications.iter().next() {}
            woken
        };
        match woken {
            Ok(woken) => woken,
            Err(why) => {
                tracing::debug!("the database's wake-ups stopped: {why}");
                *slot = None;
                // A connection that comes back may have missed wake-ups: look.
                true
            }
        }
    }
}

/// The client configuration of `url`: the user defaults as libpq's does ([`default_user`]),
/// the password may come from `PGPASSWORD`, and connecting gives up after 5 s.
fn config(url: &str) -> StoreResult<Config> {
    let mut config: Config = url.parse().map_err(|e: postgres::Error| {
        StoreError::InvalidArguments(format!(
            "the database URL {} is not valid: {e}; write postgresql://[user@]host/database or \
             postgresql:///database?host=/run/postgresql",
            shown(url)
        ))
    })?;
    if config.get_user().is_none() {
        let user = default_user(std::env::var("PGUSER").ok()).ok_or_else(|| {
            StoreError::InvalidArguments(format!(
                "the database URL {} names no user, PGUSER is not set, and user id {} has no \
                 name in the password database; write postgresql://USER@... or set PGUSER",
                shown(url),
                nix::unistd::geteuid()
            ))
        })?;
        config.user(&user);
    }
    if config.get_password().is_none()
        && let Ok(password) = std::env::var("PGPASSWORD")
    {
        config.password(password);
    }
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(Duration::from_secs(5));
    }
    config.application_name("stardust");
    Ok(config)
}

/// The database user when the URL names none, as libpq chooses it: `pguser` (the `PGUSER`
/// variable) when set and not empty, else the login name of the effective user id from the
/// password database. Not `$USER`: a systemd unit, a container or cron may not set it, or
/// set it to someone else; libpq asks the password database. `None` when the id has no entry.
pub fn default_user(pguser: Option<String>) -> Option<String> {
    if let Some(user) = pguser.filter(|u| !u.is_empty()) {
        return Some(user);
    }
    let uid = nix::unistd::geteuid();
    nix::unistd::User::from_uid(uid).ok().flatten().map(|user| user.name)
}

/// `url` as it may be shown: without a password.
pub fn shown(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else { return url.to_owned() };
    let (rest, query) = match rest.split_once('?') {
        Some((rest, query)) => (rest, Some(query)),
        None => (rest, None),
    };
    let (authority, path) = match rest.find('/') {
        Some(i) => rest.split_at(i),
        None => (rest, ""),
    };
    let authority = match authority.rsplit_once('@') {
        Some((user, host)) => format!("{}@{host}", user.split(':').next().unwrap_or(user)),
        None => authority.to_owned(),
    };
    let query: Vec<&str> = query
        .into_iter()
        .flat_map(|q| q.split('&'))
        .filter(|kv| !kv.starts_with("password="))
        .collect();
    let query = if query.is_empty() { String::new() } else { format!("?{}", query.join("&")) };
    format!("{scheme}://{authority}{path}{query}")
}

/// A connection that broke or could not be made, rather than an answer from the database.
fn is_unreachable(err: &postgres::Error) -> bool {
    err.as_db_error().is_none_or(|db| {
        // The server is going away or refuses connections for now.
        let code = db.code().code();
        code.starts_with("08") || code.starts_with("57P") || code == "53300"
    })
}

/// The database's message, with its SQLSTATE when it gave one.
fn describe(err: &postgres::Error) -> String {
    match err.as_db_error() {
        Some(db) => format!("{} (SQLSTATE {})", db.message(), db.code().code()),
        None => {
            let mut text = err.to_string();
            let mut source = std::error::Error::source(err);
            while let Some(s) = source {
                text.push_str(&format!(": {s}"));
                source = s.source();
            }
            text
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{default_user, shown};

    #[test]
    fn the_default_user_is_pguser_else_the_effective_uids_login_name() {
        assert_eq!(default_user(Some("ann".into())).as_deref(), Some("ann"));
        // What `id -un` says: the password database's name of the effective uid.
        let out = std::process::Command::new("id").arg("-un").output().unwrap();
        let login = String::from_utf8(out.stdout).unwrap().trim().to_owned();
        assert!(!login.is_empty());
        assert_eq!(default_user(None), Some(login.clone()));
        assert_eq!(default_user(Some(String::new())), Some(login));
    }

    #[test]
    fn a_shown_url_has_no_password() {
        assert_eq!(shown("postgresql://ann:secret@db:5432/team"), "postgresql://ann@db:5432/team");
        assert_eq!(
            shown("postgresql:///team?host=/run/postgresql&password=x"),
            "postgresql:///team?host=/run/postgresql"
        );
        assert_eq!(shown("postgresql://db/team"), "postgresql://db/team");
    }
}
