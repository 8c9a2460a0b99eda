//! Real local servers for the tests: hyper 1 servers on 127.0.0.1 that answer 200, 500 or slowly,
//! naming themselves in an `x-node` header and counting their requests; backends with a fixed capacity
//! (`limited`); a hyper-util client service per server; and a `Discover` stream fed from a channel.

#[allow(
    dead_code,
    reason = "tests/at_capacity.rs alone uses the limited backends"
)]
pub mod limited;

use futures_core::Stream;
use http::{Request, Response};
use http_body_util::{Empty, Full};
use hyper::body::Incoming;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::{Client, ResponseFuture};
use hyper_util::rt::{TokioExecutor, TokioIo};
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tower::discover::Change;
use tower::Service;

/// The request body the client sends.
pub type Body = Empty<&'static [u8]>;

/// How a test server answers.
#[derive(Clone, Copy, Debug)]
pub enum Behaviour {
    /// 200 at once.
    Healthy,
    /// 500 at once.
    Fails,
    /// 200 after this long.
    Slow(Duration),
    /// 200 until this instant, 500 from then on.
    #[allow(
        dead_code,
        reason = "the hyper example's --serve uses it, the tests do not"
    )]
    FailsFrom(std::time::Instant),
}

/// A running server.
pub struct Server {
    pub addr: SocketAddr,
    pub hits: Arc<AtomicU64>,
}

impl Server {
    pub fn hits(&self) -> u64 {
        self.hits.load(SeqCst)
    }
}

/// Starts a server on 127.0.0.1 (an ephemeral port) in the current runtime.
pub async fn serve(name: &'static str, behaviour: Behaviour) -> Server {
    let hits = Arc::new(AtomicU64::new(0));
    let counter = Arc::clone(&hits);
    let addr = listen(move |_| {
        counter.fetch_add(1, SeqCst);
        async move {
            let status = match behaviour {
                Behaviour::Healthy => 200,
                Behaviour::Fails => 500,
                Behaviour::Slow(d) => {
                    tokio::time::sleep(d).await;
                    200
                }
                Behaviour::FailsFrom(t) if std::time::Instant::now() >= t => 500,
                Behaviour::FailsFrom(_) => 200,
            };
            answer(name, status)
        }
    })
    .await;
    Server { addr, hits }
}

/// A response with `status`, naming the server `name` in its `x-node` header.
fn answer(name: &'static str, status: u16) -> Response<Full<&'static [u8]>> {
    Response::builder()
        .status(status)
        .header("x-node", name)
        .body(Full::new(&b"weir"[..]))
        .unwrap()
}

/// Listens on 127.0.0.1 (an ephemeral port) and serves every connection's requests, HTTP/1, with
/// `respond`, in tasks of the current runtime.
async fn listen<F, A>(respond: F) -> SocketAddr
where
    F: Fn(Request<Incoming>) -> A + Clone + Send + 'static,
    A: Future<Output = Response<Full<&'static [u8]>>> + Send + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let respond = respond.clone();
            let service = hyper::service::service_fn(move |request| {
                let response = respond(request);
                async move { Ok::<_, Infallible>(response.await) }
            });
            tokio::spawn(async move {
                let io = TokioIo::new(stream);
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(io, service)
                    .await;
            });
        }
    });
    addr
}

/// An address where nothing listens: connections are refused.
pub async fn refusing() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    listener.local_addr().unwrap()
}

/// One backend: hyper-util's pooled client, sending every request to `addr`.
#[derive(Clone)]
pub struct Node {
    client: Client<HttpConnector, Body>,
    base: String,
}

impl Node {
    pub fn new(addr: SocketAddr) -> Self {
        Node {
            client: Client::builder(TokioExecutor::new()).build_http(),
            base: format!("http://{addr}"),
        }
    }
}

impl Service<Request<Body>> for Node {
    type Response = Response<Incoming>;
    type Error = hyper_util::client::legacy::Error;
    type Future = ResponseFuture;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.client.poll_ready(cx)
    }

    fn call(&mut self, mut request: Request<Body>) -> ResponseFuture {
        let path = request.uri().path();
        *request.uri_mut() = format!("{}{path}", self.base).parse().unwrap();
        self.client.call(request)
    }
}

/// A request for `/`.
pub fn get() -> Request<Body> {
    Request::get("/").body(Empty::new()).unwrap()
}

/// The `x-node` header of a response.
pub fn node_of<B>(response: &Response<B>) -> String {
    response
        .headers()
        .get("x-node")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("?")
        .to_owned()
}

/// A `Discover` stream of the changes sent on a channel.
pub struct Channel<K, S>(pub mpsc::UnboundedReceiver<Change<K, S>>);

impl<K, S> Stream for Channel<K, S> {
    type Item = Result<Change<K, S>, Infallible>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.0.poll_recv(cx).map(|c| c.map(Ok))
    }
}
