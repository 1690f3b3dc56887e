//! Handing an attacher's standard input and output to the core (SCM_RIGHTS over the socket),
//! so that a session's bytes go from the client straight to the core and back, with no
//! process copying them in between.
//!
//! After the hello (`passStdio: true`, answered `{"ok": true, "stdio": true}`), the attacher
//! sends one byte: with both descriptors attached ([`send`]), or with none ([`decline`]) when
//! it cannot pass them, in which case the session speaks over the socket and the attacher
//! relays as before. Only pipes and sockets are passed ([`passable`]): the core serves them
//! with readiness polling, which a regular file does not support, and a terminal stays with
//! the attacher, whose foreground process group may read it (the core, in its own process
//! group, would be stopped by `SIGTTIN`).

use std::io::{self, IoSlice, IoSliceMut, Write};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::net::UnixStream;

use nix::sys::stat::{SFlag, fstat};
use rustix::net::{
    RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, SendAncillaryBuffer,
    SendAncillaryMessage, SendFlags,
};

/// The byte that goes with the descriptors, and the one that says none come.
const PASSED: u8 = b'p';
const DECLINED: u8 = b'r';

/// Whether `fd` is a pipe or a socket: what the core can serve a session on.
pub fn passable(fd: BorrowedFd<'_>) -> bool {
    fstat(fd).is_ok_and(|st| {
        let kind = SFlag::from_bits_truncate(st.st_mode & SFlag::S_IFMT.bits());
        kind == SFlag::S_IFIFO || kind == SFlag::S_IFSOCK
    })
}

/// Send `input` and `output` to the core over `stream`. On an error nothing was sent (one
/// `sendmsg` carries the byte and the descriptors together), so [`decline`] may follow.
pub fn send(stream: &UnixStream, input: BorrowedFd<'_>, output: BorrowedFd<'_>) -> io::Result<()> {
    let fds = [input, output];
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(2))];
    let mut control = SendAncillaryBuffer::new(&mut space);
    if !control.push(SendAncillaryMessage::ScmRights(&fds)) {
        return Err(io::Error::other("no room for two descriptors in the control message"));
    }
    let byte = [PASSED];
    rustix::net::sendmsg(stream, &[IoSlice::new(&byte)], &mut control, SendFlags::empty())?;
    Ok(())
}

/// Tell the core that no descriptors come: the session speaks over the socket.
pub fn decline(stream: &UnixStream) -> io::Result<()> {
    (&*stream).write_all(&[DECLINED])
}

/// The attacher's input and output, or `None` when it declined. The descriptors are received
/// close-on-exec (`MSG_CMSG_CLOEXEC`): the language servers the core starts never inherit a
/// client's pipe, which would keep it open after the session.
pub fn receive(stream: &UnixStream) -> io::Result<Option<(OwnedFd, OwnedFd)>> {
    let mut byte = [0u8];
    // Room for more than two, so that a sender passing too many does not truncate the
    // message; whatever comes is owned here and closed unless it is the pair.
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(8))];
    let mut control = RecvAncillaryBuffer::new(&mut space);
    let received = loop {
        match rustix::net::recvmsg(
            stream,
            &mut [IoSliceMut::new(&mut byte)],
            &mut control,
            RecvFlags::CMSG_CLOEXEC,
        ) {
            Ok(received) => break received,
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
        }
    };
    let mut fds = Vec::new();
    for message in control.drain() {
        if let RecvAncillaryMessage::ScmRights(passed) = message {
            fds.extend(passed);
        }
    }
    match (received.bytes, byte[0], fds.len()) {
        (0, _, _) => Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "the attacher closed the connection before passing its input and output",
        )),
        (1, PASSED, 2) => {
            let output = fds.pop().expect("two descriptors");
            let input = fds.pop().expect("two descriptors");
            Ok(Some((input, output)))
        }
        (1, DECLINED, 0) => Ok(None),
        // Dropping `fds` closes whatever came.
        _ => Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "the attacher sent {} descriptors with byte {:?}, not its input and output",
                fds.len(),
                byte[0] as char
            ),
        )),
    }
}

/// Put this process's standard input and output on `/dev/null` once the core holds
/// them, so that the client's pipes are the core's alone: the client sees the end of its
/// output exactly when the core's session ends.
pub fn release_stdio() -> io::Result<()> {
    let null = std::fs::OpenOptions::new().read(true).write(true).open("/dev/null")?;
    nix::unistd::dup2_stdin(null.as_fd())?;
    nix::unistd::dup2_stdout(null.as_fd())?;
    Ok(())
}

/// Ends the blocking reads and writes of the [`Stoppable`]s made from it when dropped: a
/// thread blocked on a client's pipe is not woken by closing the pipe, only by the client.
#[derive(Debug)]
pub struct Stop {
    /// Dropping it makes `stopped` (and each copy) readable at end of file.
    _stop: UnixStream,
    stopped: UnixStream,
}

impl Stop {
    pub fn new() -> io::Result<Stop> {
        let (stop, stopped) = UnixStream::pair()?;
        Ok(Stop { _stop: stop, stopped })
    }

    /// `fd` read and written until this is dropped.
    pub fn guard(&self, fd: OwnedFd) -> io::Result<Stoppable> {
        Ok(Stoppable { file: std::fs::File::from(fd), stopped: self.stopped.try_clone()? })
    }
}

/// A blocking descriptor whose reads end (at end of input) and writes fail (broken pipe) once
/// its [`Stop`] is dropped: each waits in `poll` on both, and a write takes at most
/// `PIPE_BUF` bytes, which a pipe reported writable takes without blocking.
#[derive(Debug)]
pub struct Stoppable {
    file: std::fs::File,
    stopped: UnixStream,
}

/// What a pipe reported writable takes whole (POSIX's `PIPE_BUF` on Linux).
const PIPE_BUF: usize = 4096;

impl Stoppable {
    /// Wait until `file` is ready for `events` (`Ok(true)`) or the stop came (`Ok(false)`).
    fn ready(&self, events: nix::poll::PollFlags) -> io::Result<bool> {
        use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
        loop {
            let mut fds = [
                PollFd::new(self.file.as_fd(), events),
                PollFd::new(self.stopped.as_fd(), PollFlags::POLLIN),
            ];
            match poll(&mut fds, PollTimeout::NONE) {
                Ok(_) => {}
                Err(nix::errno::Errno::EINTR) => continue,
                Err(e) => return Err(e.into()),
            }
            let revents = |fd: &PollFd<'_>| fd.revents().unwrap_or(PollFlags::empty());
            if !revents(&fds[1]).is_empty() {
                return Ok(false);
            }
            // An error or hangup is left to the read or write to report.
            if !revents(&fds[0]).is_empty() {
                return Ok(true);
            }
        }
    }
}

impl io::Read for Stoppable {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self.ready(nix::poll::PollFlags::POLLIN)? {
            true => self.file.read(buf),
            false => Ok(0),
        }
    }
}

impl io::Write for Stoppable {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self.ready(nix::poll::PollFlags::POLLOUT)? {
            true => self.file.write(&buf[..buf.len().min(PIPE_BUF)]),
            false => Err(io::Error::new(io::ErrorKind::BrokenPipe, "the session has ended")),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn passed_descriptors_arrive_close_on_exec_and_reach_the_same_pipe() {
        let (attacher, core) = UnixStream::pair().unwrap();
        let (mut read_end, write_end) = std::io::pipe().unwrap();
        let (in_read, mut in_write) = std::io::pipe().unwrap();
        assert!(passable(in_read.as_fd()) && passable(write_end.as_fd()));
        send(&attacher, in_read.as_fd(), write_end.as_fd()).unwrap();
        let (input, output) = receive(&core).unwrap().expect("descriptors");
        for fd in [&input, &output] {
            let flags = nix::fcntl::fcntl(fd, nix::fcntl::FcntlArg::F_GETFD).unwrap();
            let flags = nix::fcntl::FdFlag::from_bits_truncate(flags);
            assert!(flags.contains(nix::fcntl::FdFlag::FD_CLOEXEC), "received close-on-exec");
        }
        in_write.write_all(b"ping").unwrap();
        drop(in_write);
        let mut got = String::new();
        std::fs::File::from(input).read_to_string(&mut got).unwrap();
        assert_eq!(got, "ping");
        drop(write_end);
        std::fs::File::from(output).write_all(b"pong").unwrap();
        let mut answer = [0u8; 4];
        read_end.read_exact(&mut answer).unwrap();
        assert_eq!(&answer, b"pong");
    }

    #[test]
    fn a_declined_pass_leaves_the_socket_and_a_file_is_not_passable() {
        let (attacher, core) = UnixStream::pair().unwrap();
        decline(&attacher).unwrap();
        assert!(receive(&core).unwrap().is_none());
        let file = tempfile::tempfile().unwrap();
        assert!(!passable(file.as_fd()));
        drop(attacher);
        assert!(receive(&core).is_err(), "a closed connection is not a decline");
    }

    #[test]
    fn dropping_the_stop_ends_a_read_and_a_write_blocked_on_a_pipe() {
        let (read_end, _writer_kept) = std::io::pipe().unwrap();
        let (_reader_kept, write_end) = std::io::pipe().unwrap();
        let stop = Stop::new().unwrap();
        let mut input = stop.guard(OwnedFd::from(read_end)).unwrap();
        let mut output = stop.guard(OwnedFd::from(write_end)).unwrap();
        let reading = std::thread::spawn(move || input.read(&mut [0u8; 16]).unwrap());
        // Nobody reads the pipe: the writes fill it, then wait.
        let writing = std::thread::spawn(move || {
            loop {
                if let Err(e) = output.write(&[b'x'; 1 << 16]) {
                    return e.kind();
                }
            }
        });
        std::thread::sleep(std::time::Duration::from_millis(100));
        assert!(!reading.is_finished() && !writing.is_finished(), "both wait on the pipes");
        drop(stop);
        assert_eq!(reading.join().unwrap(), 0, "the read ends as at end of input");
        assert_eq!(writing.join().unwrap(), io::ErrorKind::BrokenPipe);
    }
}
