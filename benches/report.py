"""Run the benchmarks once and print each group's medians as ratios.

Every benchmark in ``benches/`` runs in one pytest-benchmark session (so the
figures of a group are measured side by side, on the same machine state);
then each group is printed with its median, the ratio of that median to the
group's baseline, and, when the benchmark recorded ``extra_info["events"]``,
microseconds per event, and when it recorded ``extra_info["streams"]`` (the
work of one round differs between entries), throughput relative to the
baseline. The baseline is the benchmark that set
``extra_info["baseline"] = True``, else the group's first entry.

Times are process CPU time (``--benchmark-timer=time.process_time``): on a
machine shared with other jobs, wall-clock time also counts the slices the
scheduler gives to others, which penalises long runs more than short ones.
Reading that clock is a system call of about half a microsecond, longer than
a small parse, so each round runs for at least 200 µs
(``--benchmark-min-time``): the figure is then the call's, not the clock's.
The threads benchmark (``test_bench_threads.py``) sets its own wall-clock
timer: process CPU time adds up the threads and cannot show them overlap.

Usage: ``python benches/report.py [pytest args...]`` (e.g. ``-k stream``), or
``python benches/report.py --from results.json`` to print a saved run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def run(args: list[str]) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "results.json"
        files = sorted(str(p) for p in HERE.glob("*.py") if p.name != "report.py")
        command = [
            sys.executable,
            "-m",
            "pytest",
            *files,
            "--benchmark-only",
            "-q",
            "-p",
            "no:cacheprovider",
            "--benchmark-timer=time.process_time",
            "--benchmark-min-time=0.0002",
            f"--benchmark-json={out}",
            *args,
        ]
        subprocess.run(command, check=True, cwd=HERE.parent, env=os.environ.copy())
        return json.loads(out.read_text())


def report(results: dict[str, Any]) -> str:
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for bench in results["benchmarks"]:
        groups[bench.get("group") or bench["name"]].append(bench)
    lines = []
    for group, benches in groups.items():
        base = next((b for b in benches if b.get("extra_info", {}).get("baseline")), benches[0])
        base_median = base["stats"]["median"]
        lines.append(f"\n{group}  (baseline: {base['name']})")
        for bench in sorted(benches, key=lambda b: b["stats"]["median"]):
            median = bench["stats"]["median"]
            events = bench.get("extra_info", {}).get("events")
            per_event = f"  {median / events * 1e6:8.3f} us/event" if events else ""
            streams = bench.get("extra_info", {}).get("streams")
            if streams:  # work per round differs: throughput relative to the baseline's
                base_streams = base.get("extra_info", {}).get("streams", streams)
                per_event += f"  throughput x{streams / median / (base_streams / base_median):5.2f}"
            lines.append(
                f"  {bench['name']:<60} median {median * 1e6:12.3f} us  x{median / base_median:6.3f}{per_event}"
            )
    return "\n".join(lines)


def main(argv: list[str]) -> None:
    if argv[:1] == ["--from"] and len(argv) == 2:
        results = json.loads(Path(argv[1]).read_text())
    else:
        results = run(argv)
    print(report(results))


if __name__ == "__main__":
    main(sys.argv[1:])
