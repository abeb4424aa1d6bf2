"""A pipeline run's parent says which stages came from the cache and from which runs."""

from __future__ import annotations

from breadth.tracking.provenance import NOTE_TAG, StageOrigin, stage_provenance


def _url(experiment: str, run: str) -> str:
    return f"http://mlflow/#/experiments/{experiment}/runs/{run}"


def test_a_fully_cached_re_run_names_every_stage_and_the_run_that_produced_it():
    origins = {stage: StageOrigin(f"child-{stage}", "first", "7")
               for stage in ("prepare", "sft", "rl", "evaluate")}
    tags = stage_provenance("second", origins, _url)
    assert tags["breadth.cached_stages"] == "prepare,sft,rl,evaluate"
    assert tags["breadth.cached_from"] == "first"
    assert tags["stage_run.rl"] == "child-rl"
    note = tags[NOTE_TAG]
    assert note.startswith("4 of 4 stages came from the cache")
    assert "[stage run](http://mlflow/#/experiments/7/runs/child-sft)" in note
    assert "(http://mlflow/#/experiments/7/runs/first)" in note
    assert "copies of the cached evaluation's" in note and "Ran here" not in note


def test_a_partly_cached_run_lists_what_ran_here_and_each_source_once():
    origins = {"prepare": StageOrigin("c1", "older", "1"), "sft": StageOrigin("c2", "old", "2"),
               "rl": StageOrigin("c3", "me", "1"), "evaluate": StageOrigin("c4", "me", "1")}
    tags = stage_provenance("me", origins, _url)
    assert tags["breadth.cached_stages"] == "prepare,sft"
    assert tags["breadth.cached_from"] == "older,old"
    assert "Ran here: rl, evaluate." in tags[NOTE_TAG]
    assert "copies of the cached" not in tags[NOTE_TAG]  # its own evaluation


def test_a_run_with_no_cache_hit_says_so():
    tags = stage_provenance("me", {"prepare": StageOrigin("c1", "me", "1")}, _url)
    assert tags["breadth.cached_stages"] == "none" and tags["breadth.cached_from"] == ""
    assert tags[NOTE_TAG] == "Every stage (1) ran in this run: no cache hit."
