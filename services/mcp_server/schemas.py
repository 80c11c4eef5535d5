"""Request and response shapes shared by the MCP tool and the REST endpoint."""

from __future__ import annotations

from typing import Annotated

import pydantic_core
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from typing_extensions import TypedDict

from services.common.limits import MAX_QUERY_CHARS, MAX_TOP_K
from services.common.validation import problems

QueryText = Annotated[
    str,
    Field(
        min_length=1,
        max_length=MAX_QUERY_CHARS,
        description="Natural-language biomedical or nutrition question, e.g. "
        "'vitamin D and breast cancer risk'.",
    ),
]
TopK = Annotated[
    int,
    Field(ge=1, le=MAX_TOP_K, description=f"How many documents to return (1-{MAX_TOP_K})."),
]
IncludeText = Annotated[
    bool,
    Field(
        description="Return each abstract in `text` (the default); false returns `text` empty, "
        "for a caller that needs only ids, scores and titles."
    ),
]


def check_not_blank(query: str) -> str:
    """Reject a query of whitespace only (it would match nothing meaningful)."""
    if not query.strip():
        raise ValueError("query must contain non-whitespace text")
    return query


class SearchRequest(BaseModel):
    """``POST /search_nfcorpus`` body. Strict: ``"5"`` is not a top_k, ``true`` is not either."""

    model_config = ConfigDict(strict=True, extra="forbid")

    query: QueryText
    top_k: TopK = 5
    include_text: IncludeText = True

    _not_blank = field_validator("query")(check_not_blank)


class InvalidSearch(ValueError):
    """A search request broke the rules; ``detail`` names each field and what is wrong."""

    def __init__(self, detail: list[dict[str, str]]) -> None:
        super().__init__("; ".join(f"{d['field']}: {d['message']}" for d in detail))
        self.detail = detail


def validate_search(payload: object) -> SearchRequest:
    """The one validation of REST bodies and tool arguments (messages never echo the input)."""
    if not isinstance(payload, dict):
        raise InvalidSearch([{"field": "body", "message": "body must be a JSON object"}])
    try:
        return SearchRequest.model_validate(payload)
    except ValidationError as e:
        raise InvalidSearch(
            [{"field": p.field, "message": p.message} for p in problems(e)]
        ) from None


# One hit on the wire, one shape: the retrieval core answers each document as a plain dict of
# these keys (``services.retrieval.types.RankedDocument``), built once per search and never
# changed, then rendered straight to JSON (``pydantic_core`` writes dicts in Rust). This type
# publishes it: the tool's output schema is generated from it, with the fields' descriptions.
# Building, validating and dumping a model per hit would buy nothing, since every field comes
# from our own index.
class SearchHit(TypedDict):
    """One retrieved NFCorpus document."""

    doc_id: Annotated[str, Field(description="NFCorpus document id, e.g. 'MED-10'.")]
    score: Annotated[float, Field(description="Fused relevance score; higher is better.")]
    title: Annotated[str, Field(description="Title of the PubMed article.")]
    text: Annotated[str, Field(description="Abstract of the article.")]


class SearchResponse(BaseModel):
    """Ranked documents, best first: the tool's output schema and the REST answer's shape."""

    results: list[SearchHit]


#: A search's hits, best first (a tuple: the result cache hands the same one to many callers).
SearchHits = tuple[SearchHit, ...]


def response_json(hits: SearchHits, indent: int | None = None) -> bytes:
    """``{"results": [...]}`` as :class:`SearchResponse` would serialize it (UTF-8, no spaces).

    ``indent=2`` is the tool's text content, byte for byte what the MCP SDK writes for a
    returned :class:`SearchResponse`.
    """
    return pydantic_core.to_json({"results": hits}, indent=indent)
