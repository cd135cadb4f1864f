"""The second hostile probe as rows: what a tester attacked on the surfaces added for OAuth,
JWTs, tokens limited to sources, models users bring and answer shaping, and what the newer
MCP conformance suite and foreign clients found; each attack answered by its regression
tests, run as the probe scenario runs its own (bench/faults/probe.py)."""

from __future__ import annotations

from pathlib import Path

from .probe import Attack, run_attacks
from .rows import Row

ENDPOINT = "tests/model/test_endpoint.py"
FAILING = "tests/server/test_failing_endpoints.py"
FLOW = "tests/server/http/test_oauth_flow.py"
STORE = "tests/server/http/test_oauth_store.py"
STDIO = "tests/server/mcp/test_stdio.py"
EDGE = "tests/server/http/test_edge_http.py"
CALLS = "tests/server/mcp/test_mcp_calls.py"
CONTEXT = "tests/server/answers/test_widening.py"

ATTACKS = (
    Attack(
        "an endpoint that echoes its API key in an error body",
        (
            f"{ENDPOINT}::test_an_echoed_key_never_reaches_the_error",
            f"{ENDPOINT}::test_an_echoed_key_never_reaches_a_rerank_error",
            "tests/runtime/test_redaction.py::test_a_failure_recorded_under_state_holds_no_secret",
            "tests/runtime/test_redaction.py"
            "::test_a_source_failure_recorded_in_a_version_holds_no_secret",
            "tests/cli/test_secrets_never_written.py::test_the_key_is_never_said_or_written",
        ),
    ),
    Attack(
        "an endpoint or a hub that redirects the key to another host",
        (
            f"{ENDPOINT}::test_a_redirect_is_refused_and_the_key_goes_nowhere",
            f"{ENDPOINT}::test_a_rerank_redirect_is_refused",
            "tests/model/test_hub.py"
            "::test_the_token_is_never_sent_to_the_storage_a_hub_redirects_to",
        ),
    ),
    Attack(
        "a read-only token calling reindex by an escaped tool name",
        (
            "tests/server/http/test_source_limits.py"
            "::test_a_reindex_call_without_its_scope_is_refused_however_it_is_written",
            f"{CALLS}::test_the_reindex_tool_refuses_a_grant_without_the_reindex_scope",
        ),
    ),
    Attack(
        "JSON nested a thousand levels deep, over stdio and HTTP",
        (
            f"{STDIO}::test_deeply_nested_json_is_a_parse_error_and_the_answers_go_on",
            f"{EDGE}::test_deeply_nested_json_is_a_parse_error_not_a_crash",
        ),
    ),
    Attack(
        "wrong admin secrets from strangers, to lock the owner out",
        (
            f"{FLOW}::test_a_strangers_wrong_secrets_never_refuse_the_owners_right_one",
            f"{STORE}::test_the_right_secret_passes_whatever_strangers_typed",
            f"{STORE}::test_wrong_secrets_end_the_request_then_the_client_that_sent_them",
        ),
    ),
    Attack(
        "a storm of large anonymous client registrations",
        (
            f"{STORE}::test_registration_is_bounded_per_requester_and_in_size",
            f"{STORE}::test_a_full_store_forgets_its_oldest_never_authorized_client",
            f"{STORE}::test_an_ipv6_requester_is_counted_by_its_64",
        ),
    ),
    Attack(
        "a JWT with an invented key id against a slow JWKS",
        (
            "tests/server/http/test_oauth_jwt.py"
            "::test_a_slow_key_set_never_delays_a_token_whose_key_is_cached",
        ),
    ),
    Attack(
        "a hung or dead rerank endpoint",
        (
            f"{ENDPOINT}::test_a_rerank_endpoint_rests_after_a_failure",
            f"{FAILING}::test_a_failing_rerank_endpoint_costs_one_retry_then_rests",
            f"{FAILING}::test_health_and_list_sources_say_the_reranker_is_failing",
        ),
    ),
    Attack(
        "/authorize errors as an open redirector",
        (f"{FLOW}::test_authorize_errors_never_send_the_browser_to_an_untrusted_client",),
    ),
    Attack(
        "a flood of /authorize requests to evict the owner's consent",
        (
            f"{STORE}::test_a_flood_of_authorization_requests_evicts_only_its_own",
            f"{STORE}::test_pending_requests_past_the_bound_are_refused_not_evicted",
        ),
    ),
    Attack(
        "NaN, infinite and all-zero vectors or scores from an endpoint",
        (
            f"{ENDPOINT}::test_vectors_that_are_not_finite_or_zero_are_refused",
            f"{ENDPOINT}::test_scores_that_are_not_finite_are_refused",
            "tests/index_format/test_verify_vectors.py"
            "::test_a_stored_vector_that_is_not_finite_is_reported",
        ),
    ),
    Attack(
        "an endpoint answer of 150 MB",
        (
            f"{ENDPOINT}::test_an_oversized_answer_is_refused",
            f"{ENDPOINT}::test_an_oversized_rerank_answer_is_refused",
        ),
    ),
    Attack(
        "/token with a resource naming another server",
        (f"{FLOW}::test_token_refuses_a_resource_naming_another_server",),
    ),
    Attack(
        "an authorization code used twice",
        (f"{FLOW}::test_a_reused_code_ends_the_tokens_its_first_exchange_gave",),
    ),
    Attack(
        "a public client revoking without a client secret",
        (f"{FLOW}::test_a_public_client_revokes_with_its_client_id_only",),
    ),
    Attack(
        "a limited caller's low_confidence moved by other sources' words",
        (
            "tests/server/answers/test_source_limits_confidence.py"
            "::test_a_limited_callers_low_confidence_ignores_the_other_sources_words",
        ),
    ),
    Attack(
        "widened hits that repeat an earlier hit's lines",
        (
            f"{CONTEXT}::test_a_later_hits_section_that_holds_an_earlier_hit_is_folded_into_it",
            f"{CONTEXT}::test_neighbours_stop_at_the_lines_an_earlier_hit_shows",
        ),
    ),
    Attack(
        "a store write killed mid-way, leaving its temporary file",
        (f"{STORE}::test_a_temporary_file_a_killed_write_left_is_removed_when_the_store_opens",),
    ),
    Attack(
        "redirect URIs with ws:, ftp:, about:, blob:, jar:, fragments, user names",
        (
            f"{FLOW}::test_registration_names_why_a_redirect_uri_is_refused",
            f"{FLOW}::test_the_consent_page_lets_its_form_reach_every_accepted_redirect_uri",
            f"{STORE}::test_redirect_uris_that_registration_refuses",
        ),
    ),
    Attack(
        "prompts/list on a server that declares no prompts, every protocol version",
        (
            f"{EDGE}::test_prompts_are_a_method_docdex_does_not_have_under_every_protocol_version",
            f"{STDIO}::test_prompts_are_a_method_docdex_does_not_have_under_every_protocol_version",
        ),
    ),
    Attack(
        "notifications declared at connection that docdex never sends",
        (f"{STDIO}::test_connecting_declares_no_notifications_under_every_protocol_version",),
    ),
    Attack(
        "an embedding endpoint down while queries arrive (one log line each way)",
        (
            f"{ENDPOINT}::test_a_failure_and_its_recovery_are_logged_once",
            f"{FAILING}::test_a_failing_query_embedder_is_reported_and_logged_once",
        ),
    ),
    Attack(
        'tool arguments of the wrong type (num_results: "5")',
        (f"{CALLS}::test_every_argument_of_every_tool_is_checked_against_its_declared_type",),
    ),
)


def run(quick: bool, work: Path) -> list[Row]:
    return run_attacks(ATTACKS, "hostile", work)
