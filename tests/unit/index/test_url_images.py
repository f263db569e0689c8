"""Issue 27: datasets whose images are URLs. Each URL is fetched at build time (a few threads, timeouts, a size
cap, retries on 429/5xx, a User-Agent, a content-addressed cache), a stored copy kept in the index; a URL
that gives no image skips its row and is counted. Against tests/image_server.py (real HTTP on 127.0.0.1,
allowed only through the explicit setting) and the stand-in Hub (tests/hub_standin.py) serving Parquet."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from hub_standin import StandInHub
from image_server import COLOURS, ImageServer, png

from interactive_ir.cli import main
from interactive_ir.index.url_fetch import FetchConfig, FetchError, fetch, is_public, new_client

TOKEN = "hf_standin_token"
FAST = dict(timeout_s=1.0, backoff_s=0.01, retries=2, max_bytes=2_000_000)  # the tests' limits: quick failures


@pytest.fixture
def images():
    srv = ImageServer(slow_s=3.0).start()
    yield srv
    srv.stop()


def get(srv: ImageServer, path: str, **kw):
    cfg = FetchConfig(**{**FAST, "allow_private": True, **kw})
    with new_client(cfg) as client:
        return fetch(srv.url(path), cfg, client)


# --- one URL --------------------------------------------------------------------------------------------
def test_an_image_url_is_fetched_with_a_polite_user_agent(images):
    got = get(images, "/img/red.png")
    assert got.data == png(COLOURS["red"]) and got.content_type == "image/png"
    assert any(ua.startswith("interactive_ir/") for ua in images.user_agents)


@pytest.mark.parametrize("path, kind, says", [
    ("/missing.png", "http", "HTTP 404"),
    ("/slow.png", "timeout", "1 s"),
    ("/to-ftp.png", "redirect", "non-http"),
    ("/loop.png", "redirect", "more than 5 redirects"),
    ("/huge.bin", "too large", "over 2,000,000 bytes"),
    ("/claims-huge.png", "too large", "500,000,000 bytes"),
    ("/down.png", "http", "HTTP 503 after 3 tries"),
])
def test_each_failure_is_one_fetch_error_of_its_kind(images, path, kind, says):
    with pytest.raises(FetchError, match=says) as e:
        get(images, path)
    assert e.value.kind == kind


def test_a_redirect_is_followed_and_a_429_retried_then_served(images):
    assert get(images, "/redirect.png").data == png(COLOURS["white"])
    assert get(images, "/flaky.png").data == png(COLOURS["yellow"])
    assert images.hits["/flaky.png"] == 2  # one 429, one success
    assert images.hits["/down.png"] == 0
    with pytest.raises(FetchError):
        get(images, "/down.png", retries=1)
    assert images.hits["/down.png"] == 2  # retried once, then given up


def test_loopback_and_private_addresses_are_refused_unless_allowed(images):
    cfg = FetchConfig(**FAST)  # the default: allow_private off
    with new_client(cfg) as client, pytest.raises(FetchError, match="private, loopback") as e:
        fetch(images.url("/img/red.png"), cfg, client)
    assert e.value.kind == "private address" and not images.hits  # nothing reached the server
    for address in ("127.0.0.1", "10.1.2.3", "192.168.0.9", "169.254.169.254", "100.64.0.1", "::1", "fe80::1",
                    "::ffff:127.0.0.1", "0.0.0.0", "224.0.0.1", "not-an-address"):
        assert not is_public(address), address
    assert is_public("8.8.8.8") and is_public("2606:4700:4700::1111")


def _certificate(tmp_path: Path, name: str) -> tuple[Path, Path]:
    """A self-signed certificate for the DNS name `name` only (no IP address in it), and its key."""
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    crt, pem = tmp_path / f"{name}.crt", tmp_path / f"{name}.key"
    crt.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    pem.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                      serialization.NoEncryption()))
    return crt, pem


@pytest.mark.parametrize("cert_name, ok", [("localhost", True), ("other.example", False)])
def test_https_from_the_pinned_address_checks_the_certificate_against_the_urls_host(tmp_path, cert_name, ok):
    """The connection goes to the checked address, yet TLS names the URL's host (SNI) and its certificate must
    match that host: a certificate for localhost serves https://localhost/..., one for another name does not."""
    import ssl

    crt, key = _certificate(tmp_path, cert_name)
    server_tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_tls.load_cert_chain(crt, key)
    srv = ImageServer().start(tls=server_tls)
    try:
        cfg = FetchConfig(**FAST, allow_private=True)
        with new_client(cfg, verify=ssl.create_default_context(cafile=str(crt))) as client:
            url = srv.url("/img/blue.png", host="localhost", scheme="https")
            if ok:
                assert fetch(url, cfg, client).data == png(COLOURS["blue"])
            else:
                with pytest.raises(FetchError, match="connection failed") as e:
                    fetch(url, cfg, client)
                assert "certificate" in str(e.value).lower() or "hostname" in str(e.value).lower()
    finally:
        srv.stop()


# --- a Hub dataset of URLs (Spawning/PD12M's columns) ----------------------------------------------------------
PD_PATHS = ["/img/red.png", "/img/green.png", "/img/blue.png", "/img/big.jpg", "/redirect.png", "/flaky.png",
            "/missing.png", "/slow.png", "/page.html", "/to-ftp.png", "/huge.bin"]
GOOD = ["/img/red.png", "/img/green.png", "/img/blue.png", "/img/big.jpg", "/redirect.png", "/img/white.png",
        "/flaky.png"]  # the paths the images come from (/redirect.png's from /img/white.png)


def _parquet(rows: list[dict]) -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq

    buf = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(rows), buf, row_group_size=4)
    return buf.getvalue()


def pd_rows(srv: ImageServer) -> list[dict]:
    """PD12M's columns: id, url, caption, width, height, mime_type, hash, license (a URL too)."""
    return [{"id": f"pd{i}", "url": srv.url(p), "caption": f"picture {i} from {p}", "width": 32, "height": 24,
             "mime_type": "image/png", "hash": f"h{i}", "license": "https://creativecommons.org/publicdomain/zero/1.0/"}
            for i, p in enumerate(PD_PATHS)]


@pytest.fixture
def hub(tmp_path, monkeypatch, images):
    standin = StandInHub(TOKEN)
    standin.add_repo("dataset", "alice/pd", {"data/train-00000-of-00001.parquet": _parquet(pd_rows(images))})
    monkeypatch.setenv("HF_ENDPOINT", standin.start())
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf_home"))
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    monkeypatch.setenv("IIR_CACHE_DIR", str(tmp_path / "iir_cache"))
    for k in ("HF_HUB_CACHE", "HF_HUB_OFFLINE", "IIR_FETCH_ALLOW_PRIVATE", "IIR_FETCH_CACHE_DIR"):
        monkeypatch.delenv(k, raising=False)
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    yield standin
    standin.stop()


def build(out: Path, *extra: str) -> int:
    return main(["index", "--hf-dataset", "alice/pd", "--id-column", "id", "--out", str(out), "--embedder", "fake:16",
                 "--workers", "1",
                 "--fetch-timeout", "1", "--fetch-backoff", "0.01", "--fetch-max-bytes", "2000000", *extra])


def test_a_url_dataset_is_fetched_stored_and_counted(hub, images, tmp_path, capsys):
    from PIL import Image

    from interactive_ir.index import load_index

    assert build(tmp_path / "idx", "--fetch-allow-private") == 0
    out = capsys.readouterr().out
    assert "column 'url'" in out and "found" in out and "other URL columns: license" in out  # said which it took
    assert "indexed 6 images from 11 rows" in out and "(5 skipped)" in out
    assert "6 fetched" in out and "5 gave no image" in out
    for kind in ("1 http", "1 timeout", "1 not an image", "1 redirect", "1 too large"):  # counted by kind
        assert kind in out, kind
    assert "HTTP 404" in out and "the server sent text/html" in out  # each row's reason
    idx = load_index(tmp_path / "idx", verify=True)
    assert sorted(idx.ids) == ["pd0.png", "pd1.png", "pd2.png", "pd3.jpg", "pd4.png", "pd5.png"]
    cols = {c["id"]: c for c in map(json.loads, (tmp_path / "idx" / "columns.jsonl").read_text().splitlines())}
    assert cols["pd3.jpg"]["url"] == images.url("/img/big.jpg")  # each image's URL is kept as its source
    assert cols["pd3.jpg"]["license"].startswith("https://") and "caption" not in cols["pd3.jpg"]
    with Image.open(Path(idx.image_file(idx.row_of["pd3.jpg"]))) as im:
        assert max(im.size) == 1024  # a stored copy of the 2000-px original
    assert Path(idx.image_file(idx.row_of["pd0.png"])).read_bytes() == png(COLOURS["red"])  # small: as fetched
    assert idx.records[idx.row_of["pd4.png"]].captions == ["picture 4 from /redirect.png"]
    src = idx.manifest["source"]
    assert src["url_column"] == "url" and src["urls"]["fetched"] == 6 and src["stored_max_side"] == 1024
    assert images.hits["/flaky.png"] == 2 and images.hits["/img/red.png"] == 1


def test_a_rerun_fetches_nothing_cached_and_the_index_outlives_its_urls(hub, images, tmp_path, capsys):
    from interactive_ir.index import load_index

    assert build(tmp_path / "a", "--fetch-allow-private", "--limit", "2") == 0
    first = dict(images.hits)
    assert first["/img/red.png"] == 1 and first["/img/green.png"] == 1
    assert build(tmp_path / "a", "--fetch-allow-private") == 0  # the whole dataset: a re-index
    assert all(images.hits[p] == first[p] for p in GOOD if first.get(p))  # what was cached is not fetched again
    before = dict(images.hits)
    capsys.readouterr()
    assert build(tmp_path / "b", "--fetch-allow-private") == 0  # a re-run into another folder
    out = capsys.readouterr().out
    assert {p: images.hits[p] - before.get(p, 0) for p in GOOD} == dict.fromkeys(GOOD, 0)
    assert "0 fetched" in out and "6 from the cache" in out
    images.stop()  # the URLs go away: the index still has every image
    idx = load_index(tmp_path / "b")
    assert len(idx) == 6 and all(Path(idx.image_file(r)).is_file() for r in range(len(idx)))


def test_urls_on_a_private_address_are_refused_by_default(hub, images, tmp_path, capsys):
    rc = build(tmp_path / "idx")
    err = capsys.readouterr().err
    assert rc == 1 and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert "none of the 11 rows" in err and "private, loopback" in err and "--fetch-allow-private" in err
    assert not images.hits and not (tmp_path / "idx").exists()


def test_a_named_url_column_and_urls_in_the_image_column(images, tmp_path, capsys, monkeypatch):
    from interactive_ir.index import load_index

    monkeypatch.setenv("IIR_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("IIR_FETCH_ALLOW_PRIVATE", "1")  # the explicit setting, through the environment
    (tmp_path / "pq").mkdir()
    rows = [{"image": images.url(f"/img/{c}.png"), "text": f"a {c} square", "link": images.url("/img/blue.png")}
            for c in ("red", "green")]
    (tmp_path / "pq" / "train.parquet").write_bytes(_parquet(rows))
    assert main(["index", "--hf-dataset", str(tmp_path / "pq"), "--out", str(tmp_path / "i1"),
                 "--embedder", "fake:16"]) == 0  # the image column holds URLs: fetched
    idx = load_index(tmp_path / "i1")
    assert sorted(c for r in range(len(idx)) for c in idx.records[r].captions) == ["a green square", "a red square"]
    assert main(["index", "--hf-dataset", str(tmp_path / "pq"), "--url-column", "link", "--out", str(tmp_path / "i2"),
                 "--embedder", "fake:16"]) == 0
    assert len(load_index(tmp_path / "i2")) == 1  # both rows name the same blue image
    rc = main(["index", "--hf-dataset", str(tmp_path / "pq"), "--url-column", "nope", "--out", str(tmp_path / "i3"),
               "--embedder", "fake:16"])
    err = capsys.readouterr().err
    assert rc == 1 and "no column 'nope' (--url-column)" in err and "image, text, link" in err


def test_progress_is_reported_per_url(images, tmp_path):
    from interactive_ir.index.dataset_stage import stage_rows
    from interactive_ir.index.hub_dataset import DatasetSource

    (tmp_path / "pq").mkdir()
    rows = [{"url": images.url(p), "caption": "x"} for p in ("/img/red.png", "/missing.png", "/img/blue.png")]
    (tmp_path / "pq" / "train.parquet").write_bytes(_parquet(rows))
    seen = []
    cfg = FetchConfig(**FAST, allow_private=True, cache_dir=str(tmp_path / "cache"))
    rep = stage_rows(DatasetSource(str(tmp_path / "pq")), tmp_path / "imgs", tmp_path / "c.jsonl",
                     tmp_path / "cols.jsonl", cfg, progress=lambda s: seen.append(s.done))
    assert sorted(seen) == [1, 2, 3] and rep.images == 2 and rep.fetch.failed == {"http": 1}
    assert rep.skipped[0][0].startswith("row 2 (http://127.0.0.1") and "HTTP 404" in rep.skipped[0][1]


# --- push and hf:// ------------------------------------------------------------------------------------------
def test_a_url_index_pushed_to_the_hub_loads_without_its_urls(hub, images, tmp_path, capsys):
    from interactive_ir.index import load_index
    from interactive_ir.index.hub_index import pull_index

    assert build(tmp_path / "idx", "--fetch-allow-private") == 0
    assert main(["index", "push", str(tmp_path / "idx"), "--repo", "alice/pd-index"]) == 0
    files = hub.repos[("dataset", "alice/pd-index")].files
    assert "images/pd3.jpg" in files and "columns.jsonl" in files  # the fetched copies, and the URLs as metadata
    card = files["README.md"].decode()
    assert "fetched from the URLs" in card
    images.stop()  # the original URLs are gone
    capsys.readouterr()
    view = pull_index("hf://alice/pd-index")
    idx = load_index(view)
    assert len(idx) == 6 and all(Path(idx.image_file(r)).is_file() for r in range(len(idx)))
    pulled = [json.loads(line) for line in (view / "columns.jsonl").read_text().splitlines()]
    assert len(pulled) == 6 and all(c["url"].startswith("http://127.0.0.1") for c in pulled)  # each copy's URL
    assert main(["search", "--index", "hf://alice/pd-index", "--text", "picture 3", "-k", "3", "--json"]) == 0


def test_bad_fetch_settings_give_one_clear_line(tmp_path, capsys, monkeypatch):
    (tmp_path / "pq").mkdir()
    (tmp_path / "pq" / "train.parquet").write_bytes(_parquet([{"url": "https://example.org/a.png"}]))
    with pytest.raises(SystemExit) as e:  # refused by the parser, in one line (issue 40: ranges on every flag)
        main(["index", "--hf-dataset", str(tmp_path / "pq"), "--out", str(tmp_path / "i"), "--embedder", "fake:16",
              "--fetch-workers", "0"])
    err = capsys.readouterr().err
    assert e.value.code == 2 and "--fetch-workers: 0 is out of range" in err and "Traceback" not in err
    monkeypatch.setenv("IIR_FETCH_TIMEOUT_S", "soon")
    rc = main(["index", "--hf-dataset", str(tmp_path / "pq"), "--out", str(tmp_path / "i"), "--embedder", "fake:16"])
    err = capsys.readouterr().err
    assert rc == 1 and "IIR_FETCH_TIMEOUT_S='soon'" in err and not (tmp_path / "i").exists()
