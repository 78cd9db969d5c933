"""The shared baseline store's protocol: one claim per key, others told to wait, a hit once
published, a claim released by a failed timing or a dead grader (pure data: no Ray)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from cudaenv.cluster.baselines import BaselineStore
from cudaenv.grading.baseline_cache import CachedBaseline, Provenance
from cudaenv.grading.verdict import Timing


def entry(device: str = "cpu: test/") -> str:
    return CachedBaseline(
        timing=Timing(samples_ms=[1.0, 1.2], median_ms=1.1),
        provenance=Provenance(writer="test", rounds=2, device=device, sandbox="rlimits"),
    ).model_dump_json()


def test_one_claim_per_key_then_hits_for_everyone() -> None:
    store = BaselineStore()
    assert store.lookup("k", "g1") == ("claimed", None)
    assert store.lookup("k", "g2") == ("busy", None)
    assert store.lookup("other", "g2") == ("claimed", None)  # keys are independent
    assert not store.knows("hash-p")
    assert store.publish("k", "hash-p", entry(), "g1") is True
    assert store.lookup("k", "g2") == ("hit", entry())
    assert store.knows("hash-p")
    stats = store.stats()
    assert stats.published == {"k": 1} and stats.claims == {"k": 1, "other": 1}
    assert stats.hits == 1 and stats.devices == {"k": "cpu: test/"}


def test_a_second_publish_of_a_key_is_not_stored() -> None:
    store = BaselineStore()
    store.lookup("k", "g1")
    assert store.publish("k", "h", entry("first/"), "g1") is True
    assert store.publish("k", "h", entry("second/"), "g2") is False
    assert store.lookup("k", "g3") == ("hit", entry("first/"))
    assert store.stats().published == {"k": 1}


def test_released_and_dead_graders_claims_go_to_the_next_asker() -> None:
    store = BaselineStore()
    store.lookup("a", "g1")
    store.lookup("b", "g1")
    store.release("a", "g2")  # not its claim: nothing happens
    assert store.lookup("a", "g2") == ("busy", None)
    store.release("a", "g1")  # the timing failed
    assert store.lookup("a", "g2") == ("claimed", None)
    store.release_all("g1")  # g1 died
    assert store.lookup("b", "g3") == ("claimed", None)
    assert store.stats().claims == {"a": 2, "b": 2}


def test_a_stale_claim_expires() -> None:
    store = BaselineStore(claim_ttl_s=0.0)
    store.lookup("k", "g1")
    assert store.lookup("k", "g2") == ("claimed", None)


def test_a_malformed_entry_is_refused() -> None:
    store = BaselineStore()
    store.lookup("k", "g1")
    with pytest.raises(ValidationError):
        store.publish("k", "h", '{"timing": {}}', "g1")
    assert store.stats().entries == 0
