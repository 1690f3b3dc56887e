//! Scratch databases on a server, for tests and benchmarks: one per test, so tests run in
//! parallel and a fault can be put on one database without touching the others.

use postgres::{Client, NoTls};

/// `url` with its database replaced by `name` (the path part; the query, such as a socket
/// folder's `host=`, kept).
pub fn with_database(url: &str, name: &str) -> String {
    let (before, query) = url.split_once('?').unwrap_or((url, ""));
    let scheme_end = before.find("://").map_or(0, |i| i + 3);
    let base = match before[scheme_end..].find('/') {
        Some(i) => &before[..scheme_end + i],
        None => before,
    };
    if query.is_empty() { format!("{base}/{name}") } else { format!("{base}/{name}?{query}") }
}

/// Make the database `name` anew (dropped first if it exists) on the server `admin` names;
/// its URL.
pub fn create(admin: &str, name: &str) -> Result<String, postgres::Error> {
    let mut client = Client::connect(admin, NoTls)?;
    client.batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))?;
    client.batch_execute(&format!("CREATE DATABASE {name}"))?;
    Ok(with_database(admin, name))
}

/// Make the database `name` anew (as [`create`]) owned by the role `owner`, which is made
/// (able to log in) when the server has none of that name; its URL, naming no user.
pub fn create_owned(admin: &str, name: &str, owner: &str) -> Result<String, postgres::Error> {
    let url = create(admin, name)?;
    let mut client = Client::connect(admin, NoTls)?;
    let role = quoted(owner);
    // Another test may make the role at the same moment: its `duplicate_object` is success.
    client.batch_execute(&format!(
        "DO $$ BEGIN CREATE ROLE {role} LOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$"
    ))?;
    client.batch_execute(&format!("ALTER DATABASE {name} OWNER TO {role}"))?;
    Ok(without_user(&url))
}

/// The first column of the first row `query` answers on `url`, as text.
pub fn query_text(url: &str, query: &str) -> Result<String, postgres::Error> {
    Client::connect(url, NoTls)?.query_one(&format!("SELECT ({query})::text"), &[])?.try_get(0)
}

/// `url` without the user it names (`postgresql://ann@host/db` -> `postgresql://host/db`).
pub fn without_user(url: &str) -> String {
    let Some(scheme_end) = url.find("://").map(|i| i + 3) else { return url.to_owned() };
    let rest = &url[scheme_end..];
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    match rest[..authority_end].rfind('@') {
        Some(at) => format!("{}{}", &url[..scheme_end], &rest[at + 1..]),
        None => url.to_owned(),
    }
}

/// An SQL identifier, double-quoted.
fn quoted(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// Drop the database `name`, whoever is connected to it.
pub fn drop(admin: &str, name: &str) -> Result<(), postgres::Error> {
    Client::connect(admin, NoTls)?
        .batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
}

/// Make the database `name` unreachable for everyone but `admin` (as if its server stopped:
/// new connections refused, open ones ended), or reachable again.
pub fn set_reachable(admin: &str, name: &str, yes: bool) -> Result<(), postgres::Error> {
    let mut client = Client::connect(admin, NoTls)?;
    client.batch_execute(&format!("ALTER DATABASE {name} WITH ALLOW_CONNECTIONS {yes}"))?;
    if !yes {
        client.batch_execute(&format!(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{name}'"
        ))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{with_database, without_user};

    #[test]
    fn the_user_is_removed_and_the_rest_kept() {
        assert_eq!(
            without_user("postgresql://postgres@/postgres?host=/tmp/pg"),
            "postgresql:///postgres?host=/tmp/pg"
        );
        assert_eq!(without_user("postgresql://ann@db:5432/team"), "postgresql://db:5432/team");
        assert_eq!(without_user("postgresql://db/team?x=a@b"), "postgresql://db/team?x=a@b");
    }

    #[test]
    fn the_database_is_replaced_and_the_rest_kept() {
        assert_eq!(
            with_database("postgresql://postgres@/postgres?host=/tmp/pg", "t1"),
            "postgresql://postgres@/t1?host=/tmp/pg"
        );
        assert_eq!(with_database("postgresql://db:5432/team", "t2"), "postgresql://db:5432/t2");
        assert_eq!(with_database("postgresql://db", "t3"), "postgresql://db/t3");
    }
}
