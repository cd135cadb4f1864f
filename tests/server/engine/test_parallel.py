"""A query's parts on every core (server/engine/parallel.py, adr/0029): results in order, errors
re-raised, no query waits for a helper busy with another query, and a search answers
exactly as on one thread."""

from __future__ import annotations

import threading

import pytest

from docdex.index_format.layout import DataDir
from docdex.server.boot import engine_loader
from docdex.server.engine import EngineSettings, parallel

from fixtures import index_workspace
from gitrepo import Workspace

ONE = 1  # helper beside the caller, as on these 2-core machines, on any machine


def test_results_come_back_in_the_order_of_the_tasks():
    tasks = [lambda n=n: n * n for n in range(50)]
    assert parallel.run_shared(tasks, ONE) == [n * n for n in range(50)]


def test_an_error_is_raised_in_the_caller_after_every_task_ran():
    ran = []

    def task(n: int) -> int:
        ran.append(n)
        if n == 3:
            raise ValueError("task 3 failed")
        return n

    with pytest.raises(ValueError, match="task 3 failed"):
        parallel.run_shared([lambda n=n: task(n) for n in range(8)], ONE)
    assert sorted(ran) == list(range(8))


def test_a_query_does_not_wait_for_a_helper_busy_with_another_query():
    other, release = hold_the_helper()
    answered = []
    mine = threading.Thread(target=lambda: answered.append(parallel.run_shared([str, int], ONE)))
    mine.start()
    mine.join(timeout=5)
    answered_while_held = list(answered)
    release.set()
    other.join(timeout=10)
    mine.join(timeout=10)
    assert answered_while_held == [["", 0]]


def hold_the_helper() -> tuple[threading.Thread, threading.Event]:
    """The one helper busy with another query's task until the event is set."""
    held, release = threading.Semaphore(0), threading.Event()

    def slow() -> None:
        held.release()
        release.wait(10)

    other = threading.Thread(target=parallel.run_shared, args=([slow, slow], ONE))
    other.start()
    assert held.acquire(timeout=10) and held.acquire(timeout=10)
    return other, release


def test_a_started_task_runs_on_a_helper_while_the_caller_works():
    ran_on, taken = [], threading.Event()

    def task() -> None:
        ran_on.append(threading.current_thread().name)
        taken.set()

    with parallel.start([task], ONE) as batch:
        assert taken.wait(10)  # the caller waits here: only a helper can have run it
        batch.join()
    assert ran_on[0].startswith("docdex-search")


def test_a_started_task_no_helper_took_runs_in_the_caller_at_join():
    other, release = hold_the_helper()
    try:
        with parallel.start([lambda: threading.current_thread().name], ONE) as batch:
            assert batch.join() == [threading.current_thread().name]
    finally:
        release.set()
        other.join(timeout=10)


def test_leaving_the_block_on_an_error_starts_no_more_tasks_and_waits_for_the_one_running():
    began, release, ran = threading.Event(), threading.Event(), []

    def first() -> None:
        began.set()
        release.wait(10)
        ran.append("first")

    threading.Timer(0.2, release.set).start()
    with pytest.raises(KeyError), parallel.start([first, lambda: ran.append("second")], ONE):
        assert began.wait(10)
        raise KeyError("the query's embedding failed")
    assert ran == ["first"]


@pytest.fixture(scope="module")
def two_segments(tmp_path_factory, embedder):
    root = tmp_path_factory.mktemp("parallel")
    ws, data = Workspace(root), DataDir(root / "data")
    for topic in ("otters", "glaciers", "comets"):
        ws.write(f"{topic}.md", f"# {topic}\n\nWhere {topic} are found.\n\n## Care\n\nFeeding.\n")
    ws.commit_and_push("three pages")
    index_workspace(data, ws, embedder)
    ws.write("trams.md", "# Tram lines\n\nA tram line's overhead wire and its poles.\n")
    ws.commit_and_push("a fourth page")
    graphs = EngineSettings(exact_dense_max_rows=0, helpers=ONE)  # hnswlib in every segment
    return engine_loader(data, embedder, graphs)(index_workspace(data, ws, embedder))


def test_a_search_answers_as_on_one_thread(two_segments):
    assert [s.exact for s in two_segments.index.segments()] == [False, False]

    def answers(engine) -> list:
        queries = ("where are otters", "overhead wire", "comet feeding care", "glaciers")
        found = [engine.search(q, 5).results for q in queries]
        return [[(h.chunk_id, h.score) for h in hits] for hits in found]

    shared = answers(two_segments)
    alone = two_segments.with_settings(EngineSettings(exact_dense_max_rows=0, helpers=0))
    assert shared == answers(alone) and all(shared)
