"""File confinement: every path a plan's file sink or source uses must stay under a root.

`confine(path, roots)` returns the real absolute path or raises PolicyViolation:
- a `..` component is refused outright (even when it would land inside a root);
- a relative path is taken relative to the first root;
- the path is resolved with realpath (every symlink followed) and must lie under the real path
  of one of the roots, so a symlink that leaves the roots is refused too.
`open_confined(path, roots, mode)` checks again and opens without following a final symlink."""

import errno
import os

from cep.policy.exceptions import PolicyViolation


def tenant_roots(templates, tenant):
    """The real paths of the root templates for one tenant (`{tenant}` replaced)."""
    out = []
    for template in templates:
        root = str(template).replace("{tenant}", str(tenant))
        out.append(os.path.realpath(root))
    return tuple(out)


def confine(path, roots):
    """The real absolute form of `path` when it lies under one of `roots` (real paths)."""
    if not isinstance(path, str) or not path.strip():
        raise PolicyViolation("path must be a non-empty string")
    if "\x00" in path:
        raise PolicyViolation("path must not contain a NUL character")
    parts = path.replace("\\", "/").split("/")
    if ".." in parts:
        raise PolicyViolation(f"path {path!r} must not contain '..'")
    if not roots:
        raise PolicyViolation(
            "no file roots are configured (files.roots): file sinks and sources are off"
        )
    joined = path if os.path.isabs(path) else os.path.join(roots[0], path)
    real = os.path.realpath(joined)
    for root in roots:
        if real == root or real.startswith(root.rstrip(os.sep) + os.sep):
            if real == root:
                raise PolicyViolation(f"path {path!r} names the root folder itself, not a file")
            return real
    if real != os.path.normpath(os.path.abspath(joined)):
        raise PolicyViolation(
            f"path {path!r} goes through a symbolic link that leaves the allowed file roots"
        )
    raise PolicyViolation(
        f"path {path!r} is outside the allowed file roots (files.roots; a "
        f"relative path is taken under the tenant's files folder)"
    )


def open_confined(path, roots, mode):
    """Open `path` ('r', 'w' or 'a', binary for 'r') after `confine`, creating missing parent
    folders under the root; a final symlink is refused (O_NOFOLLOW)."""
    real = confine(path, roots)
    if mode != "r":
        os.makedirs(os.path.dirname(real), exist_ok=True)
        real = confine(real, roots)  # a folder swapped for a symlink meanwhile is caught here
    flags = {
        "r": os.O_RDONLY,
        "w": os.O_WRONLY | os.O_CREAT | os.O_TRUNC,
        "a": os.O_WRONLY | os.O_CREAT | os.O_APPEND,
    }[mode]
    flags |= getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(real, flags, 0o640)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise PolicyViolation(f"path {path!r} is a symbolic link") from None
        raise
    if mode == "r":
        return os.fdopen(fd, "rb")
    return os.fdopen(fd, mode, encoding="utf-8")
