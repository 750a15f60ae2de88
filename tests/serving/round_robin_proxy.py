"""A round-robin HTTP/1.1 reverse proxy in Python's standard library: the load balancer of
the replica test (test_replicas.py) and of the "Scaling out" commands in
docs/guide/serving.md, where the test must know which replica got each request (nginx,
in test_nginx.py, balances by least connections). Each request goes to the next
upstream in turn, over a new connection; the whole body is read before it is passed on.
An upstream that refuses the connection (a stopped replica) is skipped for the next one,
which is safe here because an inference request has no side effect. A stand-in for
testing, not a production balancer: no active health checks, no gRPC (HTTP/2).

    python round_robin_proxy.py --listen 127.0.0.1:8000 127.0.0.1:8100 127.0.0.1:8200
"""
import argparse
import http.client
import http.server
import itertools
import threading

# Headers that belong to one connection, not to the message (RFC 9110 section 7.6.1).
_HOP_BY_HOP = {"connection", "keep-alive", "proxy-connection", "te", "trailer", "transfer-encoding", "upgrade"}


class RoundRobinProxy(http.server.ThreadingHTTPServer):
    """Serves on `listen` (host, port); `upstreams` is a list of "host:port"."""

    daemon_threads = True
    # socketserver's default backlog of 5 refuses connections when many clients start at
    # once on a busy machine.
    request_queue_size = 128

    def __init__(self, listen, upstreams):
        super().__init__(listen, _Handler)
        self.upstreams = list(upstreams)
        self.counts = {u: 0 for u in self.upstreams}  # requests sent (or tried) to each upstream
        self._next = itertools.cycle(self.upstreams)
        self._lock = threading.Lock()

    def pick(self):
        with self._lock:
            upstream = next(self._next)
            self.counts[upstream] += 1
            return upstream


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive towards the client, as tritonclient expects

    def _forward(self):
        length = int(self.headers.get("Content-Length", 0))
        body = self.rfile.read(length) if length else None
        headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP_BY_HOP}
        response, data, errors = None, b"", []
        for _ in self.server.upstreams:
            upstream = self.server.pick()
            host, port = upstream.rsplit(":", 1)
            connection = http.client.HTTPConnection(host, int(port), timeout=300)
            try:
                connection.connect()
            except OSError as e:  # not listening: try the next one
                errors.append(f"{upstream}: {e}")
                continue
            try:  # once sent, a request is not sent again
                connection.request(self.command, self.path, body=body, headers=headers)
                response = connection.getresponse()
                data = response.read()
            except OSError as e:
                errors.append(f"{upstream}: {e}")
                response = None
            finally:
                connection.close()
            break
        if response is None:
            message = ("no upstream answered: " + "; ".join(errors)).encode()
            self.send_response(502)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(message)))
            self.end_headers()
            self.wfile.write(message)
            return
        self.send_response(response.status, response.reason)
        for k, v in response.getheaders():
            if k.lower() not in _HOP_BY_HOP and k.lower() != "content-length":
                self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    do_GET = do_POST = do_HEAD = do_PUT = do_DELETE = _forward

    def log_message(self, format, *args):  # quiet: the servers log requests themselves
        pass


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--listen", default="127.0.0.1:8000", help="host:port to serve on")
    parser.add_argument("upstreams", nargs="+", help="host:port of each replica's HTTP endpoint")
    args = parser.parse_args(argv)
    host, port = args.listen.rsplit(":", 1)
    proxy = RoundRobinProxy((host, int(port)), args.upstreams)
    print(f"round_robin_proxy: {args.listen} -> {', '.join(args.upstreams)}", flush=True)
    try:
        proxy.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
