"""schemathesis against the running agent API, driven by the app's own OpenAPI document.

Positive and negative cases for ``POST /v1/proposals`` and ``GET /v1/proposals/{id}``, sent over
real HTTP. Every answer must conform to the document (status, content type, headers, body), no
answer may be a 5xx, data that violates the schema must be refused, and the store must hold
exactly the proposals the API accepted: a refused request stores nothing and audits nothing.
"""

from __future__ import annotations

import re
import sqlite3
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from tests.e2e.harness import AGENT_TOKEN, OTHER_AGENT_TOKEN, REQUESTER
from tests.robustness.support import FUZZ_CASES, threaded_countersign

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    negative_data_rejection,
]

#: The fuzz sends thousands of requests as fast as it can from one agent: its per-agent limits
#: (tests/e2e/test_agent_quotas.py) are raised out of the way so that every case reaches the
#: checks of the body instead of a 429.
UNLIMITED = """
[limits]
max_pending_proposals = 10000000
submissions_per_second = 1000000
submissions_burst = 10000000
reads_per_second = 1000000
reads_burst = 10000000
max_long_polls = 100000
"""

#: Whose token a case carries: mostly the agent's own; sometimes another's, a wrong one, none.
TOKENS = st.sampled_from([AGENT_TOKEN] * 6 + [OTHER_AGENT_TOKEN, "not-a-token-of-any-agent", None])


#: Headers that frame the HTTP message itself. With one of them generated (a Transfer-Encoding
#: beside the Content-Length the client sends), or a header name that is not an HTTP token, the
#: HTTP parser refuses the message (400, text/plain) before the API sees a request: that tests
#: aiohttp's framing, not the API's answers, so such generated headers are left out.
FRAMING = {
    "connection",
    "content-length",
    "host",
    "keep-alive",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "expect",
}
_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")


def _api_header(name: str) -> bool:
    return _TOKEN.fullmatch(name) is not None and name.lower() not in FRAMING


def _count(db: Path, sql: str) -> int:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as connection:
        [(count,)] = connection.execute(sql)
    connection.close()
    return int(count)


def _ids(db: Path) -> set[str]:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as connection:
        ids = {row[0] for row in connection.execute("SELECT id FROM proposals")}
    connection.close()
    return ids


@pytest.mark.timeout(max(120, FUZZ_CASES // 20))
def test_generated_requests_get_documented_answers_and_store_only_accepted_proposals(
    tmp_path: Path,
) -> None:
    with threaded_countersign(tmp_path, config_edit=lambda text: text + UNLIMITED) as app:
        cs = app.cs
        http = requests.Session()
        raw = http.get(f"{cs.url}/v1/openapi.json", timeout=10).json()
        schema = schemathesis.openapi.from_dict(raw)
        submit, read = schema["/v1/proposals"]["POST"], schema["/v1/proposals/{id}"]["GET"]
        cases = st.one_of(
            submit.as_strategy(),
            submit.as_strategy(generation_mode=GenerationMode.NEGATIVE),
            read.as_strategy(),
            read.as_strategy(generation_mode=GenerationMode.NEGATIVE),
        )
        accepted: dict[str, str] = {}  # proposal id -> the token of the agent that submitted it
        answers: Counter[tuple[str, int]] = Counter()

        @settings(
            max_examples=FUZZ_CASES,
            database=None,
            phases=[Phase.generate, Phase.shrink],
            suppress_health_check=list(HealthCheck),
        )
        @given(case=cases, token=TOKENS, known=st.booleans(), pick=st.integers(0, 2**16))
        def exchange(case: Any, token: str | None, known: bool, pick: int) -> None:
            method = case.operation.method.upper()
            positive = not case.meta.generation.mode.is_negative
            if method == "GET" and positive and accepted and known:
                # half the positive reads ask for a stored proposal (without waiting on it)
                case.path_parameters["id"] = sorted(accepted)[pick % len(accepted)]
                case.query = {}
            if method == "POST" and positive and known and isinstance(case.body, dict):
                # half the positive submissions name someone the agent acts for (a random
                # Slack id is refused with 403), so that accepted proposals are fuzzed too
                case.body["requested_by"] = REQUESTER
            if case.headers:
                case.headers = {k: v for k, v in case.headers.items() if _api_header(k)}
            headers = {} if token is None else {"Authorization": f"Bearer {token}"}
            before = len(accepted)
            response = case.call(base_url=cs.url, session=http, headers=headers, timeout=30)
            answers[(method, response.status_code)] += 1
            case.validate_response(response, checks=CHECKS)
            assert response.status_code < 500
            if method == "POST" and response.status_code in (200, 201):
                proposal_id = response.json()["id"]
                if response.status_code == 201:
                    assert proposal_id not in accepted
                    accepted[proposal_id] = token or ""
                else:  # a replay answers a proposal this agent stored before
                    assert accepted.get(proposal_id) == token
            if method == "GET" and response.status_code == 200:
                assert accepted[response.json()["id"]] == token
            assert _count(cs.db_path, "SELECT count(*) FROM proposals") == len(accepted), (
                f"{before} proposals were accepted before this case, but the store now has "
                "another number"
            )

        started = time.perf_counter()
        exchange()
        elapsed = time.perf_counter() - started

        sent = sum(answers.values())
        stored = _ids(cs.db_path)
        log = app.run(cs.store.audit_log())
        report = app.run(cs.store.verify_audit())
        print(
            f"\nagent API fuzz: {sent} cases in {elapsed:.1f} s ({sent / elapsed:.0f}/s), "
            f"{len(accepted)} proposals accepted; answers {sorted(answers.items())}"
        )

    assert sent >= FUZZ_CASES
    assert not any(status >= 500 for _, status in answers)
    assert accepted, "no generated submission was accepted: the fuzz checked refusals only"
    assert stored == set(accepted)
    assert {entry.proposal_id for entry in log} <= set(accepted)
    assert report.ok, report.problem
    assert cs.target.executions() == []  # campaigns always ask; nobody approved one
