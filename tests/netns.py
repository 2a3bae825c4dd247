"""Network namespaces for tests that play several machines on this one (the code-shipping
node B, the multi-machine rig): `ip` commands and a free private subnet."""
import random
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
