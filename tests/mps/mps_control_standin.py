#!/usr/bin/env python3
"""A stand-in for nvidia-cuda-mps-control, for the daemon's MPS tests (the real one needs a GPU).

It keeps the real tool's interface: `-d` starts the control daemon in the background, in
CUDA_MPS_PIPE_DIRECTORY (its control socket and nvidia-cuda-mps-control.pid) and
CUDA_MPS_LOG_DIRECTORY (control.log), and returns once it serves; without -d it reads
commands from stdin, one a line, sends each to the control daemon and prints the answers, as
`echo quit | nvidia-cuda-mps-control` does. The commands are those of NVIDIA's MPS control
shell: get_server_list, start_server -uid UID, get_server_status PID (ACTIVE or FAULT),
get_client_list PID, set/get_active_thread_percentage PID [PCT],
set/get_device_pinned_mem_limit PID DEV [VALUE], set/get_default_active_thread_percentage,
set/get_default_device_pinned_mem_limit DEV [VALUE], shutdown_server PID [-f], quit.

What it records: every command it is told goes to control.log as "<unix time> <command>", and
its start as "<unix time> started pid=<pid> CUDA_VISIBLE_DEVICES=<value>". A server is a real
process (sleeping), so that its pid and uid are real. Test controls, not NVIDIA's:
`standin_fault PID` puts a server in FAULT (a fatal GPU fault in one of its clients), and
`standin_client PID CLIENT_PID` makes CLIENT_PID one of its clients (until it exits)."""
import os
import signal
import socket
import subprocess
import sys
import time

PIPE = os.environ.get("CUDA_MPS_PIPE_DIRECTORY", "/tmp/nvidia-mps")
LOGDIR = os.environ.get("CUDA_MPS_LOG_DIRECTORY", "/var/log/nvidia-mps")
SOCK = os.path.join(PIPE, "control")
PIDFILE = os.path.join(PIPE, "nvidia-cuda-mps-control.pid")


def log(line):
    with open(os.path.join(LOGDIR, "control.log"), "a") as f:
        f.write(f"{time.time():.6f} {line}\n")


def alive(pid):
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


class Control:
    def __init__(self):
        self.servers = {}  # pid -> dict
        self.default_pct = "100"
        self.default_pinned = {}

    def server(self, pid):
        s = self.servers.get(int(pid)) if pid.isdigit() else None
        if s is None or s["proc"].poll() is not None:
            raise KeyError(f"Invalid server pid {pid}")
        return s

    def start_server(self, args):
        uid = int(args[args.index("-uid") + 1])
        kw = {"user": uid} if os.geteuid() == 0 and uid != 0 else {}
        proc = subprocess.Popen([sys.executable, "-c", "import signal; signal.pause()"], **kw)
        self.servers[proc.pid] = {"proc": proc, "uid": uid, "status": "ACTIVE", "pct": self.default_pct,
                                  "pinned": dict(self.default_pinned), "clients": []}
        return ""

    def run(self, line):
        cmd, *args = line.split()
        if cmd == "get_server_list":
            return "\n".join(str(p) for p, s in self.servers.items() if s["proc"].poll() is None)
        if cmd == "start_server":
            return self.start_server(args)
        if cmd == "get_server_status":
            return self.server(args[0])["status"]
        if cmd == "get_client_list":
            s = self.server(args[0])
            s["clients"] = [c for c in s["clients"] if alive(c)]
            return "\n".join(map(str, s["clients"]))
        if cmd == "set_active_thread_percentage":
            self.server(args[0])["pct"] = args[1]
            return ""
        if cmd == "get_active_thread_percentage":
            return self.server(args[0])["pct"]
        if cmd == "set_device_pinned_mem_limit":
            self.server(args[0])["pinned"][args[1]] = args[2]
            return ""
        if cmd == "get_device_pinned_mem_limit":
            return self.server(args[0])["pinned"].get(args[1], "")
        if cmd == "set_default_active_thread_percentage":
            self.default_pct = args[0]
            return ""
        if cmd == "get_default_active_thread_percentage":
            return self.default_pct
        if cmd == "set_default_device_pinned_mem_limit":
            self.default_pinned[args[0]] = args[1]
            return ""
        if cmd == "get_default_device_pinned_mem_limit":
            return self.default_pinned.get(args[0], "")
        if cmd == "shutdown_server":
            s = self.server(args[0])
            s["proc"].kill()
            s["proc"].wait()
            return ""
        if cmd == "standin_fault":
            self.server(args[0])["status"] = "FAULT"
            return ""
        if cmd == "standin_client":
            self.server(args[0])["clients"].append(int(args[1]))
            return ""
        raise KeyError(f"Unknown command {cmd}")

    def quit(self):
        for s in self.servers.values():
            if s["proc"].poll() is None:
                s["proc"].kill()
                s["proc"].wait()


def serve(ready_w):
    os.setsid()
    os.makedirs(PIPE, exist_ok=True)
    os.makedirs(LOGDIR, exist_ok=True)
    if os.path.exists(SOCK):
        os.unlink(SOCK)
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(SOCK)
    srv.listen(16)
    with open(PIDFILE, "w") as f:
        f.write(f"{os.getpid()}\n")
    log(f"started pid={os.getpid()} CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES', '')}")
    os.write(ready_w, b"1")
    os.close(ready_w)
    control = Control()
    signal.signal(signal.SIGTERM, lambda *_: (control.quit(), sys.exit(0)))
    while True:
        conn, _ = srv.accept()
        with conn:
            line = conn.makefile().readline().strip()
            if not line:
                continue
            log(line)
            if line.split()[0] == "quit":
                control.quit()
                conn.sendall(b"")
                conn.close()
                os.unlink(SOCK)
                os.unlink(PIDFILE)
                return
            try:
                conn.sendall(control.run(line).encode())
            except (KeyError, IndexError, ValueError) as e:
                conn.sendall(f"ERROR: {e}".encode())


def daemonize():
    r, w = os.pipe()
    if os.fork() == 0:
        os.close(r)
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        try:
            serve(w)
        finally:
            os._exit(0)
    os.close(w)
    ok = os.read(r, 1) == b"1"
    sys.exit(0 if ok else 1)


def client():
    for line in sys.stdin:
        if not line.strip():
            continue
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.connect(SOCK)
        except OSError:
            print("Cannot find MPS control daemon process", file=sys.stderr)
            sys.exit(1)
        with s:
            s.sendall(line.strip().encode() + b"\n")
            s.shutdown(socket.SHUT_WR)
            out = b""
            while chunk := s.recv(65536):
                out += chunk
        if out:
            print(out.decode())


if __name__ == "__main__":
    if sys.argv[1:] == ["-d"]:
        daemonize()
    client()
