"""One reading of a pydantic ValidationError for every caller: path, message, type, never the input."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, ConfigDict, ValidationError

from services.common.validation import Problem, describe, problems

SECRET = "do-not-echo-this-text"


class Shape(BaseModel):
    model_config = ConfigDict(extra="forbid")

    names: dict[str, int]
    sizes: list[int]


def _error(value: object) -> ValidationError:
    with pytest.raises(ValidationError) as caught:
        Shape.model_validate(value)
    return caught.value


def test_each_error_is_its_path_message_and_type_in_order() -> None:
    error = _error({"names": {"": SECRET}, "sizes": [1, SECRET], "extra": SECRET})
    assert problems(error) == [
        Problem('names.""', error.errors()[0]["msg"], "int_parsing"),
        Problem("sizes.1", error.errors()[1]["msg"], "int_parsing"),
        Problem("extra", "Extra inputs are not permitted", "extra_forbidden"),
    ]
    assert SECRET not in repr(problems(error)) and SECRET not in describe(error)


def test_an_error_on_the_whole_value_is_named_by_the_root() -> None:
    assert [p.field for p in problems(_error([]))] == ["body"]
    assert [p.field for p in problems(_error([]), root="payload")] == ["payload"]


def test_describe_lists_the_first_few_and_counts_the_rest() -> None:
    error = _error({"sizes": ["a", "b", "c", "d"]})  # names missing, then four sizes
    assert describe(error) == (
        "names: Field required; sizes.0: Input should be a valid integer, unable to parse "
        "string as an integer; sizes.1: Input should be a valid integer, unable to parse "
        "string as an integer (and 2 more)"
    )
    assert describe(error, limit=5).endswith("sizes.3: " + error.errors()[4]["msg"])
    assert [p.field for p in problems(error, limit=2)] == ["names", "sizes.0"]
