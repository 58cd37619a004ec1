"""A tiny Inspect model for offline tests: it always answers one fixed letter.

Inspect's ``mockllm/model`` counts tokens with tiktoken, whose encoding file is
downloaded at run time (unreachable offline), so it cannot run here
(``../shared/docs/environment.md``). ``fixedllm/always-<letter>`` answers
``ANSWER: <LETTER>`` to every prompt and counts tokens as words. Importing this module
registers the provider; run it through ``inspect_ai.eval`` in the same process.
"""

from __future__ import annotations

from typing import Any

from inspect_ai.model import GenerateConfig, ModelAPI, ModelOutput, modelapi


@modelapi(name="fixedllm")
class FixedLetterModel(ModelAPI):
    """Answers ``ANSWER: X`` where X is the letter after ``always-`` in the model name."""

    def __init__(self, model_name: str, base_url: str | None = None,
                 api_key: str | None = None, config: GenerateConfig | None = None,
                 **model_args: Any) -> None:
        super().__init__(model_name, base_url, api_key, [], config or GenerateConfig())
        self.letter = model_name.rsplit("-", 1)[-1].upper()

    async def generate(self, input: Any, tools: Any, tool_choice: Any,
                       config: GenerateConfig) -> ModelOutput:
        return ModelOutput.from_content(model=self.model_name, content=f"ANSWER: {self.letter}")

    async def count_text_tokens(self, text: str) -> int:
        return len(text.split())
