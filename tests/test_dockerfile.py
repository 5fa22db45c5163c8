"""The image's recipe (issue 27, 10): a base pinned by digest, and no secret in any layer: the README's default
secrets path (.streamlit/secrets.toml), keys and certificates stay out of the build context, and nothing copies
.streamlit/ whole. The image's refusal to serve without login is tests/test_auth.py's."""

import fnmatch
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DIGEST = re.compile(r"@sha256:[0-9a-f]{64}$")


def instructions(name: str) -> list[list[str]]:
    """The arguments of each Dockerfile instruction `name`, continuation lines joined."""
    text = (ROOT / "Dockerfile").read_text().replace("\\\n", " ")
    return [line.split()[1:] for line in text.splitlines() if line.split()[:1] == [name]]


def ignored(path: str) -> bool:
    """Whether .dockerignore keeps `path` out of the build context (Docker's patterns: `**/` is any depth)."""
    patterns = [
        line.strip()
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    for pattern in patterns:
        candidates = [pattern, pattern[3:]] if pattern.startswith("**/") else [pattern]
        if any(
            fnmatch.fnmatch(path, c)
            or fnmatch.fnmatch(path, f"*/{c}")
            or path.startswith(c.rstrip("/") + "/")
            for c in candidates
        ):
            return True
    return False


def test_every_base_image_is_pinned_by_digest():
    froms = instructions("FROM")
    assert froms, "no FROM"
    for args in froms:
        assert DIGEST.search(args[0]), f"FROM {args[0]} is not pinned by digest"


def test_no_secret_can_enter_the_build_context():
    for path in (
        ".streamlit/secrets.toml",
        "secrets.toml",
        "deploy/secrets.toml",
        ".env",
        "tls/key.pem",
        "x.key",
    ):
        assert ignored(path), path
    for path in ("engine/cli.py", ".streamlit/config.toml", "data/presets/demo.toml", "uv.lock"):
        assert not ignored(path), path


def test_nothing_copies_the_streamlit_folder_whole():
    for args in instructions("COPY"):
        sources = [a for a in args[:-1] if not a.startswith("--")]
        for source in sources:
            assert source.rstrip("/") not in (".", ".streamlit", "./.streamlit"), (
                f"COPY {source} copies secrets"
            )
            if ".streamlit" in source:
                assert source.endswith("config.toml"), (
                    f"COPY {source}: only .streamlit/config.toml belongs in it"
                )


def test_the_checks_fail_on_a_recipe_that_breaks_them(monkeypatch, tmp_path):
    (tmp_path / "Dockerfile").write_text("FROM python:3.11-slim\nCOPY .streamlit ./.streamlit\n")
    (tmp_path / ".dockerignore").write_text(".venv\n")
    monkeypatch.setattr(__import__(__name__), "ROOT", tmp_path)
    assert not DIGEST.search(instructions("FROM")[0][0])
    assert not ignored(".streamlit/secrets.toml")
    assert instructions("COPY") == [[".streamlit", "./.streamlit"]]
