"""One token value per purpose (issue 52, input 7): the chart refuses at render the same value
given for two purposes, a caller's token and the MCP token, the scrape token and Qdrant's key,
and so on, naming both values and never the token."""

from __future__ import annotations

import itertools

import pytest

from tests.k8s.rendering import RenderError, render

SHARED = "one-token-for-two-doors-0123456789"
# Every token value the chart takes, each a purpose of its own, as --set keys.
PURPOSES = {
    "auth.clientTokens.value": "auth__clientTokens__value",
    "auth.loadGeneratorToken.value": "auth__loadGeneratorToken__value",
    "auth.helmTestToken.value": "auth__helmTestToken__value",
    "auth.mcpToken.value": "auth__mcpToken__value",
    "auth.scrapeToken.value": "auth__scrapeToken__value",
    "loadTest.collector.token.value": "loadTest__collector__token__value",
    "qdrant.apiKey.value": "qdrant__apiKey__value",
    "qdrant.apiKey.readOnly.value": "qdrant__apiKey__readOnly__value",
}


@pytest.mark.parametrize(
    ("first", "second"), list(itertools.combinations(PURPOSES, 2)), ids="+".join
)
def test_the_same_value_for_two_purposes_is_refused(first: str, second: str) -> None:
    sets: dict[str, object] = {"auth__enabled": True, "loadTest__enabled": True}
    # A caller's line names the caller; the token is what follows the last colon.
    sets[PURPOSES[first]] = f"green-agent:{SHARED}" if "clientTokens" in first else SHARED
    sets[PURPOSES[second]] = SHARED
    with pytest.raises(RenderError) as refused:
        render("ci/default-values.yaml", **sets)
    message = str(refused.value)
    assert f"{first} and {second} give the same token" in message
    assert SHARED not in message


def test_a_token_among_the_callers_lines_is_found() -> None:
    callers = f"# callers\ngreen-agent:green-token-0123456789\ndashboard:{SHARED}\n"
    with pytest.raises(RenderError, match=r"auth\.clientTokens\.value and auth\.mcpToken\.value"):
        render(
            "ci/default-values.yaml",
            auth__enabled=True,
            auth__clientTokens__value=callers,
            auth__mcpToken__value=SHARED,
        )


def test_a_value_of_its_own_for_each_purpose_is_accepted() -> None:
    sets = {key: f"{i}-a-token-of-its-own-0123456789" for i, key in enumerate(PURPOSES.values())}
    render("ci/default-values.yaml", auth__enabled=True, loadTest__enabled=True, **sets)
