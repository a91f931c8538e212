"""Prompt decomposition into concepts (subject, style, setting), each retrieved for separately.

The default decomposer is deterministic and costs no LLM tokens: it pulls out known style phrases,
splits the rest at clause words ("with", "wearing", "in", "on", commas ...), drops determiners and
filler words, and keeps the noun-phrase chunks. An LLM can take over through `LLMDecomposer`, which
counts the tokens it spends so the cost of that choice is visible in every plan.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from manta.errors import MantaError

STYLE_PHRASES = (
    "oil painting",
    "watercolor painting",
    "watercolour",
    "watercolor",
    "pixel art",
    "ukiyo-e",
    "ukiyo e",
    "pencil sketch",
    "line art",
    "sketch",
    "anime style",
    "anime",
    "manga",
    "cyberpunk",
    "steampunk",
    "concept art",
    "digital art",
    "3d render",
    "low poly",
    "studio portrait",
    "food photography",
    "underwater photography",
    "gourmet food photography",
    "vintage film photo",
    "vintage film",
    "film photo",
    "photorealistic",
    "photograph",
    "photo",
    "cinematic",
    "impressionist",
    "art nouveau",
    "comic book",
    "cartoon",
    "illustration",
    "woodblock print",
    "print",
    "painting",
    "retro",
)
# Words that open a new chunk; the kind says what the chunk after them is about.
_SETTING_WORDS = (
    "in",
    "on",
    "at",
    "under",
    "over",
    "above",
    "through",
    "among",
    "near",
    "inside",
    "behind",
    "across",
    "beside",
    "along",
    "into",
    "down",
    "by",
    "around",
    "next",
)
_CLAUSE_WORDS = (
    "with",
    "wearing",
    "holding",
    "and",
    "riding",
    "reading",
    "playing",
    "fighting",
    "exploring",
    "walking",
    "floating",
    "flying",
    "standing",
    "sleeping",
    "sitting",
    "lying",
    "driving",
    "eating",
    "drinking",
    "parked",
    "waiting",
    "grazing",
    "crossing",
    "doing",
    "hitting",
    "kicking",
    "catching",
    "cutting",
    "cooking",
    "talking",
    "swinging",
    "jumping",
    "surfing",
    "skiing",
    "pulling",
    "perched",
    "covered",
    "full",
    "sits",
    "sit",
    "stands",
    "stand",
    "looks",
    "look",
    "stares",
    "hits",
    "holds",
    "rides",
    "prepares",
    "takes",
    "throws",
    "waits",
    "plays",
    "eats",
    "flies",
    "lays",
    "lies",
    "shown",
    "seen",
    "filled",
    "topped",
    "stacked",
    "lined",
    "loaded",
    "decorated",
    "dressed",
    "displayed",
    "while",
    "as",
    "who",
    "which",
)
# Caption verbs end in -ing far more often than nouns do; these nouns are the exceptions kept as words.
_ING_NOUNS = frozenset(
    [
        "building",
        "buildings",
        "ceiling",
        "clothing",
        "evening",
        "morning",
        "wedding",
        "icing",
        "frosting",
        "railing",
        "railings",
        "ring",
        "king",
        "wing",
        "wings",
        "string",
        "thing",
        "something",
        "nothing",
        "everything",
        "swing",
        "swings",
        "ping",
        "pudding",
        "stuffing",
        "topping",
        "toppings",
        "dumpling",
        "dumplings",
        "sibling",
        "siblings",
        "awning",
    ]
)
_FILLER = {
    "a",
    "an",
    "the",
    "some",
    "of",
    "is",
    "are",
    "very",
    "that",
    "this",
    "there",
    "its",
    "his",
    "her",
    "their",
    "style",
    "top",
    "pile",
    "bowl",
    "plate",
    "to",
    "two",
    "group",
    "row",
    "herd",
    "flock",
    "crowd",
    "middle",
    "front",
    "corner",
    "next",
    "up",
    "lot",
    "lots",
    "bunch",
    "several",
    "many",
    "few",
    "couple",
    "pair",
    "one",
    "three",
    "four",
    "five",
    "different",
    "various",
    "it",
    "them",
    "they",
    "like",
    "background",
    "picture",
    "image",
    "view",
    "someone",
    "someone's",
    "s",
}
_WORD = re.compile(r"[a-z0-9][a-z0-9'\-]*")


@dataclass(frozen=True)
class Concept:
    """One part of the prompt that deserves its own adapters."""

    text: str
    kind: str  # subject | style | setting


@dataclass
class TokenUsage:
    """LLM tokens spent on decomposition (0 for the deterministic decomposer)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    calls: int = 0

    @property
    def total(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class Decomposer(Protocol):
    usage: TokenUsage

    def decompose(self, prompt: str) -> list[Concept]: ...


def check_prompt(prompt: str) -> str:
    """The stripped prompt, or a clear error when there is nothing to compose for."""
    if not isinstance(prompt, str) or not prompt.strip():
        raise MantaError(
            "the prompt is empty; pass a text that describes the image, e.g. "
            "'a watercolor painting of a cat wearing a top hat'"
        )
    return prompt.strip()


def _chunks(words: list[str]) -> list[tuple[str, list[str]]]:
    chunks: list[tuple[str, list[str]]] = [("subject", [])]
    for word in words:
        if word in _SETTING_WORDS:
            chunks.append(("setting", []))
        elif word in _CLAUSE_WORDS or (word.endswith("ing") and len(word) > 5 and word not in _ING_NOUNS):
            chunks.append(("subject", []))
        elif word not in _FILLER:
            chunks[-1][1].append(word)
    return [(kind, chunk) for kind, chunk in chunks if chunk]


@dataclass
class KeywordDecomposer:
    """Deterministic decomposition: style phrases, then noun-phrase chunks split at clause words."""

    max_concepts: int = 4
    usage: TokenUsage = field(default_factory=TokenUsage)

    def decompose(self, prompt: str) -> list[Concept]:
        """Concepts of `prompt`, subjects first, at most `max_concepts` (the tail is merged into the last)."""
        text = " " + check_prompt(prompt).lower() + " "
        styles: list[str] = []
        for phrase in sorted(STYLE_PHRASES, key=len, reverse=True):
            pattern = re.compile(rf"(?<![a-z]){re.escape(phrase)}(?![a-z])")
            if pattern.search(text):
                styles.append(phrase)
                text = pattern.sub(" , ", text)
        concepts: list[Concept] = []
        for segment in re.split(r"[,;:.!?()]", text):
            for kind, words in _chunks(_WORD.findall(segment)):
                concepts.append(Concept(" ".join(words), kind))
        if styles:
            concepts.append(Concept(" ".join(styles), "style"))
        if not concepts:
            concepts = [Concept(check_prompt(prompt).lower(), "subject")]
        seen: set[str] = set()
        unique = [c for c in concepts if not (c.text in seen or seen.add(c.text))]
        if len(unique) > self.max_concepts:
            keep, rest = unique[: self.max_concepts - 1], unique[self.max_concepts - 1 :]
            unique = [*keep, Concept(" ".join(c.text for c in rest), rest[0].kind)]
        return unique


def count_tokens_whitespace(text: str) -> int:
    """A tokenizer-free token estimate: words and punctuation marks."""
    return len(re.findall(r"\w+|[^\w\s]", text))


LLM_INSTRUCTION = (
    "Split the image prompt below into at most {max_concepts} visual concepts that each need their own "
    "adapter: subjects, style, setting. Answer with one concept per line as `kind: text`, kind one of "
    "subject, style, setting.\nPrompt: {prompt}\n"
)


@dataclass
class LLMDecomposer:
    """Decomposition by a language model; `complete(text) -> text` is any local or remote LLM client."""

    complete: Callable[[str], str]
    count_tokens: Callable[[str], int] = count_tokens_whitespace
    max_concepts: int = 4
    usage: TokenUsage = field(default_factory=TokenUsage)

    def decompose(self, prompt: str) -> list[Concept]:
        """Ask the LLM, parse `kind: text` lines, count tokens both ways; fall back to keywords if unusable."""
        request = LLM_INSTRUCTION.format(max_concepts=self.max_concepts, prompt=check_prompt(prompt))
        answer = self.complete(request)
        self.usage.calls += 1
        self.usage.prompt_tokens += self.count_tokens(request)
        self.usage.completion_tokens += self.count_tokens(answer)
        concepts = []
        for line in answer.splitlines():
            kind, sep, body = line.partition(":")
            kind = kind.strip().strip("-* ").lower()
            if sep and kind in ("subject", "style", "setting") and body.strip():
                concepts.append(Concept(body.strip().lower(), kind))
        return concepts[: self.max_concepts] or KeywordDecomposer(self.max_concepts).decompose(prompt)
