"""A minimal HTTP client for the daemon's Unix socket, usable from the tests and, as a
script, as another Unix user (the access tests run it under setpriv):

    python3 daemon_http.py SOCKET METHOD PATH [BODY]

prints {"status": N, "body": <parsed JSON or null>} on stdout."""
import http.client
import json
import socket
import sys


class UnixConnection(http.client.HTTPConnection):
    def __init__(self, path, timeout=30):
        super().__init__("localhost", timeout=timeout)
        self.unix_path = str(path)

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self.unix_path)


def request(sock_path, method, path, body=None, raw=None, headers=None):
    """Returns (status, parsed JSON body or None). body is sent as JSON; raw as given bytes."""
    conn = UnixConnection(sock_path)
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    hdrs = {"Content-Type": "application/json"} if data is not None else {}
    hdrs.update(headers or {})
    try:
        conn.request(method, path, body=data, headers=hdrs)
    except (BrokenPipeError, ConnectionResetError):
        # The daemon may answer (a 413) and close before it has read all of a large body, as
        # HTTP allows; its answer is still there to read.
        pass
    resp = conn.getresponse()
    text = resp.read()
    conn.close()
    return resp.status, (json.loads(text) if text else None)


if __name__ == "__main__":
    status, reply = request(sys.argv[1], sys.argv[2], sys.argv[3],
                            raw=sys.argv[4].encode() if len(sys.argv) > 4 else None)
    print(json.dumps({"status": status, "body": reply}))
