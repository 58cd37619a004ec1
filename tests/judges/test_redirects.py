"""Judge requests stay on the allow-list (issue 43 item 3): redirects are not followed,
every request is checked before it is sent, and URLs are compared normalised (dot
segments, percent-encoded dots, case, default ports) as the HTTP client sends them.

Two loopback servers: the allowed one answers 307 (or 301, 302, 303, 308) pointing at the
other, which records every request it gets (it must get none).
"""

from __future__ import annotations

import asyncio

import httpx2
import pytest

from judges.endpoints import endpoint_allowed, normalise_path
from judges.providers import make_provider, page_provider
from judges.request import ChatRequest
from judges.runner import RunConfig, run_requests
from judges.transport import RequestRefused, allow_hook
from tests.judges.judge_server import FakeLLMServer, FakeReply


def _request() -> ChatRequest:
    return ChatRequest(messages=(("user", "the visitor's data"),), key_parts={"task": "t"},
                       tag=0)


def _run(provider):
    async def go():
        try:
            return await run_requests([_request()], provider,
                                      config=RunConfig(max_retries=3, timeout=10))
        finally:
            await provider.aclose()
    return asyncio.run(go())


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
@pytest.mark.parametrize("api", ["openai", "anthropic"])
@pytest.mark.parametrize("transport", ["httpx", "aiohttp"])
@pytest.mark.parametrize("page", [True, False], ids=["page", "cli"])
def test_a_redirect_is_not_followed(status, api, transport, page, monkeypatch):
    with FakeLLMServer() as elsewhere:
        target = (elsewhere.openai_url + "/chat/completions" if api == "openai"
                  else elsewhere.url + "/v1/messages")

        def redirect(call):
            return FakeReply(status=status, headers={"location": target}, raw=b"")

        with FakeLLMServer(redirect) as allowed:
            base = allowed.openai_url if api == "openai" else allowed.url
            if page:
                monkeypatch.setenv("BIAS_WORKBENCH_JUDGE_ENDPOINTS", base)
                provider = page_provider(api, model="j", base_url=base, transport=transport)
            else:
                provider = make_provider(api, model="j", base_url=base, transport=transport)
            [result] = _run(provider)
            assert allowed.n_requests == 1  # not retried: the same answer again
        assert elsewhere.n_requests == 0
    assert result.status == "error"
    assert f"HTTP {status}, a redirect to" in result.error
    assert "do not follow redirects" in result.error


@pytest.mark.parametrize("url", [
    "{base}/v1/../../m/x",
    "{base}/v1/%2e%2e/%2e%2e/other",
    "{base}/v1/%2E%2E/other",
    "{base}/v1/./../other",
    "{base}/v1%2f..%2fother",
    "{base}/v1/..%2f..%2fother",
    "{base}/v1/..\\..\\other",
    "{base}/v1/ /../x",
])
def test_path_tricks_do_not_leave_the_entry(url):
    base = "http://127.0.0.1:8615"
    assert not endpoint_allowed(url.format(base=base), [f"{base}/v1"])


@pytest.mark.parametrize(("url", "ok"), [
    ("HTTP://127.0.0.1:8615/v1", True),
    ("http://127.0.0.1:8615/v1/./chat", True),
    ("http://127.0.0.1:8615/v1/x/../chat", True),
    ("http://127.0.0.1:8615/v1/%2e/chat", True),
    ("http://127.0.0.1:8615//v1//", True),
    ("http://127.0.0.1:80/v1", False),
])
def test_normalised_forms_of_an_allowed_url(url, ok):
    assert endpoint_allowed(url, ["http://127.0.0.1:8615/v1"]) is ok


def test_default_ports_and_case_of_the_entry():
    assert endpoint_allowed("http://localhost/v1", ["HTTP://LOCALHOST:80/v1/"])
    assert endpoint_allowed("https://llm.example.org:443/v1", ["https://llm.example.org/v1"])
    assert not endpoint_allowed("https://llm.example.org:8443/v1", ["https://llm.example.org/v1"])


def test_normalise_path_is_rfc_3986_remove_dot_segments():
    assert normalise_path("/a/b/c/./../../g") == "/a/g"  # RFC 3986, 5.4.2
    assert normalise_path("/v1/%2e%2E/%2E/x") == "/x"
    assert normalise_path("/../../x") == "/x"
    assert normalise_path("") == "/"


@pytest.mark.parametrize("path", ["/v1/%2e%2e/other/chat/completions",
                                  "/v1/../other/chat/completions",
                                  "/other/chat/completions"])
def test_the_request_hook_refuses_before_connecting(path):
    """Every request (a redirect's hop included, httpx runs request hooks per hop) is
    checked: one outside the entry is refused and the server gets nothing."""
    async def go(srv):
        hook = allow_hook([srv.openai_url])
        async with httpx2.AsyncClient(event_hooks={"request": [hook]}) as client:
            with pytest.raises(RequestRefused, match="outside the endpoints"):
                await client.post(srv.url + path, content=b"{}")
            ok = await client.post(srv.openai_url + "/chat/completions",
                                   content=b'{"messages": []}')
            return ok.status_code

    with FakeLLMServer() as srv:
        assert asyncio.run(go(srv)) == 200
        assert srv.n_requests == 1  # only the allowed request arrived
