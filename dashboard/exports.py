"""Tables as downloadable files: the bytes a `st.download_button` hands the browser, built by plain
functions so a test can read them back (AppTest cannot read a download's bytes)."""

import io

import polars as pl

from engine.report.csv_safety import safe_csv


def to_csv(frame: pl.DataFrame) -> bytes:
    """UTF-8 CSV with a header row; list columns (which CSV cannot hold) joined with ";"; text cells that a
    spreadsheet would take for a formula (a job name `=HYPERLINK(...)`) neutralised (engine.report.csv_safety)."""
    flat = frame.with_columns(
        pl.col(name).cast(pl.List(pl.String)).list.join(";")
        for name, dtype in frame.schema.items()
        if isinstance(dtype, pl.List)
    )
    return safe_csv(flat)


def to_parquet(frame: pl.DataFrame) -> bytes:
    """Parquet (zstd), every column and type kept."""
    buffer = io.BytesIO()
    frame.write_parquet(buffer, compression="zstd")
    return buffer.getvalue()
