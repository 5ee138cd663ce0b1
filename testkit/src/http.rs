//! A small HTTP/1.1 server on 127.0.0.1 for the tests of hwprof's HTTP clients (the
//! debuginfod client, the download of the metric tables).
//!
//! [`Server::start`] binds `127.0.0.1:0` and answers each request by what its route
//! gives for the request's path, a [`Reply`]: a whole body, a body without end, one
//! byte at a time, a `Content-Length` the body does not keep, any status, a stall after
//! the body. Written by hand because tests need the misbehaving servers: mock-server
//! crates frame every response correctly, so they cannot lie about the length, cut a
//! body or hold a connection open.
//!
//! One thread per connection; every answer says `Connection: close`, so a connection is
//! a request, and [`Server::requests`] counts them. Dropping the server stops it: the
//! listener closes (later connections are refused), open connections are shut down and
//! every thread is joined, so nothing it started outlives the test.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

/// The byte every generated body ([`Reply::endless`], [`Reply::drip`]) is made of.
pub const FILL: u8 = 0x7f;

/// How long a connection may take to send its request.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);
/// How long one write may wait for a client that does not read (a hang detector: a
/// stopping server shuts the connection down at once).
const WRITE_TIMEOUT: Duration = Duration::from_secs(60);
/// How often waits look at the stop flag.
const TICK: Duration = Duration::from_millis(20);
/// The writes of an endless body.
const CHUNK: usize = 64 << 10;
/// Where an endless body ends all the same: a client without a size limit fails its
/// test instead of hanging it.
const ENDLESS_MAX: u64 = 64 << 20;

/// What the server sends for one request.
#[derive(Clone, Debug)]
pub struct Reply {
    status: u16,
    length: Length,
    body: Body,
    hold: Duration,
}

#[derive(Clone, Debug)]
enum Length {
    /// `Content-Length` of the body sent.
    OfBody,
    /// This `Content-Length`, whatever is sent.
    Claimed(u64),
    /// No `Content-Length`: the body ends when the connection does.
    Absent,
}

#[derive(Clone, Debug)]
enum Body {
    Bytes(Vec<u8>),
    /// [`FILL`] in [`CHUNK`]s until the client goes or [`ENDLESS_MAX`] bytes.
    Endless,
    /// `count` bytes of [`FILL`], one every `every`.
    Drip {
        every: Duration,
        count: usize,
    },
}

impl Reply {
    /// 200 with `body` and its length.
    pub fn ok(body: impl Into<Vec<u8>>) -> Reply {
        Reply {
            status: 200,
            length: Length::OfBody,
            body: Body::Bytes(body.into()),
            hold: Duration::ZERO,
        }
    }

    /// 404 with an empty body.
    pub fn not_found() -> Reply {
        Reply::status(404)
    }

    /// `code` with an empty body.
    pub fn status(code: u16) -> Reply {
        Reply {
            status: code,
            ..Reply::ok(Vec::new())
        }
    }

    /// 200 without a length, then [`FILL`] bytes until the client goes (or 64 MiB).
    pub fn endless() -> Reply {
        Reply {
            length: Length::Absent,
            body: Body::Endless,
            ..Reply::ok(Vec::new())
        }
    }

    /// 200 without a length, then `count` bytes of [`FILL`], one every `every`: a
    /// crawling server (give it a length with [`Reply::length`]).
    pub fn drip(every: Duration, count: usize) -> Reply {
        Reply {
            length: Length::Absent,
            body: Body::Drip { every, count },
            ..Reply::ok(Vec::new())
        }
    }

    /// Claims `Content-Length: n`, whatever the body is: more than is sent (a cut
    /// transfer), or far more than anyone should take.
    pub fn length(self, n: u64) -> Reply {
        Reply {
            length: Length::Claimed(n),
            ..self
        }
    }

    /// After the body, keeps the connection open until the client closes it, the server
    /// stops or `d` has passed (`Duration::MAX`: until one of the other two).
    pub fn hold(self, d: Duration) -> Reply {
        Reply { hold: d, ..self }
    }

    fn head(&self) -> String {
        let length = match (&self.length, &self.body) {
            (Length::OfBody, Body::Bytes(b)) => Some(b.len() as u64),
            (Length::Claimed(n), _) => Some(*n),
            _ => None,
        };
        let length = length
            .map(|n| format!("Content-Length: {n}\r\n"))
            .unwrap_or_default();
        format!(
            "HTTP/1.1 {} {}\r\n{length}Connection: close\r\n\r\n",
            self.status,
            reason(self.status)
        )
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        404 => "Not Found",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "Status",
    }
}

type Route = dyn Fn(&str) -> Reply + Send + Sync;

/// The open connections by number: a handle to shut each down when the server stops.
/// A connection's thread takes its handle out when it is done, so that its end closes
/// the socket.
type Open = Arc<Mutex<HashMap<u64, TcpStream>>>;

/// An HTTP/1.1 server on 127.0.0.1, stopped on drop (see the module docs).
pub struct Server {
    port: u16,
    requests: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
    open: Open,
    /// Returns the threads of the connections when it ends.
    acceptor: Option<JoinHandle<Vec<JoinHandle<()>>>>,
}

impl Server {
    /// Listens on a free port of 127.0.0.1 and answers each request by
    /// `route(path)`.
    pub fn start(route: impl Fn(&str) -> Reply + Send + Sync + 'static) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let port = listener.local_addr().expect("the bound address").port();
        let requests = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let open = Open::default();
        let route: Arc<Route> = Arc::new(route);
        let (n, st, op) = (requests.clone(), stop.clone(), open.clone());
        let acceptor = thread::spawn(move || {
            let mut threads: Vec<JoinHandle<()>> = Vec::new();
            for (id, conn) in (0u64..).zip(listener.incoming()) {
                if st.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(conn) = conn else { continue };
                let Ok(handle) = conn.try_clone() else {
                    continue;
                };
                n.fetch_add(1, Ordering::SeqCst);
                lock(&op).insert(id, handle);
                let (route, st, op) = (route.clone(), st.clone(), op.clone());
                threads.retain(|t| !t.is_finished());
                threads.push(thread::spawn(move || {
                    serve(conn, &*route, &st);
                    lock(&op).remove(&id);
                }));
            }
            threads
        });
        Server {
            port,
            requests,
            stop,
            open,
            acceptor: Some(acceptor),
        }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The connections (requests) accepted so far.
    pub fn requests(&self) -> usize {
        self.requests.load(Ordering::SeqCst)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wakes the acceptor, which sees the flag and closes the listener.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
        let threads = self
            .acceptor
            .take()
            .and_then(|t| t.join().ok())
            .unwrap_or_default();
        for conn in lock(&self.open).values() {
            let _ = conn.shutdown(Shutdown::Both);
        }
        for t in threads {
            let _ = t.join();
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A [`Server`] whose route reads a value the test changes between requests ([`set`]):
/// the same server, one port, answering otherwise from then on. Derefs to the server.
///
/// [`set`]: Switched::set
pub struct Switched<T> {
    state: Arc<Mutex<T>>,
    server: Server,
}

impl<T: Send + 'static> Switched<T> {
    /// A server answering each request by `route(&state, path)`, `state` first `init`.
    pub fn start(init: T, route: impl Fn(&T, &str) -> Reply + Send + Sync + 'static) -> Self {
        let state = Arc::new(Mutex::new(init));
        let st = state.clone();
        let server = Server::start(move |path| route(&lock(&st), path));
        Switched { state, server }
    }

    /// Answers by `value` from the next request on.
    pub fn set(&self, value: T) {
        *lock(&self.state) = value;
    }
}

impl<T> std::ops::Deref for Switched<T> {
    type Target = Server;
    fn deref(&self) -> &Server {
        &self.server
    }
}

/// Reads one request and answers it by `route`.
fn serve(conn: TcpStream, route: &Route, stop: &AtomicBool) {
    let _ = conn.set_read_timeout(Some(REQUEST_TIMEOUT));
    let _ = conn.set_write_timeout(Some(WRITE_TIMEOUT));
    let Some(path) = request_path(&conn) else {
        return;
    };
    let reply = route(&path);
    let mut w = conn;
    if send(&mut w, &reply, stop).is_ok() {
        hold(&mut w, reply.hold, stop);
    }
}

/// The path of the request on `conn`, its headers read; `None` when the client goes
/// (or sends nothing in time) before their end.
fn request_path(conn: &TcpStream) -> Option<String> {
    let mut r = BufReader::new(conn);
    let mut line = String::new();
    r.read_line(&mut line).ok()?;
    let path = line.split_whitespace().nth(1).unwrap_or("").to_string();
    loop {
        let mut h = String::new();
        match r.read_line(&mut h) {
            Ok(0) | Err(_) => return None,
            Ok(_) if h == "\r\n" => return Some(path),
            Ok(_) => {}
        }
    }
}

fn send(w: &mut TcpStream, reply: &Reply, stop: &AtomicBool) -> std::io::Result<()> {
    w.write_all(reply.head().as_bytes())?;
    let live = || !stop.load(Ordering::SeqCst);
    match &reply.body {
        Body::Bytes(b) => w.write_all(b),
        Body::Endless => {
            let chunk = vec![FILL; CHUNK];
            let mut sent = 0u64;
            while sent < ENDLESS_MAX && live() {
                w.write_all(&chunk)?;
                sent += CHUNK as u64;
            }
            Ok(())
        }
        Body::Drip { every, count } => {
            for _ in 0..*count {
                if !live() {
                    break;
                }
                w.write_all(&[FILL])?;
                pause(*every, stop);
            }
            Ok(())
        }
    }
}

/// Sleeps `d`, or until the server stops.
fn pause(d: Duration, stop: &AtomicBool) {
    let until = Instant::now().checked_add(d);
    while !stop.load(Ordering::SeqCst) {
        let left = until.map_or(TICK, |u| u.saturating_duration_since(Instant::now()));
        if left.is_zero() {
            return;
        }
        thread::sleep(left.min(TICK));
    }
}

/// Keeps `conn` open for `d`, until the client closes it or the server stops; what the
/// client sends meanwhile is read and dropped.
fn hold(conn: &mut TcpStream, d: Duration, stop: &AtomicBool) {
    let until = Instant::now().checked_add(d);
    let mut buf = [0u8; 512];
    while !stop.load(Ordering::SeqCst) {
        let left = until.map_or(TICK, |u| u.saturating_duration_since(Instant::now()));
        if left.is_zero() {
            return;
        }
        let _ = conn.set_read_timeout(Some(left.min(TICK)));
        match conn.read(&mut buf) {
            Ok(0) => return,
            Ok(_) => {}
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(_) => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `GET path` on `server`: the whole response as bytes, read until the server
    /// closes.
    fn get(server: &Server, path: &str) -> Vec<u8> {
        let mut c = TcpStream::connect(("127.0.0.1", server.port)).expect("connect");
        write!(c, "GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").expect("request");
        let mut out = Vec::new();
        c.read_to_end(&mut out).expect("response");
        out
    }

    fn text(b: &[u8]) -> String {
        String::from_utf8_lossy(b).into_owned()
    }

    #[test]
    fn replies_are_sent_as_scripted_and_requests_counted() {
        let server = Server::start(|path| match path {
            "/file" => Reply::ok(b"hello".to_vec()),
            "/cut" => Reply::ok(b"half".to_vec()).length(8),
            "/error" => Reply::status(500),
            "/drip" => Reply::drip(Duration::from_millis(1), 3).length(1 << 20),
            _ => Reply::not_found(),
        });
        assert_eq!(
            text(&get(&server, "/file")),
            "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello"
        );
        assert_eq!(
            text(&get(&server, "/cut")),
            "HTTP/1.1 200 OK\r\nContent-Length: 8\r\nConnection: close\r\n\r\nhalf"
        );
        assert!(text(&get(&server, "/error")).starts_with("HTTP/1.1 500 "));
        assert_eq!(
            text(&get(&server, "/nothing")),
            "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        );
        assert_eq!(
            text(&get(&server, "/drip")),
            "HTTP/1.1 200 OK\r\nContent-Length: 1048576\r\nConnection: close\r\n\r\n\x7f\x7f\x7f"
        );
        assert_eq!(server.requests(), 5);
    }

    #[test]
    fn a_switched_server_answers_by_the_value_set_last() {
        let server = Switched::start(404, |code, _| Reply::status(*code));
        assert!(text(&get(&server, "/")).starts_with("HTTP/1.1 404 "));
        server.set(500);
        assert!(text(&get(&server, "/")).starts_with("HTTP/1.1 500 "));
        assert_eq!(server.requests(), 2);
    }

    #[test]
    fn an_endless_body_ends_at_64_mib_without_a_length() {
        let server = Server::start(|_| Reply::endless());
        let got = get(&server, "/");
        let head = "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n";
        assert_eq!(text(&got[..head.len()]), head);
        assert_eq!((got.len() - head.len()) as u64, ENDLESS_MAX);
        assert!(got[head.len()..].iter().all(|&b| b == FILL));
    }

    /// A held connection (and the request of one that never sends it) ends when the
    /// server is dropped: the drop returns, the client sees the end, and the port is
    /// closed.
    #[test]
    fn dropping_the_server_ends_held_connections_and_closes_the_port() {
        let server = Server::start(|_| Reply::ok(b"x".to_vec()).hold(Duration::MAX));
        let port = server.port;
        let mut held = TcpStream::connect(("127.0.0.1", port)).expect("connect");
        write!(held, "GET / HTTP/1.1\r\n\r\n").expect("request");
        let mut head = [0u8; 1];
        held.read_exact(&mut head).expect("the response starts");
        let _silent = TcpStream::connect(("127.0.0.1", port)).expect("connect");
        let until = Instant::now() + Duration::from_secs(30);
        while server.requests() < 2 {
            assert!(Instant::now() < until, "both connections accepted");
            thread::sleep(TICK);
        }
        drop(server);
        let mut rest = Vec::new();
        held.read_to_end(&mut rest)
            .expect("the end of the response");
        assert!(text(&rest).ends_with("\r\n\r\nx"), "{}", text(&rest));
        assert!(TcpStream::connect(("127.0.0.1", port)).is_err());
    }
}
