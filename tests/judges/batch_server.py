"""Loopback stand-ins of the OpenAI Batch API and the Anthropic Message Batches API.

:class:`FakeBatchServer` extends the tests' :class:`~tests.judges.judge_server.FakeLLMServer`
(so chat calls keep working on the same port) with the endpoints the real SDKs call:

- OpenAI: ``POST /v1/files`` (multipart, ``purpose=batch``), ``POST /v1/batches``,
  ``GET /v1/batches/{id}``, ``POST /v1/batches/{id}/cancel``,
  ``GET /v1/files/{id}/content`` (output JSONL: ``custom_id`` and ``response.body`` in
  chat-completion shape; an error file for failed or expired requests);
- Anthropic: ``POST /v1/messages/batches``, ``GET /v1/messages/batches/{id}``,
  ``POST /v1/messages/batches/{id}/cancel``, ``GET /v1/messages/batches/{id}/results``
  (JSONL: ``custom_id`` and ``result`` of type succeeded / errored / expired / canceled).

A batch reports ``in_progress`` for ``polls_before_done`` retrievals, then ends. Each of
its requests is answered by ``item_behaviour`` (default: the server's chat behaviour) at
that moment: a :class:`FakeReply` with status 200 succeeds, another status is an errored
request, :data:`EXPIRED` an expired one. Shapes follow the installed SDKs' types
(``openai.types.Batch``, ``FileObject``; ``anthropic.types.messages.MessageBatch``,
``MessageBatchIndividualResponse``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from tests.judges.judge_server import (
    Call,
    FakeLLMServer,
    FakeReply,
    _anthropic_body,
    _openai_body,
)

#: An item behaviour's answer meaning "this request expired before it was processed".
EXPIRED = FakeReply(status=-1)
#: Anthropic's error type for an HTTP status (an errored batch request has no status).
_ANTHROPIC_ERRORS = {400: "invalid_request_error", 401: "authentication_error",
                     403: "permission_error", 404: "not_found_error", 429: "rate_limit_error",
                     529: "overloaded_error"}
_ANTHROPIC_CUSTOM_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def _iso(when: datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _error(status: int, message: str) -> tuple[int, dict[str, str], bytes]:
    body = {"type": "error", "error": {"type": "invalid_request_error", "message": message}}
    return status, {}, json.dumps(body).encode()


def parse_multipart(content_type: str, body: bytes) -> dict[str, tuple[str | None, bytes]]:
    """Fields of a ``multipart/form-data`` body: ``name -> (filename, bytes)``."""
    boundary = content_type.split("boundary=", 1)[1].strip().strip('"').encode()
    fields: dict[str, tuple[str | None, bytes]] = {}
    for part in body.split(b"--" + boundary):
        if not part.strip() or part.strip() == b"--":
            continue
        head, _, data = part.lstrip(b"\r\n").partition(b"\r\n\r\n")
        disposition = head.decode("latin-1")
        name = re.search(r'name="([^"]*)"', disposition)
        filename = re.search(r'filename="([^"]*)"', disposition)
        if name:
            fields[name.group(1)] = (filename.group(1) if filename else None,
                                     data[:-2] if data.endswith(b"\r\n") else data)
    return fields


class FakeBatchServer(FakeLLMServer):
    """The loopback server plus batch endpoints (see the module docstring).

    Parameters
    ----------
    item_behaviour
        ``Call -> FakeReply`` for each batched request (``Call.api`` is ``openai`` or
        ``anthropic``, ``Call.body`` the request body); defaults to ``behaviour``.
    polls_before_done
        Retrievals answered ``in_progress`` before a batch ends.
    **kwargs
        Passed to :class:`FakeLLMServer` (``behaviour``, ``latency``).
    """

    def __init__(self, item_behaviour: Callable[[Call], FakeReply] | None = None, *,
                 polls_before_done: int = 1, **kwargs: Any):
        super().__init__(**kwargs)
        self.item_behaviour = item_behaviour
        self.polls_before_done = polls_before_done
        self.files: dict[str, dict[str, Any]] = {}
        self.batches: dict[str, dict[str, Any]] = {}
        self.batch_requests: dict[str, list[dict[str, Any]]] = {}
        self.counts = {"upload": 0, "create": 0, "retrieve": 0, "download": 0, "cancel": 0}
        #: Answer the next ``create`` calls with this status (e.g. 429) and then succeed.
        self.fail_creates: list[FakeReply] = []
        #: End every OpenAI batch with this batch-level status instead (e.g. "failed").
        self.openai_final_status: str | None = None

    # --- routing -------------------------------------------------------------------------
    async def _respond(self, method: str, path: str, headers: dict[str, str],
                       body: bytes) -> tuple[int, dict[str, str], bytes]:
        path = path.split("?", 1)[0]
        parts = [p for p in path.split("/") if p]
        with self._lock:
            if parts[:2] == ["v1", "files"]:
                return self._openai_files(method, parts, headers, body)
            if parts[:2] == ["v1", "batches"]:
                return self._openai_batches(method, parts, body)
            if parts[:3] == ["v1", "messages", "batches"]:
                return self._anthropic_batches(method, parts, body)
        return await super()._respond(method, path, headers, body)

    def _new_id(self, prefix: str) -> str:
        return f"{prefix}{len(self.files) + len(self.batches) + 1:06d}"

    def _run_item(self, api: str, request_body: dict[str, Any]) -> tuple[FakeReply, Call]:
        self.n_requests += 1
        call = Call(n=self.n_requests, api=api, body=request_body, headers={})
        if self.keep_calls:
            self.calls.append(call)
        behaviour = self.item_behaviour or self.behaviour
        return behaviour(call), call

    def _create_failure(self) -> tuple[int, dict[str, str], bytes] | None:
        if not self.fail_creates:
            return None
        reply = self.fail_creates.pop(0)
        return reply.status, reply.headers, reply.raw or b"{}"

    # --- OpenAI --------------------------------------------------------------------------
    def _openai_files(self, method: str, parts: list[str], headers: dict[str, str],
                      body: bytes) -> tuple[int, dict[str, str], bytes]:
        if method == "POST" and len(parts) == 2:
            self.counts["upload"] += 1
            fields = parse_multipart(headers.get("content-type", ""), body)
            if fields.get("purpose", (None, b""))[1] != b"batch" or "file" not in fields:
                return _error(400, "expected purpose=batch and a file")
            filename, data = fields["file"]
            file_id = self._new_id("file-")
            self.files[file_id] = {"data": data, "filename": filename, "purpose": "batch"}
            return 200, {}, json.dumps(self._file_object(file_id)).encode()
        if method == "GET" and len(parts) == 4 and parts[3] == "content":
            self.counts["download"] += 1
            if parts[2] not in self.files:
                return _error(404, f"no file {parts[2]}")
            return 200, {}, self.files[parts[2]]["data"]
        return _error(404, "unknown files route")

    def _file_object(self, file_id: str) -> dict[str, Any]:
        f = self.files[file_id]
        return {"id": file_id, "object": "file", "bytes": len(f["data"]), "created_at": 0,
                "filename": f["filename"] or "file", "purpose": f["purpose"],
                "status": "processed"}

    def _openai_batches(self, method: str, parts: list[str],
                        body: bytes) -> tuple[int, dict[str, str], bytes]:
        if method == "POST" and len(parts) == 2:
            failure = self._create_failure()
            if failure:
                return failure
            self.counts["create"] += 1
            params = json.loads(body)
            f = self.files.get(params.get("input_file_id"))
            if f is None:
                return _error(400, "unknown input_file_id")
            lines = [json.loads(x) for x in f["data"].decode().splitlines() if x.strip()]
            ids = [x["custom_id"] for x in lines]
            if len(set(ids)) != len(ids):
                return _error(400, "duplicate custom_id")
            if any(x.get("method") != "POST" or x.get("url") != params["endpoint"]
                   for x in lines):
                return _error(400, "every line needs method POST and the batch's endpoint")
            batch_id = self._new_id("batch_")
            self.batch_requests[batch_id] = lines
            self.batches[batch_id] = {
                "api": "openai", "polls": 0, "cancelled": False, "obj": {
                    "id": batch_id, "object": "batch", "endpoint": params["endpoint"],
                    "completion_window": params["completion_window"],
                    "input_file_id": params["input_file_id"], "status": "validating",
                    "created_at": 0, "metadata": params.get("metadata"),
                    "output_file_id": None, "error_file_id": None, "errors": None,
                    "request_counts": {"total": len(lines), "completed": 0, "failed": 0}}}
            return 200, {}, json.dumps(self.batches[batch_id]["obj"]).encode()
        batch = self.batches.get(parts[2]) if len(parts) >= 3 else None
        if batch is None or batch["api"] != "openai":
            return _error(404, "no such batch")
        if method == "POST" and parts[3:] == ["cancel"]:
            self.counts["cancel"] += 1
            batch["cancelled"] = True
            batch["obj"]["status"] = "cancelling"
            return 200, {}, json.dumps(batch["obj"]).encode()
        self.counts["retrieve"] += 1
        batch["polls"] += 1
        if batch["obj"]["status"] in ("validating", "in_progress", "cancelling"):
            if batch["polls"] <= self.polls_before_done and not batch["cancelled"]:
                batch["obj"]["status"] = "in_progress"
            else:
                self._finish_openai(parts[2], batch)
        return 200, {}, json.dumps(batch["obj"]).encode()

    def _finish_openai(self, batch_id: str, batch: dict[str, Any]) -> None:
        obj = batch["obj"]
        if self.openai_final_status == "failed":
            obj.update(status="failed", errors={"object": "list", "data": [
                {"code": "invalid_request", "message": "the input file is malformed",
                 "line": 1, "param": None}]})
            return
        out, err = [], []
        for i, line in enumerate(self.batch_requests[batch_id]):
            rid = f"batch_req_{batch_id}_{i}"
            if batch["cancelled"]:
                err.append({"id": rid, "custom_id": line["custom_id"], "response": None,
                            "error": {"code": "batch_cancelled", "message": "cancelled"}})
                continue
            reply, call = self._run_item("openai", line["body"])
            if reply is EXPIRED:
                err.append({"id": rid, "custom_id": line["custom_id"], "response": None,
                            "error": {"code": "batch_expired", "message": "not processed "
                                      "within the completion window"}})
            elif reply.status != 200:
                body = json.loads(reply.raw) if reply.raw else {"error": {"message": "boom"}}
                err.append({"id": rid, "custom_id": line["custom_id"], "error": None,
                            "response": {"status_code": reply.status, "request_id": rid,
                                         "body": body}})
            else:
                out.append({"id": rid, "custom_id": line["custom_id"], "error": None,
                            "response": {"status_code": 200, "request_id": rid,
                                         "body": _openai_body(call, reply)}})
        for rows, field in ((out, "output_file_id"), (err, "error_file_id")):
            if rows:
                file_id = self._new_id("file-")
                data = "".join(json.dumps(r) + "\n" for r in rows).encode()
                self.files[file_id] = {"data": data, "filename": f"{field}.jsonl",
                                       "purpose": "batch_output"}
                obj[field] = file_id
        obj["status"] = "cancelled" if batch["cancelled"] else "completed"
        obj["request_counts"] = {"total": len(out) + len(err), "completed": len(out),
                                 "failed": len(err)}

    # --- Anthropic -----------------------------------------------------------------------
    def _anthropic_batches(self, method: str, parts: list[str],
                           body: bytes) -> tuple[int, dict[str, str], bytes]:
        if method == "POST" and len(parts) == 3:
            failure = self._create_failure()
            if failure:
                return failure
            self.counts["create"] += 1
            requests = json.loads(body)["requests"]
            ids = [r["custom_id"] for r in requests]
            if len(set(ids)) != len(ids) or not all(_ANTHROPIC_CUSTOM_ID.match(i) for i in ids):
                return _error(400, "custom_id must be unique and match ^[a-zA-Z0-9_-]{1,64}$")
            batch_id = self._new_id("msgbatch_")
            now = datetime.now(UTC)
            self.batch_requests[batch_id] = requests
            self.batches[batch_id] = {
                "api": "anthropic", "polls": 0, "cancelled": False, "results": b"", "obj": {
                    "id": batch_id, "type": "message_batch", "processing_status": "in_progress",
                    "request_counts": {"processing": len(requests), "succeeded": 0,
                                       "errored": 0, "canceled": 0, "expired": 0},
                    "created_at": _iso(now), "expires_at": _iso(now + timedelta(days=1)),
                    "ended_at": None, "archived_at": None, "cancel_initiated_at": None,
                    "results_url": None}}
            return 200, {}, json.dumps(self.batches[batch_id]["obj"]).encode()
        batch = self.batches.get(parts[3]) if len(parts) >= 4 else None
        if batch is None or batch["api"] != "anthropic":
            return _error(404, "no such batch")
        if method == "POST" and parts[4:] == ["cancel"]:
            self.counts["cancel"] += 1
            batch["cancelled"] = True
            batch["obj"].update(processing_status="canceling",
                                cancel_initiated_at=_iso(datetime.now(UTC)))
            return 200, {}, json.dumps(batch["obj"]).encode()
        if method == "GET" and parts[4:] == ["results"]:
            self.counts["download"] += 1
            if batch["obj"]["processing_status"] != "ended":
                return _error(400, "the batch has not ended")
            return 200, {}, batch["results"]
        self.counts["retrieve"] += 1
        batch["polls"] += 1
        if batch["obj"]["processing_status"] != "ended" and (
                batch["polls"] > self.polls_before_done or batch["cancelled"]):
            self._finish_anthropic(parts[3], batch)
        return 200, {}, json.dumps(batch["obj"]).encode()

    def _finish_anthropic(self, batch_id: str, batch: dict[str, Any]) -> None:
        counts = {"processing": 0, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}
        lines = []
        for request in self.batch_requests[batch_id]:
            if batch["cancelled"]:
                result: dict[str, Any] = {"type": "canceled"}
            else:
                reply, call = self._run_item("anthropic", request["params"])
                if reply is EXPIRED:
                    result = {"type": "expired"}
                elif reply.status != 200:
                    body = json.loads(reply.raw) if reply.raw else {}
                    message = (body.get("error") or {}).get("message", "boom")
                    error = {"type": _ANTHROPIC_ERRORS.get(reply.status, "api_error"),
                             "message": message}
                    result = {"type": "errored", "error": {"type": "error", "error": error}}
                else:
                    result = {"type": "succeeded", "message": _anthropic_body(call, reply)}
            counts[result["type"]] += 1
            lines.append(json.dumps({"custom_id": request["custom_id"], "result": result}))
        batch["results"] = ("\n".join(lines) + "\n").encode()
        batch["obj"].update(
            processing_status="ended", request_counts=counts, ended_at=_iso(datetime.now(UTC)),
            results_url=f"{self.url}/v1/messages/batches/{batch_id}/results")
