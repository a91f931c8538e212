"""Prompt decomposition: deterministic keyword chunking and the token-counting LLM hook."""

import pytest
from manta.concepts import KeywordDecomposer, LLMDecomposer, check_prompt, count_tokens_whitespace
from manta.errors import MantaError


@pytest.mark.parametrize(
    ("prompt", "expected"),
    [
        (
            "a watercolor painting of a cat wearing a top hat",
            [("subject", "cat"), ("subject", "hat"), ("style", "watercolor painting")],
        ),
        (
            "A giant robot walking through a neon city at night",
            [("subject", "giant robot"), ("setting", "neon city"), ("setting", "night")],
        ),
        ("a plate of sushi, gourmet food photography", [("subject", "sushi"), ("style", "gourmet food photography")]),
    ],
)
def test_keyword_decomposition(prompt, expected):
    concepts = KeywordDecomposer().decompose(prompt)
    assert [(c.kind, c.text) for c in concepts] == expected


def test_decomposition_is_capped_and_deterministic():
    prompt = "a cat with a dog and a horse and a cow, near a barn in a field, oil painting"
    first = KeywordDecomposer(max_concepts=3).decompose(prompt)
    assert len(first) == 3 and first == KeywordDecomposer(max_concepts=3).decompose(prompt)
    assert "oil painting" in first[-1].text  # the tail is merged, nothing is dropped


@pytest.mark.parametrize("prompt", ["", "   ", None])
def test_empty_prompt_is_a_clear_error(prompt):
    with pytest.raises(MantaError, match="the prompt is empty"):
        check_prompt(prompt)
    with pytest.raises(MantaError, match="the prompt is empty"):
        KeywordDecomposer().decompose(prompt)


def test_llm_decomposer_parses_answers_and_counts_tokens():
    requests = []

    def complete(text: str) -> str:  # a local LLM client would go here
        requests.append(text)
        return "subject: a red fox\nstyle: ukiyo-e\nnot a concept line\nsetting: snowy forest"

    decomposer = LLMDecomposer(complete, max_concepts=4)
    concepts = decomposer.decompose("a red fox in a snowy forest, ukiyo-e")
    assert [(c.kind, c.text) for c in concepts] == [
        ("subject", "a red fox"),
        ("style", "ukiyo-e"),
        ("setting", "snowy forest"),
    ]
    assert "a red fox in a snowy forest" in requests[0]
    assert decomposer.usage.calls == 1
    assert decomposer.usage.prompt_tokens == count_tokens_whitespace(requests[0])
    assert decomposer.usage.completion_tokens == count_tokens_whitespace(complete(""))
    assert KeywordDecomposer().usage.total == 0


def test_llm_decomposer_falls_back_to_keywords_on_unusable_answers():
    decomposer = LLMDecomposer(lambda text: "I cannot help with that.")
    assert decomposer.decompose("a cat, watercolor") == KeywordDecomposer().decompose("a cat, watercolor")
    assert decomposer.usage.total > 0


def test_everyday_captions_split_at_common_verbs_and_drop_counting_words():
    from manta.concepts import KeywordDecomposer
    from manta.evaluation.prompts import everyday_prompts

    decompose = KeywordDecomposer().decompose
    assert [c.text for c in decompose("A red double decker bus driving down a city street.")] == [
        "red double decker bus",
        "city street",
    ]
    assert [c.text for c in decompose("Two dogs playing with a frisbee in a park.")] == ["dogs", "frisbee", "park"]
    prompts = everyday_prompts()
    assert len(prompts) == 80 and all(p.endswith(".") for p in prompts)
