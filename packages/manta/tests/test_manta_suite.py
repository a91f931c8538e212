"""The evaluation suite's control guard on a real judge: the old plan-metric judge is discredited by its own
prompt-blind control (it rewards checkpoint rotation and the catalog's quality priors), which is why it is
kept only as a named smoke check."""

from manta.composer import limits_from_config
from manta.evaluation.judges import OfflineJudge
from manta.evaluation.metrics import PlanEvaluator
from manta.evaluation.prompts import shipped_prompts
from manta.evaluation.suite import CONTROL_LIMIT, SMOKE_JUDGE, evaluate
from manta.evaluation.world_eval import systems


def test_the_control_guard_catches_the_plan_metric_judge(composer):
    limits = limits_from_config("desktop-24gb")
    judge = OfflineJudge(PlanEvaluator(composer.index, composer.embedder, limits))
    opponents, controls = systems(composer)
    result = evaluate(shipped_prompts()[:12], composer, judge, SMOKE_JUDGE, limits, opponents, controls, batch=2)
    assert result.control_win_rate("prompt-blind", "quality") >= CONTROL_LIMIT
    assert any(v.startswith("prompt-blind wins") and "quality" in v for v in result.control_violations())
    report = result.to_dict()
    assert report["judge"] == SMOKE_JUDGE and report["control_violations"] == result.control_violations()
    tally = report["controls"]["prompt-blind"]["quality"]
    assert tally["win"] + tally["tie"] + tally["loss"] == 12 and tally["ci"][0] <= tally["rate"] <= tally["ci"][1]
    assert set(report["aa"]) == {"diversity", "alignment", "quality"}  # the A/A run, plan metrics: other seeds
