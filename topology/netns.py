"""Network namespaces for tests and benchmarks that play several machines on this one (the
code-shipping node B, the multi-machine rig manager/rig.py): `ip` commands and a free
private subnet."""

import os
import random
import shutil
import subprocess


def ip(*args, ns=None):
    """Run `ip ARGS` (inside network namespace `ns` when given); raises on failure."""
    cmd = ["ip", "netns", "exec", ns, "ip", *args] if ns else ["ip", *args]
    subprocess.run(cmd, check=True, capture_output=True, text=True)


def free_prefix():
    """'10.X.Y': a /24 no interface of this machine has an address in."""
    used = subprocess.run(["ip", "-4", "addr"], capture_output=True, text=True).stdout
    for _ in range(100):
        prefix = f"10.{random.randint(200, 250)}.{random.randint(0, 255)}"
        if f"inet {prefix}." not in used:
            return prefix
    raise RuntimeError("no free 10.x.y.0/24 subnet for a test network")


def why_not_possible(tools=("unshare", "ip", "java"), bridge=False):
    """None when this machine can make a mount namespace with a tmpfs, a network namespace
    (and a bridge when asked) and has `tools`, else the reason (a test skips or fails on it)."""
    if os.geteuid() != 0:
        return "needs root for unshare -m, ip netns" + (" and a bridge" if bridge else "")
    for tool in tools:
        if shutil.which(tool) is None:
            return f"{tool} is not installed"
    probe = subprocess.run(
        ["unshare", "-m", "sh", "-c", "mount -t tmpfs none /mnt"], capture_output=True, text=True
    )
    if probe.returncode:
        return f"unshare -m with a tmpfs mount failed: {probe.stderr.strip()}"
    name = f"cepprobe{os.getpid() % 100000}"
    cmds = [["ip", "netns", "add", name]] + (
        [["ip", "link", "add", name, "type", "bridge"]] if bridge else []
    )
    try:
        for cmd in cmds:
            probe = subprocess.run(cmd, capture_output=True, text=True)
            if probe.returncode:
                return f"{' '.join(cmd[:3])} failed: {probe.stderr.strip()}"
    finally:
        subprocess.run(["ip", "netns", "del", name], capture_output=True)
        if bridge:
            subprocess.run(["ip", "link", "del", name], capture_output=True)
    return None


def start_in_namespace(ns, script, log_path):
    """Popen of `sh -c script` in network namespace `ns` and a private mount namespace
    (the script mounts what that machine must not see), output appended to `log_path`."""
    with open(log_path, "ab") as log:
        return subprocess.Popen(
            [
                "ip",
                "netns",
                "exec",
                ns,
                "unshare",
                "-m",
                "--propagation",
                "private",
                "sh",
                "-c",
                script,
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
