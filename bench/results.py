"""Where the benchmarks put their figures: bench/results/<name>.json and <name>.png (matplotlib, from Debian's
python3-matplotlib, installed on first use), plus what describes the run: date, machine, command."""
import datetime
import json
import os
import platform
import shlex
import subprocess
import sys

BENCH = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(BENCH)
RESULTS = os.environ.get("CKUBELET_BENCH_RESULTS", os.path.join(BENCH, "results"))

COLORS = {"ckubelet": "#1f77b4", "go": "#d62728", "floor": "#7f7f7f"}
LABELS = {"ckubelet": "ckubelet", "go": "Go kubelet v1.20.2", "floor": "CRI floor"}


def _first_line(cmd):
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=20).stdout
        return out.strip().splitlines()[0] if out.strip() else ""
    except (OSError, subprocess.SubprocessError):
        return ""


def machine():
    """What the figures depend on: CPUs, memory, kernel, distribution, runtime versions, the ckubelet commit."""
    model = ""
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    with open("/proc/meminfo") as f:
        mem_kb = int(f.readline().split()[1])
    debian = ""
    if os.path.exists("/etc/debian_version"):
        with open("/etc/debian_version") as f:
            debian = f.read().strip()
    return {
        "cpus": os.cpu_count(),
        "cpu_model": model,
        "memory_gb": round(mem_kb / 1024 / 1024, 1),
        "kernel": platform.release(),
        "debian": debian,
        "virtualization": _first_line(["systemd-detect-virt"]) or "unknown",
        "containerd": _first_line(["containerd", "--version"]),
        "runc": _first_line(["runc", "--version"]),
        "ckubelet_commit": _first_line(["git", "-C", REPO, "describe", "--always", "--dirty"]),
    }


def header():
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "command": " ".join(shlex.quote(a) for a in [sys.executable] + sys.argv),
        "machine": machine(),
    }


def write_json(name, data):
    os.makedirs(RESULTS, exist_ok=True)
    path = os.path.join(RESULTS, name + ".json")
    with open(path + ".tmp", "w") as f:
        json.dump(data, f, indent=1, sort_keys=False)
        f.write("\n")
    os.rename(path + ".tmp", path)
    return path


def pyplot():
    """matplotlib.pyplot with the Agg backend; installs python3-matplotlib (Debian) when missing."""
    try:
        import matplotlib
    except ImportError:
        subprocess.run(["apt-get", "install", "-y", "-qq", "--no-install-recommends", "python3-matplotlib"],
                       env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"), check=True,
                       stdout=subprocess.DEVNULL)
        import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def save_png(fig, name, subtitle=""):
    os.makedirs(RESULTS, exist_ok=True)
    path = os.path.join(RESULTS, name + ".png")
    if subtitle:
        fig.text(0.01, 0.005, subtitle, fontsize=7, color="#555555", ha="left", va="bottom")
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    fig.savefig(path, dpi=110)
    pyplot().close(fig)
    return path


def grouped_bars(ax, groups, series, values, ylabel, title, log=False, fmt="{:.2f}"):
    """groups: x labels; series: keys of COLORS; values[s][i] (None = not measured)."""
    n = len(series)
    width = 0.8 / max(n, 1)
    for j, s in enumerate(series):
        xs = [i + (j - (n - 1) / 2) * width for i in range(len(groups))]
        ys = [v if v is not None else 0 for v in values[s]]
        bars = ax.bar(xs, ys, width, label=LABELS.get(s, s), color=COLORS.get(s))
        for b, v in zip(bars, values[s]):
            if v is not None:
                ax.annotate(fmt.format(v), (b.get_x() + b.get_width() / 2, b.get_height()), ha="center",
                            va="bottom", fontsize=7)
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(groups)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    if log:
        ax.set_yscale("log")
    ax.legend(fontsize=8)
