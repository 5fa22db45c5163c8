"""What `goodput dashboard` sends is compressed for a browser that accepts it (dashboard/serve.py): Streamlit's
scripts gzip'd over HTTP, the page's messages deflated over the websocket. A remote operator's first visit to the
Jobs page fetched 7.9 MB of scripts and the GPUs page's messages were 1.1 MB a visit, both uncompressed."""

import gzip
import re
import socket
import urllib.request
from pathlib import Path

import pytest
import streamlit

from tests.serving import GOODPUT, free_port, start, stop, wait_until

STREAMLIT_JS = Path(streamlit.__file__).parent / "static" / "static" / "js"


@pytest.fixture(scope="module")
def dashboard(tmp_path_factory):
    folder = tmp_path_factory.mktemp("transfer")
    port, log = free_port(), folder / "dashboard.log"
    server = start([str(GOODPUT), "dashboard", "--store", str(folder / "store"), "--port", str(port)], log)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until(f"{base}/_stcore/health", server, log, expect=b"ok")
        yield base, port
    finally:
        stop(server)


def fetch(url: str, gzip_ok: bool) -> tuple[str | None, bytes]:
    """(Content-Encoding, body as sent) of a GET, offering gzip or not."""
    request = urllib.request.Request(url, headers={"Accept-Encoding": "gzip"} if gzip_ok else {})
    with urllib.request.urlopen(request, timeout=30) as answer:  # noqa: S310 (local)
        return answer.headers["Content-Encoding"], answer.read()


def test_streamlits_scripts_go_gzipped_to_a_browser_that_accepts_it_and_plain_to_one_that_does_not(dashboard):
    base, _ = dashboard
    _, html = fetch(f"{base}/", gzip_ok=False)
    entry = re.search(rb'src="\./static/js/(index\.[^"]+\.js)"', html)
    assert entry, html[:500]
    url = f"{base}/static/js/{entry.group(1).decode()}"
    on_disk = (STREAMLIT_JS / entry.group(1).decode()).read_bytes()

    encoding, sent = fetch(url, gzip_ok=True)
    assert encoding == "gzip" and len(sent) < len(on_disk) / 2
    assert gzip.decompress(sent) == on_disk
    assert fetch(url, gzip_ok=False) == (None, on_disk)
    # an answer of a few bytes is sent as it is: compressing it would only make it longer
    assert fetch(f"{base}/_stcore/health", gzip_ok=True) == (None, b"ok")


def test_the_websocket_offers_deflated_messages(dashboard):
    _, port = dashboard
    handshake = (
        "GET /_stcore/stream HTTP/1.1\r\n"
        f"Host: 127.0.0.1:{port}\r\n"
        "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Protocol: streamlit\r\n"
        "Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits\r\n\r\n"
    )
    with socket.create_connection(("127.0.0.1", port), timeout=30) as conn:
        conn.sendall(handshake.encode())
        answer = b""
        while b"\r\n\r\n" not in answer:
            chunk = conn.recv(4096)
            assert chunk, answer
            answer += chunk
    head = answer.split(b"\r\n\r\n")[0].decode().lower()
    assert head.startswith("http/1.1 101"), head
    assert "sec-websocket-extensions: permessage-deflate" in head, head
