//! A session's input or output as a bare descriptor (the core's socket, or the pipe or socket
//! an attacher passed it), read and written through the runtime's readiness polling: a
//! client's bytes wake the task that waits for them, with no thread handing them over.
//!
//! Invariant: the descriptor is non-blocking while the session runs. `O_NONBLOCK` belongs to
//! the open file description, which a passed pipe shares with whoever else holds it (the
//! attacher's standard error may be a copy of its standard output), so [`Nonblocking`]
//! restores the flags it found once the session is over.

use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::fs::FileTypeExt;

use nix::fcntl::{FcntlArg, OFlag, fcntl};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::unix::pipe;

/// The flags a descriptor had before the session made it non-blocking.
#[derive(Debug)]
pub(crate) struct Nonblocking<'a> {
    fd: &'a OwnedFd,
    before: OFlag,
}

impl<'a> Nonblocking<'a> {
    pub(crate) fn set(fd: &'a OwnedFd) -> io::Result<Nonblocking<'a>> {
        let before = OFlag::from_bits_truncate(fcntl(fd, FcntlArg::F_GETFL)?);
        fcntl(fd, FcntlArg::F_SETFL(before | OFlag::O_NONBLOCK))?;
        Ok(Nonblocking { fd, before })
    }
}

impl Drop for Nonblocking<'_> {
    fn drop(&mut self) {
        let _ = fcntl(self.fd, FcntlArg::F_SETFL(self.before));
    }
}

pub(crate) type Reader = Box<dyn AsyncRead + Send + Unpin>;
pub(crate) type Writer = Box<dyn AsyncWrite + Send + Unpin>;

/// A copy of `fd` registered with the current runtime: a pipe, or else a socket.
enum Kind {
    Pipe(OwnedFd),
    Socket(tokio::net::UnixStream),
}

fn register(fd: &OwnedFd) -> io::Result<Kind> {
    let file = std::fs::File::from(fd.try_clone()?);
    if file.metadata()?.file_type().is_fifo() {
        return Ok(Kind::Pipe(OwnedFd::from(file)));
    }
    // Any stream socket reads and writes as a Unix one does at the descriptor.
    let socket = std::os::unix::net::UnixStream::from(OwnedFd::from(file));
    socket.set_nonblocking(true)?;
    Ok(Kind::Socket(tokio::net::UnixStream::from_std(socket)?))
}

/// What the client writes, read from (a copy of) `fd`.
pub(crate) fn reader(fd: &OwnedFd) -> io::Result<Reader> {
    Ok(match register(fd)? {
        Kind::Pipe(fd) => Box::new(pipe::Receiver::from_owned_fd(fd)?),
        Kind::Socket(socket) => Box::new(socket),
    })
}

/// Where the answers go, written to (a copy of) `fd`.
pub(crate) fn writer(fd: &OwnedFd) -> io::Result<Writer> {
    Ok(match register(fd)? {
        Kind::Pipe(fd) => Box::new(pipe::Sender::from_owned_fd(fd)?),
        Kind::Socket(socket) => Box::new(socket),
    })
}
