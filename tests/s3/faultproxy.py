"""A fault-injecting HTTP proxy for S3 robustness tests (and a fixed-latency
proxy for benchmarks).

It sits in front of an S3 server (tests/s3/s3server.py) as the endpoint our
client talks to and forwards each request.  With probability ``rate`` a request
instead meets one fault, chosen uniformly from ``kinds``:

    drop_before   the connection is closed before the request reaches the server
    drop_after    the request is applied by the server, then the connection is
                  closed without an answer (the ambiguous case for writes)
    error500      "500 InternalError" without forwarding
    slowdown503   "503 SlowDown" without forwarding
    slow          forwarded after a delay of ``slow_s`` seconds
    truncated     forwarded; the answer's body is cut in half (Content-Length
                  promises the whole body) and the connection closed

``delay_s`` adds a fixed delay to every request (a round trip to a remote
store, for bench/s3).  Counters: ``requests``, ``bytes_out`` (response bodies),
``faults`` (by kind), ``answered`` (requests whose answer has been written) and
``last_answer`` (time.perf_counter() when the last one was); ``reset_counters()``.

Usage::

    p = FaultProxy(upstream_port, rate=0.1).start()
    p.endpoint   # "http://127.0.0.1:<port>"
    p.stop()
"""
import http.client
import random
import socket
import socketserver
import threading
import time

KINDS = ("drop_before", "drop_after", "error500", "slowdown503", "slow", "truncated")

_ERR = ("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>{code}</Code>"
        "<Message>{msg}</Message><RequestId>faultproxy</RequestId></Error>")


def _read_request(rf):
    """(method, target, headers list, body) or None at EOF."""
    line = rf.readline(65537)
    if not line:
        return None
    while line in (b"\r\n", b"\n"):
        line = rf.readline(65537)
        if not line:
            return None
    parts = line.decode("latin-1").rstrip("\r\n").split(" ")
    if len(parts) != 3:
        raise ValueError(f"bad request line {line!r}")
    method, target, _ = parts
    headers = []
    length = 0
    while True:
        h = rf.readline(65537)
        if h in (b"\r\n", b"\n", b""):
            break
        k, _, v = h.decode("latin-1").partition(":")
        k, v = k.strip(), v.strip()
        headers.append((k, v))
        if k.lower() == "content-length":
            length = int(v)
    body = rf.read(length) if length else b""
    return method, target, headers, body


class _Handler(socketserver.StreamRequestHandler):
    def handle(self):
        proxy = self.server.proxy
        upstream = None
        try:
            while True:
                req = _read_request(self.rfile)
                if req is None:
                    return
                method, target, headers, body = req
                fault = proxy.pick()
                if proxy.trace is not None:
                    rng = next((v for k, v in headers if k.lower() == "range"), "")
                    with proxy.lock:
                        proxy.trace.append((time.perf_counter(), method, target, rng))
                if proxy.delay_s:
                    time.sleep(proxy.delay_s)
                if fault == "drop_before":
                    return
                if fault in ("error500", "slowdown503"):
                    code, reason, ecode, msg = ((500, "Internal Server Error", "InternalError",
                                                 "We encountered an internal error.")
                                                if fault == "error500" else
                                                (503, "Slow Down", "SlowDown",
                                                 "Please reduce your request rate."))
                    data = _ERR.format(code=ecode, msg=msg).encode()
                    self.wfile.write(
                        f"HTTP/1.1 {code} {reason}\r\nContent-Type: application/xml\r\n"
                        f"Content-Length: {len(data)}\r\n\r\n".encode() +
                        (b"" if method == "HEAD" else data))
                    self.wfile.flush()
                    proxy.answer_done()
                    continue
                if fault == "slow":
                    time.sleep(proxy.slow_s)
                if upstream is None:
                    upstream = http.client.HTTPConnection("127.0.0.1", proxy.upstream_port,
                                                          timeout=60)
                fwd = {k: v for k, v in headers if k.lower() not in ("connection",
                                                                     "proxy-connection")}
                try:
                    upstream.request(method, target, body=body if body or method in
                                     ("PUT", "POST") else None, headers=fwd)
                    resp = upstream.getresponse()
                    data = resp.read()
                except (http.client.HTTPException, OSError):
                    upstream.close()
                    upstream = None
                    return   # the server failed: the client sees a dropped connection
                if fault == "drop_after":
                    return
                out = [f"HTTP/1.1 {resp.status} {resp.reason}\r\n"]
                for k, v in resp.getheaders():
                    if k.lower() in ("transfer-encoding", "connection", "content-length"):
                        continue
                    out.append(f"{k}: {v}\r\n")
                if method == "HEAD":
                    cl = resp.getheader("Content-Length")
                    if cl is not None:
                        out.append(f"Content-Length: {cl}\r\n")
                    out.append("\r\n")
                    self.wfile.write("".join(out).encode("latin-1"))
                    self.wfile.flush()
                    proxy.answer_done()
                    continue
                with proxy.lock:
                    proxy.bytes_out += len(data)
                out.append(f"Content-Length: {len(data)}\r\n\r\n")
                head = "".join(out).encode("latin-1")
                if fault == "truncated" and len(data) > 1:
                    self.wfile.write(head + data[:len(data) // 2])
                    self.wfile.flush()
                    return
                self.wfile.write(head + data)
                self.wfile.flush()
                proxy.answer_done()
        except (OSError, ValueError):
            return
        finally:
            if upstream is not None:
                upstream.close()


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    # socketserver's default backlog of 5 drops the SYNs of a client that opens
    # more connections at once (16 parallel manifest GETs): the kernel retries
    # them after 1 s, which a benchmark then counts as the client's latency
    request_queue_size = 128


class FaultProxy:
    def __init__(self, upstream_port, rate=0.0, kinds=KINDS, slow_s=1.0, delay_s=0.0, seed=None):
        self.upstream_port = upstream_port
        self.rate = rate
        self.kinds = tuple(kinds)
        self.slow_s = slow_s
        self.delay_s = delay_s
        self.rng = random.Random(seed)
        self.lock = threading.Lock()
        self.requests = 0
        self.bytes_out = 0   # response body bytes sent to the client
        self.answered = 0    # answers written in full (requests - answered: in flight,
                             # unless a fault or the server dropped one)
        self.last_answer = 0.0
        self.faults = {k: 0 for k in self.kinds}
        self.trace = None    # a list: (time, method, target, Range) of each request
        self.server = None
        self.thread = None

    def reset_counters(self):
        with self.lock:
            self.requests = 0
            self.bytes_out = 0
            self.answered = 0
            self.last_answer = 0.0
            self.faults = {k: 0 for k in self.kinds}
            if self.trace is not None:
                self.trace = []

    def answer_done(self):
        with self.lock:
            self.answered += 1
            self.last_answer = time.perf_counter()

    def pick(self):
        with self.lock:
            self.requests += 1
            if self.rate > 0 and self.rng.random() < self.rate:
                k = self.rng.choice(self.kinds)
                self.faults[k] += 1
                return k
            return None

    @property
    def port(self):
        return self.server.server_address[1]

    @property
    def endpoint(self):
        return f"http://127.0.0.1:{self.port}"

    def start(self):
        self.server = _Server(("127.0.0.1", 0), _Handler)
        self.server.proxy = self
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        return self

    def stop(self):
        if self.server:
            self.server.shutdown()
            self.server.server_close()
            self.server = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


if __name__ == "__main__":
    import argparse
    ap = argparse.ArgumentParser()
    ap.add_argument("upstream_port", type=int)
    ap.add_argument("--rate", type=float, default=0.1)
    ap.add_argument("--delay-ms", type=float, default=0.0)
    a = ap.parse_args()
    p = FaultProxy(a.upstream_port, rate=a.rate, delay_s=a.delay_ms / 1000).start()
    print(p.endpoint, flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        p.stop()
