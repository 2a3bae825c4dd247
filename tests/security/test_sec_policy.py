"""The host policy's rules (cep.policy): file confinement and the HTTP/Redis allow-lists."""

import os
import socket

import pytest

from cep.policy import PolicyViolation, confine, open_confined
from cep.policy.hosts import HttpAllowList, redis_url


@pytest.fixture
def root(tmp_path):
    r = tmp_path / "root"
    r.mkdir()
    return os.path.realpath(r)


@pytest.mark.parametrize(
    "path, why",
    [
        ("/etc/passwd", "outside the allowed file roots"),
        ("../x.jsonl", "must not contain '..'"),
        ("a/../../x.jsonl", "must not contain '..'"),
        ("a\\..\\x", "must not contain '..'"),
        ("", "non-empty"),
        ("a\x00b", "NUL"),
    ],
)
def test_paths_refused(root, path, why):
    with pytest.raises(PolicyViolation, match=why):
        confine(path, (root,))


def test_relative_paths_go_under_the_first_root(root):
    assert confine("out/a.jsonl", (root,)) == os.path.join(root, "out", "a.jsonl")
    assert confine(os.path.join(root, "b.jsonl"), (root,)) == os.path.join(root, "b.jsonl")


def test_a_root_prefix_is_not_a_root(root):
    with pytest.raises(PolicyViolation, match="outside"):
        confine(root + "-evil/x.jsonl", (root,))


def test_symlink_that_leaves_the_root_is_refused(root, tmp_path):
    os.symlink(tmp_path, os.path.join(root, "escape"))
    with pytest.raises(PolicyViolation, match="symbolic link"):
        confine("escape/x.jsonl", (root,))


def test_final_symlink_swapped_in_after_the_check_is_not_followed(root, tmp_path, monkeypatch):
    """The race: the path was a plain file when checked, and is a symlink to a file outside
    when opened. open_confined opens with O_NOFOLLOW, so the outside file is not written."""
    outside = tmp_path / "victim.txt"
    outside.write_text("intact\n")
    link = os.path.join(root, "out.jsonl")
    os.symlink(outside, link)
    import cep.policy.files as files

    monkeypatch.setattr(files, "confine", lambda path, roots: link)  # checked before the swap
    for mode in ("a", "w", "r"):
        with pytest.raises(PolicyViolation, match="symbolic link"):
            files.open_confined(link, (root,), mode)
    assert outside.read_text() == "intact\n"


def test_symlink_inside_the_root_to_inside_is_allowed(root):
    target = os.path.join(root, "real.jsonl")
    open(target, "w").close()
    os.symlink(target, os.path.join(root, "link.jsonl"))
    with open_confined("link.jsonl", (root,), "a") as fh:
        fh.write("x\n")
    assert open(target).read() == "x\n"


def test_no_roots_means_no_files(tmp_path):
    with pytest.raises(PolicyViolation, match="no file roots"):
        confine(str(tmp_path / "x"), ())


def fake_dns(table):
    return lambda host, port: [
        (socket.AF_INET6 if ":" in a else socket.AF_INET, a, port) for a in table.get(host, [])
    ]


@pytest.mark.parametrize(
    "url, addresses, why",
    [
        ("http://169.254.169.254/latest/meta-data", None, "link-local"),
        ("http://127.0.0.1:8080/", None, "loopback"),
        ("http://[::1]/", None, "loopback"),
        ("http://[::ffff:127.0.0.1]/", None, "loopback"),
        ("http://0.0.0.0/", None, "unspecified"),
        ("http://10.0.0.5/", None, "private"),
        ("http://[fe80::1]/", None, "link-local"),
        ("http://rebind.example/", ["93.184.216.34", "127.0.0.1"], "loopback"),
        ("http://metadata.example/", ["169.254.169.254"], "link-local"),
        ("ftp://x/", None, "not an http"),
        ("http://nowhere.invalid/", [], "does not resolve"),
    ],
)
def test_http_refused(url, addresses, why):
    table = {"rebind.example": addresses, "metadata.example": addresses} if addresses else {}
    allow = HttpAllowList(["public", "api.example.com"], resolver=_resolver(table))
    with pytest.raises(PolicyViolation, match=why):
        allow.addresses(url)


def _resolver(table):
    real = HttpAllowList()._resolve

    def resolve(host, port):
        if host in table or host.endswith(".invalid"):
            return fake_dns(table)(host, port)
        return real(host, port)

    return resolve


def test_http_allowed_by_name_address_network_and_public():
    dns = fake_dns({"api.example.com": ["10.1.2.3"], "pub.example": ["93.184.216.34"]})
    assert HttpAllowList(["api.example.com"], dns).addresses("http://api.example.com/x")
    assert HttpAllowList(["api.example.com:8443"], dns).addresses("https://api.example.com:8443/")
    with pytest.raises(PolicyViolation):
        HttpAllowList(["api.example.com:8443"], dns).addresses("https://api.example.com/")
    assert HttpAllowList(["127.0.0.1"]).addresses("http://127.0.0.1:9/")
    assert HttpAllowList(["10.0.0.0/8"], dns).addresses("http://api.example.com/")
    assert HttpAllowList(["public"], dns).addresses("http://pub.example/")
    with pytest.raises(PolicyViolation, match="not on the HTTP sink allow-list"):
        HttpAllowList([], dns).addresses("http://pub.example/")


def test_redis_only_through_named_connections():
    conns = {"main": "redis://10.0.0.1:6379/0"}
    assert redis_url({"connection": "main"}, conns) == "redis://10.0.0.1:6379/0"
    assert redis_url({"url": "redis://10.0.0.1:6379/0"}, conns) == "redis://10.0.0.1:6379/0"
    with pytest.raises(PolicyViolation, match="not a configured Redis connection"):
        redis_url({"connection": "other"}, conns)
    with pytest.raises(PolicyViolation, match="connection='name'"):
        redis_url({"url": "redis://169.254.169.254:6379/0"}, conns)
    with pytest.raises(PolicyViolation, match="connection='name'"):
        redis_url({}, conns)
