"""What the bench/run-*.py drivers share: where and how they write their JSON results. Each
driver keeps its own runs, statistics and table; this module only writes what they found."""
import json
import pathlib
import sys


def write_samples(a, name, summary, samples):
    """Writes the summary with every sample (samples_ns) to --json, else to
    build/bench-results/NAME.json, and says where on stderr."""
    path = a.json or a.build / "bench-results" / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(dict(summary, samples_ns=samples), indent=1) + "\n")
    print(f"run-{name}: all samples in {path}", file=sys.stderr)


def write_runs(json_path, runs):
    """Writes {"runs": runs} to json_path when one was given (--json)."""
    if json_path:
        pathlib.Path(json_path).write_text(json.dumps({"runs": runs}, indent=1))
