#!/usr/bin/env python3
"""Times shell commands in alternation, so that a noisy machine slows all of them alike.

    python3 kanata-pp/benches/alternate.py ROUNDS 'command 1' 'command 2' ... 'baseline'

Runs every command once as a warm-up, then ROUNDS rounds of each command in turn, and prints
the median and the fastest time of each with their ratios to the last command (the
baseline). hyperfine runs one command's runs back to back; when the machine's load changes
during a benchmark, that favours whichever command ran in the quiet part.
"""
import statistics
import subprocess
import sys
import time

rounds = int(sys.argv[1])
commands = sys.argv[2:]
times = [[] for _ in commands]
for round_ in range(rounds + 1):
    for i, command in enumerate(commands):
        start = time.perf_counter()
        subprocess.run(command, shell=True, check=True)
        if round_ > 0:
            times[i].append(time.perf_counter() - start)
base_median = statistics.median(times[-1])
base_min = min(times[-1])
for command, t in zip(commands, times):
    median = statistics.median(t)
    print(
        f"{median * 1000:7.1f} ms median {min(t) * 1000:7.1f} min"
        f"  x{median / base_median:.3f} (min x{min(t) / base_min:.3f})  {command}"
    )
