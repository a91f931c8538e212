"""Our lm-eval tasks: they load from the shipped files alone, their documents are what they claim (held out
from the main job's training, the gold answer is the real code), the files rebuild from the stdlib, and a
standard lm-eval task runs on the zaya model when its data is given locally."""

import json
import sys
from pathlib import Path

import pytest

pytest.importorskip("lm_eval")
from zaya_train.data.corpus import is_validation, stdlib_root
from zaya_train.evals import TASKS_DIR
from zaya_train.evals.harness import scores, task_manager
from zaya_train.evals.local_datasets import DATA_DIR, read_jsonl
from zaya_train.evals.stdlib_tasks import HOLDOUT_FRACTION, SOURCE_FILE, write

OURS = ["zaya_stdlib_nextline", "zaya_stdlib_docstring", "zaya_stdlib_idioms", "zaya_arith", "zaya_stdlib_ppl"]
SOURCE = json.loads((DATA_DIR / SOURCE_FILE).read_text())
SAME_PYTHON = SOURCE["python"] == sys.version.split()[0]


def test_every_task_loads_from_the_shipped_files_without_lm_evals_index():
    manager = task_manager(["zaya"])
    assert set(OURS) | {"zaya"} <= set(manager.all_tasks) and len(manager.all_tasks) == len(OURS) + 1
    loaded = manager.load(["zaya"])["tasks"]
    assert set(loaded) == set(OURS)
    for name, task in loaded.items():
        file = f"{name}.jsonl"
        assert len(task.test_docs()) == SOURCE["records"][file] == len(read_jsonl(DATA_DIR / file)), name


def test_questions_come_from_files_the_main_job_never_trains_on():
    names = set()
    for task in OURS:
        for record in read_jsonl(DATA_DIR / f"{task}.jsonl"):
            if "source" in record:
                names.add(record["source"].split(":")[0])
    assert len(names) > 30
    assert all(is_validation(name, HOLDOUT_FRACTION) for name in names)


def test_the_main_job_holds_those_files_out():
    """train/tiny-cpu (the main job) splits off at least the task files' share for validation."""
    from omegaconf import OmegaConf
    from zaya_train.config import TrainConfig

    preset = Path(__import__("zaya_train").__file__).parent / "conf" / "train" / "tiny-cpu.yaml"
    data = OmegaConf.to_container(OmegaConf.load(preset))
    data.pop("defaults")
    train = OmegaConf.to_object(OmegaConf.merge(OmegaConf.structured(TrainConfig), data))
    assert train.data.val_fraction >= HOLDOUT_FRACTION
    assert {s.path for s in train.data.sources.values()} == {"stdlib"}


@pytest.mark.skipif(not SAME_PYTHON, reason=f"task files were built from Python {SOURCE['python']}'s stdlib")
def test_gold_answers_are_the_real_code():
    for task in ("zaya_stdlib_nextline", "zaya_stdlib_idioms"):
        for record in read_jsonl(DATA_DIR / f"{task}.jsonl"):
            name, line = record["source"].rsplit(":", 1)
            real = (stdlib_root() / name).read_text(encoding="utf-8").splitlines()[int(line) - 1]
            if task == "zaya_stdlib_nextline":
                assert record["choices"][record["gold"]] == real.strip() + "\n"
                assert len(set(record["choices"])) == 4
            else:
                assert (record["context"].rsplit("\n", 1)[-1] + record["target"]) == real


@pytest.mark.slow
@pytest.mark.skipif(not SAME_PYTHON, reason=f"task files were built from Python {SOURCE['python']}'s stdlib")
def test_the_shipped_files_rebuild_exactly(tmp_path):
    write(tmp_path)
    for file in sorted(DATA_DIR.iterdir()):
        assert (tmp_path / file.name).read_bytes() == file.read_bytes(), file.name


def test_a_standard_task_runs_on_the_zaya_model_when_its_data_is_local(eval_run, tmp_path):
    """lm-eval's own arc_easy and wikitext YAML (prompt, metrics, wikitext's detokenizer), pointed at local
    JSON-lines files by a two-line override: no download."""
    import lm_eval
    from lm_eval import simple_evaluate
    from zaya_train.evals.lm import ZayaLM

    arc = [
        {
            "id": "q1",
            "question": "Which module parses JSON?",
            "answerKey": "A",
            "choices": {"text": ["json", "socket", "turtle"], "label": ["A", "B", "C"]},
        },
        {
            "id": "q2",
            "question": "What does len([]) return?",
            "answerKey": "B",
            "choices": {"text": ["None", "0", "1", "-1"], "label": ["A", "B", "C", "D"]},
        },
        {
            "id": "q3",
            "question": "Which keyword defines a function?",
            "answerKey": "C",
            "choices": {"text": ["class", "import", "def"], "label": ["A", "B", "C"]},
        },
    ]
    pages = [{"page": "The json module encodes and decodes JSON . It is part of the standard library ."}]
    builtin = Path(lm_eval.__file__).parent / "tasks"
    for name, records, include in (
        ("arc_easy", arc, "arc/arc_easy.yaml"),
        ("wikitext", pages, "wikitext/wikitext.yaml"),
    ):
        (tmp_path / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
        (tmp_path / f"{name}.yaml").write_text(
            f"include: {builtin / include}\ntask: {name}\ndataset_path: json\ndataset_name: null\n"
            f"dataset_kwargs: {{data_files: {{test: {tmp_path / name}.jsonl}}, cache_dir: {tmp_path / 'hf-cache'}}}\n"
            "training_split: null\nvalidation_split: null\n"
        )
    manager = task_manager(["arc_easy", "wikitext"], [tmp_path])
    lm = ZayaLM(str(eval_run), device="cpu", progress=False)
    results = simple_evaluate(model=lm, tasks=["arc_easy", "wikitext"], task_manager=manager, log_samples=True)
    assert results["n-samples"]["arc_easy"]["effective"] == 3 and results["n-samples"]["wikitext"]["effective"] == 1
    first = results["samples"]["arc_easy"][0]["arguments"]
    assert first[0] == ("Question: Which module parses JSON?\nAnswer:", " json")  # arc_easy's own prompt
    correct = []
    for sample in results["samples"]["arc_easy"]:
        choice_scores = [r[0][0] for r in sample["resps"]]
        correct.append(choice_scores.index(max(choice_scores)) == "ABCD".index(sample["doc"]["answerKey"]))
    flat = scores(results)
    assert flat["arc_easy/acc"] == pytest.approx(sum(correct) / 3)
    assert flat["wikitext/bits_per_byte"] > 0 and flat["wikitext/word_perplexity"] > 1


def test_tasks_dir_is_part_of_the_package():
    assert TASKS_DIR.is_dir() and all((TASKS_DIR / f"{t}.yaml").is_file() for t in OURS)
