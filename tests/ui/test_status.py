"""Workload status read as Kubernetes people read it: counts, conditions, health, rollout line."""

from __future__ import annotations

import typing as t

from flask_krm.ui.status import workload_status


def deployment(desired: int = 3, generation: int = 2, **status: t.Any) -> dict[str, t.Any]:
    return {
        "kind": "Deployment",
        "metadata": {"name": "web", "generation": generation},
        "spec": {"replicas": desired},
        "status": {"observedGeneration": 2, **status},
    }


AVAILABLE = {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"}
PROGRESSED = {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable"}


def test_a_complete_rollout_is_healthy() -> None:
    s = workload_status(
        deployment(
            3, replicas=3, updatedReplicas=3, readyReplicas=3, availableReplicas=3, conditions=[AVAILABLE, PROGRESSED]
        )
    )
    assert s is not None
    assert (s.desired, s.ready, s.available, s.unavailable, s.health) == (3, 3, 3, 0, "healthy")
    assert s.rollout == "Rolled out: 3 of 3 replicas available"
    assert [(c.type, c.reason, c.tone) for c in s.conditions] == [
        ("Available", "MinimumReplicasAvailable", "ok"),
        ("Progressing", "NewReplicaSetAvailable", "ok"),
    ]


def test_each_stage_of_a_rollout_is_worded_like_kubectl() -> None:
    unseen = workload_status(deployment(generation=3, replicas=3, updatedReplicas=3, availableReplicas=3))
    assert unseen is not None and unseen.health == "progressing"
    assert unseen.rollout == "Waiting for the controller to see the latest change"
    updating = workload_status(deployment(replicas=3, updatedReplicas=1, availableReplicas=3, readyReplicas=3))
    assert updating is not None and updating.rollout == "Rolling out: 1 of 3 replicas updated"
    assert updating.progress == 1
    old = workload_status(deployment(replicas=4, updatedReplicas=3, availableReplicas=3, readyReplicas=3))
    assert old is not None and old.rollout == "Rolling out: 1 old replica still running"
    waiting = workload_status(deployment(replicas=3, updatedReplicas=3, availableReplicas=1, readyReplicas=1))
    assert waiting is not None and waiting.rollout == "Rolling out: 1 of 3 replicas available"
    assert (waiting.unavailable, waiting.health) == (2, "progressing")
    zero = workload_status(deployment(0))
    assert zero is not None and (zero.rollout, zero.health) == ("Scaled to zero", "healthy")


def test_a_deadline_exceeded_or_a_replica_failure_is_a_failed_rollout() -> None:
    stuck = {"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded"}
    s = workload_status(deployment(updatedReplicas=1, conditions=[stuck]))
    assert s is not None and s.health == "failed" and s.rollout == "Rollout failed: ProgressDeadlineExceeded"
    assert s.conditions[0].tone == "bad"
    quota = {"type": "ReplicaFailure", "status": "True", "reason": "FailedCreate"}
    failing = workload_status(deployment(conditions=[quota]))
    assert failing is not None and failing.health == "failed" and failing.conditions[0].tone == "bad"


def test_daemon_sets_and_objects_without_status() -> None:
    daemons = workload_status(
        {
            "kind": "DaemonSet",
            "status": {
                "desiredNumberScheduled": 4,
                "currentNumberScheduled": 4,
                "updatedNumberScheduled": 4,
                "numberReady": 3,
                "numberAvailable": 3,
            },
        }
    )
    assert daemons is not None and (daemons.desired, daemons.ready, daemons.health) == (4, 3, "progressing")
    assert workload_status({"kind": "ConfigMap", "data": {}}) is None
    assert workload_status(None) is None
    odd = workload_status({"spec": {"replicas": "3"}, "status": {"readyReplicas": True, "conditions": "x"}})
    assert odd is not None and (odd.desired, odd.ready, odd.conditions) == (0, 0, ())
