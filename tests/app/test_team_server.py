"""A server a team shares, in a real browser (issue 27): started by ``bias-workbench serve``;
two browsers on one link; two users signed in through a real OIDC provider process
(``oidc-provider-mock``) on 127.0.0.1; a provider that is down."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
import urllib.request
from urllib.parse import parse_qs, urlsplit

import pytest

from tests.app.browsertools import CHROMIUM, FLAGS, ROOT, free_port, settle, visit

pytestmark = pytest.mark.browser


def _wait_http(url: str, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(url, timeout=1).read()
            return
        except OSError:
            time.sleep(0.3)
    raise RuntimeError(f"{url} did not answer in {seconds} s")


@contextlib.contextmanager
def _process(argv: list[str], **env: str):
    proc = subprocess.Popen(argv, cwd=ROOT, env=dict(os.environ, HF_HUB_OFFLINE="1", **env),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        yield proc
    finally:
        proc.terminate()
        proc.wait(timeout=20)


@contextlib.contextmanager
def serving(state_dir, *extra: str, **env: str):
    """``python -m analysis serve`` (the ``bias-workbench serve`` console script) on a free
    loopback port; yields its URL once healthy, stops it by PID (serve execs Streamlit)."""
    port = free_port()
    argv = [sys.executable, "-m", "analysis", "serve", "--host", "127.0.0.1", "--port",
            str(port), "--state-dir", str(state_dir), *extra]
    with _process(argv, **env):
        url = f"http://127.0.0.1:{port}"
        _wait_http(f"{url}/_stcore/health")
        yield url


def _sid(page) -> str | None:
    return parse_qs(urlsplit(page.url).query).get("sid", [None])[0]


def _open(browser, url: str):
    page = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
    page.goto(url, wait_until="domcontentloaded")
    return page


def test_two_browsers_on_one_link_work_on_copies_and_a_bad_id_is_not_echoed(tmp_path):
    from playwright.sync_api import sync_playwright

    with serving(tmp_path / "state") as url, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        a = _open(browser, url)
        a.get_by_text("35,868").first.wait_for(timeout=60_000)
        assert _sid(a) is None  # a fresh visit writes nothing
        assert visit(a, "Subgroups") == []
        a.get_by_text("2", exact=True).first.click()  # "Highest subgroup level": 2
        settle(a)
        sid = _sid(a)
        assert sid and len(sid) == 46
        assert visit(a, "Coverage") == [] and _sid(a) == sid  # one id across pages
        a.reload(wait_until="domcontentloaded")  # the same browser: its own session
        a.get_by_role("heading", name="Coverage").first.wait_for(timeout=60_000)
        settle(a)
        assert _sid(a) == sid

        b = _open(browser, f"{url}/subgroups?sid={sid}")  # another browser, same link
        b.get_by_text("your own copy").first.wait_for(timeout=60_000)
        settle(b)
        copy = _sid(b)
        assert copy and copy != sid
        assert b.get_by_role("radio", name="2", exact=True).is_checked()  # A's setting came
        b.get_by_text("1", exact=True).first.click()
        settle(b)
        a.goto(f"{url}/subgroups?sid={sid}", wait_until="domcontentloaded")
        a.get_by_role("heading", name="Subgroups").first.wait_for(timeout=60_000)
        settle(a)
        assert _sid(a) == sid and a.get_by_role("radio", name="2", exact=True).is_checked()

        outside: list[str] = []
        c = browser.new_context().new_page()
        c.on("request", lambda r: outside.append(r.url) if "invalid" in urlsplit(r.url).netloc
             else None)
        c.goto(f"{url}/?sid=![x](http://evil.invalid/x.png)", wait_until="domcontentloaded")
        c.get_by_text("was not issued by this server").first.wait_for(timeout=60_000)
        settle(c)
        assert "evil" not in c.locator("body").inner_text() and outside == []
        assert _sid(c) is None
        browser.close()
    assert len([d for d in (tmp_path / "state").iterdir() if d.is_dir()]) == 2


def _secrets(path, app_port: int, provider: str) -> None:
    path.write_text(
        "[auth]\n"
        f'redirect_uri = "http://127.0.0.1:{app_port}/oauth2callback"\n'
        'cookie_secret = "a-test-cookie-secret-of-some-length"\n'
        'client_id = "bias-workbench"\n'
        'client_secret = "test-secret"\n'
        f'server_metadata_url = "{provider}/.well-known/openid-configuration"\n')
    path.chmod(0o600)


def _sign_in(browser, url: str, user: str):
    page = _open(browser, url)
    page.get_by_role("button", name="Sign in").click()
    page.locator('input[name="sub"]').fill(user)  # the provider's own form
    page.get_by_role("button", name="Authorize").click()
    page.get_by_text(f"Signed in as {user}").first.wait_for(timeout=60_000)
    settle(page)
    return page


def test_two_signed_in_users_cannot_open_each_others_sessions(tmp_path):
    from playwright.sync_api import sync_playwright

    app_port, provider_port = free_port(), free_port()
    provider = f"http://127.0.0.1:{provider_port}"
    secrets = tmp_path / "secrets.toml"
    _secrets(secrets, app_port, provider)
    env = {"AUTHLIB_INSECURE_TRANSPORT": "1"}  # plain http on loopback in this test only
    argv = [sys.executable, "-m", "analysis", "serve", "--host", "127.0.0.1", "--port",
            str(app_port), "--state-dir", str(tmp_path / "state"), "--secrets", str(secrets)]
    with _process(argv, **env), sync_playwright() as p:
        url = f"http://127.0.0.1:{app_port}"
        _wait_http(f"{url}/_stcore/health")
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        down = _open(browser, url)  # the provider is not started yet
        down.get_by_text("The sign-in provider cannot be reached").wait_for(timeout=60_000)
        assert down.get_by_role("button", name="Sign in").count() == 0
        with _process([sys.executable, "-m", "oidc_provider_mock", "--port",
                       str(provider_port)], **env):
            _wait_http(f"{provider}/.well-known/openid-configuration")
            alice = _sign_in(browser, url, "alice@example.org")
            assert visit(alice, "Subgroups") == []
            sid = _sid(alice)
            assert sid
            alice.get_by_text("My sessions (1)").first.wait_for(timeout=30_000)

            bob = _sign_in(browser, url, "bob@example.org")
            bob.goto(f"{url}/subgroups?sid={sid}", wait_until="domcontentloaded")
            bob.get_by_text("belongs to another signed-in user").first.wait_for(
                timeout=60_000)
            settle(bob)
            assert _sid(bob) is None and bob.get_by_text("bbq_unifiedqa").count() == 0
            bob.get_by_text("My sessions (0)").first.wait_for(timeout=30_000)

            alice.goto(f"{url}/subgroups?sid={sid}", wait_until="domcontentloaded")
            alice.get_by_role("heading", name="Subgroups").first.wait_for(timeout=60_000)
            settle(alice)
            assert _sid(alice) == sid  # her own link opens her session, no copy
            assert alice.get_by_text("belongs to another").count() == 0
            browser.close()
