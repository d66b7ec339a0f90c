"""The download path for real: files served by http.server on 127.0.0.1 and fetched with
pooch through :func:`lkm.data.fetch_file` into a temporary cache."""

from __future__ import annotations

import dataclasses
import functools
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from lkm.data import FileEntry, dataset_info, fetch_file, load_dataset
from lkm.errors import ChecksumError, DatasetUnavailable
from lkm.files import file_sha256

pytestmark = pytest.mark.network

SMALL_DATASET = "liver-disorders"  # bupa.data, 7 kB


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args) -> None:  # noqa: A002 - stdlib signature
        pass


class LocalServer:
    """A ThreadingHTTPServer on 127.0.0.1 (free port) serving ``directory``."""

    def __init__(self, directory: Path) -> None:
        handler = functools.partial(_QuietHandler, directory=str(directory))
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join()


@pytest.fixture(autouse=True)
def _online_local_only(monkeypatch):
    monkeypatch.delenv("LKM_OFFLINE", raising=False)
    monkeypatch.delenv("LKM_DATA_DIR", raising=False)  # no mirror: files must come from the server
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")


@pytest.fixture
def serve() -> Iterator:
    servers: list[LocalServer] = []

    def start(directory: Path) -> LocalServer:
        servers.append(LocalServer(directory))
        return servers[-1]

    yield start
    for server in servers:
        if server.thread.is_alive():
            server.stop()


def _entry_at(server_url: str) -> FileEntry:
    (entry,) = dataset_info(SMALL_DATASET).files
    return dataclasses.replace(entry, url=f"{server_url}/{entry.relpath}")


def test_download_is_verified_then_reused_without_the_server(serve, data_dir, tmp_path):
    server = serve(data_dir)
    entry = _entry_at(server.url)
    cache = tmp_path / "cache"
    path = fetch_file(entry, None, cache)
    assert path == cache / entry.dir / entry.name
    assert file_sha256(path) == entry.sha256 and path.stat().st_size == entry.size
    mtime = path.stat().st_mtime_ns
    server.stop()
    assert fetch_file(entry, None, cache) == path  # no server: served from the cache
    assert path.stat().st_mtime_ns == mtime


def test_missing_mirror_file_is_downloaded_to_the_cache_not_the_mirror(serve, data_dir, tmp_path):
    server = serve(data_dir)
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    entry = _entry_at(server.url)
    path = fetch_file(entry, mirror, tmp_path / "cache")
    assert path.is_relative_to(tmp_path / "cache") and not any(mirror.iterdir())


def test_mirror_file_is_used_in_place_without_downloading(data_dir, tmp_path):
    entry = _entry_at("http://127.0.0.1:9")  # nothing listens there
    assert fetch_file(entry, data_dir, tmp_path / "cache") == data_dir / entry.relpath
    assert not (tmp_path / "cache").exists()


def test_served_file_with_wrong_bytes_is_a_checksum_error(serve, data_dir, tmp_path):
    (entry,) = dataset_info(SMALL_DATASET).files
    corrupt = tmp_path / "served" / entry.relpath
    corrupt.parent.mkdir(parents=True)
    corrupt.write_bytes((data_dir / entry.relpath).read_bytes().replace(b"85,92", b"58,29", 1))
    server = serve(tmp_path / "served")
    cache = tmp_path / "cache"
    with pytest.raises(ChecksumError) as err:
        fetch_file(_entry_at(server.url), None, cache, dataset=SMALL_DATASET)
    message = str(err.value)
    assert "\n" not in message and f"dataset '{SMALL_DATASET}': file {entry.name}" in message
    assert entry.sha256 in message and file_sha256(corrupt) in message
    assert not (cache / entry.relpath).exists()  # pooch discards the bad download


def test_unreachable_server_is_unavailable_with_a_hint(serve, data_dir, tmp_path):
    server = serve(data_dir)
    server.stop()
    entry = _entry_at(server.url)
    cache = tmp_path / "cache"
    with pytest.raises(DatasetUnavailable) as err:
        fetch_file(entry, None, cache, dataset=SMALL_DATASET)
    message = str(err.value)
    assert "\n" not in message and entry.url in message
    assert f"place it at {cache / entry.relpath}" in message
    assert "set LKM_DATA_DIR to a mirror that has liver-disorders/bupa.data" in message


def test_not_found_on_the_server_is_unavailable(serve, tmp_path):
    (tmp_path / "empty").mkdir()
    server = serve(tmp_path / "empty")
    with pytest.raises(DatasetUnavailable, match="404"):
        fetch_file(_entry_at(server.url), None, tmp_path / "cache")


def test_offline_mode_never_contacts_the_server(serve, data_dir, tmp_path, monkeypatch):
    server = serve(data_dir)
    monkeypatch.setenv("LKM_OFFLINE", "1")
    with pytest.raises(DatasetUnavailable, match="downloads disabled by LKM_OFFLINE"):
        fetch_file(_entry_at(server.url), None, tmp_path / "cache")


def test_load_dataset_through_the_download_cache(serve, data_dir, tmp_path, monkeypatch):
    """End to end: no mirror, the registry entry's URL pointing at the local server."""
    server = serve(data_dir)
    monkeypatch.delenv("LKM_DATA_DIR", raising=False)
    monkeypatch.setenv("LKM_CACHE_DIR", str(tmp_path / "cache"))
    info = dataset_info(SMALL_DATASET)
    info = dataclasses.replace(info, files=(_entry_at(server.url),))
    ds = load_dataset(info)
    assert (
        ds.X.shape == (345, 6) and (tmp_path / "cache" / "liver-disorders" / "bupa.data").is_file()
    )


def test_a_refusing_url_falls_back_to_the_mirrors_in_order(serve, data_dir, tmp_path):
    """MNIST's canonical server refuses requests: the registry's mirrors of the same bytes
    are tried in order, and a file none of them serves names every URL tried."""
    (tmp_path / "empty").mkdir()
    dead, empty, good = serve(tmp_path / "empty"), serve(tmp_path / "empty"), serve(data_dir)
    dead.stop()
    entry = dataclasses.replace(_entry_at(dead.url), mirrors=(f"{empty.url}/x/{SMALL_DATASET}",
                                                            f"{good.url}/{_entry_at('').relpath}"))
    path = fetch_file(entry, None, tmp_path / "cache")
    assert file_sha256(path) == entry.sha256
    lost = dataclasses.replace(entry, mirrors=entry.mirrors[:1])
    with pytest.raises(DatasetUnavailable) as err:
        fetch_file(lost, None, tmp_path / "cache2", dataset=SMALL_DATASET)
    message = str(err.value)
    assert "\n" not in message and "2 URLs tried" in message and "404" in message and "its 1 mirror(s)" in message


def test_mnist_lists_mirrors_of_its_refusing_canonical_url():
    for entry in dataset_info("mnist").files:
        assert entry.url.startswith("http://yann.lecun.com/") and len(entry.mirrors) == 2
        assert all(m.endswith("/" + entry.name) for m in entry.mirrors)
