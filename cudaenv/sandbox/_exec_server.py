"""The exec server that runs inside a DockerSandbox container (stdlib only, Python >= 3.9).

Why: ``docker exec`` costs 36-52 ms per command; a resident server on a unix socket (in a
host directory bind-mounted at /run/cudaenv) runs `true` in about 3 ms. It is the
container's main process (under the container's init), started as
``python3 -I -S /opt/cudaenv/exec_server.py SOCKET WORKSPACE UID`` from a read-only mount.

Trust: the server is the host's agent in the container, so nothing the sandbox user runs may
reach it. It runs as root of the container with only CAP_SETUID, CAP_SETGID and CAP_KILL
(the container's whole capability set) and is not dumpable; every command runs as ``UID``
(setgroups/setgid/setuid in the child: no capabilities, no-new-privileges), and the server's
own file work runs with that uid as its filesystem uid (per thread), so it reads and writes
only what the sandbox user could. The sandbox user therefore cannot ptrace it, read its
memory or /proc entries, signal it, or replace its socket (/run/cudaenv is not theirs).
A container is never reset: the host removes it and starts a new one.

Protocol: one JSON request line per connection, one JSON response line back. Bytes travel
base64-encoded. Ops: ``ping``, ``exec``, ``write``, ``read``, ``list``, ``killall``.
"""

import base64
import contextlib
import ctypes
import json
import os
import resource
import selectors
import signal
import socket
import subprocess
import sys
import threading
import time

MARKER = "CUDAENV_EXEC_ID"
PR_SET_DUMPABLE = 4
LIBC = ctypes.CDLL(None, use_errno=True)


def act_as(uid):
    """Make this thread's filesystem uid and gid ``uid`` (setfsuid is per thread; glibc does
    not broadcast it), so its file work is checked as the sandbox user's."""
    LIBC.setfsuid(uid)
    LIBC.setfsgid(uid)
    if LIBC.setfsuid(-1) != uid:  # -1 changes nothing and returns the current fsuid
        raise PermissionError(f"cannot act as uid {uid}")


class PathRefused(Exception):
    """A path resolves outside the workspace."""


def b64(data):
    return base64.b64encode(data).decode("ascii")


class Capped:
    """Keeps the first and last ``cap`` bytes of a stream and counts the rest."""

    def __init__(self, cap):
        self.cap = cap
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def add(self, chunk):
        self.total += len(chunk)
        room = self.cap - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self.tail += chunk
            if len(self.tail) > self.cap:
                del self.tail[: len(self.tail) - self.cap]

    def to_json(self):
        return {"head": b64(bytes(self.head)), "tail": b64(bytes(self.tail)), "total": self.total}


class Server:
    def __init__(self, sock_path, workspace, uid):
        self.sock_path = sock_path
        self.workspace = os.path.realpath(workspace)
        self.uid = uid
        self.counter = 0
        self.lock = threading.Lock()

    # -- paths -------------------------------------------------------------------------
    def resolve(self, rel, must_exist=False):
        if not rel or rel.startswith("/") or ".." in rel.split("/"):
            raise PathRefused(rel)
        full = os.path.realpath(os.path.join(self.workspace, rel))
        if full != self.workspace and not full.startswith(self.workspace + "/"):
            raise PathRefused(rel)
        if must_exist and not os.path.exists(full):
            raise FileNotFoundError(rel)
        return full

    # -- ops ---------------------------------------------------------------------------
    def op_ping(self, req):
        return {"pid": os.getpid(), "uid": os.getuid(), "user": self.uid}

    def op_write(self, req):
        full = self.resolve(req["path"])
        os.makedirs(os.path.dirname(full), exist_ok=True)
        self.resolve(req["path"])  # the parents may have been symlinks
        with open(full, "wb") as fh:
            fh.write(base64.b64decode(req["data"]))
        return {}

    def op_read(self, req):
        full = self.resolve(req["path"], must_exist=True)
        if os.path.isdir(full):
            raise IsADirectoryError(req["path"])
        with open(full, "rb") as fh:
            return {"data": b64(fh.read())}

    def op_list(self, req):
        out = []
        for root, dirs, files in os.walk(self.workspace):
            dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(root, d))]
            for name in files:
                full = os.path.join(root, name)
                if os.path.isfile(full) and not os.path.islink(full):
                    out.append(os.path.relpath(full, self.workspace))
        return {"files": sorted(out)}

    def op_exec(self, req):
        cwd = self.resolve(req["cwd"], must_exist=True) if req.get("cwd") else self.workspace
        with self.lock:
            self.counter += 1
            marker = f"{os.getpid()}.{self.counter}"
        env = dict(os.environ)
        env["HOME"] = self.workspace
        env.update(req.get("env") or {})
        env[MARKER] = marker
        cpu_s = req.get("cpu_time_s")

        def limits():
            if cpu_s:
                resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s))

        start = time.monotonic()
        proc = subprocess.Popen(
            ["bash", "-c", req["command"]],
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            preexec_fn=limits,
            close_fds=True,
            user=self.uid,
            group=self.uid,
            extra_groups=[],
        )
        cap = int(req.get("cap", 65536))
        bufs = {proc.stdout: Capped(cap), proc.stderr: Capped(cap)}
        deadline = start + float(req["timeout"])
        timed_out = self.pump(proc, bufs, deadline)
        if timed_out:
            self.kill_tree(proc.pid, marker)
            self.pump(proc, bufs, time.monotonic() + 1.0)
        code = proc.wait()
        return {
            "exit_code": None if timed_out else code,
            "timed_out": timed_out,
            "stdout": bufs[proc.stdout].to_json(),
            "stderr": bufs[proc.stderr].to_json(),
            "duration_s": time.monotonic() - start,
        }

    def pump(self, proc, bufs, deadline):
        """Read both pipes until EOF; True if the deadline passed with the command alive.

        Background jobs that keep the pipes open get 0.1 s after the command exits, then a
        thread keeps draining them so they do not die of SIGPIPE.
        """
        sel = selectors.DefaultSelector()
        for pipe in bufs:
            if not pipe.closed:
                sel.register(pipe, selectors.EVENT_READ)
        exited_at = None
        try:
            while sel.get_map():
                now = time.monotonic()
                if exited_at is None and proc.poll() is not None:
                    exited_at = now
                end = deadline if exited_at is None else min(deadline, exited_at + 0.1)
                if now >= end:
                    if exited_at is None:
                        return True
                    leftover = [key.fileobj for key in sel.get_map().values()]
                    threading.Thread(target=drain, args=(leftover,), daemon=True).start()
                    return False
                for key, _ in sel.select(min(end - now, 0.05)):
                    chunk = os.read(key.fd, 65536)
                    if chunk:
                        bufs[key.fileobj].add(chunk)
                    else:
                        sel.unregister(key.fileobj)
                        key.fileobj.close()
        finally:
            sel.close()
        if exited_at is None:
            try:
                proc.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                return True
        return False

    def kill_tree(self, pid, marker):
        """SIGKILL the command's process group and every process that carries its marker."""
        with contextlib.suppress(OSError):
            os.killpg(pid, signal.SIGKILL)
        needle = f"{MARKER}={marker}".encode()
        for _ in range(3):
            found = False
            for entry in os.listdir("/proc"):
                if not entry.isdigit() or int(entry) == os.getpid():
                    continue
                try:
                    with open(f"/proc/{entry}/environ", "rb") as fh:
                        if needle in fh.read().split(b"\0"):
                            os.kill(int(entry), signal.SIGKILL)
                            found = True
                except OSError:
                    pass
            if not found:
                break

    def op_killall(self, req):
        """Kill every process of the container but init and this one (CAP_KILL)."""
        for _ in range(5):
            try:
                os.kill(-1, signal.SIGKILL)
            except ProcessLookupError:
                break
            time.sleep(0.002)
        return {}

    # -- serving -----------------------------------------------------------------------
    def handle(self, conn):
        try:
            act_as(self.uid)
            with conn, conn.makefile("rwb") as fh:
                line = fh.readline()
                if not line:
                    return
                try:
                    req = json.loads(line)
                    resp = getattr(self, "op_" + req["op"])(req)
                    resp["ok"] = True
                except PathRefused as exc:
                    resp = {"ok": False, "error": "path", "message": str(exc)}
                except FileNotFoundError as exc:
                    resp = {"ok": False, "error": "notfound", "message": str(exc)}
                except Exception as exc:  # reported to the host, never fatal here
                    resp = {"ok": False, "error": type(exc).__name__, "message": str(exc)}
                fh.write(json.dumps(resp).encode() + b"\n")
                fh.flush()
        except OSError:
            pass

    def serve(self):
        """Listen on the socket: only this uid may connect where it owns the run directory
        (the host is root), else anyone who may enter it (the host's user; the directory is
        sticky, so no one else can replace the socket)."""
        run_dir = os.path.dirname(self.sock_path)
        mine = os.stat(run_dir).st_uid == os.getuid()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.sock_path)
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(self.sock_path + ".new")
        os.chmod(self.sock_path + ".new", 0o600 if mine else 0o666)
        self.listener.listen(64)
        os.rename(self.sock_path + ".new", self.sock_path)
        while True:
            conn, _ = self.listener.accept()
            threading.Thread(target=self.handle, args=(conn,), daemon=True).start()


def drain(pipes):
    sel = selectors.DefaultSelector()
    for pipe in pipes:
        sel.register(pipe, selectors.EVENT_READ)
    while sel.get_map():
        for key, _ in sel.select():
            if not os.read(key.fd, 65536):
                sel.unregister(key.fileobj)
                key.fileobj.close()


def check_privileges(uid):
    """Refuse to serve as the sandbox user, or without the means to act as them."""
    if os.getuid() == uid:
        raise SystemExit(f"exec server: must not run as the sandbox user (uid {uid})")
    failed = []

    def probe():
        try:
            act_as(uid)
        except OSError as exc:
            failed.append(exc)

    thread = threading.Thread(target=probe)
    thread.start()
    thread.join()
    if failed:
        raise SystemExit(f"exec server: {failed[0]} (the container needs CAP_SETUID/SETGID)")


def main(argv):
    uid = int(argv[3])
    check_privileges(uid)
    if LIBC.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_DUMPABLE, 0)")
    Server(argv[1], argv[2], uid).serve()


if __name__ == "__main__":
    main(sys.argv)
