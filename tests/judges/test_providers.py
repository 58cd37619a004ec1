"""Providers with the real openai and anthropic clients against the loopback server."""

from __future__ import annotations

import asyncio

import pytest

from judges.errors import ProviderConfigError
from judges.parse import score_schema
from judges.providers import (
    AnthropicChat,
    MalformedReplyError,
    OpenAIChat,
    is_local_url,
    make_provider,
    parse_retry_after,
)
from judges.request import ChatRequest
from tests.judges.judge_server import FakeLLMServer, FakeReply

REQUEST = ChatRequest(messages=(("system", "Be a judge."), ("user", "Rate this.")),
                      params={"temperature": 0.0, "max_tokens": 50, "json_schema": score_schema()})


async def _complete(provider, request=REQUEST, timeout=2.0):
    try:
        return await provider.complete(request, timeout=timeout)
    finally:
        await provider.aclose()


@pytest.mark.parametrize("transport", ["aiohttp", "httpx"])
def test_openai_chat_completions_shape(transport):
    reply = FakeReply(text='{"explanation": "e", "score": 4}', usage=(123, 45))
    with FakeLLMServer(lambda call: reply) as srv:
        provider = make_provider("openai", model="judge-x", base_url=srv.openai_url,
                                 api_key="sk-test", transport=transport)
        out = asyncio.run(_complete(provider))
        body = srv.calls[0].body
    assert (out.text, out.input_tokens, out.output_tokens) == (reply.text, 123, 45)
    assert out.finish_reason == "stop" and out.model == "judge-x" and out.refusal is None
    assert srv.calls[0].api == "openai"
    assert body["messages"] == [{"role": "system", "content": "Be a judge."},
                                {"role": "user", "content": "Rate this."}]
    assert body["temperature"] == 0.0
    assert body["max_tokens"] == 50 and "max_completion_tokens" not in body
    assert body["response_format"] == {"type": "json_schema", "json_schema": {
        "name": "reply", "schema": score_schema(), "strict": True}}
    assert srv.calls[0].headers["authorization"] == "Bearer sk-test"


@pytest.mark.parametrize("transport", ["aiohttp", "httpx"])
def test_anthropic_messages_shape(transport):
    reply = FakeReply(text='{"explanation": "e", "score": 2}', usage=(77, 9))
    with FakeLLMServer(lambda call: reply) as srv:
        provider = make_provider("anthropic", model="claude-x", base_url=srv.url,
                                 api_key="sk-ant-test", transport=transport)
        out = asyncio.run(_complete(provider))
        call = srv.calls[0]
    assert (out.text, out.input_tokens, out.output_tokens) == (reply.text, 77, 9)
    assert out.finish_reason == "stop"
    assert call.api == "anthropic"
    assert call.body["system"] == "Be a judge."
    assert call.body["messages"] == [{"role": "user", "content": "Rate this."}]
    assert call.body["max_tokens"] == 50
    assert "temperature" not in call.body  # API version 2026-10-21 rejects it
    assert call.body["output_config"] == {"format": {"type": "json_schema",
                                                     "schema": score_schema()}}
    # anthropic 2.x authenticates with a bearer token
    assert "sk-ant-test" in call.headers.get("authorization", "") + call.headers.get(
        "x-api-key", "")


def test_refusal_and_stop_reasons_are_normalised():
    with FakeLLMServer(lambda c: FakeReply(text=None, refusal="I won't.")) as srv:
        out = asyncio.run(_complete(OpenAIChat("m", base_url=srv.openai_url)))
    assert out.text is None and out.refusal == "I won't."
    with FakeLLMServer(lambda c: FakeReply(text="cut", finish="max_tokens")) as srv:
        out = asyncio.run(_complete(AnthropicChat("m", base_url=srv.url)))
    assert out.finish_reason == "length"
    with FakeLLMServer(lambda c: FakeReply(text="no", finish="refusal")) as srv:
        out = asyncio.run(_complete(AnthropicChat("m", base_url=srv.url)))
    assert out.finish_reason == "refusal"


@pytest.mark.parametrize("raw", [b"not json at all", b'{"foo": 1}', b"[1, 2]",
                                 b'{"choices": [], "content": 3}'])
@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_malformed_bodies_raise_a_non_transient_error(api, raw):
    with FakeLLMServer(lambda c: FakeReply(raw=raw)) as srv:
        provider = make_provider(api, model="m", base_url=srv.openai_url if api == "openai"
                                 else srv.url)
        with pytest.raises(Exception) as info:
            asyncio.run(_complete(provider))
    err = provider.classify_error(info.value)
    assert not err.transient
    assert err.message.startswith("malformed response")
    if raw.startswith(b"{"):
        assert isinstance(info.value, MalformedReplyError)


@pytest.mark.parametrize("api", ["openai", "anthropic"])
@pytest.mark.parametrize(("status", "transient"), [(429, True), (500, True), (503, True),
                                                   (529, True), (408, True), (400, False),
                                                   (401, False), (404, False)])
def test_http_errors_are_classified(api, status, transient):
    with FakeLLMServer(lambda c: FakeReply.error(status, retry_after=1.5)) as srv:
        provider = make_provider(api, model="m", base_url=srv.openai_url if api == "openai"
                                 else srv.url)
        with pytest.raises(Exception) as info:
            asyncio.run(_complete(provider))
    err = provider.classify_error(info.value)
    assert err.transient is transient
    assert err.retry_after == 1.5
    assert f"HTTP {status}" in err.message


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_timeouts_are_transient(api):
    with FakeLLMServer(lambda c: FakeReply.judgement(3, delay=1.0)) as srv:
        provider = make_provider(api, model="m", base_url=srv.openai_url if api == "openai"
                                 else srv.url)
        with pytest.raises(Exception) as info:
            asyncio.run(_complete(provider, timeout=0.2))
    err = provider.classify_error(info.value)
    assert err.transient and err.retry_after is None


def test_connection_refused_is_transient():
    srv = FakeLLMServer().start()
    url = srv.openai_url
    srv.stop()
    provider = make_provider("openai", model="m", base_url=url)
    with pytest.raises(Exception) as info:
        asyncio.run(_complete(provider))
    assert provider.classify_error(info.value).transient


def test_official_openai_endpoint_uses_max_completion_tokens():
    body = OpenAIChat("gpt-4o-mini").body(REQUEST)
    assert body["max_completion_tokens"] == 50 and "max_tokens" not in body
    assert OpenAIChat("m", base_url="http://localhost:11434/v1").body(REQUEST)["max_tokens"] == 50
    no_temp = ChatRequest(messages=(("user", "x"),), params={"temperature": None})
    assert "temperature" not in OpenAIChat("m").body(no_temp)


def test_identity_price_section_and_keys(monkeypatch):
    local = OpenAIChat("m", base_url="http://127.0.0.1:8080/v1/")
    assert local.identity() == {"provider": "openai", "model": "m",
                                "endpoint": "http://127.0.0.1:8080/v1"}
    assert local.price_section == "local" and not local.needs_key
    official = OpenAIChat("gpt-4o-mini")
    assert official.endpoint == "https://api.openai.com/v1" and official.price_section == "openai"
    hosted = OpenAIChat("m", base_url="https://api.together.xyz/v1")
    assert hosted.price_section == "openai-compatible" and not hosted.needs_key
    lan = OpenAIChat("m", base_url="http://10.0.0.7:8000/v1")  # vLLM on the LAN
    assert lan.price_section == "openai-compatible" and not lan.needs_key
    lan.check_ready()  # no key asked for
    with pytest.raises(ProviderConfigError, match="No API key for openai: set OPENAI_API_KEY"):
        official.check_ready()
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env-key-123")
    official.check_ready()
    assert "sk-env" not in repr(official)
    assert official.redact("bad key sk-env-key-123 given") == "bad key *** given"
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://localhost:9999")
    assert AnthropicChat("c").endpoint == "http://localhost:9999"
    assert AnthropicChat("c").effective_params({"temperature": 0, "max_tokens": 5, "seed": 1}) \
        == {"max_tokens": 5}


def test_bad_provider_settings():
    with pytest.raises(ProviderConfigError, match="Unknown chat provider 'gemini'"):
        make_provider("gemini", model="x")
    with pytest.raises(ProviderConfigError, match="needs a model name"):
        make_provider("openai", model="  ")
    with pytest.raises(ProviderConfigError, match="transport"):
        make_provider("openai", model="m", transport="curl")


def test_retry_after_parsing():
    assert parse_retry_after({"retry-after": "2"}) == 2.0
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert parse_retry_after({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}) == 0.0
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({}) is None and parse_retry_after(None) is None
    assert is_local_url("http://[::1]:8000/v1") and is_local_url("http://localhost")
    assert not is_local_url("https://api.openai.com/v1") and not is_local_url(None)


def test_redaction_covers_partly_masked_keys():
    provider = OpenAIChat("m", api_key="sk-proj-abcdef123456")
    text = ("Incorrect API key provided: sk-proj-abcdef123456. Also sk-proj-****3456 and "
            "sk-ant-api03-XYZ_1.")
    assert provider.redact(text) == "Incorrect API key provided: ***. Also *** and ***"
