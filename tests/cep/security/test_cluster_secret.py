"""The cluster secret helper shared by manager and worker."""

import os
import stat

import pytest

from cep.security import cluster_secret


def test_load_or_create_makes_a_0600_file_once(tmp_path):
    first = cluster_secret.load_or_create(tmp_path)
    path = cluster_secret.secret_path(tmp_path)
    assert len(first) >= 32
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert cluster_secret.load_or_create(tmp_path) == first
    assert cluster_secret.load_or_create(tmp_path / "other") != first


def test_read_prefers_the_file_then_the_environment(tmp_path):
    path = tmp_path / "secret"
    path.write_text("abc\n")
    assert cluster_secret.read(str(path)) == "abc"
    assert cluster_secret.read({"CEP_CLUSTER_SECRET": " xyz "}) == "xyz"
    assert cluster_secret.read({}) is None
    with pytest.raises(FileNotFoundError):
        cluster_secret.read(str(tmp_path / "missing"))


def test_check_is_exact_and_refuses_empty():
    assert cluster_secret.check("s3cret", "s3cret")
    assert not cluster_secret.check("s3cre", "s3cret")
    assert not cluster_secret.check("", "")
    assert not cluster_secret.check(None, "x")
