"""A stand-in for the node daemon's HTTP API on a Unix socket, for the CLI tests that check how
the verbs print, what they send and how they report errors, without a real daemon. It answers
canned JSON per (method, path) and records every request it gets. ServedInThread, the
thread it serves on, is shared with the tests' other stand-in servers."""
import http.server
import json
import socketserver
import threading


class _Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True


class ServedInThread:
    """A socketserver that serves on a thread for the length of a with block. A subclass's
    __init__ hands it its server with _serve."""

    def _serve(self, server):
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._server.shutdown()
        self._server.server_close()


class FakeDaemon(ServedInThread):
    """routes: {(METHOD, path-with-query): (status, body)}; body is JSON-encoded unless it is
    bytes or None. An unknown route answers 404 {"error": "no route"}."""

    def __init__(self, socket_path, routes=None):
        self.path = str(socket_path)
        self.routes = dict(routes or {})
        self.requests = []  # (method, path, parsed body or None)
        fake = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _answer(self):
                n = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(n) if n else b""
                body = json.loads(raw) if raw else None
                fake.requests.append((self.command, self.path, body, self.headers.get("Content-Type")))
                status, reply = fake.routes.get((self.command, self.path), (404, {"error": "no route"}))
                data = reply if isinstance(reply, bytes) else b"" if reply is None else json.dumps(reply).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PATCH = do_DELETE = _answer

            def address_string(self):
                return "unix"

            def log_message(self, *args):
                pass

        self._serve(_Server(self.path, Handler))


def tenant(name, *, user="alice", uid=1000, pid=4242, labels=None, vram=None, compute=None,
           policy="share", priority="normal", gpus=None):
    """A tenant object (T) as the API contract describes it."""
    return {
        "name": name, "uid": uid, "user": user, "pid": pid, "state": "running",
        "started_at": "2025-01-01T00:00:00Z", "labels": labels or {},
        "limits": {"vram_bytes": vram, "compute_pct": compute, "compute_policy": policy,
                   "priority": priority},
        "gpus": gpus if gpus is not None else [],
    }


def tenant_gpu(index=0, used=0, limit=None, peak=0, share=0.0, gpu_s=0.0, throttled_s=0.0):
    return {"index": index, "vram_used_bytes": used, "vram_limit_bytes": limit, "vram_peak_bytes": peak,
            "compute_share": share, "gpu_seconds": gpu_s, "throttled_seconds": throttled_s}


def gpu(index=0, **over):
    g = {"index": index, "uuid": f"GPU-0000000{index}-aaaa-bbbb-cccc-dddddddddddd",
         "name": "NVIDIA H100 80GB HBM3", "pci_bus_id": f"00000000:{0x18 + index:02X}:00.0",
         "memory_total_bytes": 80 << 30, "memory_used_bytes": 3 << 30, "utilization_pct": 37,
         "power_w": 123.4, "temperature_c": 41, "sm_clock_mhz": 1980, "mem_clock_mhz": 2619, "tenants": 1}
    g.update(over)
    return g
