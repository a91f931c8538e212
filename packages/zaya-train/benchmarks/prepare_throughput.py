"""Tokenizing throughput and peak memory: `zaya data prepare` (datatrove, the real command as a subprocess)
with 1 and 2 workers against Hugging Face `datasets` (`Dataset.from_json(...).map(tokenize, batched=True,
num_proc=N)`, then the ids written to disk), same corpus, same tokenizer.json, same machine, same run.

The corpus is generated (seeded): `--files` jsonl files of `--mb` MB in all, documents of 50-600 words drawn
from a Zipf-like vocabulary. The tokenizer is a byte-level BPE (`--vocab-size`) trained once on the first
8 MB of that corpus (`zaya_train.data.tokenizers.train_bpe`), or the byte tokenizer's equivalent
tokenizer.json (`--tokenizer byte`). Each process tokenizes on one thread (TOKENIZERS_PARALLELISM=false for
both tools: one core per worker). Peak RSS is of the whole process tree (the command and every process it
starts), the sum of their resident sets sampled from /proc every 50 ms.

    python packages/zaya-train/benchmarks/prepare_throughput.py             # 200 MB: the recorded run
    python packages/zaya-train/benchmarks/prepare_throughput.py --mb 2 --results /tmp/p.json   # a smoke run

Writes `--results` (default benchmarks/results/prepare_throughput.json, atomic) and a PNG bar plot beside it.
"""

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "prepare_throughput.json"
EOS = "<|endoftext|>"


def generate_corpus(folder: Path, mb: float, files: int, seed: int) -> Path:
    """`files` jsonl files of about `mb` MB in all (reused when already generated with the same options)."""
    stamp = folder / "corpus.json"
    spec = {"mb": mb, "files": files, "seed": seed, "version": 1}
    if stamp.is_file() and json.loads(stamp.read_text()) == spec:
        return folder / "jsonl"
    rng = np.random.default_rng(seed)
    letters = np.array(list("etaoinshrdlucmfwypvbgkqjxz"))
    vocab = ["".join(rng.choice(letters, rng.integers(2, 10))) for _ in range(20_000)]
    vocab += ["def", "return", "self", "the", "of", "and", "=", "(", ")", ":", "\n"]
    weights = 1.0 / np.arange(1, len(vocab) + 1)
    weights /= weights.sum()
    target = int(mb * (1 << 20) / files)
    (folder / "jsonl").mkdir(parents=True, exist_ok=True)
    for index in range(files):
        written = 0
        with open(folder / "jsonl" / f"part-{index:03d}.jsonl", "w", encoding="utf-8") as handle:
            while written < target:
                words = rng.choice(len(vocab), size=int(rng.integers(50, 600)), p=weights)
                line = json.dumps({"text": " ".join(vocab[w] for w in words)}) + "\n"
                handle.write(line)
                written += len(line)
    stamp.write_text(json.dumps(spec))
    return folder / "jsonl"


def make_tokenizer(folder: Path, corpus: Path, kind: str, vocab_size: int) -> Path:
    """The tokenizer.json both tools use (trained once, cached beside the corpus)."""
    from zaya_config.atomic import write_text_atomic
    from zaya_train.data.readers import iter_documents
    from zaya_train.data.tokenizer_files import byte_tokenizer_json
    from zaya_train.data.tokenizers import train_bpe

    out = folder / f"tokenizer-{kind}-{vocab_size}.json"
    if out.is_file():
        return out
    if kind == "byte":
        return write_text_atomic(out, byte_tokenizer_json(EOS))

    def sample(limit: int = 8 << 20):
        total = 0
        for doc in iter_documents(corpus):
            yield doc.text
            total += len(doc.text)
            if total >= limit:
                return

    return train_bpe(sample(), vocab_size, EOS, out)


def _tree_rss(root: int) -> int:
    """Resident bytes of `root` and all its descendants (the kernel's per-thread `children` lists)."""
    total, frontier, seen = 0, [root], set()
    page = os.sysconf("SC_PAGE_SIZE")
    while frontier:
        pid = frontier.pop()
        if pid in seen:
            continue
        seen.add(pid)
        try:
            total += int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * page
            for task in os.listdir(f"/proc/{pid}/task"):
                frontier += [int(c) for c in Path(f"/proc/{pid}/task/{task}/children").read_text().split()]
        except (OSError, IndexError, ValueError):  # the process ended meanwhile
            continue
    return total


def measure(command: list[str], env: dict) -> tuple[float, int]:
    """Wall seconds and peak tree RSS (bytes) of a command; raises with its stderr if it fails."""
    peak = [0]
    start = time.perf_counter()
    proc = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.05):
            peak[0] = max(peak[0], _tree_rss(proc.pid))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    _, err = proc.communicate()
    wall = time.perf_counter() - start
    done.set()
    sampler.join()
    if proc.returncode:
        raise SystemExit(f"{' '.join(command[:4])} ... failed ({proc.returncode}): {err[-2000:]}")
    return wall, peak[0]


def datasets_child(corpus: str, tokenizer: str, workers: int, out: str) -> None:
    """The baseline, run as its own process: from_json, map(batched, num_proc), ids written to one file."""
    import datasets
    from tokenizers import Tokenizer

    datasets.disable_progress_bars()
    tok = Tokenizer.from_file(tokenizer)
    eos = tok.token_to_id(EOS)

    def tokenize(batch):
        return {"ids": [[*e.ids, eos] for e in tok.encode_batch(batch["text"], add_special_tokens=False)]}

    files = sorted(str(p) for p in Path(corpus).glob("*.jsonl"))
    ds = datasets.Dataset.from_json(files, cache_dir=str(Path(out) / "cache"))
    ds = ds.map(tokenize, batched=True, num_proc=workers if workers > 1 else None, remove_columns=["text"])
    total = 0
    with open(Path(out) / "ids.bin", "wb") as handle:
        for batch in ds.iter(batch_size=1000):
            ids = np.fromiter((i for row in batch["ids"] for i in row), dtype=np.uint32)
            ids.tofile(handle)
            total += ids.size
    print(json.dumps({"tokens": total}))


def run_zaya(corpus: Path, tokenizer: Path, workers: int, scratch: Path, env: dict) -> dict:
    out = scratch / f"zaya-{workers}"
    command = [sys.executable, "-m", "zaya_cli.app", "data", "prepare", str(corpus), "--out", str(out)]
    command += ["--tokenizer", str(tokenizer), "--workers", str(workers), "--no-progress"]
    wall, peak = measure(command, env)
    from zaya_train.data.shards import TokenShard

    tokens = sum(TokenShard(out).num_tokens.values())
    return {"tool": "zaya data prepare", "workers": workers, "tokens": tokens, "seconds": wall, "peak_rss": peak}


def run_datasets(corpus: Path, tokenizer: Path, workers: int, scratch: Path, env: dict) -> dict:
    out = scratch / f"datasets-{workers}"
    out.mkdir()
    command = [sys.executable, __file__, "--datasets-child", str(corpus), str(tokenizer), str(workers), str(out)]
    wall, peak = measure(command, env)
    tokens = (out / "ids.bin").stat().st_size // 4
    return {"tool": "datasets map", "workers": workers, "tokens": tokens, "seconds": wall, "peak_rss": peak}


def _commit() -> str:
    try:
        return subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=HERE
        ).stdout.strip()
    except OSError:
        return "unknown"


def _machine() -> str:
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / (1 << 30)
    return f"{platform.machine()} {platform.processor() or ''}".strip() + f", {os.cpu_count()} CPUs, {memory:.0f} GiB"


def report(rows: list[dict], workers: list[int], results: Path) -> dict:
    """The rich table, the JSON (atomic) and the bar plot beside it."""
    from rich.console import Console
    from rich.table import Table
    from zaya_config.atomic import write_file_atomic, write_text_atomic

    table = Table(title="tokenizing throughput")
    for column in ("tool", "workers", "tokens", "tokens/s", "peak RSS MiB"):
        table.add_column(column, justify="right")
    out_rows = []
    for row in rows:
        tps, rss = row["tokens"] / row["seconds"], row["peak_rss"] / (1 << 20)
        out_rows.append(
            {"tool": row["tool"], "workers": row["workers"], "tokens_per_s": round(tps), "peak_rss_mib": round(rss, 1)}
        )
        table.add_row(row["tool"], str(row["workers"]), str(row["tokens"]), f"{tps:,.0f}", f"{rss:,.0f}")
    Console().print(table)
    speed = {(r["tool"], r["workers"]): r["tokens_per_s"] for r in out_rows}
    top = max(workers)
    record = {
        "rows": out_rows,
        "speedup_vs_datasets_map": round(speed["zaya data prepare", top] / speed["datasets map", top], 3),
        "scaling_1_to_2": round(speed["zaya data prepare", 2] / speed["zaya data prepare", 1], 3)
        if {1, 2} <= set(workers)
        else None,
        "machine": _machine(),
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d"),
        "commit": _commit(),
        "command": " ".join(["python", *sys.argv]),
    }
    write_text_atomic(results, json.dumps(record, indent=1) + "\n")
    _plot(out_rows, results.with_suffix(".png"), write_file_atomic)
    print(f"speedup vs datasets.map at {top} workers: {record['speedup_vs_datasets_map']}x, "
          f"scaling 1 -> 2 workers: {record['scaling_1_to_2']}x; wrote {results}")  # fmt: skip
    return record


def _plot(rows: list[dict], path: Path, write_file_atomic) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5))
    labels = [f"{r['tool']}\n{r['workers']} worker(s)" for r in rows]
    colors = ["tab:blue" if r["tool"].startswith("zaya") else "tab:gray" for r in rows]
    ax.bar(labels, [r["tokens_per_s"] / 1e6 for r in rows], color=colors)
    ax.set_ylabel("million tokens / s")
    ax.tick_params(axis="x", labelsize=7)
    fig.tight_layout()
    write_file_atomic(path, lambda tmp: fig.savefig(tmp, format="png", dpi=120))
    plt.close(fig)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=200, help="corpus size in MB (the recorded run: 200)")
    parser.add_argument("--files", type=int, default=16, help="jsonl files (datatrove tasks)")
    parser.add_argument("--workers", default="1,2", help="worker counts to measure, e.g. 1,2")
    parser.add_argument("--tokenizer", choices=("bpe", "byte"), default="bpe")
    parser.add_argument("--vocab-size", type=int, default=8192)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--work-dir", type=Path, default=Path(tempfile.gettempdir()) / "zaya-prepare-throughput")
    parser.add_argument("--results", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    workers = [int(w) for w in args.workers.split(",")]
    corpus = generate_corpus(
        args.work_dir / f"corpus-{args.mb:g}mb-{args.files}-{args.seed}", args.mb, args.files, args.seed
    )
    tokenizer = make_tokenizer(corpus.parent, corpus, args.tokenizer, args.vocab_size)
    env = {**os.environ, "TOKENIZERS_PARALLELISM": "false", "RAYON_NUM_THREADS": "1"}
    rows = []
    from rich.console import Console

    with tempfile.TemporaryDirectory(dir=args.work_dir) as scratch, Console(stderr=True).status("") as status:
        for n in workers:
            for tool, run in (("zaya data prepare", run_zaya), ("datasets map", run_datasets)):
                status.update(f"{tool}, {n} worker(s), {args.mb:g} MB ...")
                rows.append(run(corpus, tokenizer, n, Path(scratch), env))
    if len({r["tokens"] for r in rows}) != 1:
        raise SystemExit(f"the tools disagree on the token count: {[(r['tool'], r['tokens']) for r in rows]}")
    return report(rows, workers, args.results)


if __name__ == "__main__":
    if len(sys.argv) == 6 and sys.argv[1] == "--datasets-child":
        datasets_child(sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5])
    else:
        main()
