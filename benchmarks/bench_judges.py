"""Speed, memory and resume benchmark of the judge runner against a loopback server.

Starts ``tests/judges/judge_server.py`` as a separate process answering every request
after a fixed latency (200 ms), then measures with the real ``openai`` client:

1. a cold run of N judgments (default 10,000) at concurrency 64: wall time against the
   ideal ``N x latency / concurrency``, and resident memory sampled during the run;
2. a rerun on the same cache: the number of requests the server receives (target 0);
3. kill and resume: ``python -m judges score`` in a subprocess, killed with SIGKILL
   about half-way, then run again; the resumed run must make exactly the calls missing
   from the cache.

Usage::

    python benchmarks/bench_judges.py [--judgments 10000] [--concurrency 64] [--latency 0.2]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from judges.cache import ReplyCache  # noqa: E402
from judges.fourstage import validate_fourstage  # noqa: E402
from judges.judge import JudgeProgress, judge_frame, n_judgments  # noqa: E402
from judges.providers import aiohttp_available, make_provider  # noqa: E402
from judges.runner import RunConfig  # noqa: E402


def synthetic_frame(n_judgments_wanted: int) -> pd.DataFrame:
    """A four-stage table needing exactly ``n`` judge calls (mixed stages)."""
    rows = []
    calls = 0
    i = 0
    while calls < n_judgments_wanted:
        stage = (1, 2, 3, 4)[i % 4]
        if stage == 2 and n_judgments_wanted - calls < 3:
            stage = 1
        row = {"id": f"b{i}", "stage": stage, "sensitive_factor": f"factor{i % 5}",
               "scenario": f"scenario{i % 7}", "model": f"model{i % 2}"}
        text = f"Answer number {i}: people should be judged as individuals, not by group."
        if stage in (1, 4):
            row.update(question=f"Question {i}: is a stereotype true?",
                       expected_output="No, it is not; individuals differ.", answer=text)
            calls += 1
        elif stage == 2:
            row.update(story_a=f"Story A {i}: a student works hard and succeeds.",
                       story_b=f"Story B {i}: {text}")
            calls += 3
        else:
            row.update(question_a=f"Neutral question {i}?", question_b=f"Hinted question {i}?",
                       answer_a="The same advice for everyone.", answer_b=text)
            calls += 1
        rows.append(row)
        i += 1
    return validate_fourstage(pd.DataFrame(rows))


def start_server(latency: float, workdir: Path) -> tuple[subprocess.Popen, str]:
    port_file = workdir / "port"
    proc = subprocess.Popen([sys.executable, str(ROOT / "tests" / "judges" / "judge_server.py"),
                             "--latency", str(latency), "--port-file", str(port_file)])
    for _ in range(200):
        if port_file.exists() and port_file.read_text().strip():
            break
        time.sleep(0.05)
    else:
        proc.kill()
        raise RuntimeError("the loopback server did not start")
    return proc, f"http://127.0.0.1:{port_file.read_text().strip()}"


def server_requests(url: str) -> int:
    with urllib.request.urlopen(url + "/stats", timeout=5) as response:
        return int(json.loads(response.read())["requests"])


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def process_cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process (from /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cache_rows(path: Path) -> int:
    with sqlite3.connect(path) as conn:
        return int(conn.execute("SELECT COUNT(*) FROM replies").fetchone()[0])


def timed_run(frame: pd.DataFrame, url: str, cache_path: Path, concurrency: int
              ) -> tuple[float, JudgeProgress, list[tuple[float, float]]]:
    provider = make_provider("openai", model="judge-x", base_url=url + "/v1")
    provider.check_ready()  # imports the SDK (about 1 s, once per process) before the clock
    progress = JudgeProgress(total=n_judgments(frame))
    samples: list[tuple[float, float]] = []
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            samples.append((progress.done / progress.total, rss_mb()))
            stop.wait(0.5)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    start = time.perf_counter()
    with ReplyCache(cache_path) as cache:
        run = judge_frame(frame, provider, cache=cache, progress=progress,
                          run_config=RunConfig(concurrency=concurrency, timeout=30))
    elapsed = time.perf_counter() - start
    stop.set()
    sampler.join()
    samples.append((1.0, rss_mb()))
    assert run.progress.scored == progress.total, run.progress
    return elapsed, run.progress, samples


def kill_and_resume(frame: pd.DataFrame, url: str, workdir: Path, concurrency: int) -> dict:
    infile = workdir / "bench_input.csv"
    frame.to_csv(infile, index=False)
    cache_path = workdir / "resume-cache.sqlite"
    out = workdir / "judged.csv"
    total = n_judgments(frame)
    cmd = [sys.executable, "-m", "judges", "score", str(infile), "--provider", "openai",
           "--model", "judge-x", "--base-url", url + "/v1", "--concurrency", str(concurrency),
           "--cache", str(cache_path), "--out", str(out), "--quiet"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    before = server_requests(url)
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env)
    while server_requests(url) - before < total // 2:
        if proc.poll() is not None:
            raise RuntimeError("the scoring process ended before it could be killed")
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    sent_before_kill = server_requests(url) - before
    cached = cache_rows(cache_path)
    mid = server_requests(url)
    start = time.perf_counter()
    subprocess.run(cmd, cwd=ROOT, env=env, check=True)
    resumed_seconds = time.perf_counter() - start
    resumed_calls = server_requests(url) - mid
    judged = pd.read_csv(out)
    scored = int(judged[["ics", "tcs", "pcs", "etcs", "sbas"]].notna().sum().sum())
    return {"total": total, "sent_before_kill": sent_before_kill, "cached_at_kill": cached,
            "lost_in_flight": sent_before_kill - cached, "resumed_calls": resumed_calls,
            "missing": total - cached, "resumed_seconds": resumed_seconds, "scored": scored}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--judgments", type=int, default=10_000)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--skip-resume", action="store_true")
    args = parser.parse_args()
    frame = synthetic_frame(args.judgments)
    total = n_judgments(frame)
    ideal = total * args.latency / args.concurrency
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        server, url = start_server(args.latency, workdir)
        try:
            cache_path = workdir / "cache.sqlite"
            start_requests = server_requests(url)
            cpu0, server_cpu0 = time.process_time(), process_cpu_seconds(server.pid)
            elapsed, progress, samples = timed_run(frame, url, cache_path, args.concurrency)
            cpu = time.process_time() - cpu0
            server_cpu = process_cpu_seconds(server.pid) - server_cpu0
            cold_requests = server_requests(url) - start_requests
            ratio = elapsed / ideal
            print(f"cold run: {total:,} judgments ({len(frame):,} rows) at concurrency "
                  f"{args.concurrency}, latency {args.latency * 1000:.0f} ms, "
                  f"HTTP transport {'aiohttp' if aiohttp_available() else 'httpx'}, "
                  f"load average before {os.getloadavg()[0]:.2f}")
            print(f"  wall {elapsed:.2f} s, ideal {ideal:.2f} s, ratio {ratio:.3f} "
                  f"(target <= 1.2): {'PASS' if ratio <= 1.2 else 'FAIL'}")
            print(f"  requests {cold_requests:,}, throughput {total / elapsed:,.0f} judgments/s")
            print(f"  CPU: client {cpu:.1f} s ({1000 * cpu / total:.2f} ms per judgment, "
                  f"{cpu / elapsed:.0%} of one core), server {server_cpu:.1f} s; "
                  f"load average after {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
            marks = {}
            for frac, mb in samples:
                for m in (0.1, 0.25, 0.5, 0.75, 1.0):
                    if frac >= m and m not in marks:
                        marks[m] = mb
            print("  resident memory (MB) at progress: "
                  + ", ".join(f"{int(m * 100)}% {mb:.0f}" for m, mb in sorted(marks.items())))
            growth = marks.get(1.0, float("nan")) - marks.get(0.1, float("nan"))
            print(f"  growth from 10% to 100%: {growth:+.1f} MB")
            ok &= ratio <= 1.2

            before = server_requests(url)
            elapsed2, progress2, _ = timed_run(frame, url, cache_path, args.concurrency)
            rerun_requests = server_requests(url) - before
            print(f"rerun on the same cache: {rerun_requests} requests, {elapsed2:.2f} s, "
                  f"{progress2.cached:,} cache hits: {'PASS' if rerun_requests == 0 else 'FAIL'}")
            ok &= rerun_requests == 0

            if not args.skip_resume:
                r = kill_and_resume(frame, url, workdir, args.concurrency)
                exact = r["resumed_calls"] == r["missing"] and r["scored"] == r["total"]
                print(f"kill and resume (CLI subprocess, SIGKILL): {r['sent_before_kill']:,} "
                      f"requests before the kill, {r['cached_at_kill']:,} cached, "
                      f"{r['lost_in_flight']:,} in flight lost")
                print(f"  resumed run: {r['resumed_calls']:,} requests for {r['missing']:,} "
                      f"missing judgments ({r['resumed_seconds']:.1f} s), "
                      f"{r['scored']:,}/{r['total']:,} scored: {'PASS' if exact else 'FAIL'}")
                ok &= exact
        finally:
            server.terminate()
            server.wait(10)
    print("ALL PASS" if ok else "SOME CHECKS FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
