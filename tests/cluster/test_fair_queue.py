"""The grading queue's order: strict priority, round-robin across problems, FIFO within one,
retried work first (pure data: no Ray)."""

from __future__ import annotations

from cudaenv.cluster.fair_queue import FairQueue


def drain(q: FairQueue[str]) -> list[str]:
    out = []
    while (item := q.pop()) is not None:
        out.append(item)
    return out


def test_round_robin_across_problems_fifo_within_one() -> None:
    q: FairQueue[str] = FairQueue()
    for item in ["a1", "a2", "a3", "a4", "b1", "c1", "b2"]:
        q.push(item, priority=1, problem=item[0])
    assert len(q) == 7
    # one problem's burst does not hold the queue: a, b, c take turns, each in arrival order
    assert drain(q) == ["a1", "b1", "c1", "a2", "b2", "a3", "a4"]
    assert len(q) == 0 and q.pop() is None


def test_priority_is_strict_and_fair_within_each_level() -> None:
    q: FairQueue[str] = FairQueue()
    for item in ["t-a1", "t-a2", "t-b1"]:
        q.push(item, priority=1, problem=item[2])
    for item in ["e-a1", "e-b1", "e-b2"]:
        q.push(item, priority=0, problem=item[2])
    assert drain(q) == ["e-a1", "e-b1", "e-b2", "t-a1", "t-b1", "t-a2"]


def test_retried_work_goes_first_in_its_problem_and_new_problems_to_the_front() -> None:
    q: FairQueue[str] = FairQueue()
    for item in ["a1", "a2", "b1"]:
        q.push(item, priority=1, problem=item[0])
    q.push("a0", priority=1, problem="a", front=True)
    q.push("z0", priority=1, problem="z", front=True)
    assert drain(q) == ["z0", "a0", "b1", "a1", "a2"]


def test_remove_takes_matching_items_and_keeps_the_rest_in_order() -> None:
    q: FairQueue[str] = FairQueue()
    for item in ["a1", "a2", "b1", "b2"]:
        q.push(item, priority=1, problem=item[0])
    q.push("e1", priority=0, problem="e")
    assert sorted(q.remove(lambda x: x.endswith("1"))) == ["a1", "b1", "e1"]
    assert len(q) == 2 and list(q) == ["a2", "b2"]
    assert drain(q) == ["a2", "b2"]
