"""Data preparation: canonical records, sources, mcq/free-form rendering and verifiers.

Pure standard library (plus pyarrow for parquet, `datasets` for hub sources and `math_verify`
for symbolic answers, each imported only where used).
"""

from breadth.data.formats import RenderError, render, render_free_form, render_mcq
from breadth.data.generators import generate_arithmetic, generate_countdown, verify
from breadth.data.prepare import Manifest, content_hash, prepare_dataset
from breadth.data.records import FORMATS, BadRow, BadRowsError, Format, Record, make_record_id
from breadth.data.sources import LoadResult, load_records, parse_source_spec
from breadth.data.verifiers import (
    Verification,
    verify_countdown,
    verify_free_form,
    verify_mcq,
)

__all__ = [
    "FORMATS",
    "BadRow",
    "BadRowsError",
    "Format",
    "LoadResult",
    "Manifest",
    "Record",
    "RenderError",
    "Verification",
    "content_hash",
    "generate_arithmetic",
    "generate_countdown",
    "load_records",
    "make_record_id",
    "parse_source_spec",
    "prepare_dataset",
    "render",
    "render_free_form",
    "render_mcq",
    "verify",
    "verify_countdown",
    "verify_free_form",
    "verify_mcq",
]
