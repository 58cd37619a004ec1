"""Repeated samples and both orders (judges/judge.py, judges/samples.py, judges/position.py)
with the real SDKs against the loopback server."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from analysis.judge_stats import columns as C
from judges.cache import ReplyCache
from judges.cli import main
from judges.errors import JudgesError
from judges.fourstage import validate_fourstage
from judges.judge import JudgeConfig, estimate_run, judge_frame, judge_requests, n_judgments
from judges.position import position_bias
from judges.providers import make_provider
from judges.runner import RunConfig, request_key
from judges.to_results import to_results
from tests.judges.helpers import FAST, PRICES, make_row
from tests.judges.judge_server import FakeLLMServer, sampled_behaviour

#: Sample i scores the directive's score plus OFFSETS[i]: 3 -> [3, 4, 2].
OFFSETS = (0, 1, -1)
#: One request at a time: the Anthropic server numbers identical prompts in arrival order.
SERIAL = RunConfig(concurrency=1, timeout=2.0, max_retries=1, backoff_base=0.01,
                   backoff_max=0.05)


def provider_for(api: str, srv: FakeLLMServer):
    return make_provider(api, model="judge-x",
                         base_url=srv.openai_url if api == "openai" else srv.url)


def clean_rows() -> pd.DataFrame:
    """Stage 1 (#score=3), stage 2 (#score=4: every metric), stage 3 (#score=2)."""
    return validate_fourstage(pd.DataFrame([
        make_row(0, 1, text="#score=3"), make_row(1, 2, text="#score=4"),
        make_row(2, 3, text="#score=2")]))


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_k_samples_make_k_requests_once_and_none_on_a_rerun(api, tmp_path):
    frame = clean_rows()  # 1 + 3 + 1 = 5 (row, metric) judgments
    config = JudgeConfig(samples=3, temperature=1.0)
    with FakeLLMServer(sampled_behaviour(OFFSETS)) as srv, \
            ReplyCache(tmp_path / "c.sqlite") as cache:
        provider = provider_for(api, srv)
        before = estimate_run(frame, provider, config=config, prices=PRICES, cache=cache)
        assert (before.judgments, before.calls, before.cached) == (15, 15, 0)
        run = judge_frame(frame, provider, config=config, run_config=SERIAL, prices=PRICES,
                          cache=cache)
        assert srv.n_requests == 15 == n_judgments(frame, config)
        if api == "openai":  # distinct seeds: none for sample 1 (the K=1 request), then 1, 2
            seeds = sorted((c.seed or 0) for c in srv.calls if "(ICS)" in c.prompt)
            assert seeds == [0, 1, 2]
        again = judge_frame(frame, provider_for(api, srv), config=config, run_config=SERIAL,
                            prices=PRICES, cache=cache)
        assert srv.n_requests == 15  # the rerun is served from the cache
        after = estimate_run(frame, provider, config=config, prices=PRICES, cache=cache)
        assert (after.judgments, after.calls) == (15, 0)
    j = run.judged
    # hand-computed: base + (0, +1, -1); stage 2 all metrics #score=4 -> [4, 5, 3]
    assert j.loc[0, "ics"] == 3.0 and j.loc[0, "ics_sd"] == pytest.approx(1.0)
    assert j.loc[0, "ics_n"] == 3 and j.loc[0, "ics_scores"] == "[3, 4, 2]"
    for m in ("tcs", "pcs", "etcs"):
        assert (j.loc[1, m], j.loc[1, f"{m}_sd"], j.loc[1, f"{m}_n"]) == (4.0, 1.0, 3)
        assert j.loc[1, f"{m}_scores"] == "[4, 5, 3]"
    assert j.loc[2, "sbas_scores"] == "[2, 3, 1]" and j.loc[2, "sbas"] == 2.0
    # not applicable: empty
    assert pd.isna(j.loc[0, "tcs"]) and pd.isna(j.loc[0, "tcs_n"]) and j.loc[0, "tcs_scores"] == ""
    # tokens and cost add up over the samples ((1000, 200) per reply at $1/$2 per M)
    assert j[C.JUDGE_INPUT_TOKENS].tolist() == [3000, 9000, 3000]
    assert j[C.JUDGE_OUTPUT_TOKENS].tolist() == [600, 1800, 600]
    assert j[C.JUDGE_COST_USD].tolist() == pytest.approx([0.0042, 0.0126, 0.0042])
    assert again.judged[C.JUDGE_CACHED].tolist() == [3, 9, 3]
    pd.testing.assert_frame_equal(again.judged.drop(columns=C.JUDGE_CACHED),
                                  j.drop(columns=C.JUDGE_CACHED))
    # columns: input, metrics, then each metric's sample columns, then the usual outputs
    n_in = len(frame.columns)
    sample_cols = [c for m in C.METRICS for c in C.sample_columns(m)]
    assert list(j.columns) == [*frame.columns, *C.METRICS, *sample_cols,
                               *C.OUTPUT_COLUMNS[len(C.METRICS):]]
    assert list(j.columns[:n_in]) == list(frame.columns)
    assert json.loads(j.loc[0, C.JUDGE_PARAMS])["samples"] == 3
    assert (run.progress.total, run.progress.done, run.progress.scored) == (15, 15, 15)


def test_unscored_samples_keep_their_reason_and_the_row_stays_scored():
    frame = validate_fourstage(pd.DataFrame([
        make_row(0, 1, text="#score=3 #bad1"), make_row(1, 1, text="#malformed"),
        make_row(2, 1, text="#score=3 #bad1 #bad2")]))
    with FakeLLMServer(sampled_behaviour(OFFSETS)) as srv:
        run = judge_frame(frame, provider_for("openai", srv), run_config=FAST, prices=PRICES,
                          config=JudgeConfig(samples=3, temperature=1.0))
    j = run.judged
    # row 0: samples 1 and 3 scored (3 and 2): mean 2.5, sd sqrt(0.5)
    assert (j.loc[0, "ics"], j.loc[0, "ics_n"], j.loc[0, "ics_scores"]) == (2.5, 2, "[3, 2]")
    assert j.loc[0, "ics_sd"] == pytest.approx(math.sqrt(0.5))
    assert j.loc[0, C.UNSCORED_REASON] == "ics: sample 2: no JSON object in the reply"
    # row 1: nothing scored
    assert pd.isna(j.loc[1, "ics"]) and pd.isna(j.loc[1, "ics_sd"])
    assert (j.loc[1, "ics_n"], j.loc[1, "ics_scores"]) == (0, "[]")
    assert j.loc[1, C.UNSCORED_REASON] == "ics: no JSON object in the reply"
    # row 2: one sample: sd undefined
    assert (j.loc[2, "ics"], j.loc[2, "ics_n"]) == (3.0, 1) and pd.isna(j.loc[2, "ics_sd"])
    assert (run.progress.scored, run.progress.unscored) == (3, 6)


def test_one_sample_keeps_todays_requests_keys_and_file(tmp_path):
    frame = clean_rows()
    default = list(judge_requests(frame))
    one = list(judge_requests(frame, config=JudgeConfig(samples=1)))
    assert default == one
    assert [r.tag for r in default] == [(0, "ics"), (1, "tcs"), (1, "pcs"), (1, "etcs"),
                                        (2, "sbas")]
    three = list(judge_requests(frame, config=JudgeConfig(samples=3)))
    assert [r.key_parts for r in three[:3]] == [
        {"rubric": "fourstage-ics@2.0"}, {"rubric": "fourstage-ics@2.0", "sample": "1"},
        {"rubric": "fourstage-ics@2.0", "sample": "2"}]
    with FakeLLMServer(sampled_behaviour(OFFSETS)) as srv, \
            ReplyCache(tmp_path / "c.sqlite") as cache:
        provider = provider_for("openai", srv)
        assert request_key(provider, three[0]) == request_key(provider, default[0])
        single = judge_frame(frame, provider, run_config=FAST, prices=PRICES, cache=cache)
        assert srv.n_requests == 5
        assert list(single.judged.columns) == [*frame.columns, *C.OUTPUT_COLUMNS]
        assert single.judged["ics"].dtype == "Int64"
        # raising K to 3 reuses the single-sample replies: 2 more requests per judgment
        judge_frame(frame, provider_for("openai", srv), run_config=FAST, prices=PRICES,
                    cache=cache, config=JudgeConfig(samples=3))
        assert srv.n_requests == 15


@pytest.mark.parametrize(("provider_name", "temperature", "expected"), [
    ("openai", 0.0, "temperature 0"), ("openai", 1.0, None), ("openai", None, None),
    ("anthropic", 0.0, "takes no seed"), ("anthropic", None, "takes no seed")])
def test_sampling_warnings(provider_name, temperature, expected):
    provider = make_provider(provider_name, model="judge-x", base_url="http://127.0.0.1:9")
    warnings = JudgeConfig(samples=3, temperature=temperature).sampling_warnings(provider)
    assert JudgeConfig(samples=1, temperature=temperature).sampling_warnings(provider) == []
    if expected is None:
        assert warnings == []
    else:
        assert len(warnings) == 1 and expected in warnings[0]


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, 101])
def test_bad_sample_counts_are_refused(bad):
    with pytest.raises(JudgesError, match="samples must be"):
        JudgeConfig(samples=bad)


def pair_rows() -> pd.DataFrame:
    """Four stage-2 pairs (story_a 'Story A.'): three judged one point higher when story_a
    is shown first, one ('#fair') the same in both orders; one stage-1 row."""
    rows = [make_row(i, 2, text=f"Version {i}, #score=3") for i in range(3)]
    rows.append(make_row(3, 2, text="Version 3, #score=3 #fair"))
    rows.append(make_row(4, 1, text="#score=4"))
    return validate_fourstage(pd.DataFrame(rows))


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_both_orders_double_stage2_and_measure_the_position_bias(api, tmp_path):
    frame = pair_rows()
    config = JudgeConfig(samples=2, both_orders=True, temperature=1.0)
    behaviour = sampled_behaviour((0, 0), first_story="Story A.", first_bonus=1)
    with FakeLLMServer(behaviour) as srv, ReplyCache(tmp_path / "c.sqlite") as cache:
        provider = provider_for(api, srv)
        est = estimate_run(frame, provider, config=config, prices=PRICES, cache=cache)
        # 4 pairs x 3 metrics x 2 orders x 2 samples + 1 ICS x 2 samples
        assert (est.judgments, est.calls) == (50, 50)
        run = judge_frame(frame, provider, config=config, run_config=SERIAL, prices=PRICES,
                          cache=cache)
        assert srv.n_requests == 50
        # the swapped order really shows story_b in the first (STORY A) block
        tcs_calls = [c for c in srv.calls if "(TCS)" in c.prompt and "Version 0" in c.prompt]
        firsts = sorted(c.block("STORY A") for c in tcs_calls)
        assert firsts == ["Story A.", "Story A.", "Version 0, #score=3", "Version 0, #score=3"]
        judge_frame(frame, provider_for(api, srv), config=config, run_config=SERIAL,
                    prices=PRICES, cache=cache)
        assert srv.n_requests == 50
    j = run.judged
    for m in ("tcs", "pcs", "etcs"):
        assert j[f"{m}_ab"].tolist()[:4] == [4.0, 4.0, 4.0, 3.0]
        assert j[f"{m}_ba"].tolist()[:4] == [3.0, 3.0, 3.0, 3.0]
        assert j[m].tolist()[:4] == [3.5, 3.5, 3.5, 3.0]  # order-averaged
        assert j.loc[0, f"{m}_scores"] == "[4, 4, 3, 3]"  # as given first, then swapped
        assert j.loc[0, f"{m}_n"] == 4
        assert j.loc[0, f"{m}_sd"] == pytest.approx(np.std([4, 4, 3, 3], ddof=1))
    assert "ics_ab" not in j.columns and j.loc[4, "ics"] == 4.0
    table = position_bias(j).set_index("metric")
    assert list(table.index) == ["tcs", "pcs", "etcs"]
    row = table.loc["tcs"]
    assert (row["n_pairs"], row["n_differ"], row["n_ab_higher"], row["n_ba_higher"]) == (
        4, 3, 3, 0)
    assert row["position_bias_rate"] == pytest.approx(0.75)
    assert row["mean_diff"] == pytest.approx(0.75)
    assert row["p_sign"] == pytest.approx(0.25)  # 3 of 3 in one direction: 2 * 0.5**3
    assert row["p_wilcoxon"] == pytest.approx(stats.wilcoxon([1.0, 1.0, 1.0]).pvalue)


def test_both_orders_keys_and_unbiased_judge():
    frame = pair_rows()
    plain = list(judge_requests(frame))
    both = list(judge_requests(frame, config=JudgeConfig(both_orders=True)))
    assert len(both) == len(plain) + 12
    as_given = [r for r in both if "order" not in r.key_parts]
    assert as_given == plain  # the as-given requests (and their cache keys) are today's
    assert {r.key_parts.get("order") for r in both} == {None, "ba"}
    with FakeLLMServer(sampled_behaviour((0,))) as srv:
        run = judge_frame(frame, provider_for("openai", srv), run_config=FAST, prices=PRICES,
                          config=JudgeConfig(both_orders=True))
    table = position_bias(run.judged)
    assert table["n_pairs"].tolist() == [4, 4, 4]
    assert table["position_bias_rate"].tolist() == [0.0, 0.0, 0.0]
    assert table["mean_diff"].tolist() == [0.0, 0.0, 0.0] and table["p_sign"].isna().all()


def test_to_results_carries_the_sample_columns():
    frame = clean_rows()
    with FakeLLMServer(sampled_behaviour(OFFSETS)) as srv:
        run = judge_frame(frame, provider_for("openai", srv), run_config=FAST, prices=PRICES,
                          config=JudgeConfig(samples=3, temperature=1.0))
    pairs, _ = to_results(run.judged)
    assert pairs[C.METRIC].tolist() == ["ics", C.STAGE2_PAIR_METRIC, "sbas"]
    assert list(pairs.columns[5:9]) == [C.SCORE, C.SCORE_SD, C.SCORE_N, C.SCORE_SAMPLES]
    # consistency_min: tcs, pcs and etcs all [4, 5, 3] -> sample-wise min [4, 5, 3]
    assert pairs[C.SCORE_SAMPLES].tolist() == ["[3, 4, 2]", "[4, 5, 3]", "[2, 3, 1]"]
    assert pairs[C.SCORE].tolist() == [3.0, 4.0, 2.0]
    assert pairs[C.SCORE_N].tolist() == [3, 3, 3]
    assert pairs[C.SCORE_SD].tolist() == pytest.approx([1.0, 1.0, 1.0])
    assert not any(c in pairs.columns for c in C.SAMPLE_OUTPUT_COLUMNS)
    metrics, _ = to_results(run.judged, stage2_rows="metrics")
    assert metrics[C.SCORE_SAMPLES].tolist() == [
        "[3, 4, 2]", "[4, 5, 3]", "[4, 5, 3]", "[4, 5, 3]", "[2, 3, 1]"]
    # a single-sample file: no sample columns
    with FakeLLMServer(sampled_behaviour(OFFSETS)) as srv:
        single = judge_frame(frame, provider_for("openai", srv), run_config=FAST,
                             prices=PRICES)
    assert C.SCORE_SD not in to_results(single.judged)[0].columns


def test_consistency_min_is_sample_wise_when_samples_line_up():
    frame = validate_fourstage(pd.DataFrame([make_row(0, 2, text="x")]))
    judged = frame.assign(
        tcs=4.0, tcs_sd=1.0, tcs_n=3, tcs_scores="[4, 5, 3]",
        pcs=4.0, pcs_sd=2.0, pcs_n=3, pcs_scores="[5, 2, 5]",
        etcs=4.0, etcs_sd=0.0, etcs_n=3, etcs_scores="[4, 4, 4]",
        unscored_reason="", judge="openai:x")
    pairs, _ = to_results(judged)
    assert pairs.loc[0, C.SCORE] == 4.0  # the lowest metric mean
    assert pairs.loc[0, C.SCORE_SAMPLES] == "[4, 2, 3]"
    assert pairs.loc[0, C.SCORE_SD] == pytest.approx(1.0) and pairs.loc[0, C.SCORE_N] == 3
    # a sample of one metric unscored: samples no longer line up
    broken = judged.assign(pcs_n=2, pcs_scores="[5, 2]",
                           unscored_reason="pcs: sample 3: no JSON object in the reply")
    pairs, _ = to_results(broken)
    assert pairs.loc[0, C.SCORE_SAMPLES] == "" and pd.isna(pairs.loc[0, C.SCORE_N])
    with pytest.raises(JudgesError, match="not a JSON list"):
        to_results(judged.assign(tcs_scores="[4, 5"))


def test_cli_samples_both_orders_estimate_and_metrics_json(tmp_path, capsys):
    src = tmp_path / "in.csv"
    pair_rows().to_csv(src, index=False)
    out = tmp_path / "judged.csv"
    behaviour = sampled_behaviour((0, 0), first_story="Story A.", first_bonus=1)
    with FakeLLMServer(behaviour) as srv:
        common = [str(src), "--provider", "openai", "--model", "judge-x", "--base-url",
                  srv.openai_url, "--cache", str(tmp_path / "c.sqlite"), "--samples", "2",
                  "--both-orders", "--temperature", "0.7"]
        assert main(["estimate", *common]) == 0
        printed = capsys.readouterr().out
        assert "judgments:            50" in printed and "calls to make:        50" in printed
        assert main(["score", *common, "--out", str(out), "--quiet",
                     "--to-results", str(tmp_path / "results.csv")]) == 0
        assert srv.n_requests == 50
        captured = capsys.readouterr()
        assert "Position bias" in captured.out and "0.75" in captured.out
        assert main(["score", *common, "--out", str(out), "--quiet"]) == 0
        assert srv.n_requests == 50
    capsys.readouterr()
    assert main(["metrics", str(out), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    bias = {r["metric"]: r for r in report["position_bias"]}
    assert bias["pcs"]["position_bias_rate"] == pytest.approx(0.75)
    assert bias["pcs"]["mean_diff"] == pytest.approx(0.75)
    assert {r["metric"] for r in report["metrics"]} == {"tcs", "pcs", "etcs", "ics"}
    results = pd.read_csv(tmp_path / "results.csv")
    assert results[C.SCORE_SAMPLES].tolist()[:1] == ["[4, 4, 3, 3]"]
    assert results[C.SCORE].tolist()[:1] == [3.5]
    assert main(["score", str(src), "--provider", "embedding", "--samples", "2", "--out",
                 str(tmp_path / "e.csv")]) == 2
    assert "for the LLM judges" in capsys.readouterr().err


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_batch_path_counts_samples_and_orders(api, tmp_path):
    import asyncio

    from judges.batch import BatchConfig, judge_frame_batch_async
    from judges.judge import check_batch_cap
    from tests.judges.batch_server import FakeBatchServer

    frame = validate_fourstage(pd.DataFrame([make_row(i, s) for i, s in enumerate((1, 2, 3, 4))]))
    config = JudgeConfig(samples=2, both_orders=True, temperature=1.0)
    with FakeBatchServer() as srv, ReplyCache(tmp_path / "c.sqlite") as cache:
        provider = provider_for(api, srv)
        # (6 judgments + 3 swapped stage-2 ones) x 2 samples, each at up to 400 output tokens
        bound = check_batch_cap(frame, provider, max_cost_usd=1.0, config=config,
                                prices=PRICES, cache=cache)
        est = estimate_run(frame, provider, config=config, prices=PRICES, cache=cache)
        assert est.calls == 18
        assert bound == pytest.approx((est.input_tokens * 1 + 18 * 400 * 2) / 1e6 * 0.5)
        run = asyncio.run(judge_frame_batch_async(
            frame, provider, cache=cache, config=config, prices=PRICES,
            batch=BatchConfig(poll_interval=0.01, backoff_base=0.01, backoff_max=0.02)))
        assert len(srv.calls) == 18
        if api == "openai":
            assert sorted(c.body.get("seed") or 0 for c in srv.calls) == [0] * 9 + [1] * 9
    j = run.judged
    assert j["ics_n"].tolist()[0] == 2 and j.loc[1, "tcs_n"] == 4
    assert j["tcs_ab"].notna().tolist() == [False, True, False, False]
    assert run.progress.total == 18 and run.progress.done == 18
