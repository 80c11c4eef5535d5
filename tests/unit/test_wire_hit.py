"""The retrieval core's ranked document is the MCP server's hit on the wire, with no copy between."""

from __future__ import annotations

from typing import get_type_hints

from services.mcp_server.schemas import SearchHit, SearchResponse
from services.retrieval.types import RankedDocument


def test_a_ranked_document_has_exactly_the_wire_hits_fields() -> None:
    assert get_type_hints(SearchHit) == get_type_hints(RankedDocument)
    assert SearchHit.__required_keys__ == RankedDocument.__required_keys__


def test_a_ranked_document_validates_as_a_hit_of_the_published_schema() -> None:
    document: RankedDocument = {"doc_id": "MED-10", "score": 1.5, "title": "T", "text": ""}
    response = SearchResponse.model_validate({"results": [document]})
    assert response.model_dump()["results"] == [document]
    hit = SearchResponse.model_json_schema()["$defs"]["SearchHit"]
    assert set(hit["properties"]) == set(document) and all(
        p.get("description") for p in hit["properties"].values()
    )
